"""What every section of the stack config model (stack_config/model.py) builds on: the base model, the
value types and their validators (OCIDs, CIDRs, versions, labels, shapes), and OKE's limits."""

from __future__ import annotations

import difflib
import re
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StrictBool,
)

from oke_gpu_rdma.nodes import cidr_rules as cidr
from oke_gpu_rdma.nodes.oci_regions import is_known_region, parse_ocid, unknown_region
from oke_gpu_rdma.nodes.shape_catalog import CATALOG

PROJECT = "oke-gpu-rdma"
# OCI names VM shapes VM.<family>...; a compute cluster is "a remote direct memory access (RDMA) network group"
# of HPC, GPU or optimized instances (OCI API, core model ComputeCluster), which the RDMA GPU shapes join as bare
# metal (BM.); a VM GPU shape such as VM.GPU.A10.1 has no RDMA rails.
VM_SHAPE_PREFIX = "VM."

_K8S_VERSION = re.compile(r"^v1\.(\d+)\.\d+$")
# Every DRA object here is resource.k8s.io/v1, served from Kubernetes 1.34 on (KEP-4381: DRA GA in 1.34).
MIN_KUBERNETES_MINOR = 34
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
# Kubernetes' label limits (apimachinery pkg/util/validation/validation.go: IsQualifiedName, a name part
# of at most 63 characters and a DNS-1123 subdomain prefix of at most 253; IsValidLabelValue, at most 63).
LABEL_NAME_MAX = 63
LABEL_PREFIX_MAX = 253
LABEL_VALUE_MAX = 63


def is_label_key(key: str) -> bool:
    """Whether ``key`` is a Kubernetes label (or taint) key, lengths included."""
    prefix, _, name = key.rpartition("/")
    return bool(_LABEL_KEY.match(key)) and len(name) <= LABEL_NAME_MAX and len(prefix) <= LABEL_PREFIX_MAX


def is_label_value(value: str) -> bool:
    """Whether ``value`` is a Kubernetes label (or taint) value."""
    return bool(_LABEL_VALUE.match(value)) and len(value) <= LABEL_VALUE_MAX


# OKE's node limits for enhanced clusters (Oracle, "Considerations when Defining Enhanced Clusters with Large
# Numbers of Managed Nodes" and "Kubernetes Engine Limits"): at most 1,000 managed nodes in a node pool and
# 2,000 in a cluster. The node pools of a stack therefore number at most 2,000 as well (each has a node).
MAX_NODES_PER_POOL = 1000
MAX_NODES_PER_CLUSTER = 2000
MAX_NODE_POOLS = MAX_NODES_PER_CLUSTER


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _ocid_of(*kinds: str, regional: bool) -> AfterValidator:
    """An OCID of one of ``kinds`` (resource types); with a region exactly when the kind is ``regional``.

    Oracle, "Resource Identifiers": ocid1.<RESOURCE TYPE>.<REALM>.[REGION][.FUTURE USE].<UNIQUE ID>; the
    region is empty for tenancy-wide resources (tenancy, compartments) and set for regional ones (VCNs,
    subnets, clusters, images, compute clusters). OCI answers a wrong kind with 404 NotAuthorizedOrNotFound
    only after some resources exist.
    """
    example = f"ocid1.{kinds[0]}.oc1.{'<region>' if regional else ''}.<unique id>"
    wanted = " or ".join(kinds)

    def check(value: str) -> str:
        parsed = parse_ocid(value)
        if parsed is None:
            raise ValueError(f"is not an OCI OCID (expected {example})")
        if parsed.kind not in kinds:
            raise ValueError(f"is {_a(parsed.kind)} OCID; this key takes {_a(wanted)} OCID ({example})")
        if regional and parsed.region is None:
            raise ValueError(
                f"has no region, but {_a(parsed.kind)} OCID is regional ({example}); copy it whole from OCI"
            )
        if not regional and parsed.region is not None:
            raise ValueError(
                f"has a region, but {_a(parsed.kind)} OCID is tenancy-wide ({example}); copy it whole from OCI"
            )
        return value

    return AfterValidator(check)


def kubernetes_minor(version: str) -> int | None:
    """The minor of a `v1.X.Y` version (34 for v1.34.1); None for text of another form."""
    match = _K8S_VERSION.match(version)
    return int(match.group(1)) if match else None


def _k8s_version(value: str) -> str:
    minor = kubernetes_minor(value)
    if minor is None:
        raise ValueError("is not a Kubernetes version of the form v1.X.Y (for example v1.34.1)")
    if minor < MIN_KUBERNETES_MINOR:
        raise ValueError(
            f"is older than v1.{MIN_KUBERNETES_MINOR}: the claim templates and DeviceClasses are "
            f"resource.k8s.io/v1, which Kubernetes serves from v1.{MIN_KUBERNETES_MINOR}; use an OKE "
            f"version v1.{MIN_KUBERNETES_MINOR}.x or later"
        )
    return value


def _dns_label(value: str) -> str:
    if len(value) > 40 or not _DNS_LABEL.match(value):
        raise ValueError(
            "must be lowercase letters, digits and '-', start with a letter, at most 40 characters"
        )
    return value


def _cidr(value: Any) -> IPv4Network:
    try:
        return cidr.parse_ipv4_network(value)
    except cidr.CidrError as err:
        raise ValueError(str(err)) from None


def _oci_block(value: IPv4Network) -> IPv4Network:
    if not cidr.OCI_PREFIX_MIN <= value.prefixlen <= cidr.OCI_PREFIX_MAX:
        raise ValueError(
            f"OCI accepts VCN and subnet blocks from /{cidr.OCI_PREFIX_MIN} to /{cidr.OCI_PREFIX_MAX}"
        )
    return value


def _child_prefix(value: IPv4Network) -> IPv4Network:
    if not cidr.CHILD_PREFIX_MIN <= value.prefixlen <= cidr.CHILD_PREFIX_MAX:
        raise ValueError(
            f"has prefix /{value.prefixlen}; DRANET accepts child ranges from /{cidr.CHILD_PREFIX_MIN} "
            f"to /{cidr.CHILD_PREFIX_MAX}"
        )
    return value


def _not_everywhere(value: IPv4Network) -> IPv4Network:
    if value.prefixlen == 0:
        raise ValueError(
            "opens the Kubernetes API to every address on the internet; list the networks that need it "
            "(your office or VPN egress CIDR, a /32 per admin host), or keep the endpoint private "
            "(apiEndpointPublic: false) and reach it from inside the VCN"
        )
    return value


def _region(value: str) -> str:
    if not is_known_region(value):
        raise ValueError(unknown_region(value))
    return value


def _shape(value: str) -> str:
    names = CATALOG.names
    if value not in names:
        by_case = [n for n in names if n.lower() == value.lower()]
        close = by_case or difflib.get_close_matches(value, list(names), n=1, cutoff=0.6)
        guess = f"did you mean {close[0]}? (shape names are case-sensitive) " if close else ""
        raise ValueError(f"is not a known RDMA GPU shape; {guess}known shapes: {', '.join(sorted(names))}")
    return value


CompartmentOcid = Annotated[str, _ocid_of("compartment", "tenancy", regional=False)]
VcnOcid = Annotated[str, _ocid_of("vcn", regional=True)]
SubnetOcid = Annotated[str, _ocid_of("subnet", regional=True)]
ClusterOcid = Annotated[str, _ocid_of("cluster", regional=True)]
ImageOcid = Annotated[str, _ocid_of("image", regional=True)]
ComputeClusterOcid = Annotated[str, _ocid_of("computecluster", regional=True)]
KmsKeyOcid = Annotated[str, _ocid_of("key", regional=True)]
KubernetesVersion = Annotated[str, AfterValidator(_k8s_version)]
Cidr = Annotated[IPv4Network, BeforeValidator(_cidr)]
OciBlock = Annotated[IPv4Network, BeforeValidator(_cidr), AfterValidator(_oci_block)]
ApiAllowedCidr = Annotated[IPv4Network, BeforeValidator(_cidr), AfterValidator(_not_everywhere)]
ChildRange = Annotated[IPv4Network, BeforeValidator(_cidr), AfterValidator(_child_prefix)]
DnsLabel = Annotated[str, AfterValidator(_dns_label)]
ShapeName = Annotated[str, AfterValidator(_shape)]
Region = Annotated[str, AfterValidator(_region)]


def _config_text_bool(value: Any) -> Any:
    """A top-level switch as the Pulumi CLI stores it (`pulumi config set key false` writes the text
    "false"): read as the SDK's Config.get_bool reads it ("true"/"True", "false"/"False"; pulumi/config.py
    _get_bool), anything else left for StrictBool to refuse."""
    if value in ("true", "True"):
        return True
    if value in ("false", "False"):
        return False
    return value


# A switch at the top of the stack config (a plain `oke-gpu-rdma:<key>`, text when the CLI set it).
ConfigSwitch = Annotated[StrictBool, BeforeValidator(_config_text_bool)]
CniType = Literal["FLANNEL_OVERLAY", "OCI_VCN_IP_NATIVE"]


class ConfigModel(BaseModel):
    """Strict about unknown keys, so a misspelt key is an error and not a silent default."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)
