"""The pack config: one JSON schema per policy (what the CLI validates) and the parsed values.

Pack config file format, as `pulumi preview --policy-pack policies --policy-pack-config cfg.json`
and `pulumi/actions` (`policyPackConfigs`) read it::

    {
      "all": "mandatory",                                  # optional: level of every policy
      "dranet-child-range": {
        "enforcementLevel": "mandatory",
        "ocaRdmaNetwork": "10.224.0.0/12",
        "existingCidrs": [{"name": "existing VCN", "cidr": "10.140.0.0/16"}],
        "workerSubnetCidrs": ["10.140.64.0/19"]
      },
      "gpu-rail-claims-aligned": {"shape": "BM.GPU.B4.8", "shapeTopologies": {}},
      "rdma-workloads-baseline": "disabled"                # a level alone is fine too
    }

The policies parse their section again (:func:`child_range_config`, :func:`claims_config`), so a
value that bypassed the CLI's schema check becomes a violation naming the key, not a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any, Final

from pulumi_policy import EnforcementLevel, PolicyConfigSchema

from oke_gpu_rdma import topology
from oke_gpu_rdma.errors import TopologyError
from oke_gpu_rdma.network import DEFAULT_OCA_RDMA_NETWORK, CidrError, NamedRange, parse_ipv4_network
from oke_gpu_rdma.topology import Topology, resolve_topology, topology_from_dict

from .values import plain

CHILD_RANGE: Final = "dranet-child-range"
CLAIMS_ALIGNED: Final = "gpu-rail-claims-aligned"
NO_DEVICE_PLUGIN_GPUS: Final = "no-device-plugin-gpus-with-dra-rails"
NCCL_GID_INDEX: Final = "nccl-gid-index-with-dranet"
OKE_PROFILE_CLAIMS: Final = "dranet-oke-profile-claims"
DEVICE_PLUGIN_OFF: Final = "gpu-device-plugin-off"
BASELINE: Final = "rdma-workloads-baseline"

LEVELS: Final = ("advisory", "mandatory", "remediate", "disabled")
DEFAULT_SHAPE: Final = topology.DEFAULT_SHAPE

_CIDR_PATTERN: Final = r"^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$"

# JSON schemas of each policy's properties (enforcementLevel is implicit).
SCHEMAS: Final[dict[str, dict[str, dict[str, Any]]]] = {
    CHILD_RANGE: {
        "ocaRdmaNetwork": {
            "type": "string",
            "pattern": _CIDR_PATTERN,
            "default": str(DEFAULT_OCA_RDMA_NETWORK),
            "description": "The RDMA network Oracle Cloud Agent configures on the rails (its default "
            "10.224.0.0/12); the DRANET child range must not overlap it.",
        },
        "existingCidrs": {
            "type": "array",
            "default": [],
            "description": "CIDRs the stack does not declare but the child range must avoid: an existing "
            "VCN and its subnets, an existing cluster's pods and services CIDRs, peered networks.",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "what the range is, for messages"},
                    "cidr": {"type": "string", "pattern": _CIDR_PATTERN},
                },
                "required": ["name", "cidr"],
                "additionalProperties": False,
            },
        },
        "workerSubnetCidrs": {
            "type": "array",
            "default": [],
            "items": {"type": "string", "pattern": _CIDR_PATTERN},
            "description": "Primary VNIC subnets of the RDMA GPU nodes; the child range must be 4 bits "
            "larger (16 rails). Without it, the subnets the stack's GPU node pools depend on are used.",
        },
    },
    CLAIMS_ALIGNED: {
        "shape": {
            "type": "string",
            "default": DEFAULT_SHAPE,
            "description": "Shape to judge claims on when the stack declares no GPU node pool "
            "(an existing cluster).",
        },
        "shapeTopologies": {
            "type": "object",
            "default": {},
            "additionalProperties": {"type": "object"},
            "description": "Topologies (oke_gpu_rdma.topology dict format) for shapes whose GPU/NIC "
            "pairing the catalog does not verify, by shape name.",
        },
    },
    NO_DEVICE_PLUGIN_GPUS: {},
    NCCL_GID_INDEX: {},
    OKE_PROFILE_CLAIMS: {},
    DEVICE_PLUGIN_OFF: {},
    BASELINE: {},
}

DEFAULT_LEVELS: Final[dict[str, str]] = {
    CHILD_RANGE: "mandatory",
    CLAIMS_ALIGNED: "mandatory",
    NO_DEVICE_PLUGIN_GPUS: "mandatory",
    NCCL_GID_INDEX: "mandatory",
    OKE_PROFILE_CLAIMS: "mandatory",
    DEVICE_PLUGIN_OFF: "mandatory",
    BASELINE: "advisory",
}


@dataclass(frozen=True)
class ChildRangeConfig:
    oca: NamedRange | None
    existing: tuple[NamedRange, ...]
    workers: tuple[NamedRange, ...]
    problems: tuple[str, ...] = ()


@dataclass
class ClaimsConfig:
    shape: str
    topologies: dict[str, Topology] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _cidr(value: Any, key: str, problems: list[str]) -> IPv4Network | None:
    try:
        return parse_ipv4_network(value)
    except CidrError as err:
        problems.append(f"pack config {key}: {err}")
        return None


def child_range_config(raw: Mapping[str, Any]) -> ChildRangeConfig:
    """The address-plan values of the pack config; problems name the key."""
    problems: list[str] = []
    base = CHILD_RANGE
    oca_value = raw.get("ocaRdmaNetwork", str(DEFAULT_OCA_RDMA_NETWORK))
    oca_net = _cidr(oca_value, f"{base}.ocaRdmaNetwork", problems)
    oca = NamedRange("the OCA RDMA network (pack config ocaRdmaNetwork)", oca_net) if oca_net else None
    existing: list[NamedRange] = []
    items = raw.get("existingCidrs", [])
    if not isinstance(items, list):
        problems.append(f"pack config {base}.existingCidrs must be a list of {{name, cidr}}")
        items = []
    for i, item in enumerate(items):
        key = f"{base}.existingCidrs[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            problems.append(f"pack config {key} must be an object {{name, cidr}}")
            continue
        net = _cidr(item.get("cidr"), f"{key}.cidr", problems)
        if net is not None:
            existing.append(NamedRange(f"{item['name']} (pack config existingCidrs)", net))
    workers: list[NamedRange] = []
    subnets = raw.get("workerSubnetCidrs", [])
    if not isinstance(subnets, list):
        problems.append(f"pack config {base}.workerSubnetCidrs must be a list of CIDRs")
        subnets = []
    for i, item in enumerate(subnets):
        net = _cidr(item, f"{base}.workerSubnetCidrs[{i}]", problems)
        if net is not None:
            workers.append(NamedRange("worker subnet (pack config workerSubnetCidrs)", net))
    return ChildRangeConfig(oca, tuple(existing), tuple(workers), tuple(problems))


def claims_config(raw: Mapping[str, Any]) -> ClaimsConfig:
    shape = raw.get("shape", DEFAULT_SHAPE)
    result = ClaimsConfig(shape if isinstance(shape, str) else DEFAULT_SHAPE)
    if not isinstance(shape, str):
        result.problems.append(
            f"pack config {CLAIMS_ALIGNED}.shape must be a shape name like {DEFAULT_SHAPE}"
        )
    supplied = raw.get("shapeTopologies", {})
    if not isinstance(supplied, Mapping):
        result.problems.append(
            f"pack config {CLAIMS_ALIGNED}.shapeTopologies must map shape names to topologies"
        )
        supplied = {}
    for name, data in supplied.items():
        try:
            if not isinstance(data, Mapping):
                raise TopologyError("must be an object")
            # The engine hands pack config over as a protobuf Struct: whole numbers arrive as floats.
            result.topologies[name] = topology_from_dict({**plain(data), "shape": name})
        except TopologyError as err:
            result.problems.append(f"pack config {CLAIMS_ALIGNED}.shapeTopologies.{name}: {err}")
    return result


def topology_for(config: ClaimsConfig, shape: str) -> Topology:
    """The user's topology for ``shape`` or the catalog's verified one; TopologyError otherwise."""
    if shape in config.topologies:
        return config.topologies[shape]
    return resolve_topology(shape)


def validate_pack_config(config: Mapping[str, Any]) -> list[str]:
    """Problems with a whole pack config (what the CLI's schema check would refuse), one per line."""
    problems: list[str] = []
    for name, value in config.items():
        if name == "all":
            if value not in LEVELS:
                problems.append(f"all: {value!r} is not an enforcement level ({', '.join(LEVELS)})")
            continue
        if name not in SCHEMAS:
            problems.append(f"{name}: no such policy in this pack ({', '.join(SCHEMAS)})")
            continue
        if isinstance(value, str):
            if value not in LEVELS:
                problems.append(f"{name}: {value!r} is not an enforcement level ({', '.join(LEVELS)})")
            continue
        if not isinstance(value, Mapping):
            problems.append(f"{name}: expected an enforcement level or an object")
            continue
        for key, item in value.items():
            if key == "enforcementLevel":
                if item not in LEVELS:
                    problems.append(f"{name}.enforcementLevel: {item!r} is not one of {', '.join(LEVELS)}")
            elif key not in SCHEMAS[name]:
                known = ", ".join(["enforcementLevel", *SCHEMAS[name]])
                problems.append(f"{name}.{key}: unknown key (known: {known})")
        if name == CHILD_RANGE:
            problems += list(child_range_config(value).problems)
        elif name == CLAIMS_ALIGNED:
            problems += claims_config(value).problems
    return [p.removeprefix("pack config ") for p in problems]


def level(name: str) -> EnforcementLevel:
    """The policy's default enforcement level."""
    return EnforcementLevel(DEFAULT_LEVELS[name])


def schema(name: str) -> PolicyConfigSchema | None:
    """The policy's config schema for GetAnalyzerInfo (None for policies without properties)."""
    return PolicyConfigSchema(properties=SCHEMAS[name]) if SCHEMAS[name] else None
