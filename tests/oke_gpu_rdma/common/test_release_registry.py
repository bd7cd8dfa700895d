"""The registry is what the claim inventory, the schedulability check and the policy pack read: a driver
registered there (here a made-up GPU driver, registered for one test) is seen by all three, and one that is not
registered by none."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from oke_rdma_policies.kube import PlainResource, device_classes

from oke_gpu_rdma.claims.inventory import node_inventory, shape_inventory
from oke_gpu_rdma.common import chart_placement as values_of
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.chart_workloads import release_workloads
from oke_gpu_rdma.common.release_facts import DriverFacts, NodeSlices, ReleaseFacts
from oke_gpu_rdma.drivers import attributes, dranet, nvidia_gpu
from oke_gpu_rdma.drivers.resource_slices import Device, ResourceSlice
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import Topology
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement
from preview.schedulability import pod_placements
from tests.fixtures import seed001
from tests.policies.policy_helpers import K8S_PROVIDER, analyze, k8s, resource, violations

CHART_NAME = "example-gpu-dra"
CHART = f"oci://example.com/charts/{CHART_NAME}"
DRIVER = "gpu.example.com"
DEVICE_CLASS = "gpu.example.com"
B4 = CATALOG.topology("BM.GPU.B4.8")


def _workloads(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    return [
        PodPlacement(
            f"DaemonSet {release}-plugin (chart {CHART_NAME})",
            node_selector=values_of.mapping(values, "plugin.nodeSelector"),
            daemonset=True,
            provides_device_classes=frozenset({DEVICE_CLASS}),
        )
    ]


def _publishes(topology: Topology, node_name: str, settings: NodeSlices) -> ResourceSlice:
    devices = tuple(
        Device(DRIVER, node_name, gpu.driver_name, {"type": "gpu", attributes.PCIE_ROOT: gpu.root}, {}, "gpu")
        for gpu in topology.gpus_in_driver_order
    )
    return ResourceSlice(DRIVER, node_name, node_name, devices)


EXAMPLE = ReleaseFacts(
    title="the example GPU driver",
    chart_name=CHART_NAME,
    chart=CHART,
    repository=None,
    default_version="1.0.0",
    release=CHART_NAME,
    namespace=CHART_NAME,
    value_paths=frozenset({"plugin.nodeSelector.*", "plugin.affinity.*"}),
    workloads=_workloads,
    drivers=(
        DriverFacts(
            DRIVER,
            "gpus",
            {DEVICE_CLASS: (f'device.driver == "{DRIVER}"',)},
            _publishes,
            "plugin.nodeSelector",
            "plugin.affinity",
        ),
    ),
)
SELECTOR = {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """EXAMPLE registered for one test; the judge's cached inventories built meanwhile are dropped after it."""
    monkeypatch.setattr(registry, "RELEASES", (*registry.RELEASES, EXAMPLE))
    yield
    shape_inventory.cache_clear()


def _release(chart: str = CHART) -> Any:
    values = {"plugin": {"nodeSelector": SELECTOR}}
    return resource(
        resource_types.HELM_RELEASE, "example-dra", {"chart": chart, "values": values}, provider=K8S_PROVIDER
    )


def test_the_shipped_registry_holds_each_release_once() -> None:
    names = [r.chart_name for r in registry.RELEASES]
    assert names == [
        "dra-driver-nvidia-gpu",
        "dranet",
        "gpu-operator",
        "nvidia-device-plugin",
        "network-operator",
        "kueue",
        "kube-prometheus-stack",
    ]
    assert registry.dra_driver_releases() == (nvidia_gpu.FACTS, dranet.FACTS)
    assert registry.device_class_selectors() == {
        nvidia_gpu.DEVICE_CLASS: (nvidia_gpu.CLASS_SELECTOR,),
        dranet.DEVICE_CLASS: (dranet.CLASS_SELECTOR,),
    }
    assert registry.dra_driver_chart_names() == (*nvidia_gpu.CHART_NAMES, dranet.CHART_NAME)
    assert registry.release_of_chart(dranet.CHART) is dranet.FACTS
    assert registry.release_of_chart(CHART) is None


def test_the_inventory_publishes_every_registered_drivers_slice(registered: None) -> None:
    inventory = node_inventory(B4)
    assert [s.driver for s in inventory.slices] == [nvidia_gpu.DRIVER, dranet.DRIVER, DRIVER]
    assert [d.name for d in inventory.slices[2].devices] == [f"gpu-{i}" for i in range(8)]


def test_the_inventory_of_an_unregistered_driver_is_empty() -> None:
    assert [s.driver for s in node_inventory(B4).slices] == [nvidia_gpu.DRIVER, dranet.DRIVER]


def test_the_schedulability_check_places_a_registered_charts_pods(registered: None) -> None:
    (pod,) = pod_placements([_release()])
    assert pod.name == f"DaemonSet example-dra-plugin (chart {CHART_NAME})"
    assert pod.node_selector == SELECTOR and pod.provides_device_classes == {DEVICE_CLASS}
    assert release_workloads(CHART_NAME, "x", {}) == _workloads("x", {})


def test_the_schedulability_check_knows_no_pods_of_an_unregistered_chart() -> None:
    assert pod_placements([_release()]) == []


def test_the_pack_sorts_a_registered_drivers_classes_as_gpus(registered: None) -> None:
    classes = device_classes([])
    assert DEVICE_CLASS in classes.gpu and DEVICE_CLASS not in classes.dranet
    declared = k8s(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "example-gpus"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    )
    assert (
        "example-gpus"
        in device_classes([PlainResource(declared.urn, declared.type, declared.name, declared.inputs)]).gpu
    )


def test_the_pack_keeps_a_registered_driver_off_the_sriov_nodes(registered: None) -> None:
    policy = k8s(seed001("sriov-network-node-policy"))
    (v,) = violations(analyze([_release(), policy]), "sriov-dra-disjoint")
    assert "which the example GPU driver (Release example-dra) also select" in v.message


def test_the_pack_does_not_know_an_unregistered_driver() -> None:
    policy = k8s(seed001("sriov-network-node-policy"))
    assert violations(analyze([_release(), policy]), "sriov-dra-disjoint") == []
