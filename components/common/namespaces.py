"""Namespaces the stack creates, each labelled with the Pod Security level its pods pass, and the
NetworkPolicies declared in them (oke_gpu_rdma/common/network_policies.py).

Helm's `createNamespace` cannot label the namespace it creates, so the components declare their
namespaces themselves (levels: oke_gpu_rdma/common/pod_security.py). A namespace created before (by Helm, by an
earlier version of the stack) is taken over: pulumi-kubernetes applies objects server-side, so creating
one that exists updates it instead of failing (its upsert, on by default since pulumi-kubernetes v4).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.typed_inputs import to_input_type
from oke_gpu_rdma.common import pod_security
from oke_gpu_rdma.common.network_policies import Policy


def labelled_namespace(
    resource_name: str, namespace: pulumi.Input[str], level: pod_security.Level, opts: pulumi.ResourceOptions
) -> k8s.core.v1.Namespace:
    """The namespace ``namespace``, enforcing (and warning and auditing at) the Pod Security ``level``."""
    return k8s.core.v1.Namespace(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace, labels=pod_security.namespace_labels(level)),
        opts=opts,
    )


def declare_network_policies(
    prefix: str, policies: Sequence[Policy], opts: pulumi.ResourceOptions
) -> list[k8s.networking.v1.NetworkPolicy]:
    """Each of ``policies`` as a NetworkPolicy named ``<prefix>-<namespace>-<policy>`` in the stack (the
    typed inputs refuse a field the API does not have)."""
    return [
        k8s.networking.v1.NetworkPolicy(
            f"{prefix}-{policy.namespace}-{policy.name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=policy.name, namespace=policy.namespace),
            spec=to_input_type(k8s.networking.v1.NetworkPolicySpecArgs, policy.spec, "spec"),
            opts=opts,
        )
        for policy in policies
    ]
