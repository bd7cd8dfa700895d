"""Where RDMA training pods run: the namespace, the rail tools, NCCL settings, and the claim templates
that pair GPUs with the rails on their PCIe root (or, on a shape whose GPUs and rails share no root, in
their NUMA node: oke_gpu_rdma/claims/pairing.py).
"""

import typing
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from components.common.namespaces import labelled_namespace
from components.component_inputs import (
    ComponentInputError,
    from_wire,
    is_known,
    schema_name,
    validated,
    value_problems,
)
from components.typed_inputs import to_input_type
from oke_gpu_rdma.common import pod_security, resource_types
from oke_gpu_rdma.drivers.nccl import NCCL_SETTINGS
from oke_gpu_rdma.nodes.labels import ALIGNMENT_ANNOTATION, ALIGNMENT_GROUP_ANNOTATION
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from stack_config.claims.claim_plan import ClaimPlan, PlannedTemplate, judged_templates
from stack_config.claims.claim_settings import ClaimTemplateConfig
from stack_config.claims.template_requests import (
    TemplateKeys,
    TemplateRequest,
    emits_aligned_templates,
    emits_rails_only_template,
    topology_problems,
)
from stack_config.claims.template_requests import claim_templates as stack_claim_templates
from stack_config.model import StackConfig
from stack_config.settings_types import DnsLabel, ShapeName

# rail-map.sh sits with the rail scripts of health/, which the rail agent runs too.
SCRIPTS = Path(__file__).resolve().parents[1] / "health" / "scripts"
TOOLS_CONFIGMAP = "rdma-dranet-tools"
TOOLS_MOUNT = "/opt/rdma-dranet"
NCCL_CONFIGMAP = "nccl-env"
# Pod Security baseline admits the DRANET pods: no privileged, no IPC_LOCK (unlimited memlock on the node).


def tool_scripts() -> dict[str, str]:
    """The scripts mounted into RDMA pods: rail-map.sh (the rail test's launcher runs rail-bandwidth.sh
    itself, components/health/acceptance_jobs.py)."""
    return {name: (SCRIPTS / name).read_text() for name in ("rail-map.sh",)}


class RdmaWorkloadNamespaceArgs(TypedDict):
    """The inputs of a workload namespace. The Kubernetes provider of the cluster comes from the
    resource options (``providers``)."""

    namespace: pulumi.Input[str]
    """Namespace name (a DNS label): created with Pod Security baseline, the rail tools and NCCL settings."""


class RdmaWorkloadNamespace(pulumi.ComponentResource):
    """A namespace for RDMA training pods: Pod Security baseline, the rail tools ConfigMap and the NCCL
    settings ConfigMap."""

    namespace: pulumi.Output[str]
    """The namespace's name."""
    nccl_settings: pulumi.Output[dict[str, str]]
    """The NCCL environment in the nccl-env ConfigMap (envFrom it)."""

    def __init__(
        self, name: str, args: RdmaWorkloadNamespaceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.WORKLOAD_NAMESPACE_COMPONENT, name, None, opts)
        given = args["namespace"]
        if is_known(given):
            found = value_problems("namespace", given, DnsLabel)
            if found:
                raise ComponentInputError("RdmaWorkloadNamespace", name, found)
        child = pulumi.ResourceOptions(parent=self)
        namespace = labelled_namespace(f"{name}-namespace", given, pod_security.WORKLOADS_LEVEL, child)
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        k8s.core.v1.ConfigMap(
            f"{name}-tools",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=TOOLS_CONFIGMAP, namespace=given),
            data=tool_scripts(),
            opts=in_namespace,
        )
        # envFrom this map gives a job the seed's NCCL settings; NCCL_IB_GID_INDEX and NCCL_IB_HCA
        # stay unset on purpose (NCCL finds the children's GID index and devices itself).
        k8s.core.v1.ConfigMap(
            f"{name}-nccl",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NCCL_CONFIGMAP, namespace=given),
            data=dict(NCCL_SETTINGS),
            opts=in_namespace,
        )
        created = namespace.metadata.apply(lambda m: m.name)
        self.namespace = pulumi.Output.all(created, given).apply(lambda names: names[0] or names[1])
        self.nccl_settings = pulumi.Output.from_input(dict(NCCL_SETTINGS))
        self.register_outputs({"namespace": self.namespace, "ncclSettings": self.nccl_settings})


class ClaimTemplateRequest(TypedDict):
    """An aligned ResourceClaimTemplate asked for: GPUs with the rails on their PCIe roots."""

    name: str
    """Template name (a DNS label); pods name it in resourceClaims. With several shapes it ends with the shape,
    and the first shape's template keeps this name too."""
    gpus_per_worker: int
    """GPUs one pod gets, each with the rails on its PCIe root (or NUMA node, on shapes aligned there: then
    part of a NUMA node's GPUs gives one template per NUMA node, its name ending with -numa<N>)."""
    namespace: NotRequired[str]
    """Namespace of the template (default: the component's namespace)."""
    shapes: NotRequired[list[str]]
    """The shapes (of ``shapes`` below) it is made for, each of which must hold it (default: every one whose
    nodes can align ``gpus_per_worker`` GPUs; none can: refused)."""


class GpuRailClaimTemplatesArgs(TypedDict):
    """The inputs of the claim templates: the shapes of the DRANET pools and the templates asked for,
    which the component builds from each shape's topology and judges on it (stack_config/claims/claim_plan.py
    judged_templates, as the stack config does). The Kubernetes provider comes from the resource options
    (``providers``); the templates wait for the component's ``depends_on`` (their namespaces)."""

    shapes: list[str]
    """The shapes of the GPU node pools the templates are for (rdma dranet pools)."""
    namespace: str
    """Namespace of the rails-only template and of the templates that name none."""
    claim_templates: NotRequired[list[ClaimTemplateRequest]]
    """The aligned GPU+rail templates (they need both DRANET and the NVIDIA GPU DRA driver)."""
    rails_only_template: NotRequired[str]
    """Name of a template for every rail of a node and no GPU (unset: none)."""
    shape_topologies: NotRequired[dict[str, Any]]
    """Topologies of shapes the catalog does not verify, by shape (the stack config's shapeTopologies format)."""


# ResourceClaimTemplate.spec is immutable in resource.k8s.io/v1 (kubernetes/kubernetes
# pkg/apis/resource/validation/validation.go ValidateResourceClaimTemplateUpdate: "field is immutable"),
# and pulumi-kubernetes has no replace rule for it: a changed spec replaces the object. The name stays,
# so the old one is deleted first. Pods keep the ResourceClaims already made from the old template;
# new pods get claims from the new one.
SPEC_IS_IMMUTABLE = pulumi.ResourceOptions(replace_on_changes=["spec"], delete_before_replace=True)

# The component's inputs, as its problems name them.
COMPONENT_KEYS: Final = TemplateKeys("claimTemplates", "railsOnlyTemplate")


def planned_templates(name: str, args: GpuRailClaimTemplatesArgs) -> tuple[PlannedTemplate, ...]:
    """The templates of ``args``, built and judged as the stack config builds and judges them, or
    :class:`ComponentInputError` naming each input at fault."""
    args = typing.cast(GpuRailClaimTemplatesArgs, from_wire(args))
    component = "GpuRailClaimTemplates"
    shapes = list(args["shapes"])
    requests = list(args.get("claim_templates", []))
    rails_only = args.get("rails_only_template")
    problems = [p for i, shape in enumerate(shapes) for p in value_problems(f"shapes[{i}]", shape, ShapeName)]
    problems += value_problems("namespace", args["namespace"], DnsLabel)
    if rails_only is not None:
        problems += value_problems("railsOnlyTemplate", rails_only, DnsLabel)
    checked: list[ClaimTemplateConfig] = []
    for i, request in enumerate(requests):
        try:
            checked.append(
                validated(
                    ClaimTemplateConfig, {schema_name(k): v for k, v in request.items()}, component, name
                )
            )
        except ComponentInputError as err:
            problems += [replace(p, path=f"claimTemplates[{i}].{p.path}") for p in err.problems]
    if problems:
        raise ComponentInputError(component, name, problems)
    supplied = dict(args.get("shape_topologies", {}))
    catalog = CATALOG.with_topologies(supplied)
    shape_keys: dict[str, str] = {}
    for i, shape in enumerate(shapes):
        shape_keys.setdefault(shape, f"shapes[{i}]")
    found = topology_problems(
        catalog,
        shape_keys,
        supplied,
        COMPONENT_KEYS,
        lambda shape, key: (
            f"add shapeTopologies.{shape} (`make topology` prints it from the ResourceSlices of "
            f"a node of the shape where DRANET and the GPU DRA driver run), leave {shape} out of shapes until then, or "
            "ask for no templates (claimTemplates [] and no railsOnlyTemplate)"
        ),
    )
    if found:
        raise ComponentInputError(component, name, found)
    plan = judged_templates(
        catalog,
        shapes,
        [
            TemplateRequest(
                t.name,
                t.gpus_per_worker,
                t.namespace or args["namespace"],
                tuple(t.shapes) if t.shapes is not None else None,
            )
            for t in checked
        ],
        rails_only,
        args["namespace"],
        COMPONENT_KEYS,
    )
    if plan.problems:
        raise ComponentInputError(component, name, plan.problems)
    return plan.templates


def _request(template: ClaimTemplateConfig, namespace: str) -> ClaimTemplateRequest:
    request = ClaimTemplateRequest(
        name=template.name,
        gpus_per_worker=template.gpus_per_worker,
        namespace=template.namespace or namespace,
    )
    if template.shapes is not None:
        request["shapes"] = list(template.shapes)
    return request


def claim_template_args(plan: ClaimPlan, config: StackConfig) -> GpuRailClaimTemplatesArgs:
    """The Args that give the templates of the stack's plan (what __main__.py declares): its shapes,
    its requests when their drivers are on, and its shapeTopologies."""
    workloads = config.workloads
    args = GpuRailClaimTemplatesArgs(
        shapes=list(plan.shapes),
        namespace=workloads.namespace,
        claim_templates=[_request(t, workloads.namespace) for t in stack_claim_templates(config)]
        if emits_aligned_templates(config)
        else [],
        shape_topologies=dict(config.shape_topologies),
    )
    if emits_rails_only_template(config) and workloads.rails_only_template:
        args["rails_only_template"] = workloads.rails_only_template
    return args


def alignment_annotations(template: PlannedTemplate) -> dict[str, str] | None:
    """Where a GPU/rail template aligns (oke_gpu_rdma/nodes/labels.py); None for the rails-only template."""
    if not template.alignment:
        return None
    found = {ALIGNMENT_ANNOTATION: template.alignment}
    if template.group:
        found[ALIGNMENT_GROUP_ANNOTATION] = template.group
    return found


class GpuRailClaimTemplates(pulumi.ComponentResource):
    """ResourceClaimTemplates (resource.k8s.io/v1) that pair GPUs with the RDMA rails on their PCIe roots,
    built from each shape's topology and judged aligned before any is declared."""

    claim_templates: pulumi.Output[list[dict[str, str]]]
    """The templates declared: name and namespace of each, and for GPU/rail templates the level they
    align at (alignment: pcieRoot or numaNode)."""

    def __init__(
        self, name: str, args: GpuRailClaimTemplatesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.CLAIM_TEMPLATES_COMPONENT, name, None, opts)
        templates = planned_templates(name, args)
        child = pulumi.ResourceOptions(parent=self, depends_on=opts.depends_on if opts else None)
        for template in templates:
            k8s.resource.v1.ResourceClaimTemplate(
                f"{name}-{template.namespace}-{template.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=template.name,
                    namespace=template.namespace,
                    annotations=alignment_annotations(template),
                ),
                spec=to_input_type(
                    k8s.resource.v1.ResourceClaimTemplateSpecArgs, {"spec": template.spec}, "spec"
                ),
                opts=pulumi.ResourceOptions.merge(child, SPEC_IS_IMMUTABLE),
            )
        self.claim_templates = pulumi.Output.from_input(
            [
                {
                    "name": t.name,
                    "namespace": t.namespace,
                    **({"alignment": t.alignment} if t.alignment else {}),
                }
                for t in templates
            ]
        )
        self.register_outputs({"claimTemplates": self.claim_templates})
