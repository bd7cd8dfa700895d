"""The planned pools as the scheduler sees their nodes, with the GPU Operator's run-time labels
(stack_config/scheduling/pool_nodes.py)."""

from __future__ import annotations

from stack_config.loading import load_stack
from stack_config.scheduling.pool_nodes import gpu_product, planned_pools
from tests.support import EXAMPLE_REGION, raw_config


def test_gpu_pools_carry_the_operators_deploy_labels_and_keep_their_own() -> None:
    pools = {p.name: p for p in planned_pools(load_stack(raw_config("full"), "full", EXAMPLE_REGION).config)}
    labels = pools["gpu-b4-a"].labels
    assert labels["nvidia.com/gpu.present"] == "true"
    # The pool's own device-plugin=false survives the operator's labelling (addGPUStateLabels).
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert labels["nvidia.com/gpu.deploy.operator-validator"] == "true"
    assert labels["nvidia.com/gpu.deploy.container-toolkit"] == "true"
    # BM.GPU.B4.8 has A100s: MIG-capable by the operator's product rule.
    assert labels["nvidia.com/gpu.deploy.mig-manager"] == "true"
    assert pools["gpu-b4-a"].extended_resources == frozenset()
    # The CPU system pool has no NVIDIA PCI device: no GPU Operator labels.
    assert not [k for k in pools["system"].labels if k.startswith("nvidia.com/")]


def test_the_gpu_product_comes_from_the_shape_catalog() -> None:
    assert gpu_product("BM.GPU.B4.8") == "NVIDIA A100-SXM4-40GB"
    assert gpu_product("BM.Standard.E5.192") == ""
