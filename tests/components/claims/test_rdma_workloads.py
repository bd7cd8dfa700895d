"""Workload namespace, rail tools, NCCL settings and aligned claim templates (components/claims/rdma_workloads.py)."""

from __future__ import annotations

from collections.abc import Callable

import pulumi_kubernetes as k8s
import pytest

from components.claims.rdma_workloads import NCCL_CONFIGMAP, TOOLS_CONFIGMAP, tool_scripts
from components.typed_inputs import TypedInputError, to_input_type
from oke_gpu_rdma.claims import judge_claim
from oke_gpu_rdma.drivers.nccl import NCCL_FORBIDDEN_WITH_DRANET, NCCL_SETTINGS
from tests.support import Run, raw_config

TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
CONFIGMAP = "kubernetes:core/v1:ConfigMap"


def templates(run: Run) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in run.of_type(TEMPLATE)}


def test_namespace_enforces_baseline(run_stack: Callable[..., Run]) -> None:
    namespace = run_stack("dev").one("kubernetes:core/v1:Namespace", "workloads-namespace")
    assert namespace.inputs["metadata"] == {
        "name": "rdma-dranet",
        "labels": {f"pod-security.kubernetes.io/{mode}": "baseline" for mode in ("enforce", "warn", "audit")},
    }


def test_tools_and_nccl_config_maps(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    maps = {r.inputs["metadata"]["name"]: r.inputs for r in run.of_type(CONFIGMAP)}
    assert maps[TOOLS_CONFIGMAP]["data"] == tool_scripts()
    assert set(maps[TOOLS_CONFIGMAP]["data"]) == {"rail-map.sh"}
    nccl = maps[NCCL_CONFIGMAP]["data"]
    assert nccl == NCCL_SETTINGS
    assert nccl["NCCL_IB_TC"] == "41" and nccl["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    assert not set(NCCL_FORBIDDEN_WITH_DRANET) & set(nccl)
    assert run.run.outputs["ncclSettings"] == NCCL_SETTINGS


def test_templates_for_8_and_4_gpus_and_all_rails(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    found = templates(run)
    assert set(found) == {"aligned-8gpu-16rails", "aligned-4gpu-8rails", "all-rails"}
    assert all(t["metadata"]["namespace"] == "rdma-dranet" for t in found.values())
    eight = found["aligned-8gpu-16rails"]["spec"]["spec"]["devices"]
    assert [r["name"] for r in eight["requests"]] == [
        f"{kind}-{i}" for i in range(1, 5) for kind in ("gpus", "rails")
    ]
    assert eight["constraints"] == [
        {"requests": [f"gpus-{i}", f"rails-{i}"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
        for i in range(1, 5)
    ]
    assert run.run.outputs["claimTemplates"] == [
        {"name": "aligned-8gpu-16rails", "namespace": "rdma-dranet", "alignment": "pcieRoot"},
        {"name": "aligned-4gpu-8rails", "namespace": "rdma-dranet", "alignment": "pcieRoot"},
        {"name": "all-rails", "namespace": "rdma-dranet"},
    ]
    assert found["aligned-8gpu-16rails"]["metadata"]["annotations"] == {"oke-gpu-rdma/alignment": "pcieRoot"}
    assert "annotations" not in found["all-rails"]["metadata"]  # no GPUs: no alignment to state


def test_every_emitted_template_is_judged_as_intended(run_stack: Callable[..., Run]) -> None:
    found = templates(run_stack("dev"))
    for name, template in found.items():
        verdict = judge_claim(template, "BM.GPU.B4.8", name=name)
        expected = "not applicable" if name == "all-rails" else "aligned"
        assert verdict.kind == expected, verdict.message
    assert judge_claim(found["all-rails"], "BM.GPU.B4.8").allocatable


def test_template_namespace_override_and_custom_list(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("dev")
    raw["workloads"] = {
        "claimTemplates": [{"name": "pair", "gpusPerWorker": 2, "namespace": "team-a"}],
        "railsOnlyTemplate": None,
    }
    found = templates(run_stack("dev", raw))
    assert list(found) == ["pair"]
    assert found["pair"]["metadata"] == {
        "name": "pair",
        "namespace": "team-a",
        "annotations": {"oke-gpu-rdma/alignment": "pcieRoot"},
    }
    assert judge_claim(found["pair"], "BM.GPU.B4.8").kind == "aligned"


def test_typed_inputs_refuse_a_misspelt_field() -> None:
    with pytest.raises(
        TypedInputError, match=r"spec\.devices\.requests\[0\]\.exact is not a field of DeviceRequest"
    ):
        to_input_type(
            k8s.resource.v1.ResourceClaimTemplateSpecArgs,
            {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpus", "exact": {"deviceClassName": "gpu.nvidia.com"}}]
                    }
                }
            },
            "spec",
        )
    with pytest.raises(TypedInputError, match=r"containers\[0\]\.resource is not a field of Container"):
        to_input_type(k8s.core.v1.PodSpecArgs, {"containers": [{"name": "a", "resource": {}}]})
