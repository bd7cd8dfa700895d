"""gpu-device-plugin-off: GPU pools the NVIDIA DRA driver serves carry device-plugin=false."""

from __future__ import annotations

from tests.policies.policy_helpers import (
    GPU_CHART,
    K8S_PROVIDER,
    analyze,
    resource,
    seed_plan,
    violations,
)

POLICY = "gpu-device-plugin-off"


def driver(selector=None):
    values = {
        "gpuResourcesEnabledOverride": True,
        "kubeletPlugin": {"nodeSelector": selector or {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}},
    }
    return resource(
        "kubernetes:helm.sh/v3:Release",
        "gpu-dra",
        {"chart": GPU_CHART, "version": "0.5.1", "values": values},
        provider=K8S_PROVIDER,
    )


def test_labelled_pool_passes():
    assert violations(analyze([*seed_plan(), driver()]), POLICY) == []


def test_pool_without_the_label_is_rejected():
    (v,) = violations(analyze([*seed_plan(device_plugin_label=False), driver()]), POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::gpu-b4")
    assert "nvidia.com/gpu.deploy.device-plugin is missing" in v.message
    assert "Release gpu-dra selects node.kubernetes.io/instance-type=BM.GPU.B4.8" in v.message


def test_pool_the_driver_does_not_select_and_stack_without_driver():
    other = driver({"node.kubernetes.io/instance-type": "BM.GPU.H100.8"})
    assert violations(analyze([*seed_plan(device_plugin_label=False), other]), POLICY) == []
    assert violations(analyze(seed_plan(device_plugin_label=False)), POLICY) == []


def test_driver_values_of_the_wrong_type_are_a_violation_not_a_crash():
    bad = resource(
        "kubernetes:helm.sh/v3:Release", "gpu-dra", {"chart": GPU_CHART, "values": ["not", "a", "map"]}
    )
    (v,) = violations(analyze([*seed_plan(), bad]), POLICY)
    assert v.message.startswith("Release gpu-dra: values must be")
    daemonset = resource(
        "kubernetes:apps/v1:DaemonSet",
        "gpu-plugin",
        {"spec": {"template": {"spec": {"containers": "nvidia-dra-driver-gpu"}}}},
    )
    (v,) = violations(analyze([*seed_plan(), daemonset]), POLICY)
    assert v.message.startswith("DaemonSet gpu-plugin: ")


# -- issue 11 item 7: node selection as the cluster will see it --------------------------------------


def _release(values):
    return resource(
        "kubernetes:helm.sh/v3:Release",
        "gpu-dra",
        {"chart": GPU_CHART, "values": values},
        provider=K8S_PROVIDER,
    )


def test_selector_on_the_gpu_operators_runtime_label_selects_the_gpu_pool():
    """nvidia.com/gpu.present is set at run time by the GPU Operator, not by the pool's initial labels."""
    release = _release({"kubeletPlugin": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}})
    (v,) = violations(analyze([*seed_plan(device_plugin_label=False), release]), POLICY)
    assert v.urn.endswith("::gpu-b4") and "nvidia.com/gpu.present=true" in v.message
    assert violations(analyze([*seed_plan(), release]), POLICY) == []


def test_chart_default_affinity_applies_when_values_set_none():
    """deployments/helm/dra-driver-nvidia-gpu/values.yaml: kubeletPlugin.affinity requires NFD's NVIDIA PCI
    labels or nvidia.com/gpu.present=true; the template renders it when the values set no other."""
    (v,) = violations(analyze([*seed_plan(device_plugin_label=False), _release({})]), POLICY)
    assert v.urn.endswith("::gpu-b4") and "node affinity" in v.message


def _affinity(*exprs):
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]
            }
        }
    }


def test_affinity_expressions_are_evaluated():
    """nodeaffinity.go: In / NotIn / Exists / DoesNotExist, terms ORed, expressions ANDed."""
    shape = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["BM.GPU.B4.8"]}
    selects = _release({"kubeletPlugin": {"affinity": _affinity(shape)}})
    assert len(violations(analyze([*seed_plan(device_plugin_label=False), selects]), POLICY)) == 1
    other = dict(shape, values=["BM.GPU.H100.8"])
    skips = _release({"kubeletPlugin": {"affinity": _affinity(other)}})
    assert violations(analyze([*seed_plan(device_plugin_label=False), skips]), POLICY) == []
    absent = {"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}
    skips = _release({"kubeletPlugin": {"affinity": _affinity(absent)}})
    assert violations(analyze([*seed_plan(device_plugin_label=False), skips]), POLICY) == []


def test_daemonset_affinity_counts_too():
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "gpu-kubelet-plugin", "namespace": "nvidia"},
        "spec": {
            "template": {
                "spec": {
                    "affinity": _affinity({"key": "nvidia.com/gpu.present", "operator": "Exists"}),
                    "containers": [
                        {
                            "name": "gpus",
                            "image": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.1",
                        }
                    ],
                }
            }
        },
    }
    from tests.policies.policy_helpers import k8s

    (v,) = violations(analyze([*seed_plan(device_plugin_label=False), k8s(ds)]), POLICY)
    assert v.urn.endswith("::gpu-b4")
