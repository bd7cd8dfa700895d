"""Where RDMA training pods run: the namespace, the rail tools, NCCL settings, and the claim templates
that pair GPUs with the rails on their PCIe root.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from oke_gpu_rdma import resource_types
from oke_gpu_rdma.labels import POD_SECURITY_BASELINE, POD_SECURITY_ENFORCE_LABEL
from oke_gpu_rdma.nccl import NCCL_SETTINGS
from stack_config.claim_plan import PlannedTemplate

from .typed_inputs import to_input_type

SCRIPTS = Path(__file__).resolve().parent / "scripts"
TOOLS_CONFIGMAP = "rdma-dranet-tools"
TOOLS_MOUNT = "/opt/rdma-dranet"
NCCL_CONFIGMAP = "nccl-env"
# Pod Security baseline admits the DRANET pods: no privileged, no IPC_LOCK (unlimited memlock on the node).
POD_SECURITY_LABELS = {POD_SECURITY_ENFORCE_LABEL: POD_SECURITY_BASELINE}


def tool_scripts() -> dict[str, str]:
    """The scripts mounted into RDMA pods: rail-map.sh (the rail test's launcher runs rail-bandwidth.sh
    itself, components/acceptance_jobs.py)."""
    return {name: (SCRIPTS / name).read_text() for name in ("rail-map.sh",)}


@dataclass
class RdmaWorkloadNamespaceArgs:
    namespace: str
    """Namespace name."""
    provider: k8s.Provider
    """Provider of the target cluster."""


class RdmaWorkloadNamespace(pulumi.ComponentResource):
    """Namespace with Pod Security baseline, the rail tools ConfigMap and the NCCL settings ConfigMap."""

    namespace: pulumi.Output[str]
    nccl_settings: dict[str, str]

    def __init__(
        self, name: str, args: RdmaWorkloadNamespaceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.WORKLOAD_NAMESPACE_COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=POD_SECURITY_LABELS),
            opts=child,
        )
        in_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        k8s.core.v1.ConfigMap(
            f"{name}-tools",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=TOOLS_CONFIGMAP, namespace=args.namespace),
            data=tool_scripts(),
            opts=in_namespace,
        )
        # envFrom this map gives a job the seed's NCCL settings; NCCL_IB_GID_INDEX and NCCL_IB_HCA
        # stay unset on purpose (NCCL finds the children's GID index and devices itself).
        k8s.core.v1.ConfigMap(
            f"{name}-nccl",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NCCL_CONFIGMAP, namespace=args.namespace),
            data=dict(NCCL_SETTINGS),
            opts=in_namespace,
        )
        self.namespace = namespace.metadata.apply(lambda m: m.name or args.namespace)
        self.nccl_settings = dict(NCCL_SETTINGS)
        self.register_outputs({"namespace": self.namespace, "ncclSettings": self.nccl_settings})


@dataclass
class GpuRailClaimTemplatesArgs:
    templates: Sequence[PlannedTemplate]
    """Templates, already judged by the DRA core (stack_config.claim_plan)."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    depends_on: Sequence[pulumi.Resource] = ()
    """The namespace (and the drivers) the templates need."""


# ResourceClaimTemplate.spec is immutable in resource.k8s.io/v1 (kubernetes/kubernetes
# pkg/apis/resource/validation/validation.go ValidateResourceClaimTemplateUpdate: "field is immutable"),
# and pulumi-kubernetes has no replace rule for it: a changed spec replaces the object. The name stays,
# so the old one is deleted first. Pods keep the ResourceClaims already made from the old template;
# new pods get claims from the new one.
SPEC_IS_IMMUTABLE = pulumi.ResourceOptions(replace_on_changes=["spec"], delete_before_replace=True)


class GpuRailClaimTemplates(pulumi.ComponentResource):
    """ResourceClaimTemplates (resource.k8s.io/v1) built with the typed input classes."""

    names: list[dict[str, str]]

    def __init__(
        self, name: str, args: GpuRailClaimTemplatesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.CLAIM_TEMPLATES_COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        for template in args.templates:
            k8s.resource.v1.ResourceClaimTemplate(
                f"{name}-{template.namespace}-{template.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=template.name, namespace=template.namespace),
                spec=to_input_type(
                    k8s.resource.v1.ResourceClaimTemplateSpecArgs, {"spec": template.spec}, "spec"
                ),
                opts=pulumi.ResourceOptions.merge(child, SPEC_IS_IMMUTABLE),
            )
        self.names = [{"name": t.name, "namespace": t.namespace} for t in args.templates]
        self.register_outputs({"claimTemplates": self.names})
