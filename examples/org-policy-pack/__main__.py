"""Acme's policy pack: every oke-gpu-rdma policy, and Acme's own rule that GPU node pools name a cost centre.

The Pulumi CLI runs this file (`python -m pulumi.policy <engine> .` from this folder); `PolicyPack(...)`
prints its port and serves until the CLI stops it. The oke-gpu-rdma policies come through their public
API, `oke_rdma_policies.POLICIES` (each keeps its own default level and pack-config settings).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from oke_rdma_policies import POLICIES
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
# OCI's GPU shapes: BM.GPU.B4.8, BM.GPU.GB200.4, VM.GPU.A10.1, ...
GPU_SHAPE_PREFIXES = ("BM.GPU", "VM.GPU")
DEFAULT_LABEL = "acme.example.com/cost-centre"


def pool_labels(props: Mapping[str, Any]) -> dict[str, str]:
    """A node pool's initial node labels (pulumi-oci `initialNodeLabels`: a list of key/value pairs)."""
    items: Sequence[Any] = props.get("initialNodeLabels") or []
    return {str(item.get("key")): str(item.get("value")) for item in items if isinstance(item, Mapping)}


def cost_centre(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != NODE_POOL:
        return
    shape = args.props.get("nodeShape")
    if not isinstance(shape, str) or not shape.startswith(GPU_SHAPE_PREFIXES):
        return
    config = args.get_config()
    key = str(config.get("labelKey", DEFAULT_LABEL))
    allowed = [str(value) for value in config.get("allowedValues", [])]
    pool = args.props.get("name") or args.name
    value = pool_labels(args.props).get(key)
    if not value:
        report_violation(
            f"node pool {pool} ({shape}) has no node label {key}: its GPU hours are charged to no one; "
            f"set it in the stack file: nodePools[].labels: {{{key}: <cost centre>}}"
        )
    elif allowed and value not in allowed:
        report_violation(
            f"node pool {pool} ({shape}) has {key}={value}, which is not a cost centre of the pack config "
            f"(allowedValues: {', '.join(allowed)})"
        )


COST_CENTRE = ResourceValidationPolicy(
    name="acme-gpu-pool-cost-centre",
    description="GPU node pools carry the cost-centre node label that chargeback reads.",
    # Advisory while stacks add the label; the pack config makes it mandatory (pack-config.json).
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(
        properties={
            "labelKey": {"type": "string", "default": DEFAULT_LABEL},
            "allowedValues": {"type": "array", "items": {"type": "string"}, "default": []},
        }
    ),
    validate=cost_centre,
)

PolicyPack(name="acme-platform", policies=[*POLICIES, COST_CENTRE])
