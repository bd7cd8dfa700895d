"""Onboarding a shape from the cluster: ResourceSlice dumps in, the shapeTopologies entry out.

The fixture tests/fixtures/resourceslices/b4-two-nodes.yaml is what `kubectl get resourceslices -o
yaml` prints for two BM.GPU.B4.8 nodes running DRANET v1.5.0 and the NVIDIA DRA driver: the devices of
the claim judge's inventory model (oke_gpu_rdma/claims/inventory.py) with the drivers' attribute names,
plus attributes DRANET publishes that the model leaves out. `b4_dump()` builds it; a test keeps the
file equal to it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from oke_gpu_rdma.claims.inventory import AttributeValue, ResourceSlice, Version, node_inventory
from oke_gpu_rdma.common.errors import ResourceSliceDumpError
from oke_gpu_rdma.drivers import attributes as attr
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import topology_from_dict
from oke_gpu_rdma.nodes.topology_from_slices import load_dump, node_shapes, quantity_value, topology_entry
from tests.fixtures import FIXTURES

B4 = "BM.GPU.B4.8"
NODES = ("10.140.64.11", "10.140.64.12")
DUMP = FIXTURES / "resourceslices" / "b4-two-nodes.yaml"
# Attributes DRANET also publishes on a rail (kubernetes-sigs/dranet pkg/apis/attributes.go) that the
# inventory model leaves out: the reader must pass over them.
RAIL_EXTRAS: dict[str, dict[str, Any]] = {
    "dra.net/mtu": {"int": 4220},
    "dra.net/state": {"string": "up"},
    "dra.net/type": {"string": "device"},
    "dra.net/encapsulation": {"string": "ether"},
    "dra.net/pciVendor": {"string": "Mellanox Technologies"},
    "dra.net/sriov": {"bool": True},
}
GIB = 1 << 30


def encode(value: AttributeValue) -> dict[str, Any]:
    if isinstance(value, Version):
        return {"version": value.value}
    if isinstance(value, bool):
        return {"bool": value}
    return {"int": value} if isinstance(value, int) else {"string": value}


def slice_document(s: ResourceSlice) -> dict[str, Any]:
    devices = []
    for d in s.devices:
        attributes = {k: encode(v) for k, v in d.attributes.items()}
        if d.kind == "rail":
            attributes |= RAIL_EXTRAS
        device: dict[str, Any] = {"name": d.name, "attributes": dict(sorted(attributes.items()))}
        if d.capacity:
            device["capacity"] = {k: {"value": f"{v // GIB}Gi"} for k, v in d.capacity.items()}
        devices.append(device)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{s.node_name}-{s.driver.replace('.', '-')}-x7k2p"},
        "spec": {
            "driver": s.driver,
            "nodeName": s.node_name,
            "pool": {"name": s.pool, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def b4_dump() -> dict[str, Any]:
    topology = CATALOG.topology(B4)
    items = [slice_document(s) for node in NODES for s in node_inventory(topology, node).slices]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def dump_slices() -> list[Any]:
    return copy.deepcopy(b4_dump()["items"])


def test_the_fixture_is_the_inventory_model_as_kubectl_prints_it():
    assert yaml.safe_load(DUMP.read_text()) == b4_dump()


def test_two_b4_nodes_give_the_catalog_roots_gpus_and_rails():
    shape, entry = topology_entry(load_dump(DUMP.read_text(), DUMP.name), DUMP.name)
    assert shape == B4
    assert entry["evidence"] == "from-cluster"
    assert entry["source"] == (
        "ResourceSlices of nodes 10.140.64.11, 10.140.64.12 in b4-two-nodes.yaml (gpu.nvidia.com, dra.net)"
    )
    got, want = topology_from_dict({**entry, "shape": shape}), CATALOG.topology(B4)
    assert got.roots == want.roots  # names, NUMA nodes, GPUs (bus IDs, driver names), rails
    assert got.gpus_in_driver_order == want.gpus_in_driver_order
    assert (got.gpu_product, got.gpu_memory_bytes) == ("NVIDIA A100-SXM4-40GB", 40 * GIB)
    assert (got.front_end_interfaces, got.virtual_interfaces) == (("eth1",), ("cni0", "flannel.1"))
    assert (got.evidence, got.source) == ("from-cluster", entry["source"])
    assert entry["roots"][0] == {
        "name": "pci0000:00",
        "numaNode": 3,
        "gpus": ["0000:0f:00.0", "0000:15:00.0"],
        "rails": [
            {"name": "rdma0", "pciAddress": "0000:0c:00.0", "rdmaDevice": "mlx5_5"},
            {"name": "rdma1", "pciAddress": "0000:0c:00.1", "rdmaDevice": "mlx5_6"},
            {"name": "rdma2", "pciAddress": "0000:16:00.0"},
            {"name": "rdma3", "pciAddress": "0000:16:00.1"},
        ],
    }


def test_one_node_and_a_given_shape():
    shape, entry = topology_entry(dump_slices(), "d.yaml", node=NODES[1], shape=B4)
    assert shape == B4
    assert entry["source"] == "ResourceSlices of node 10.140.64.12 in d.yaml (gpu.nvidia.com, dra.net)"


def without_attribute(slices: list[Any], name: str) -> list[Any]:
    for s in slices:
        for d in s["spec"]["devices"]:
            d["attributes"].pop(name, None)
    return slices


def refusal(slices: list[Any], **kwargs: Any) -> str:
    with pytest.raises(ResourceSliceDumpError) as err:
        topology_entry(slices, "d.yaml", **kwargs)
    return str(err.value)


def test_a_dump_without_gpu_driver_slices_is_refused_naming_them():
    slices = [s for s in dump_slices() if s["spec"]["driver"] != nvidia_gpu.DRIVER]
    assert refusal(slices, node=NODES[0]) == (
        "d.yaml: node 10.140.64.11: missing GPU driver slices (driver gpu.nvidia.com: is the NVIDIA DRA "
        "driver's kubelet plugin running there?)"
    )


def test_a_dump_without_pcie_root_names_every_device_missing_it():
    message = refusal(without_attribute(dump_slices(), attr.PCIE_ROOT), node=NODES[0])
    assert message.startswith(
        "d.yaml: node 10.140.64.11: missing resource.kubernetes.io/pcieRoot on GPU gpu-0; "
        "resource.kubernetes.io/pcieRoot on GPU gpu-1; "
    )
    assert "resource.kubernetes.io/pcieRoot on rail rdma15 (pci-0000-d1-00-1)" in message
    assert "\n" not in message


def test_without_a_published_shape_the_shape_must_be_given():
    slices = without_attribute(dump_slices(), dranet.OKE_SHAPE)
    assert refusal(slices, node=NODES[0]) == (
        "d.yaml: node 10.140.64.11: missing its shape: no device publishes oke.dra.net/shape (DRANET's OKE "
        "provider adds it only in some releases); give it with SHAPE= (kubectl get node 10.140.64.11 -L "
        "node.kubernetes.io/instance-type) or NODES=<the output of kubectl get nodes -o yaml>"
    )
    assert topology_entry(slices, "d.yaml", shape=B4)[0] == B4
    assert topology_entry(slices, "d.yaml", labels=dict.fromkeys(NODES, B4))[0] == B4
    assert refusal(dump_slices(), shape="BM.GPU.H100.8", node=NODES[0]) == (
        "d.yaml: node 10.140.64.11: missing one agreed shape: SHAPE=BM.GPU.H100.8 but its devices' "
        "oke.dra.net/shape BM.GPU.B4.8 (give the node's own shape)"
    )
    assert refusal(slices, node=NODES[0], labels={NODES[0]: "BM.GPU.H100.8"}, shape=B4) == (
        "d.yaml: node 10.140.64.11: missing one agreed shape: SHAPE=BM.GPU.B4.8 but its "
        "node.kubernetes.io/instance-type label BM.GPU.H100.8 (give the node's own shape)"
    )


NODES_DUMP = """
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata:
      name: 10.140.64.11
      labels: {node.kubernetes.io/instance-type: BM.GPU.B4.8, kubernetes.io/hostname: 10.140.64.11}
  - apiVersion: v1
    kind: Node
    metadata:
      name: 10.140.64.12
      labels: {node.kubernetes.io/instance-type: BM.GPU.H100.8}
  - apiVersion: v1
    kind: Node
    metadata: {name: 10.140.0.5, labels: {node.kubernetes.io/instance-type: VM.Standard.E5.Flex}}
"""


def test_a_nodes_dump_names_each_node_s_shape_and_a_shape_picks_its_nodes():
    labels = node_shapes(NODES_DUMP, "nodes.yaml")
    assert labels == {
        "10.140.64.11": B4,
        "10.140.64.12": "BM.GPU.H100.8",
        "10.140.0.5": "VM.Standard.E5.Flex",
    }
    slices = without_attribute(dump_slices(), dranet.OKE_SHAPE)
    assert refusal(slices, labels=labels) == (
        "d.yaml: nodes of several shapes: BM.GPU.B4.8 (10.140.64.11); BM.GPU.H100.8 (10.140.64.12); "
        "pick one node with NODE="
    )
    shape, entry = topology_entry(slices, "d.yaml", labels=labels, shape="BM.GPU.H100.8")
    assert shape == "BM.GPU.H100.8"
    assert entry["source"] == "ResourceSlices of node 10.140.64.12 in d.yaml (gpu.nvidia.com, dra.net)"
    assert refusal(slices, labels=labels, shape="BM.GPU.H200.8") == (
        "d.yaml: no node of BM.GPU.H200.8 has dra.net or gpu.nvidia.com slices"
    )
    with pytest.raises(ResourceSliceDumpError) as err:
        node_shapes("apiVersion: v1\nkind: List\nitems: []\n", "nodes.yaml")
    assert str(err.value) == (
        "nodes.yaml: holds no Node with a node.kubernetes.io/instance-type label; "
        "dump them with `kubectl get nodes -o yaml > nodes.yaml`"
    )


def test_nodes_that_disagree_are_refused():
    slices = dump_slices()
    second_gpu = next(
        s for s in slices if s["spec"]["nodeName"] == NODES[1] and s["spec"]["driver"] == "gpu.nvidia.com"
    )
    second_gpu["spec"]["devices"][0]["attributes"][attr.PCIE_ROOT] = {"string": "pci0000:7d"}
    assert refusal(slices) == (
        "d.yaml: nodes 10.140.64.11 and 10.140.64.12 of BM.GPU.B4.8 publish different roots; "
        "check the odd node, or pick one with NODE="
    )
    assert topology_entry(slices, "d.yaml", node=NODES[0])[0] == B4


def test_unknown_node_and_empty_dump():
    assert refusal(dump_slices(), node="10.0.0.9") == (
        "d.yaml: no dra.net or gpu.nvidia.com ResourceSlice of node 10.0.0.9 (nodes with one: "
        "10.140.64.11, 10.140.64.12); pick one with NODE="
    )
    with pytest.raises(
        ResourceSliceDumpError, match=r"^d.yaml: holds no resource.k8s.io/v1 ResourceSlice; dump"
    ):
        load_dump("apiVersion: v1\nkind: List\nitems: []\n", "d.yaml")
    beta = "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceSlice\nmetadata: {name: s}\n"
    with pytest.raises(
        ResourceSliceDumpError,
        match=r"ResourceSlice s is resource\.k8s\.io/v1beta1, this reads resource\.k8s\.io/v1 ",
    ):
        load_dump(beta, "d.yaml")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("40Gi", 40 * GIB),
        ("42949672960", 42949672960),
        ("4e3", 4000),
        ("80G", 80 * 10**9),
        ("1.5Ki", 1536),
        ("x", None),
    ],
)
def test_quantities(text, value):
    assert quantity_value(text) == value


def test_a_rail_the_rail_selector_would_miss_is_refused_by_the_format():
    slices = dump_slices()
    for s in slices:
        for d in s["spec"]["devices"]:
            if d["attributes"].get(dranet.IF_NAME) == {"string": "rdma3"}:
                d["attributes"][dranet.IF_NAME] = {"string": "ens3f1"}
    assert refusal(slices, node=NODES[0]) == (
        "d.yaml: the slices of 10.140.64.11 give no valid topology: topology.roots[0].rails[0].name: "
        "'ens3f1' is not a rail name like rdma4 (the rail selector matches the rdma prefix)"
    )


def test_a_file_that_is_not_yaml_is_one_line():
    with pytest.raises(ResourceSliceDumpError) as err:
        load_dump("items:\n  - {a: [\n", "d.yaml")
    assert str(err.value) == (
        "d.yaml: not YAML (line 3: expected the node content, but found '<stream end>'); "
        "dump it with `kubectl get resourceslices -o yaml > d.yaml`"
    )


GB200_SLICES = load_dump((FIXTURES / "resourceslices" / "gb200-v3.4-published.yaml").read_text(), "gb.yaml")


def test_gpu_roots_without_rails_take_the_numa_node_of_the_rails_of_their_pci_domain_socket():
    _, entry = topology_entry(GB200_SLICES, "gb.yaml", shape="BM.GPU.GB200-v3.4")
    by_root = {
        r["name"]: (r["numaNode"], r.get("numaFrom"), r["gpus"], [x["name"] for x in r["rails"]])
        for r in entry["roots"]
    }
    assert by_root["pci0008:00"] == (0, "pciDomain", ["0008:06:00.0"], [])
    assert by_root["pci0019:00"] == (1, "pciDomain", ["0019:06:00.0"], [])
    assert by_root["pci0010:00"] == (1, None, [], ["rdma4", "rdma5"])  # published by DRANET: no numaFrom


def test_a_gpu_root_whose_socket_has_no_rail_is_refused_naming_the_domains():
    slices = copy.deepcopy(GB200_SLICES)
    rails = slices[1]["spec"]["devices"]
    slices[1]["spec"]["devices"] = [
        d for d in rails if not d["attributes"]["dra.net/pciAddress"]["string"].startswith("001")
    ]
    message = refusal(slices, shape="BM.GPU.GB200-v3.4")
    assert message == (
        "d.yaml: node 10.140.65.248: missing a NUMA node for PCIe root pci0018:00: it has GPUs but no rail, the "
        "GPU driver publishes none, and the rails of PCI domains 001x publish none; a NUMA node for PCIe root "
        "pci0019:00: it has GPUs but no rail, the GPU driver publishes none, and the rails of PCI domains 001x "
        "publish none (or pick another node with NODE=)"
    )


def test_a_gpu_root_whose_socket_rails_disagree_is_refused():
    slices = copy.deepcopy(GB200_SLICES)
    slices[1]["spec"]["devices"][0]["attributes"]["dra.net/numaNode"] = {"int": 1}  # rdma0 on NUMA 1
    message = refusal(slices, shape="BM.GPU.GB200-v3.4")
    assert "one NUMA node for PCIe root pci0000:00 (its rails publish [0, 1])" in message
    assert "the rails of PCI domains 000x publish [0, 1]" in message
