"""The RDMA node's boot, run for real: the bootstrap and topology labeller exactly as the rendered cloud-init
writes and calls them, against a fake instance metadata service (a `curl` on PATH that answers from
recorded documents) and a fake `oke` node client that records the kubelet flags it is given."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from oke_gpu_rdma.nodes import cloud_init, labels
from oke_gpu_rdma.nodes.cloud_init import NodeBootstrap, render_cloud_init
from tests.fixtures.node_boot import boot_cloud_init, kubelet_flags, node_labels

TAINT = "nvidia.com/gpu=present:NoSchedule"

# A recorded /opc/v2/host/rdmaTopologyData (the shape oci-hpc-oke documents; OCIDs of the real length:
# the unique segment is 60 characters).
ISLAND = "ocid1.hpcisland.oc1.iad.anuwcljrg5pyaeycajoqlss2hz4f3kfjvg7y2hajdanvkwhbk4xgmd5x7bqaq"
BLOCK = "ocid1.computenetworkblock.oc1.iad.anuwcljrg5pyaeycn6ewt6nxkagpndlqxytr2lrb7hbrtxzz2jc3a4qq2vnq"
LOCAL = "ocid1.computelocalblock.oc1.iad.anuwcljrg5pyaeyc3aeivq6zh3lqf7p2jsgdxn6tqy4qbhemvxjxm6gm5aoq"
HOST = "ocid1.computebaremetalhost.oc1.iad.anuwcljrg5pyaeycujnbkp4amlvzw5s3f4fmszw7bz4bnpbnrrwhzo5sqbyq"
TOPOLOGY = {
    "customerHPCIslandId": ISLAND,
    "customerHostId": HOST,
    "customerLocalBlock": LOCAL,
    "customerNetworkBlock": BLOCK,
}
# /opc/v2/host/ on a tenancy without RDMA topology data: network block and rack only (DRANET v1.4.0
# pkg/cloudprovider/oke/oke.go imdsHostMetadata).
HOST_DOCUMENT = {
    "buildingId": "building:3e5a0a4a9a3f",
    "id": "ocid1.computebaremetalhost.oc1.iad.anuwcljrg5pyaeyc7wkbsqvjqv3fxzp5gsvyqn3ijqe5f6hvstgvhfwdr2pq",
    "networkBlockId": "network-block:9ad7c1d4b0e1",
    "rackId": "rack:41c2bb6f0a77",
}
INSTANCE_ID = "ocid1.instance.oc1.iad.anuwcljrg5pyaeycp2o7bdkmu3a5d6b4z7fqb5ctlwkhmgx3vdcz6xzlu2ya"


def suffix(ocid: str) -> str:
    """What DRANET publishes for an OCID (oke.go ocidSuffix): the last segment, at most 60 characters."""
    return ocid.rsplit(".", 1)[-1][-60:]


def value(identifier: str) -> str:
    return hashlib.sha256(identifier.encode()).hexdigest()[:32]


def boot(
    tmp_path: Path, documents: dict[str, str], taints: tuple[str, ...] = (TAINT,)
) -> subprocess.CompletedProcess[str]:
    """The rendered cloud-init of a pool with ``taints``, booted under tmp_path."""
    return boot_cloud_init(tmp_path, render_cloud_init(NodeBootstrap(taints)), documents)


def test_the_rendered_cloud_init_writes_the_labeller_and_hands_its_output_to_the_bootstrap() -> None:
    document = yaml.safe_load(render_cloud_init(NodeBootstrap((TAINT,))))
    files = {f["path"]: f for f in document["write_files"]}
    assert files[cloud_init.TOPOLOGY_LABELS_PATH]["content"] == cloud_init.TOPOLOGY_LABELS_SH
    assert files[cloud_init.TOPOLOGY_LABELS_PATH]["permissions"] == "0755"
    assert "http://169.254.169.254/opc/v2" in cloud_init.TOPOLOGY_LABELS_SH
    assert "host/rdmaTopologyData" in cloud_init.TOPOLOGY_LABELS_SH
    assert document["runcmd"][-1] == [
        cloud_init.BOOTSTRAP_PATH,
        f"--register-with-taints={TAINT}",
        cloud_init.TOPOLOGY_LABELS_PATH,
        labels.RDMA_HPC_ISLAND_LABEL,
        labels.RDMA_NETWORK_BLOCK_LABEL,
        labels.RDMA_LOCAL_BLOCK_LABEL,
    ]


def test_a_node_with_rdma_topology_data_registers_every_fabric_level(tmp_path: Path) -> None:
    result = boot(tmp_path, {"host/rdmaTopologyData": json.dumps(TOPOLOGY, indent=2)})
    assert result.returncode == 0, result.stderr
    flags = kubelet_flags(tmp_path)
    assert flags[0] == f"--register-with-taints={TAINT}"
    assert flags[1:] == [
        "--node-labels="
        f"oke-gpu-rdma/rdma-hpc-island={value(suffix(ISLAND))},"
        f"oke-gpu-rdma/rdma-network-block={value(suffix(BLOCK))},"
        f"oke-gpu-rdma/rdma-local-block={value(suffix(LOCAL))}"
    ]
    # Pinned once as text: the derivation is the contract with every other node and with DRANET's attributes.
    assert node_labels(flags)["oke-gpu-rdma/rdma-local-block"] == value(
        "anuwcljrg5pyaeyc3aeivq6zh3lqf7p2jsgdxn6tqy4qbhemvxjxm6gm5aoq"
    )
    assert result.stderr == ""


def test_the_labels_are_the_topologys_levels_and_valid_label_values(tmp_path: Path) -> None:
    boot(tmp_path, {"host/rdmaTopologyData": json.dumps(TOPOLOGY)})
    found = node_labels(kubelet_flags(tmp_path))
    # The kubelet sets kubernetes.io/hostname itself: the last level needs no flag.
    assert (*found, labels.HOSTNAME_LABEL) == labels.FABRIC_LEVEL_LABELS
    for label_value in found.values():
        assert len(label_value) == 32 <= 63 and all(c in "0123456789abcdef" for c in label_value)


def test_a_tenancy_without_topology_data_gets_the_network_block_and_a_local_block_per_host(
    tmp_path: Path,
) -> None:
    """No rdmaTopologyData (404): /opc/v2/host/ knows the network block; the island collapses onto it and the
    local block is the host's own (its instance's OCID), so no two nodes share a local block they may not be
    in."""
    result = boot(tmp_path, {"host/": json.dumps(HOST_DOCUMENT), "instance/id": INSTANCE_ID})
    assert result.returncode == 0, result.stderr
    block = value("network-block:9ad7c1d4b0e1")
    assert kubelet_flags(tmp_path)[1:] == [
        "--node-labels="
        f"oke-gpu-rdma/rdma-hpc-island={block},"
        f"oke-gpu-rdma/rdma-network-block={block},"
        f"oke-gpu-rdma/rdma-local-block={value(INSTANCE_ID)}"
    ]
    assert "no rdmaTopologyData" in result.stderr and "local block unknown" in result.stderr


def test_an_id_nested_in_the_host_document_is_not_taken_for_the_host(tmp_path: Path) -> None:
    """Issue 34 item 7: the host's identifier came from the last "id" anywhere in /opc/v2/host/, so a nested
    object's id (here a rack's, after the host's own) made every host of that rack one local block."""
    document = {**HOST_DOCUMENT, "rack": {"id": "rack:41c2bb6f0a77"}}
    seen = []
    for n, instance in enumerate((INSTANCE_ID, INSTANCE_ID[:-4] + "zzzz")):
        node = tmp_path / str(n)
        node.mkdir()
        result = boot(node, {"host/": json.dumps(document), "instance/id": instance})
        assert result.returncode == 0, result.stderr
        seen.append(node_labels(kubelet_flags(node))["oke-gpu-rdma/rdma-local-block"])
    assert seen == [value(INSTANCE_ID), value(INSTANCE_ID[:-4] + "zzzz")]
    assert value("rack:41c2bb6f0a77") not in seen


def test_two_hosts_of_one_network_block_without_topology_data_share_it_but_no_local_block(
    tmp_path: Path,
) -> None:
    seen = []
    for n, instance in enumerate((INSTANCE_ID, INSTANCE_ID[:-4] + "zzzz")):
        node = tmp_path / str(n)
        node.mkdir()
        assert boot(node, {"host/": json.dumps(HOST_DOCUMENT), "instance/id": instance}).returncode == 0
        seen.append(node_labels(kubelet_flags(node)))
    assert seen[0]["oke-gpu-rdma/rdma-network-block"] == seen[1]["oke-gpu-rdma/rdma-network-block"]
    assert seen[0]["oke-gpu-rdma/rdma-hpc-island"] == seen[1]["oke-gpu-rdma/rdma-hpc-island"]
    assert seen[0]["oke-gpu-rdma/rdma-local-block"] != seen[1]["oke-gpu-rdma/rdma-local-block"]


def test_a_missing_local_block_takes_the_host_and_a_missing_island_the_network_block(tmp_path: Path) -> None:
    partial = {"customerHostId": HOST, "customerNetworkBlock": BLOCK}
    assert boot(tmp_path, {"host/rdmaTopologyData": json.dumps(partial)}).returncode == 0
    assert node_labels(kubelet_flags(tmp_path)) == {
        "oke-gpu-rdma/rdma-hpc-island": value(suffix(BLOCK)),
        "oke-gpu-rdma/rdma-network-block": value(suffix(BLOCK)),
        "oke-gpu-rdma/rdma-local-block": value(suffix(HOST)),
    }


def test_without_a_host_document_the_instance_id_is_the_host(tmp_path: Path) -> None:
    assert boot(tmp_path, {"instance/id": INSTANCE_ID}).returncode == 0
    assert set(node_labels(kubelet_flags(tmp_path)).values()) == {value(INSTANCE_ID)}


def test_no_metadata_at_all_fails_the_boot_before_the_node_joins(tmp_path: Path) -> None:
    result = boot(tmp_path, {})
    assert result.returncode != 0
    assert "gave no host or instance id" in result.stderr
    assert not (tmp_path / "oke-args").exists()


@pytest.mark.parametrize("taints", [(), (TAINT, "dedicated:NoExecute")])
def test_the_taints_stay_the_first_flag(tmp_path: Path, taints: tuple[str, ...]) -> None:
    assert boot(tmp_path, {"host/rdmaTopologyData": json.dumps(TOPOLOGY)}, taints).returncode == 0
    flags = kubelet_flags(tmp_path)
    assert flags[:-1] == ([f"--register-with-taints={','.join(taints)}"] if taints else [])
    assert flags[-1].startswith("--node-labels=")


FABRIC = "ocid1.computegpumemoryfabric.oc1.iad.anuwcljrg5pyaeycxq2h7vwdd3ptmh4ce5ljwhyoyyzkmcgzb3b6tlbxaz7a"


def nvlink_boot(tmp_path: Path, documents: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return boot_cloud_init(
        tmp_path, render_cloud_init(NodeBootstrap((TAINT,), gpu_memory_fabric=True)), documents
    )


def test_a_multi_node_nvlink_node_registers_its_gpu_memory_fabric_below_the_local_block(
    tmp_path: Path,
) -> None:
    """rdmaTopologyData's customerGpuMemoryFabric (kubernetes-sigs/dranet pkg/cloudprovider/oke/oke.go), hashed
    as the other levels: the label DRANET's oke.dra.net/gpuMemoryFabricId maps to."""
    result = nvlink_boot(
        tmp_path, {"host/rdmaTopologyData": json.dumps({**TOPOLOGY, "customerGpuMemoryFabric": FABRIC})}
    )
    assert result.returncode == 0, result.stderr
    found = node_labels(kubelet_flags(tmp_path))
    assert (*found, labels.HOSTNAME_LABEL) == labels.NVLINK_LEVEL_LABELS
    assert (
        cloud_init.registered_label_keys(render_cloud_init(NodeBootstrap((TAINT,), gpu_memory_fabric=True)))
        == labels.NVLINK_LEVEL_LABELS[:-1]
    )
    assert found[labels.GPU_MEMORY_FABRIC_LABEL] == value(suffix(FABRIC))
    assert result.stderr == ""


def test_a_multi_node_nvlink_node_without_a_fabric_is_its_own_nvlink_domain(tmp_path: Path) -> None:
    result = nvlink_boot(tmp_path, {"host/rdmaTopologyData": json.dumps(TOPOLOGY)})
    assert result.returncode == 0, result.stderr
    assert node_labels(kubelet_flags(tmp_path))[labels.GPU_MEMORY_FABRIC_LABEL] == value(suffix(HOST))
    assert "GPU memory fabric unknown" in result.stderr
    # The other levels as every RDMA node registers them.
    assert node_labels(kubelet_flags(tmp_path))[labels.RDMA_LOCAL_BLOCK_LABEL] == value(suffix(LOCAL))


def test_other_shapes_register_no_fabric_label(tmp_path: Path) -> None:
    boot(tmp_path, {"host/rdmaTopologyData": json.dumps({**TOPOLOGY, "customerGpuMemoryFabric": FABRIC})})
    assert labels.GPU_MEMORY_FABRIC_LABEL not in node_labels(kubelet_flags(tmp_path))


def test_a_fabric_only_in_the_host_document_is_found_there(tmp_path: Path) -> None:
    """/opc/v2/host/ embeds rdmaTopologyData (kubernetes-sigs/dranet pkg/cloudprovider/oke/oke.go), where DRANET
    reads it: the label takes the same fabric."""
    host = {**HOST_DOCUMENT, "rdmaTopologyData": {**TOPOLOGY, "customerGpuMemoryFabric": FABRIC}}
    result = nvlink_boot(tmp_path, {"host/": json.dumps(host, indent=2), "instance/id": INSTANCE_ID})
    assert result.returncode == 0, result.stderr
    assert node_labels(kubelet_flags(tmp_path))[labels.GPU_MEMORY_FABRIC_LABEL] == value(suffix(FABRIC))
    assert "GPU memory fabric unknown" not in result.stderr


def test_a_multi_node_nvlink_node_without_metadata_fails_the_boot_before_it_joins(tmp_path: Path) -> None:
    """The labeller it wraps fails first (no host or instance id), and so does the wrapper: no node joins without
    its fabric labels."""
    result = nvlink_boot(tmp_path, {})
    assert result.returncode != 0
    assert "gave no host or instance id" in result.stderr
    assert not (tmp_path / "oke-args").exists()


def test_a_multi_node_nvlink_node_with_only_an_instance_id_is_its_own_domain(tmp_path: Path) -> None:
    result = nvlink_boot(tmp_path, {"instance/id": INSTANCE_ID})
    assert result.returncode == 0, result.stderr
    assert node_labels(kubelet_flags(tmp_path))[labels.GPU_MEMORY_FABRIC_LABEL] == value(INSTANCE_ID)
