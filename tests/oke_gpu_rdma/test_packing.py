"""Packing claims on one node, and the device-plugin path of seed 000."""

from __future__ import annotations

import pytest
import seed_claims

from oke_gpu_rdma.claims import DevicePluginWorker, pack_claims, pack_device_plugin_workers
from oke_gpu_rdma.errors import ClaimError
from oke_gpu_rdma.topology import get_topology

B4 = get_topology("BM.GPU.B4.8")


def test_two_aligned_4gpu_claims_get_disjoint_roots_and_stay_aligned() -> None:
    report = pack_claims(
        [seed_claims.aligned_4gpu_8rails_a, seed_claims.aligned_4gpu_8rails_a], B4, names=["job-a", "job-b"]
    )
    a, b = report.placements
    assert a.alignment == b.alignment == "aligned"
    roots_a = {d.root for d in a.devices}
    roots_b = {d.root for d in b.devices}
    assert len(roots_a) == len(roots_b) == 2
    assert roots_a.isdisjoint(roots_b)
    assert report.free == () and report.stranded == ()
    assert report.all_aligned


def test_a_third_claim_does_not_fit() -> None:
    claims = [seed_claims.aligned_4gpu_8rails_a] * 3
    report = pack_claims(claims, B4)
    assert [p.allocated for p in report.placements] == [True, True, False]
    assert "not allocated" in report.placements[2].message


def test_pair_check_then_unconstrained_claim_strands_devices() -> None:
    rails_only = seed_claims.rails_8_a
    report = pack_claims([seed_claims.pair_check, rails_only], B4)
    pair, rails = report.placements
    assert pair.alignment == "aligned"
    assert rails.alignment == "not applicable"
    # rails-8-a takes rdma0-3 (root 00) and rdma8-11 (root 7d): GPUs 0, 1, 4, 5 are left without rails.
    assert sorted(d.label.split(" (")[0] for d in report.stranded if d.kind == "gpu") == [
        "GPU 0",
        "GPU 1",
        "GPU 4",
        "GPU 5",
    ]
    assert "stranded" in report.lines()[-1]


def test_shape_any_packed_alone_is_unaligned() -> None:
    (p,) = pack_claims([seed_claims.shape_any], B4).placements
    assert p.alignment == "unaligned"
    assert p.misplaced


WORKERS = [
    DevicePluginWorker("job-a", 4, seed_claims.rails_8_a),
    DevicePluginWorker("job-b", 4, seed_claims.rails_8_a),
]


def test_device_plugin_workers_worst_case_matches_seed_run_1() -> None:
    report = pack_device_plugin_workers(WORKERS, B4)
    a, b = report.placements
    assert [d.label for d in a.devices if d.kind == "rail"] == [f"rdma{i}" for i in range(8)]
    assert [d.label for d in b.devices if d.kind == "rail"] == [f"rdma{i}" for i in range(8, 16)]
    # The kubelet may pick GPUs 4-7 for job a and 0-3 for job b (seed run 1 on 10.140.86.84):
    assert [d.label for d in a.misplaced_gpus] == ["GPU 4", "GPU 5", "GPU 6", "GPU 7"]
    assert [d.label for d in b.misplaced_gpus] == ["GPU 0", "GPU 1", "GPU 2", "GPU 3"]
    assert a.alignment == b.alignment == "unaligned"
    assert "GPUs whose root has none of its rails" in a.message


def test_device_plugin_workers_with_the_seeds_explicit_picks() -> None:
    # Run 1 on 10.140.89.190: job a got GPUs 2,3,4,5 and job b 0,1,6,7.
    workers = [
        DevicePluginWorker("job-a", 4, seed_claims.rails_8_a, (2, 3, 4, 5)),
        DevicePluginWorker("job-b", 4, seed_claims.rails_8_a, (0, 1, 6, 7)),
    ]
    a, b = pack_device_plugin_workers(workers, B4).placements
    assert [(d.label, d.root) for d in a.misplaced_gpus] == [("GPU 4", "pci0000:7d"), ("GPU 5", "pci0000:7d")]
    assert [(d.label, d.root) for d in b.misplaced_gpus] == [("GPU 0", "pci0000:00"), ("GPU 1", "pci0000:00")]


def test_device_plugin_best_case_is_aligned() -> None:
    report = pack_device_plugin_workers(WORKERS, B4, gpu_choice="best")
    assert all(p.alignment == "aligned" for p in report.placements)


def test_device_plugin_explicit_pick_errors() -> None:
    with pytest.raises(ClaimError, match="GPU 9 does not exist"):
        pack_device_plugin_workers([DevicePluginWorker("w", 1, None, (9,))], B4)
    with pytest.raises(ClaimError, match="lists 2 GPUs, it asks for 1"):
        pack_device_plugin_workers([DevicePluginWorker("w", 1, None, (0, 1))], B4)
