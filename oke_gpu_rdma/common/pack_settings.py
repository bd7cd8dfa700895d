"""The policy pack's config: the file format, and the sections the program writes, as one typed contract.

`make preview` builds a :class:`PackConfig` from the stack config and writes it to
`rendered/<stack>/policy-pack-config.json`; `pulumi preview --policy-pack policies
--policy-pack-config <that file>` hands it to the pack, whose policies read their own section back
with the same models (:meth:`ChildRangeSettings.from_properties`, :meth:`ClaimsSettings.from_properties`).
The JSON schemas the pack reports to the CLI are generated from these models
(:meth:`PolicySettings.properties_schema`), so a renamed field breaks the type checker and the tests,
not a user's CI. Each model names its policy (:attr:`PolicySettings.policy`); which policies the pack
has, and their default levels, the pack's policy modules declare (`policies/oke_rdma_policies/rules/`):
a policy whose section the program does not write keeps its settings model in its own module.

File format (every key optional)::

    {
      "all": "mandatory",                                  # level of every policy
      "dranet-child-range": {"enforcementLevel": "mandatory", "ocaRdmaNetwork": "10.224.0.0/12",
                             "existingCidrs": [{"name": "existing VCN", "cidr": "10.140.0.0/16"}],
                             "workerSubnetCidrs": ["10.140.64.0/19"]},
      "gpu-rail-claims-aligned": {"shape": "BM.GPU.B4.8", "shapeTopologies": {},
                                  "kubernetesVersion": "v1.36.4", "childRange": "10.208.0.0/12",
                                  "managedDeviceClasses": [], "managedHelmReleases": []},
      "sriov-rail-root-devices": {"shapeTopologies": {}},  # the same topologies, for the SR-IOV
      "sriov-pods-all-rails": {"shapeTopologies": {}},     # policies that look shapes up
      "rdma-workloads-baseline": "disabled"                # a level alone is fine too
    }
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from ipaddress import IPv4Network
from typing import Annotated, Any, ClassVar, Final, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    field_validator,
)

from oke_gpu_rdma.claims import feature_gates
from oke_gpu_rdma.nodes import public_exposure
from oke_gpu_rdma.nodes.cidr_rules import (
    DEFAULT_CHILD_RANGE,
    DEFAULT_OCA_RDMA_NETWORK,
    CidrError,
    parse_ipv4_network,
)
from oke_gpu_rdma.nodes.shape_catalog import CATALOG, ShapeCatalog, verified_override_problem
from oke_gpu_rdma.nodes.topology import DEFAULT_SHAPE

Level = Literal["advisory", "mandatory", "remediate", "disabled"]
LEVELS: Final[tuple[str, ...]] = get_args(Level)
ALL_KEY: Final = "all"
LEVEL_KEY: Final = "enforcementLevel"

# Keys two sections share (the child range and the VF pool avoid the same referenced ranges).
OCA_RDMA_NETWORK_KEY: Final = "ocaRdmaNetwork"
EXISTING_CIDRS_KEY: Final = "existingCidrs"

CIDR_PATTERN: Final = r"^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$"


def _cidr(value: Any) -> IPv4Network:
    try:
        return parse_ipv4_network(value)
    except CidrError as err:
        raise ValueError(str(err)) from None


Cidr = Annotated[
    IPv4Network,
    BeforeValidator(_cidr),
    PlainSerializer(str, return_type=str),
    Field(json_schema_extra={"type": "string", "pattern": CIDR_PATTERN}),
]


def _plain_numbers(value: Any) -> Any:
    """The engine hands pack config over as a protobuf Struct: whole numbers arrive as floats."""
    if isinstance(value, Mapping):
        return {str(k): _plain_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class KeyedError(ValueError):
    """A problem with one key of a map-valued setting; the key joins the path in messages."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(message)


class SettingsError(ValueError):
    """A pack-config section that does not fit its model; one line per problem, naming the key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class PolicySettings(BaseModel):
    """One policy's properties. Unknown keys are errors, so a misspelt key is not a silent default."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    policy: ClassVar[str]
    """The name of the policy whose section this is, as the CLI and the file spell it."""

    @classmethod
    def from_properties(cls, raw: Mapping[str, Any]) -> Self:
        """Parse the properties the engine hands a policy; :class:`SettingsError` names each bad key."""
        data = {k: v for k, v in _plain_numbers(raw).items() if k != LEVEL_KEY}
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise SettingsError(_problems(cls, err)) from None

    @classmethod
    def key(cls, field: str) -> str:
        """How the file spells the field ``field`` (its alias), for messages."""
        info = cls.model_fields[field]
        return info.alias or field

    def properties(self) -> dict[str, Any]:
        """The section as JSON data, keys as the file spells them."""
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True)
        return data

    @classmethod
    def properties_schema(cls) -> dict[str, dict[str, Any]]:
        """The properties schema the pack reports for the policy (what the CLI validates), from the model."""
        schema = cls.model_json_schema(by_alias=True, mode="serialization")
        defs = schema.get("$defs", {})
        props: dict[str, dict[str, Any]] = {
            name: _inline(prop, defs) for name, prop in schema.get("properties", {}).items()
        }
        return props


def _problems(model: type[PolicySettings], err: ValidationError) -> list[str]:
    out = []
    for item in err.errors(include_url=False):
        path = str(model.policy)
        for part in item["loc"]:
            path += f"[{part}]" if isinstance(part, int) else f".{part}"
        message = str(item["msg"]).removeprefix("Value error, ")
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, KeyedError):
            path += f".{cause.key}"
            message = str(cause)
        if item["type"] == "extra_forbidden":
            known = ", ".join([LEVEL_KEY, *(f.alias or n for n, f in model.model_fields.items())])
            message = f"unknown key (known: {known})"
        out.append(f"{path}: {message}")
    return out


class NamedCidr(BaseModel):
    """A range the child range must avoid, with what it is (for messages)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="what the range is, for messages")
    cidr: Cidr


class ChildRangeSettings(PolicySettings):
    """dranet-child-range: the address plan the stack references but does not declare."""

    policy: ClassVar[str] = "dranet-child-range"

    oca_rdma_network: Cidr = Field(
        DEFAULT_OCA_RDMA_NETWORK,
        alias=OCA_RDMA_NETWORK_KEY,
        description="The RDMA network Oracle Cloud Agent configures on the rails (its default "
        "10.224.0.0/12); the DRANET child range must not overlap it.",
    )
    existing_cidrs: tuple[NamedCidr, ...] = Field(
        (),
        alias=EXISTING_CIDRS_KEY,
        description="CIDRs the stack does not declare but the child range must avoid: an existing VCN and "
        "its subnets, an existing cluster's pods and services CIDRs, peered networks.",
    )
    worker_subnet_cidrs: tuple[Cidr, ...] = Field(
        (),
        alias="workerSubnetCidrs",
        description="Primary VNIC subnets of the RDMA GPU nodes; the child range must be 4 bits larger "
        "(16 rails). Without it, the subnets the stack's GPU node pools depend on are used.",
    )


class ShapeTopologiesSettings(PolicySettings):
    """A section carrying the user's topologies (the stack's shapeTopologies): the policies that look
    shapes up do so in the shape catalog with these added (:meth:`catalog`)."""

    shape_topologies: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        alias="shapeTopologies",
        description="Topologies (oke_gpu_rdma.nodes.topology dict format) for shapes whose GPU/NIC pairing the "
        "catalog does not verify, by shape name.",
    )

    @field_validator("shape_topologies")
    @classmethod
    def _parse_topologies(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for shape, problems in CATALOG.with_topologies(value).problems().items():
            raise KeyedError(shape, "; ".join(problems))
        return value

    def catalog(self) -> ShapeCatalog:
        """The shape catalog with this section's topologies (a verified shape's file wins over them)."""
        return CATALOG.with_topologies(self.shape_topologies)

    def override_problems(self) -> list[str]:
        """One line per topology this section supplies for a verified shape: never used, so the policy
        reports it (a mandatory finding) and judges against the verified file."""
        return [
            f"pack config {self.policy}.shapeTopologies.{shape}: {verified_override_problem(shape)}"
            for shape in self.catalog().verified_overrides()
        ]


# Kubernetes object names (a DeviceClass): RFC 1123 subdomains (apimachinery validation IsDNS1123Subdomain).
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MANAGED_DEVICE_CLASSES_KEY: Final = "managedDeviceClasses"
MANAGED_HELM_RELEASES_KEY: Final = "managedHelmReleases"


def _name_list(value: Any) -> Any:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of names, got {value!r}")
    return tuple(value)


def _unique(values: tuple[str, ...]) -> tuple[str, ...]:
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"listed more than once: {', '.join(repeated)}; list each once")
    return values


def device_class_names(values: tuple[str, ...]) -> tuple[str, ...]:
    """``values`` if each is a DeviceClass name, listed once; else ValueError naming the bad one."""
    for value in values:
        if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
            raise ValueError(
                f"{value!r} is not a DeviceClass name (a lowercase RFC 1123 subdomain of at most 253 "
                "characters, such as dra.net)"
            )
    return _unique(values)


def release_names(values: tuple[str, ...]) -> tuple[str, ...]:
    """``values`` if each is a release name (no blanks), listed once; else ValueError naming the bad one."""
    for value in values:
        if not value or value != value.strip() or any(c.isspace() for c in value):
            raise ValueError(
                f"{value!r} is not a release name (the Pulumi resource name or the Helm release name)"
            )
    return _unique(values)


def _kubernetes_version(value: Any) -> str:
    try:
        feature_gates.release(value)
    except feature_gates.KubernetesVersionError as err:
        raise ValueError(str(err)) from None
    return str(value)


class ClaimsSettings(ShapeTopologiesSettings):
    """gpu-rail-claims-aligned: the shape to judge on without pools, user-supplied topologies, the cluster's
    Kubernetes version (whose API server and feature gates judge claims) and the DRANET child range."""

    policy: ClassVar[str] = "gpu-rail-claims-aligned"

    shape: str = Field(
        DEFAULT_SHAPE,
        description="Shape to judge claims on when the stack declares no GPU node pool (an existing cluster).",
    )
    kubernetes_version: Annotated[str, BeforeValidator(_kubernetes_version)] = Field(
        feature_gates.DEFAULT_KUBERNETES_VERSION,
        alias="kubernetesVersion",
        description="The cluster's Kubernetes version (v1.36.4): claims are judged with the fields its API "
        "server serves and the DRA features its feature gates turn on.",
        json_schema_extra={"pattern": r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?$"},
    )
    child_range: Cidr = Field(
        DEFAULT_CHILD_RANGE,
        alias="childRange",
        description="The DRANET OKE child range the rails publish as oke.dra.net/rdmaChildIpv4Cidr, when the "
        "stack does not declare DRANET itself (the stack's dranet.childRange).",
    )
    onboarding_shapes: tuple[str, ...] = Field(
        (),
        alias="onboardingShapes",
        description="Shapes the stack onboards (its nodePools[].onboarding): DRANET and the GPU DRA driver run "
        "on their pools, which have no topology yet, so a claim that can land there is reported as not judged "
        "on them (advisory) instead of blocking the stack.",
    )

    def properties(self) -> dict[str, Any]:
        # Left out while empty: the pack configs of stacks that onboard nothing stay as they were.
        data = super().properties()
        if not self.onboarding_shapes:
            del data["onboardingShapes"]
        return data

    managed_device_classes: Annotated[
        tuple[str, ...], BeforeValidator(_name_list), AfterValidator(device_class_names)
    ] = Field(
        (),
        alias=MANAGED_DEVICE_CLASSES_KEY,
        description="DeviceClasses managed elsewhere (another stack, an operator), whose claims are judged "
        "there: a claim on one the stack does not declare, or whose selectors the pack cannot evaluate, is "
        "then a note instead of a mandatory finding.",
    )
    managed_helm_releases: Annotated[
        tuple[str, ...], BeforeValidator(_name_list), AfterValidator(release_names)
    ] = Field(
        (),
        alias=MANAGED_HELM_RELEASES_KEY,
        description="helm.sh/v3 Releases of charts the pack does not know (Pulumi resource name or Helm release "
        "name) whose claims are judged elsewhere, or that hold none: Helm installs their objects, so the pack "
        "cannot see a claim in them; any other such release is a mandatory finding.",
    )


class RailRootDevicesSettings(ShapeTopologiesSettings):
    """sriov-rail-root-devices: user-supplied topologies (the rail PFs of their shapes)."""

    policy: ClassVar[str] = "sriov-rail-root-devices"


class PodsAllRailsSettings(ShapeTopologiesSettings):
    """sriov-pods-all-rails: user-supplied topologies (the rails of their shapes)."""

    policy: ClassVar[str] = "sriov-pods-all-rails"


class VfPoolSettings(PolicySettings):
    """sriov-vf-pool-range: the ranges the stack references but does not declare (as for the child range)."""

    policy: ClassVar[str] = "sriov-vf-pool-range"

    oca_rdma_network: Cidr = Field(
        DEFAULT_OCA_RDMA_NETWORK,
        alias=OCA_RDMA_NETWORK_KEY,
        description="The RDMA network Oracle Cloud Agent configures on the rails; the VF pool must not overlap it.",
    )
    existing_cidrs: tuple[NamedCidr, ...] = Field(
        (),
        alias=EXISTING_CIDRS_KEY,
        description="CIDRs the stack does not declare but the VF pool must avoid: an existing VCN and its "
        "subnets, an existing cluster's pods and services CIDRs, peered networks.",
    )


def _tagged_images(value: Any) -> Any:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of images (repo:tag), got {value!r}")
    bad = [v for v in value if "@" in v or ":" not in v.rsplit("/", 1)[-1]]
    if bad:
        raise ValueError(f"{bad[0]!r} is not an image by tag (repo:tag): list the tag the stack writes")
    return tuple(value)


class PinnedImagesSettings(PolicySettings):
    """images-pinned-by-digest: the images a stack may write by tag alone. Empty by default: an organisation
    allows an image it cannot pin on purpose, by name; the program writes the known gaps among the images a
    stack writes (oke_gpu_rdma/common/images.py KNOWN_GAPS, allowance_for)."""

    policy: ClassVar[str] = "images-pinned-by-digest"

    allow_unpinned: Annotated[tuple[str, ...], BeforeValidator(_tagged_images), AfterValidator(_unique)] = (
        Field(
            (),
            alias="allowUnpinned",
            description="Images (repo:tag, exactly as the stack writes them) that may stay unpinned: each one a "
            "known gap, with no digest published for its tag. Every other image a workload or chart value of the "
            "stack names must be repo[:tag]@sha256:<64 hex>.",
        )
    )


class PublicIngressSettings(PolicySettings):
    """public-ingress-exposure: how much of the internet one NSG or security list may let in. The program
    writes no section for it: the bar is the organisation's, not the stack file's (issue 36)."""

    policy: ClassVar[str] = "public-ingress-exposure"

    max_public_prefix: int = Field(
        public_exposure.DEFAULT_MAX_PUBLIC_PREFIX,
        ge=1,
        le=32,
        alias="maxPublicPrefix",
        description="The ingress sources of one NSG or security list may together cover no more public IPv4 "
        "addresses than one /N holds (private and special-purpose space not counted).",
    )
    max_public_prefix_v6: int = Field(
        public_exposure.DEFAULT_MAX_PUBLIC_PREFIX_V6,
        ge=1,
        le=128,
        alias="maxPublicPrefixV6",
        description="The same for IPv6 sources (global unicast, 2000::/3).",
    )


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    """Resolve `$ref`s (the CLI validates each policy's properties alone) and drop pydantic's titles."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        out = {k: _inline(v, defs) for k, v in node.items() if k != "title"}
        if out.get("type") == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


class PackConfig(BaseModel):
    """What the program writes for a stack: the sections it can derive; levels stay the pack's defaults."""

    model_config = ConfigDict(frozen=True)

    child_range: ChildRangeSettings
    claims: ClaimsSettings
    vf_pool: VfPoolSettings | None = None
    """Written for stacks with SR-IOV pools only."""
    rail_root_devices: RailRootDevicesSettings | None = None
    pods_all_rails: PodsAllRailsSettings | None = None
    """Both written for stacks with SR-IOV pools and shapeTopologies: the SR-IOV policies look the
    pools' shapes up too."""

    pinned_images: PolicySettings | None = None
    """The images policy's section (oke_gpu_rdma/common/images.py allowance_for): the known gaps among the images the
    stack writes; never an image the stack file names, since only known gaps are kept."""

    def to_dict(self) -> dict[str, Any]:
        sections = {
            ChildRangeSettings.policy: self.child_range.properties(),
            ClaimsSettings.policy: self.claims.properties(),
        }
        if self.pinned_images is not None:
            sections[self.pinned_images.policy] = self.pinned_images.properties()
        if self.vf_pool is not None:
            sections[VfPoolSettings.policy] = self.vf_pool.properties()
        for shapes in (self.rail_root_devices, self.pods_all_rails):
            if shapes is not None:
                sections[shapes.policy] = shapes.properties()
        return sections

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"
