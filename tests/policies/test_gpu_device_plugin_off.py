"""gpu-device-plugin-off: GPU pools the NVIDIA DRA driver serves carry device-plugin=false."""

from __future__ import annotations

from policy_helpers import GPU_CHART, K8S_PROVIDER, analyze, resource, seed_plan, violations

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
    assert v.message.startswith("Helm release gpu-dra: values must be")
    daemonset = resource(
        "kubernetes:apps/v1:DaemonSet",
        "gpu-plugin",
        {"spec": {"template": {"spec": {"containers": "nvidia-dra-driver-gpu"}}}},
    )
    (v,) = violations(analyze([*seed_plan(), daemonset]), POLICY)
    assert v.message.startswith("DaemonSet gpu-plugin: ")
