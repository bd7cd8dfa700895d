"""RBAC rules and admission policies of the stack's own in-cluster writers (the MPI operator's Roles, the rail
health agent, the scheduled fabric check), built one way.

RBAC grants a verb on every object of a resource; where that is wider than the writer needs, a
ValidatingAdmissionPolicy (its CEL in oke_gpu_rdma/common/admission_cel.py) refuses the rest at admission, bound with
Deny so that a failing validation refuses the request (admissionregistration.k8s.io/v1
ValidatingAdmissionPolicyBinding validationActions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.typed_inputs import to_input_type


def policy_rules(rules: Iterable[Mapping[str, Any]]) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    """Role or ClusterRole rules (Kubernetes JSON) as pulumi-kubernetes' typed inputs, each field checked."""
    return [to_input_type(k8s.rbac.v1.PolicyRuleArgs, rule, "rule") for rule in rules]


def role_with_binding(
    resource_name: str,
    name: str,
    namespace: str | None,
    rules: Iterable[Mapping[str, Any]],
    subjects: Sequence[k8s.rbac.v1.SubjectArgs],
    opts: pulumi.ResourceOptions,
    binding_after: Sequence[pulumi.Resource] | None = None,
) -> tuple[
    k8s.rbac.v1.Role | k8s.rbac.v1.ClusterRole, k8s.rbac.v1.RoleBinding | k8s.rbac.v1.ClusterRoleBinding
]:
    """The Role ``name`` in ``namespace`` (a ClusterRole where it is None) with ``rules``, and its binding of the
    same name to ``subjects`` (Pulumi names ``resource_name`` and ``resource_name``-binding). The binding waits
    for ``binding_after`` when given, the role first among them."""
    meta = k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace)
    kind = "Role" if namespace is not None else "ClusterRole"
    role_type = k8s.rbac.v1.Role if namespace is not None else k8s.rbac.v1.ClusterRole
    binding_type = k8s.rbac.v1.RoleBinding if namespace is not None else k8s.rbac.v1.ClusterRoleBinding
    role = role_type(resource_name, metadata=meta, rules=policy_rules(rules), opts=opts)
    waits = (
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[role, *binding_after]))
        if binding_after is not None
        else opts
    )
    binding = binding_type(
        f"{resource_name}-binding",
        metadata=meta,
        role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind=kind, name=name),
        subjects=list(subjects),
        opts=waits,
    )
    return role, binding


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
