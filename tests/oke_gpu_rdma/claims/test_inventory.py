"""Published inventory: the devices and attributes DRANET v1.5.0 and the NVIDIA DRA driver publish."""

from __future__ import annotations

from oke_gpu_rdma.claims.inventory import Version, node_inventory
from oke_gpu_rdma.drivers import attributes as attr
from oke_gpu_rdma.drivers import dranet as dranet_release
from oke_gpu_rdma.nodes.shape_catalog import CATALOG

B4 = CATALOG.topology("BM.GPU.B4.8")
INV = node_inventory(B4)


def test_rdma0_attributes_match_seed_000() -> None:
    rdma0 = INV.device("rdma0")
    assert rdma0.driver == "dra.net"
    assert {k: v for k, v in rdma0.attributes.items() if k != dranet_release.VIRTUAL} == {
        "dra.net/ifName": "rdma0",
        "dra.net/rdma": True,
        "dra.net/rdmaDevice": "mlx5_5",
        "dra.net/pciAddress": "0000:0c:00.0",
        "dra.net/numaNode": 3,
        "resource.kubernetes.io/numaNode": 3,
        "resource.kubernetes.io/pcieRoot": "pci0000:00",
        "oke.dra.net/shape": "BM.GPU.B4.8",
        "oke.dra.net/rdmaChildIpv4Cidr": "10.208.0.0/12",
    }


def test_dranet_slice_lists_front_end_and_virtual_interfaces_without_rdma() -> None:
    dranet = [d for d in INV.devices() if d.driver == "dra.net"]
    assert len(dranet) == 16 + 3
    others = {d.display: d for d in dranet if d.kind == "other"}
    assert set(others) == {"eth1", "cni0", "flannel.1"}
    for d in others.values():
        assert d.attributes[dranet_release.RDMA] is False
        assert isinstance(d.attributes[dranet_release.IF_NAME], str)
        assert d.root is None
    assert others["cni0"].attributes[dranet_release.VIRTUAL] is True
    assert [d.name for d in dranet] == sorted(d.name for d in dranet)  # DRANET sorts devices by name


def test_gpu_slice_in_driver_order_with_real_attribute_names_and_types() -> None:
    gpus = [d for d in INV.devices() if d.driver == "gpu.nvidia.com"]
    assert [d.name for d in gpus] == [f"gpu-{i}" for i in range(8)]
    gpu0 = gpus[0]
    assert gpu0.attributes[attr.PCI_BUS_ID] == "0000:50:00.0"
    assert gpu0.root == "pci0000:3e"
    assert gpu0.attributes["type"] == "gpu"
    assert isinstance(gpu0.attributes["cudaComputeCapability"], Version)
    assert gpu0.attribute("gpu.nvidia.com/type") == "gpu"  # unqualified name under the driver's domain
    assert gpu0.attribute("dra.net/type") is None
    assert gpu0.capacity["memory"] == 40 * 1024**3


def test_reordered_keeps_devices_and_changes_order() -> None:
    flipped = INV.reordered(slice_order=[1, 0], device_orders={0: list(range(7, -1, -1))})
    assert flipped.devices()[0].driver == "dra.net"
    assert flipped.devices()[-1].name == "gpu-0"
    assert set(flipped.devices()) == set(INV.devices())
    assert [p.driver for p in flipped.pools] == ["dra.net", "gpu.nvidia.com"]
