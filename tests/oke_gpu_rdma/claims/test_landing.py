"""Where a claim can land: the drivers each pool's nodes run, from the releases' placement."""

from __future__ import annotations

from oke_gpu_rdma.claims.landing import (
    claim_lands,
    class_driver,
    drivers_on_pools,
    parse_taint,
    pinned_elsewhere,
)
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.nodes.cloud_init import NodeBootstrap, registered_taints, render_cloud_init
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, PoolNodes
from tests.fixtures import seed000

TYPE = "node.kubernetes.io/instance-type"


def test_class_driver_reads_the_driver_a_class_requires() -> None:
    assert class_driver(registry.DEVICE_CLASS_SELECTORS["dra.net"]) == dranet.DRIVER
    assert class_driver(registry.DEVICE_CLASS_SELECTORS["gpu.nvidia.com"]) == nvidia_gpu.DRIVER
    assert class_driver(['device.attributes["dra.net"].rdma == true']) is None


def test_taints_round_trip_through_the_cloud_init() -> None:
    text = render_cloud_init(NodeBootstrap(("nvidia.com/gpu=present:NoSchedule", "dedicated:NoExecute")))
    assert registered_taints(text) == ("nvidia.com/gpu=present:NoSchedule", "dedicated:NoExecute")
    assert registered_taints(render_cloud_init(NodeBootstrap(()))) == ()
    assert parse_taint("dedicated:NoExecute") == NodeTaint("dedicated", "", "NoExecute")
    assert parse_taint("nvidia.com/gpu=present:NoSchedule") == NodeTaint(
        "nvidia.com/gpu", "present", "NoSchedule"
    )


def test_drivers_on_pools_follow_selection_and_tolerations() -> None:
    plugins = [
        *dranet.workloads("dranet", {"nodeSelector": {TYPE: "BM.GPU.B4.8"}}),
        *nvidia_gpu.workloads("gpu", {"kubeletPlugin": {"nodeSelector": {"gpu": "yes"}, "tolerations": []}}),
    ]
    taint = (NodeTaint("nvidia.com/gpu", "present", "NoSchedule"),)
    pools = [
        PoolNodes("b4", {TYPE: "BM.GPU.B4.8", "gpu": "yes", "nvidia.com/gpu.present": "true"}, taint),
        PoolNodes("b4-untainted", {TYPE: "BM.GPU.B4.8", "gpu": "yes", "nvidia.com/gpu.present": "true"}),
        PoolNodes("cpu", {TYPE: "VM.Standard.E5.Flex"}),
    ]
    assert drivers_on_pools(plugins, pools, registry.DEVICE_CLASS_SELECTORS) == {
        "b4": frozenset({dranet.DRIVER}),  # the GPU driver does not tolerate the GPU taint
        "b4-untainted": frozenset({dranet.DRIVER, nvidia_gpu.DRIVER}),
        "cpu": frozenset(),
    }


def test_claim_lands_where_every_request_has_a_driver() -> None:
    both = frozenset({dranet.DRIVER, nvidia_gpu.DRIVER})
    wanted = {"gpus": {"gpu.nvidia.com"}, "rails": {"dra.net"}}
    assert claim_lands(wanted, registry.DEVICE_CLASS_SELECTORS, both, both)
    assert not claim_lands(wanted, registry.DEVICE_CLASS_SELECTORS, frozenset({nvidia_gpu.DRIVER}), both)
    # A driver the stack does not deploy may run anywhere.
    assert claim_lands(
        wanted,
        registry.DEVICE_CLASS_SELECTORS,
        frozenset({nvidia_gpu.DRIVER}),
        frozenset({nvidia_gpu.DRIVER}),
    )
    # firstAvailable: one alternative with its driver there is enough.
    assert claim_lands(
        {"any": {"dra.net", "gpu.nvidia.com"}},
        registry.DEVICE_CLASS_SELECTORS,
        frozenset({nvidia_gpu.DRIVER}),
        both,
    )


def _rails_on(shape: str, count: int = 4) -> dict:
    """seed pair-check with ``count`` GPUs and its rail request pinned to ``shape`` (oke.dra.net/shape)."""
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = count
    claim["spec"]["devices"]["requests"][1]["exactly"]["selectors"].append(
        {"cel": {"expression": f'device.attributes["oke.dra.net"].shape == "{shape}"'}}
    )
    return claim


def test_a_claim_pinned_to_another_shape_is_pinned_elsewhere_whatever_it_asks_for() -> None:
    """Its rails exist on a B4.8 node only if the node published the H100 shape: the DRA Filter never places it
    on B4.8, even when it asks for more GPUs than B4.8 has (that says nothing about the H100 nodes)."""
    b4 = CATALOG.topology("BM.GPU.B4.8")
    classes = registry.DEVICE_CLASS_SELECTORS
    h100 = "BM.GPU.H100.8"
    assert pinned_elsewhere(_rails_on(h100), b4, [h100], classes)
    assert pinned_elsewhere(_rails_on(h100, count=9), b4, [h100], classes)
    # Not for a shape it is not pinned to, nor for a claim whose devices exist on B4.8 (9 GPUs, unpinned).
    assert not pinned_elsewhere(_rails_on(h100), b4, ["BM.GPU.A100-v2.8"], classes)
    assert not pinned_elsewhere(_rails_on("BM.GPU.B4.8", count=9), b4, [h100], classes)
    # Nor for a rail no shape has: no shape it could be pinned to makes it allocatable.
    ghost = seed000("pair-check")
    ghost["spec"]["devices"]["requests"][1]["exactly"]["selectors"] = [
        {"cel": {"expression": 'device.attributes["dra.net"].ifName == "rdma99"'}}
    ]
    assert not pinned_elsewhere(ghost, b4, [h100], classes)
    # An invalid claim: not known, so not pinned.
    broken = _rails_on(h100)
    broken["spec"]["devices"]["requests"][0]["exactly"]["count"] = -1
    assert not pinned_elsewhere(broken, b4, [h100], classes)
