"""Shape topologies: BM.GPU.B4.8 facts from seed 000 (its shape file), refusal of unverified shapes,
the supplied-topology format and its messages."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from oke_gpu_rdma.common.errors import TopologyError, TopologyFormatError, UnverifiedTopologyError
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import topology_from_dict
from tests.support import topology_to_dict

B4 = CATALOG.topology("BM.GPU.B4.8")


def test_b4_8_has_four_roots_each_with_two_gpus_and_four_rails() -> None:
    assert B4.evidence == "verified"
    layout = {r.name: (r.numa_node, [g.bus for g in r.gpus], [x.name for x in r.rails]) for r in B4.roots}
    assert layout == {
        "pci0000:00": (3, ["0f", "15"], ["rdma0", "rdma1", "rdma2", "rdma3"]),
        "pci0000:3e": (1, ["50", "53"], ["rdma4", "rdma5", "rdma6", "rdma7"]),
        "pci0000:7d": (7, ["8c", "91"], ["rdma8", "rdma9", "rdma10", "rdma11"]),
        "pci0000:ba": (5, ["d6", "da"], ["rdma12", "rdma13", "rdma14", "rdma15"]),
    }


def test_b4_8_rail_addresses_and_known_rdma_devices() -> None:
    rails = {x.name: x for x in B4.rails}
    assert [x.pci_address for x in B4.root("pci0000:3e").rails] == [
        "0000:47:00.0",
        "0000:47:00.1",
        "0000:4b:00.0",
        "0000:4b:00.1",
    ]
    assert (rails["rdma0"].rdma_device, rails["rdma1"].rdma_device, rails["rdma15"].rdma_device) == (
        "mlx5_5",
        "mlx5_6",
        "mlx5_12",
    )
    assert rails["rdma2"].rdma_device is None  # not in the seeds: not invented


def test_gpu_numbering_seed_index_and_driver_name() -> None:
    assert [(g.index, g.root) for g in B4.gpus] == [
        (0, "pci0000:00"),
        (1, "pci0000:00"),
        (2, "pci0000:3e"),
        (3, "pci0000:3e"),
        (4, "pci0000:7d"),
        (5, "pci0000:7d"),
        (6, "pci0000:ba"),
        (7, "pci0000:ba"),
    ]
    gpu0 = B4.gpus_in_driver_order[0]
    assert (gpu0.driver_name, gpu0.bus, gpu0.root, gpu0.index) == ("gpu-0", "50", "pci0000:3e", 2)
    assert B4.gpus_in_driver_order[1].bus == "53"


@pytest.mark.parametrize("shape", ["BM.GPU.A100-v2.8", "BM.GPU.H100.8", "BM.GPU.H200.8", "BM.GPU.B200.8"])
def test_unverified_shapes_are_refused_with_the_way_out(shape: str) -> None:
    assert CATALOG.info(shape).evidence == "unverified"
    with pytest.raises(UnverifiedTopologyError, match="topology_from_dict"):
        CATALOG.resolve(shape)


def test_unknown_shape() -> None:
    with pytest.raises(TopologyError, match="not in the catalog"):
        CATALOG.topology("BM.GPU.X")


def test_round_trip_through_a_dict_and_yaml() -> None:
    data = topology_to_dict(B4)
    again = topology_from_dict(yaml.safe_load(yaml.safe_dump(data)))
    assert again.evidence == "user-supplied"
    assert topology_to_dict(again) == data
    assert CATALOG.resolve(data).roots == B4.roots


def _user(**change: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "shape": "BM.GPU.A100-v2.8",
        "roots": [
            {
                "name": "pci0000:00",
                "numaNode": 0,
                "gpus": ["0000:0f:00.0"],
                "rails": [{"name": "rdma0", "pciAddress": "0000:0c:00.0"}],
            }
        ],
    }
    data.update(change)
    return data


def test_user_topology_defaults_driver_order_to_bus_order() -> None:
    t = topology_from_dict(_user())
    assert t.gpus[0].driver_name == "gpu-0"
    assert t.rails[0].rdma_device is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shape": ""}, "topology.shape: required"),
        ({"roots": []}, "topology.roots: required"),
        ({"colour": 1}, "topology.colour: unknown key"),
        (
            {"roots": [{"name": "root0", "numaNode": 0, "gpus": [], "rails": []}]},
            "topology.roots[0].name: 'root0' is not a PCIe root like pci0000:3e",
        ),
        (
            {"roots": [{"name": "pci0000:00", "numaNode": 0, "gpus": ["0f:00.0"], "rails": []}]},
            "topology.roots[0].gpus[0]: '0f:00.0' is not a PCI address",
        ),
        (
            {
                "roots": [
                    {
                        "name": "pci0000:00",
                        "numaNode": 0,
                        "gpus": [],
                        "rails": [{"name": "eth2", "pciAddress": "0000:0c:00.0"}],
                    }
                ]
            },
            "topology.roots[0].rails[0].name: 'eth2' is not a rail name",
        ),
        ({"gpuDriverOrder": ["0000:99:00.0"]}, "topology.gpuDriverOrder: must list every GPU"),
        (
            {"virtualInterfaces": ["cni0", "rdma9"]},
            "topology.virtualInterfaces[1]: 'rdma9': non-rail interfaces must not use the rdma prefix",
        ),
    ],
)
def test_malformed_user_topology_messages(change: dict[str, Any], message: str) -> None:
    with pytest.raises(TopologyError) as info:
        topology_from_dict(_user(**change))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_duplicate_rail_across_roots() -> None:
    root = {
        "name": "pci0000:3e",
        "numaNode": 1,
        "gpus": [],
        "rails": [{"name": "rdma0", "pciAddress": "0000:47:00.0"}],
    }
    with pytest.raises(TopologyError, match="rail rdma0 is listed twice"):
        topology_from_dict(_user(roots=[*_user()["roots"], root]))


def test_every_problem_is_one_message_naming_its_key() -> None:
    root = {"name": "pci0000:3e", "numaNode": "1", "gpus": ["0000:50:00.0", 5], "rails": [{"name": "eth2"}]}
    with pytest.raises(TopologyFormatError) as info:
        topology_from_dict(_user(roots=[root], gpuMemoryBytes=True))
    assert info.value.problems == (
        "topology.gpuMemoryBytes: must be an int >= 0",
        "topology.roots[0].numaNode: required, an int >= 0",
        "topology.roots[0].gpus[1]: 5 is not a PCI address like 0000:50:00.0",
        "topology.roots[0].rails[0].name: 'eth2' is not a rail name like rdma4 (the rail selector matches the "
        "rdma prefix)",
        "topology.roots[0].rails[0].pciAddress: required, a PCI address like 0000:47:00.0",
    )
    assert str(info.value) == "; ".join(info.value.problems)


def test_unknown_nested_key_lists_the_allowed_ones() -> None:
    root = {**_user()["roots"][0], "numa": 0}
    with pytest.raises(TopologyError) as info:
        topology_from_dict(_user(roots=[root]))
    assert (
        str(info.value)
        == "topology.roots[0].numa: unknown key; allowed: name, numaNode, numaFrom, gpus, rails"
    )


def test_a_topology_read_from_a_cluster_says_so() -> None:
    t = topology_from_dict(_user(evidence="from-cluster", source="ResourceSlices of node gpu-1"))
    assert (t.evidence, t.source) == ("from-cluster", "ResourceSlices of node gpu-1")
    assert topology_from_dict(_user()).evidence == "user-supplied"


def test_a_supplied_topology_cannot_claim_to_be_verified() -> None:
    with pytest.raises(TopologyError) as info:
        topology_from_dict(_user(evidence="verified"))
    assert str(info.value) == (
        "topology.evidence: 'verified' is not user-supplied or from-cluster: only a shape file of "
        "oke_gpu_rdma/nodes/shapes/ verifies a shape"
    )


def test_alignment_level_and_groups_of_a_root_shape_and_a_numa_shape() -> None:
    b4 = CATALOG.topology("BM.GPU.B4.8")
    assert b4.alignment == "pcieRoot"
    assert [g.name for g in b4.groups] == ["pci0000:00", "pci0000:3e", "pci0000:7d", "pci0000:ba"]
    gb = CATALOG.topology("BM.GPU.GB200-v3.4")
    assert gb.alignment == "numaNode"
    assert [
        (g.name, g.label, [x.driver_name for x in g.gpus], [r.name for r in g.rails]) for g in gb.groups
    ] == [
        ("numa0", "NUMA node 0", ["gpu-0", "gpu-1"], ["rdma0", "rdma1", "rdma2", "rdma3"]),
        ("numa1", "NUMA node 1", ["gpu-2", "gpu-3"], ["rdma4", "rdma5", "rdma6", "rdma7"]),
    ]
    assert [r.numa_from for r in gb.roots if r.gpus] == ["pciDomain"] * 4
    assert {r.numa_from for r in gb.roots if r.rails} == {"rails"}
    assert gb.group_of_root("pci0018:00") == gb.groups[1]
    assert gb.group_of_root("pci0000:99") is None


def test_numa_from_belongs_only_on_a_root_without_rails() -> None:
    root = {**_user()["roots"][0], "numaFrom": "pciDomain"}
    with pytest.raises(TopologyError) as info:
        topology_from_dict(_user(roots=[root]))
    assert str(info.value) == (
        "topology.roots[0].numaFrom: a root with rails has the NUMA node its rails publish; remove numaFrom"
    )
    bad = {"name": "pci0008:00", "numaNode": 0, "numaFrom": "guess", "gpus": ["0008:06:00.0"]}
    with pytest.raises(TopologyError) as info:
        topology_from_dict(_user(roots=[*_user()["roots"], bad]))
    assert "roots[1].numaFrom: 'guess' is not pciDomain" in str(info.value)
