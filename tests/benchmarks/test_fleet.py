"""The fleet benchmark stack (benchmarks/fleet.py): 64 GPU pools over four shapes plus a CPU pool
preview clean, every claim template aligned on every shape, nothing for the pack to report."""

from __future__ import annotations

from collections import Counter

import yaml

from benchmarks.fleet import ADS, POOLS_PER_SHAPE, SHAPES, TEMPLATE_SETS, fleet_document
from oke_gpu_rdma.nodes.topology import shape_slug
from preview.cli import preview

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"


def test_the_fleet_stack_previews_clean(tmp_path):
    (tmp_path / "Pulumi.fleet.yaml").write_text(yaml.safe_dump(fleet_document()))
    result = preview("fleet", [tmp_path])
    pools = [r for r in result.run.resources if r.type == NODE_POOL]
    assert Counter(r.inputs["nodeShape"] for r in pools) == {
        "BM.GPU.B4.8": 16,
        "BM.GPU.H100.8": 16,
        "BM.GPU.H200.8": 16,
        "BM.GPU.A100-v2.8": 16,
        "VM.Standard.E5.Flex": 1,  # the CPU system pool
    }
    assert len(SHAPES) * POOLS_PER_SHAPE == 64
    gpu_pools = [r for r in pools if r.inputs["nodeShape"] != "VM.Standard.E5.Flex"]
    assert Counter(
        r.inputs["nodeConfigDetails"]["placementConfigs"][0]["availabilityDomain"] for r in gpu_pools
    ) == {
        ADS[0]: 22,
        ADS[1]: 21,
        ADS[2]: 21,
    }
    # The claim plan per shape: each shape's templates from its own topology, named by the shape, and the
    # first shape's (B4.8) under the one-shape names too.
    templates = sorted(r.inputs["metadata"]["name"] for r in result.run.resources if r.type == TEMPLATE)
    bases = ("aligned-4gpu-8rails", "aligned-8gpu-16rails", "all-rails")
    assert templates == sorted(
        [*(f"{base}-{shape_slug(shape)}" for shape in SHAPES for base in bases), *bases]
    )
    assert len(templates) == 3 * TEMPLATE_SETS
    topologies = result.pack_config["gpu-rail-claims-aligned"]["shapeTopologies"]
    assert sorted(topologies) == ["BM.GPU.A100-v2.8", "BM.GPU.H100.8", "BM.GPU.H200.8"]
    assert topologies["BM.GPU.H100.8"]["gpuProduct"] == "NVIDIA H100 80GB HBM3"
    assert result.findings == []
    # Scheduling on: one ResourceFlavor per shape (and the system pool's), each shape's 16 pools in its quota.
    flavors = sorted(
        r.inputs["metadata"]["name"] for r in result.run.resources if r.type.endswith(":ResourceFlavor")
    )
    assert [f.rsplit("-", 1)[0] for f in flavors] == sorted([*(shape_slug(s) for s in SHAPES), "system"])
    (queue,) = [r for r in result.run.resources if r.type.endswith(":ClusterQueue")]
    gpus = {
        f["name"].rsplit("-", 1)[0]: next(
            q["nominalQuota"] for q in f["resources"] if q["name"] == "oke-gpu-rdma/gpus"
        )
        for f in queue.inputs["spec"]["resourceGroups"][0]["flavors"]
    }
    assert gpus == {**{shape_slug(s): str(16 * 2 * 8) for s in SHAPES}, "system": "0"}
