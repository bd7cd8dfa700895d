"""sriov-dra-disjoint: SR-IOV node policies and the DRA drivers never select the same nodes."""

from __future__ import annotations

import copy

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    GPU_CHART,
    K8S_PROVIDER,
    analyze,
    dranet_release,
    k8s,
    resource,
    sriov_pool,
    violations,
)

POLICY = "sriov-dra-disjoint"


def gpu_driver(selector):
    values = {"kubeletPlugin": {"nodeSelector": selector}}
    return resource(
        "kubernetes:helm.sh/v3:Release",
        "gpu-dra",
        {"chart": GPU_CHART, "values": values},
        provider=K8S_PROVIDER,
    )


def test_shape_wide_selection_on_both_paths_is_rejected():
    found = violations(
        analyze([sriov_pool(), dranet_release(), k8s(seed001("sriov-network-node-policy"))]), POLICY
    )
    (v,) = found
    assert v.urn.endswith("::gpu-b4-vf")
    assert v.message.startswith(
        "node pool gpu-b4-vf (BM.GPU.B4.8) is selected by SR-IOV node policies (SriovNetworkNodePolicy "
        "nvidia-network-operator/bm-gpu-b4-8) and by DRANET (Release dranet)"
    )
    assert "stack config nodePools[].rdma: sriov" in v.message


def test_the_programs_mixed_selection_passes():
    # What the program emits when DRA and SR-IOV pools share a shape (components/drivers/dra_drivers.py).
    dra_pool = sriov_pool(labels={"nvidia.com/gpu.deploy.device-plugin": "false"}, name="gpu-b4")
    vf_pool = sriov_pool(labels={"oke-gpu-rdma/rdma-path": "sriov"})
    dranet = dranet_release()
    dranet.inputs["values"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "oke-gpu-rdma/rdma-path", "operator": "NotIn", "values": ["sriov"]}
                        ]
                    }
                ]
            }
        }
    }
    dranet.struct.update({"values": dranet.inputs["values"]})
    driver = gpu_driver(
        {"node.kubernetes.io/instance-type": "BM.GPU.B4.8", "nvidia.com/gpu.deploy.device-plugin": "false"}
    )
    policy = copy.deepcopy(seed001.all("sriov-node-policies-per-rail")[0])
    policy["spec"]["nodeSelector"]["oke-gpu-rdma/rdma-path"] = "sriov"
    assert violations(analyze([dra_pool, vf_pool, dranet, driver, k8s(policy)]), POLICY) == []


def test_without_pools_the_selectors_are_compared():
    driver = gpu_driver({"node.kubernetes.io/instance-type": "BM.GPU.B4.8"})
    (v,) = violations(analyze([driver, k8s(seed001("sriov-network-node-policy"))]), POLICY)
    assert v.message.startswith(
        "SriovNetworkNodePolicy nvidia-network-operator/bm-gpu-b4-8 selects nodes with "
        "node.kubernetes.io/instance-type=BM.GPU.B4.8, which the NVIDIA GPU DRA driver (Release gpu-dra) also select"
    )
