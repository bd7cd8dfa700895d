"""DRANET (kubernetes-sigs/dranet): its chart, the values it reads, where its pods go, the driver it runs,
the DeviceClass that selects its devices, the attributes it publishes and the slice it publishes on a node.

Sources: kubernetes-sigs/dranet `deployments/helm/dranet` (values.yaml, values.schema.json with
additionalProperties: false, so a misspelt key fails `helm install`), `pkg/apis/attributes.go`, and seed
000 (DeviceClass ``dra.net``, the rail selector, the attributes of ``rdma0``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oke_gpu_rdma.common import chart_placement as values_of
from oke_gpu_rdma.common.release_facts import DriverFacts, NodeSlices, ReleaseFacts
from oke_gpu_rdma.drivers import attributes
from oke_gpu_rdma.drivers.resource_slices import AttributeValue, Device, ResourceSlice
from oke_gpu_rdma.nodes.cidr_rules import DEFAULT_CHILD_RANGE
from oke_gpu_rdma.nodes.topology import Topology
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

CHART_NAME: Final = "dranet"
CHART: Final = f"oci://registry.k8s.io/networking/charts/{CHART_NAME}"
RELEASE: Final = CHART_NAME
# The DRANET image and the command in it carry the chart's name too.
BINARY: Final = CHART_NAME
DEFAULT_VERSION: Final = "v1.5.0"
NAMESPACE: Final = "kube-system"

# DRANET's OKE options (kubernetes-sigs/dranet: the chart passes args.cloudProviderOptions.<provider>
# as --cloud-provider-options=<provider>.<key>=<value>). The child range, as a value path and a flag.
PROVIDER_HINT_VALUE: Final = "args.cloudProviderHint"
OKE_HINT: Final = "OKE"
OKE_OPTIONS_VALUE: Final = "args.cloudProviderOptions.oke"
CHILD_RANGE_KEY: Final = "rdma-child-ipv4-cidr"
CHILD_RANGE_OPTION: Final = f"oke.{CHILD_RANGE_KEY}"
CHILD_RANGE_VALUE: Final = f"{OKE_OPTIONS_VALUE}.{CHILD_RANGE_KEY}"

# Values paths (dot-joined) the chart documents (values.yaml, values.schema.json); a path ending in ".*"
# admits any keys below it (free-form maps such as nodeSelector).
VALUE_PATHS: Final = frozenset(
    {
        "nameOverride",
        "fullnameOverride",
        "image.repository",
        "image.tag",
        "image.pullPolicy",
        "imagePullSecrets",
        "rbac.create",
        "podAnnotations.*",
        "podLabels.*",
        "logVerbosity",
        "args.filter",
        "args.moveIBInterfaces",
        PROVIDER_HINT_VALUE,
        CHILD_RANGE_VALUE,
        "args.profileProvider",
        "args.webhookURL",
        "args.featureGates",
        "extraVolumes",
        "extraVolumeMounts",
        "nodeSelector.*",
        "affinity.*",
        "tolerations",
        "resources.*",
        "serviceAccount.annotations.*",
    }
)

# The driver name, as it appears in ResourceSlice.spec.driver and in `device.driver`.
DRIVER: Final = "dra.net"
# The DRANET chart creates no DeviceClass; seed 000 creates `dra.net`.
DEVICE_CLASS: Final = "dra.net"
CLASS_SELECTOR: Final = 'device.driver == "dra.net"'

# DRANET attributes (domain dra.net).
IF_NAME: Final = "dra.net/ifName"
RDMA: Final = "dra.net/rdma"
RDMA_DEVICE: Final = "dra.net/rdmaDevice"
PCI_ADDRESS: Final = "dra.net/pciAddress"
NUMA_NODE: Final = "dra.net/numaNode"
VIRTUAL: Final = "dra.net/virtual"
DEVICE_TYPE: Final = "dra.net/type"

# Attributes the OKE provider of DRANET adds (seed 000, seed 003).
OKE_SHAPE: Final = "oke.dra.net/shape"
OKE_RDMA_CHILD_IPV4_CIDR: Final = "oke.dra.net/rdmaChildIpv4Cidr"
OKE_DEFAULT_CHILD_IPV4_CIDR: Final = str(DEFAULT_CHILD_RANGE)  # the range lives in cidr_rules.py

# The rail selector of seed 000: guards with has(), checks the rdma name prefix and the rdma flag, so
# the front-end NIC eth1 and virtual interfaces never match.
RAIL_SELECTOR: Final = (
    'has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma")'
    ' && device.attributes["dra.net"].rdma'
)

# values.yaml: one DaemonSet, `nodeSelector`, `affinity`, `tolerations` (default: Exists NoSchedule).
DEFAULT_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = ({"operator": "Exists", "effect": "NoSchedule"},)


def workloads(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    return [
        PodPlacement(
            f"DaemonSet {release} (chart {CHART_NAME})",
            node_selector=values_of.mapping(values, "nodeSelector"),
            affinity=values_of.mapping(values, "affinity"),
            tolerations=values_of.tolerations(values, "tolerations", DEFAULT_TOLERATIONS),
            daemonset=True,
            provides_device_classes=frozenset({DEVICE_CLASS}),
        )
    ]


def _pci_device_name(address: str) -> str:
    return "pci-" + address.replace(":", "-").replace(".", "-")


def _iface_device_name(ifname: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in ifname.lower())


def dranet_slice(
    topology: Topology, node_name: str, child_cidr: str = OKE_DEFAULT_CHILD_IPV4_CIDR
) -> ResourceSlice:
    """The slice DRANET v1.5.0 publishes on a node of ``topology`` (devices sorted by name).

    Each rail carries the attributes seed 000 shows for ``rdma0`` plus ``dra.net/virtual``. The slice also lists
    the front-end NIC ``eth1`` and virtual interfaces: they have an ``ifName`` but ``rdma`` false, so only a
    careless selector matches them. The IMDS attributes (``oke.dra.net/hpcIslandId`` ...) are left out: their
    values are per node and unknown. Device names are modelled: ``pci-<address>`` for PCI functions (DRANET
    names devices after their normalised PCI address) and the interface name otherwise.
    """
    devices: list[Device] = []
    for root in topology.roots:
        for rail in root.rails:
            attrs: dict[str, AttributeValue] = {
                IF_NAME: rail.name,
                RDMA: True,
                PCI_ADDRESS: rail.pci_address,
                NUMA_NODE: root.numa_node,
                VIRTUAL: False,
                attributes.NUMA_NODE: root.numa_node,
                attributes.PCIE_ROOT: root.name,
                OKE_SHAPE: topology.shape,
                OKE_RDMA_CHILD_IPV4_CIDR: child_cidr,
            }
            if rail.rdma_device:
                attrs[RDMA_DEVICE] = rail.rdma_device
            devices.append(
                Device(DRIVER, node_name, _pci_device_name(rail.pci_address), attrs, {}, "rail", rail.name)
            )
    for ifname in topology.front_end_interfaces:
        attrs = {IF_NAME: ifname, RDMA: False, VIRTUAL: False, OKE_SHAPE: topology.shape}
        devices.append(Device(DRIVER, node_name, _iface_device_name(ifname), attrs, {}, "other", ifname))
    for ifname in topology.virtual_interfaces:
        attrs = {
            IF_NAME: ifname,
            RDMA: False,
            VIRTUAL: True,
            DEVICE_TYPE: "vxlan" if "flannel" in ifname else "bridge",
            OKE_SHAPE: topology.shape,
        }
        devices.append(Device(DRIVER, node_name, _iface_device_name(ifname), attrs, {}, "other", ifname))
    devices.sort(key=lambda d: d.name)
    return ResourceSlice(DRIVER, node_name, node_name, tuple(devices))


def _publishes(topology: Topology, node_name: str, settings: NodeSlices) -> ResourceSlice:
    return dranet_slice(topology, node_name, settings.child_range)


FACTS: Final = ReleaseFacts(
    title="DRANET",
    chart_name=CHART_NAME,
    chart=CHART,
    repository=None,
    default_version=DEFAULT_VERSION,
    release=RELEASE,
    namespace=NAMESPACE,
    value_paths=VALUE_PATHS,
    workloads=workloads,
    drivers=(
        DriverFacts(
            DRIVER, "rails", {DEVICE_CLASS: (CLASS_SELECTOR,)}, _publishes, "nodeSelector", "affinity"
        ),
    ),
)
