"""RBAC rules and admission policies of the stack's own in-cluster writers (the MPI operator's Roles, the rail
health agent, the scheduled fabric check), built one way.

RBAC grants a verb on every object of a resource; where that is wider than the writer needs, a
ValidatingAdmissionPolicy (its CEL in oke_gpu_rdma/admission_cel.py) refuses the rest at admission, bound with
Deny so that a failing validation refuses the request (admissionregistration.k8s.io/v1
ValidatingAdmissionPolicyBinding validationActions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .typed_inputs import to_input_type


def policy_rules(rules: Iterable[Mapping[str, Any]]) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    """Role or ClusterRole rules (Kubernetes JSON) as pulumi-kubernetes' typed inputs, each field checked."""
    return [to_input_type(k8s.rbac.v1.PolicyRuleArgs, rule, "rule") for rule in rules]


def admission_policy(
    resource_name: str, policy_name: str, spec: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding:
    """The policy ``policy_name`` with ``spec`` and its Deny binding (Pulumi names ``resource_name`` and
    ``resource_name``-binding); the binding waits for the policy. A writer that must not run unrestricted waits
    for the binding this returns."""
    policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name),
        spec=to_input_type(k8s.admissionregistration.v1.ValidatingAdmissionPolicySpecArgs, spec, "spec"),
        opts=opts,
    )
    return k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        f"{resource_name}-binding",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name),
        spec=k8s.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpecArgs(
            policy_name=policy_name, validation_actions=["Deny"]
        ),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[policy])),
    )
