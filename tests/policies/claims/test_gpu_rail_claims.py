"""gpu-rail-claims-aligned: the seed 000 claims get the DRA core's verdicts through the analyzer."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from oke_gpu_rdma.nodes.cloud_init import NodeBootstrap, render_cloud_init
from preview.cli import preview
from preview.mock_runtime import RecordedResource
from preview.policy_check import analyze_resources
from tests.fixtures import seed000
from tests.policies.policy_helpers import (
    GPU_CHART,
    UNKNOWN,
    analyze,
    dranet_release,
    k8s,
    notes,
    resource,
    seed_plan,
    violations,
)

POLICY = "gpu-rail-claims-aligned"


def judged(*claims, plan=None, config=None):
    findings = analyze([*(seed_plan() if plan is None else plan), *claims], config)
    return violations(findings, POLICY), findings


@pytest.mark.parametrize(
    "claim",
    ["pair-check", "aligned-8gpu-16rails", "aligned-4gpu-8rails-a", "all-rails", "rails-8-a"],
)
def test_aligned_and_not_applicable_seed_claims_pass(claim):
    found, findings = judged(k8s(seed000(claim)))
    assert found == []
    assert notes(findings, POLICY) == []


def test_shape_root_is_unsatisfiable():
    (v,) = judged(k8s(seed000("shape-root")))[0]
    assert v.level == "mandatory" and v.urn.endswith("::shape-root")
    assert "ResourceClaim rdma-dranet/shape-root on BM.GPU.B4.8 (node pools gpu-b4)" in v.message
    assert "no PCIe root has 4 GPUs and 16 rails" in v.message and "stay Pending" in v.message
    assert "Fix:" in v.message and "gpus, rails" in v.message


def test_shape_any_is_unaligned_with_the_requests_and_the_fix():
    (v,) = judged(k8s(seed000("shape-any")))[0]
    assert "is unaligned on BM.GPU.B4.8" in v.message
    assert "Fix:" in v.message and "matchAttribute: resource.kubernetes.io/pcieRoot" in v.message


def test_invalid_claim():
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = -1  # 0 is defaulted to 1 (v1/defaults.go)
    (v,) = judged(k8s(claim))[0]
    assert "would be rejected by the API server" in v.message


def test_without_gpu_pools_the_pack_config_shape_is_used():
    plan = [r for r in seed_plan() if r.type != "oci:ContainerEngine/nodePool:NodePool"]
    (v,) = judged(k8s(seed000("shape-any")), plan=plan)[0]
    assert "on BM.GPU.B4.8:" in v.message
    found, _ = judged(k8s(seed000("shape-any")), plan=plan, config={POLICY: {"shape": "BM.GPU.H100.8"}})
    assert len(found) == 1 and "claims cannot be judged on BM.GPU.H100.8" in found[0].message
    assert "shapeTopologies" in found[0].message


def test_unverified_pool_shape_is_a_violation_on_the_pool():
    pool = resource("oci:ContainerEngine/nodePool:NodePool", "h100", {"nodeShape": "BM.GPU.H100.8"})
    found, _ = judged(k8s(seed000("pair-check")), plan=[pool])
    (v,) = found
    assert v.urn.endswith("::h100") and "no verified GPU/NIC pairing" in v.message


def test_v1beta1_claim_maps_to_v1():
    claim = seed000("shape-root")
    claim["apiVersion"] = "resource.k8s.io/v1beta1"
    for request in claim["spec"]["devices"]["requests"]:
        request.update(request.pop("exactly"))
    (v,) = judged(k8s(claim))[0]
    assert "no PCIe root has 4 GPUs and 16 rails" in v.message


def test_v1beta2_template():
    claim = seed000("shape-any")
    claim["apiVersion"] = "resource.k8s.io/v1beta2"
    assert len(judged(k8s(claim))[0]) == 1


def test_unknown_in_requests_is_a_note_and_other_claims_are_still_judged():
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = UNKNOWN
    found, findings = judged(k8s(claim), k8s(seed000("shape-any")))
    assert [v.urn.rsplit("::", 1)[-1] for v in found] == ["shape-any"]
    (note,) = notes(findings, POLICY)
    assert note.level == "advisory" and "pair-check" in note.message and "count" in note.message


def test_unknown_config_does_not_stop_judging():
    claim = seed000("shape-any")
    claim["spec"]["devices"]["config"] = [{"opaque": {"driver": "dra.net", "parameters": UNKNOWN}}]
    found, findings = judged(k8s(claim))
    assert len(found) == 1 and notes(findings, POLICY) == []


def test_device_class_outside_the_stack_is_mandatory_unless_managed_elsewhere_and_a_declared_one_is_used():
    claim = seed000("rails-8-a")
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "rails"
    found, findings = judged(k8s(claim))
    (v,) = found
    assert v.level == "mandatory" and v.urn.endswith("::rails-8-a")
    assert "uses DeviceClass rails, which this stack does not declare" in v.message
    assert (
        f"pack config {POLICY}.managedDeviceClasses (stack config policyPack.managedDeviceClasses)"
        in v.message
    )
    found, findings = judged(k8s(claim), config={POLICY: {"managedDeviceClasses": ["rails"]}})
    assert found == [] and "DeviceClass rails, managed elsewhere" in notes(findings, POLICY)[0].message
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "rails"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
    }
    found, findings = judged(k8s(claim), k8s(device_class))
    assert found == [] and notes(findings, POLICY) == []


def test_spec_of_the_wrong_type_is_a_violation():
    claim = seed000("pair-check")
    claim["spec"] = ["not", "a", "spec"]
    (v,) = judged(k8s(claim))[0]
    assert "spec must be an object, got a list" in v.message


def test_user_topology_in_the_pack_config_survives_the_engine():
    # Through Configure the engine turns every number into a double (numaNode: 3 -> 3.0).
    from oke_gpu_rdma.nodes.shape_catalog import CATALOG
    from tests.support import topology_to_dict

    pool = resource("oci:ContainerEngine/nodePool:NodePool", "a100", {"nodeShape": "BM.GPU.A100-v2.8"})
    topology = topology_to_dict(CATALOG.topology("BM.GPU.B4.8"))
    config = {POLICY: {"shapeTopologies": {"BM.GPU.A100-v2.8": topology}}}
    found, findings = judged(
        k8s(seed000("pair-check")), k8s(seed000("shape-any")), plan=[pool], config=config
    )
    (v,) = found
    assert v.urn.endswith("::shape-any") and "on BM.GPU.A100-v2.8" in v.message
    assert not [f for f in findings if "pack config" in f.message]


def test_device_class_of_the_wrong_type_is_a_violation_not_a_crash():
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = ["gpu.nvidia.com"]
    (v,) = judged(k8s(claim))[0]
    assert "would be rejected by the API server" in v.message and "request gpus: deviceClassName" in v.message


# -- the judge's verdicts as data (oke_gpu_rdma.claims.verdicts: VerdictKind, UnsatisfiableCause) --------------


def test_root_capacity_gets_the_judges_fix():
    """verdict.cause ROOT_CAPACITY carries the fix; the message is not matched as text."""
    (v,) = judged(k8s(seed000("shape-root")))[0]
    assert "Fix: a resource.kubernetes.io/pcieRoot constraint can hold at most what one root has" in v.message


ROOT_3E = 'device.attributes["resource.kubernetes.io"].?pcieRoot.orValue("") == "pci0000:3e"'


def _all_mode_claim(all_first: bool) -> dict:
    """allocator_stable.go allocateDevice(must=true): an allocationMode All request after a request that
    can fix another pcieRoot first aborts the claim, or not, depending on device order."""
    every = {
        "name": "rails",
        "exactly": {
            "deviceClassName": "dra.net",
            "allocationMode": "All",
            "selectors": [{"cel": {"expression": ROOT_3E}}],
        },
    }
    gpus = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "all-rails-3e", "namespace": "rdma-dranet"},
        "spec": {
            "devices": {
                "requests": [every, gpus] if all_first else [gpus, every],
                "constraints": [
                    {"requests": ["gpus", "rails"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
                ],
            }
        },
    }


def test_order_dependent_claim_is_a_violation_with_the_fix():
    (v,) = judged(k8s(_all_mode_claim(all_first=False)))[0]
    assert v.level == "mandatory" and "depending on device order" in v.message
    assert "Fix: list request rails before gpus" in v.message


def test_all_mode_listed_first_passes():
    found, findings = judged(k8s(_all_mode_claim(all_first=True)))
    assert found == [] and notes(findings, POLICY) == []


def test_a_not_checked_verdict_is_mandatory_unless_its_classes_are_managed_elsewhere():
    """A valid selector using a CEL library the model does not evaluate (Lists: isSorted): the pack fails
    closed (issue 28), unless the user says the claim's classes are judged elsewhere."""
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"][1]["exactly"]["selectors"] = [
        {"cel": {"expression": "[1, 2].isSorted()"}}
    ]
    found, findings = judged(k8s(claim))
    (v,) = found
    assert v.level == "mandatory" and "isSorted" in v.message and "the pack cannot judge it" in v.message
    assert "its DeviceClasses dra.net, gpu.nvidia.com" in v.message
    config = {POLICY: {"managedDeviceClasses": ["dra.net", "gpu.nvidia.com"]}}
    found, findings = judged(k8s(claim), config=config)
    assert found == []
    (note,) = notes(findings, POLICY)
    assert note.level == "advisory" and "not checked" in note.message and "isSorted" in note.message
    # Managing one of the two classes is not enough: the other's devices are still judged here.
    found, _ = judged(k8s(claim), config={POLICY: {"managedDeviceClasses": ["dra.net"]}})
    assert len(found) == 1


def _training_release(name: str = "training", chart: str = "oci://charts.example.com/train") -> object:
    return resource(
        "kubernetes:helm.sh/v3:Release", name, {"chart": chart, "name": f"{name}-rel", "namespace": "ml"}
    )


def test_a_helm_release_the_pack_cannot_see_into_is_mandatory_unless_managed_elsewhere():
    """Helm installs a v3 Release's objects: a claim in it is never in the stack (issue 28)."""
    found, _ = judged(_training_release())
    (v,) = found
    assert v.level == "mandatory" and v.urn.endswith("::training")
    assert v.message.startswith(
        "Helm release training (chart oci://charts.example.com/train): Helm installs its objects outside the "
        "stack, so a ResourceClaim or ResourceClaimTemplate in it cannot be judged."
    )
    assert "managedHelmReleases (stack config policyPack.managedHelmReleases)" in v.message
    for listed in ("training", "training-rel"):  # the Pulumi name or the Helm release name
        assert judged(_training_release(), config={POLICY: {"managedHelmReleases": [listed]}})[0] == []


@pytest.mark.parametrize(
    ("props", "shown"),
    [
        (
            {
                "chart": "oci://charts.example.com/net/rdma",
                "values": {"extra": [{"image": "ghcr.io/x/dranet:v1"}]},
            },
            "values.extra.0.image = ghcr.io/x/dranet:v1",
        ),
        (
            {"chart": "./charts/net", "values": {"image": {"repository": "registry.example.com/dranet"}}},
            "values.image.repository = registry.example.com/dranet",
        ),
    ],
    ids=["renamed-repository", "local-chart-with-the-image"],
)
def test_a_stack_file_cannot_excuse_dranet_under_another_name(props: dict, shown: str) -> None:
    """Issue 36 item 6: listing a renamed DRANET release in managedHelmReleases would hide it from
    dranet-child-range; the list excuses only charts that do not run DRANET."""
    release = resource("kubernetes:helm.sh/v3:Release", "net", {**props, "name": "net", "namespace": "dra"})
    (v,) = judged(release, config={POLICY: {"managedHelmReleases": ["net"]}})[0]
    assert v.level == "mandatory"
    assert f"is listed in managedHelmReleases, but it runs DRANET ({shown})" in v.message, v.message


def test_the_drivers_own_releases_are_not_unseen_releases():
    assert judged(dranet_release(), _training_release("gpu", GPU_CHART), config=None)[0] == []


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("managedDeviceClasses", ["Rails"], "'Rails' is not a DeviceClass name"),
        ("managedDeviceClasses", ["rails", "rails"], "listed more than once: rails; list each once"),
        ("managedDeviceClasses", "rails", "expected a list of names, got 'rails'"),
        ("managedHelmReleases", ["a b"], "'a b' is not a release name"),
    ],
)
def test_bad_managed_settings_are_one_line_naming_the_key(key, value, said):
    """The engine refuses the file before any policy runs, as the CLI's schema check does."""
    from preview.policy_check import PackConfigError

    with pytest.raises(PackConfigError) as err:
        judged(config={POLICY: {key: value}})
    assert str(err.value) == f"invalid policy pack config:\n  {POLICY}.{key}: {said}" + (
        " (a lowercase RFC 1123 subdomain of at most 253 characters, such as dra.net)"
        if "DeviceClass name" in said
        else " (the Pulumi resource name or the Helm release name)"
        if "release name" in said
        else ""
    )


def test_v1beta1_claim_written_with_v1_exactly_is_invalid():
    """pkg/apis/resource/v1beta1: a request has deviceClassName etc. itself; `exactly` is an unknown field."""
    claim = seed000("pair-check")
    claim["apiVersion"] = "resource.k8s.io/v1beta1"
    (v,) = judged(k8s(claim))[0]
    assert "unknown field `exactly` in resource.k8s.io/v1beta1" in v.message


def test_v1beta2_claim_with_exactly_is_judged_like_v1():
    claim = seed000("pair-check")
    claim["apiVersion"] = "resource.k8s.io/v1beta2"
    found, findings = judged(k8s(claim))
    assert found == [] and notes(findings, POLICY) == []


# -- issue 11 item 9: mixed fleets -------------------------------------------------------------------

INFERENCE_SHAPE = "VM.GPU.A10.2"


def _inference_pool_and_config():
    """An inference pool of 2 GPUs on one root and no rails (a user-supplied topology, no DRANET devices)."""
    pool = resource(
        "oci:ContainerEngine/nodePool:NodePool",
        "inference",
        {"nodeShape": INFERENCE_SHAPE, "initialNodeLabels": []},
    )
    topology = {
        "shape": INFERENCE_SHAPE,
        "roots": [
            {"name": "pci0000:00", "numaNode": 0, "gpus": ["0000:17:00.0", "0000:31:00.0"], "rails": []}
        ],
    }
    return pool, {POLICY: {"shapeTopologies": {INFERENCE_SHAPE: topology}}}


@pytest.mark.parametrize(
    "claim", ["pair-check", "aligned-8gpu-16rails", "aligned-4gpu-8rails-a", "all-rails"]
)
def test_rail_claims_are_not_blocked_by_an_inference_pool_without_rails(claim):
    """The scheduler's DRA Filter skips nodes whose slices cannot satisfy the claim: a claim for rails never
    lands on the inference pool, so only the RDMA pool's shape judges it."""
    pool, config = _inference_pool_and_config()
    found, findings = judged(k8s(seed000(claim)), plan=[*seed_plan(), pool], config=config)
    assert found == [] and notes(findings, POLICY) == []


def test_mixed_fleet_still_rejects_what_the_rdma_pool_rejects():
    pool, config = _inference_pool_and_config()
    found, _ = judged(
        k8s(seed000("shape-any")), k8s(seed000("shape-root")), plan=[*seed_plan(), pool], config=config
    )
    assert sorted(v.urn.rsplit("::", 1)[-1] for v in found) == ["shape-any", "shape-root"]
    assert all("on BM.GPU.B4.8" in v.message for v in found)


def test_too_many_gpus_is_judged_where_the_gpus_exist():
    pool, config = _inference_pool_and_config()
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9  # no node has 9 GPUs
    (v,) = judged(k8s(claim), plan=[*seed_plan(), pool], config=config)[0]
    assert "can never be allocated on BM.GPU.B4.8" in v.message


def test_claim_whose_devices_exist_on_no_shape_is_judged_on_every_shape():
    pool, config = _inference_pool_and_config()
    claim = seed000("pair-check")
    rail = 'device.attributes["dra.net"].ifName == "rdma99"'
    claim["spec"]["devices"]["requests"][1]["exactly"]["selectors"] = [{"cel": {"expression": rail}}]
    found, _ = judged(k8s(claim), plan=[*seed_plan(), pool], config=config)
    assert sorted(INFERENCE_SHAPE in v.message for v in found) == [False, True]


# -- issue 19 item 3: a claim is judged on the pools where its drivers publish devices ------------------

GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"


def _pool(name: str, shape: str, *taints: str) -> RecordedResource:
    user_data = base64.b64encode(render_cloud_init(NodeBootstrap(taints)).encode()).decode()
    return resource(
        "oci:ContainerEngine/nodePool:NodePool",
        name,
        {
            "nodeShape": shape,
            "initialNodeLabels": [{"key": "oke-gpu-rdma/node-pool", "value": name}],
            "nodeMetadata": {"user_data": user_data},
        },
    )


def _gpu_driver() -> RecordedResource:
    """The NVIDIA GPU DRA driver as the program installs it: the chart's default affinity (GPU nodes),
    tolerating the GPU taint."""
    values = {
        "kubeletPlugin": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        }
    }
    return resource("kubernetes:helm.sh/v3:Release", "gpu-driver", {"chart": GPU_CHART, "values": values})


def _fleet(dranet_shapes: tuple[str, ...] = ("BM.GPU.B4.8",)) -> list[RecordedResource]:
    """A B4.8 pool, an H100 pool and an A10 inference pool (no verified topology for either), a CPU
    pool, DRANET on ``dranet_shapes`` and the GPU driver on every GPU node."""
    dranet = dranet_release()
    dranet.inputs["values"]["nodeSelector"] = {}
    dranet.inputs["values"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": list(dranet_shapes),
                            }
                        ]
                    }
                ]
            }
        }
    }
    dranet.struct.update({"values": dranet.inputs["values"]})
    return [
        *seed_plan(),
        _pool("gpu-h100", "BM.GPU.H100.8", GPU_TAINT),
        _pool("inference", "VM.GPU.A10.2", GPU_TAINT),
        _pool("system", "VM.Standard.E5.Flex"),
        dranet,
        _gpu_driver(),
    ]


@pytest.mark.parametrize("claim", ["pair-check", "aligned-8gpu-16rails", "all-rails"])
def test_pools_no_driver_of_the_claim_reaches_do_not_block_it(claim):
    """DRANET selects B4.8 only: a GPU/rail claim (or a rails-only one) lands only there, so the H100 and
    A10 pools, whose shapes have no verified topology, say nothing about it."""
    found, findings = judged(k8s(seed000(claim)), plan=_fleet())
    assert found == [] and notes(findings, POLICY) == []


def test_giving_dranet_a_pool_of_an_unknown_shape_is_refused_with_how_to_supply_it():
    found, _ = judged(k8s(seed000("pair-check")), plan=_fleet(("BM.GPU.B4.8", "BM.GPU.H100.8")))
    (v,) = found
    assert v.level == "mandatory" and v.urn.endswith("::gpu-h100")
    assert v.message.startswith("node pool gpu-h100: claims cannot be judged on BM.GPU.H100.8: ")
    assert (
        "Supply its topology as pack config gpu-rail-claims-aligned.shapeTopologies.BM.GPU.H100.8"
        in v.message
    )


def test_the_refusal_of_an_unknown_shape_names_the_onboarding_path_too():
    (v,) = judged(k8s(seed000("pair-check")), plan=_fleet(("BM.GPU.B4.8", "BM.GPU.H100.8")))[0]
    assert v.message.endswith(
        "onboard it while `make topology` reads it from a cluster (stack config nodePools[].onboarding: true, "
        "pack config gpu-rail-claims-aligned.onboardingShapes), or set this policy advisory for it"
    )


def test_a_pool_of_an_onboarding_shape_is_named_as_not_judged_not_blocked():
    """Issue 23 item 1: the stack onboards BM.GPU.H100.8 (DRANET and the GPU driver run on its pool, no
    topology yet): a rail claim that can land there is still judged on the B4.8 pool, and the H100 pool is one
    advisory line for every claim, not a violation."""
    plan = _fleet(("BM.GPU.B4.8", "BM.GPU.H100.8"))
    config = {POLICY: {"onboardingShapes": ["BM.GPU.H100.8"]}}
    claims = [k8s(seed000(name)) for name in ("pair-check", "aligned-8gpu-16rails", "all-rails")]
    found, findings = judged(*claims, plan=plan, config=config)
    assert found == []
    (note,) = notes(findings, POLICY)
    assert note.level == "advisory"
    assert note.message.endswith(
        "not checked: node pool gpu-h100: BM.GPU.H100.8 is onboarding (stack config nodePools[].onboarding, "
        "pack config gpu-rail-claims-aligned.onboardingShapes), so claims that can land there are not judged on "
        "it until its topology is supplied (stack config shapeTopologies.BM.GPU.H100.8); pods that must get "
        "aligned GPUs and rails select the pools whose shape has templates"
    )
    # Still judged where a topology exists: a claim the B4.8 pool cannot align is rejected there.
    (v,) = judged(k8s(seed000("shape-any")), plan=plan, config=config)[0]
    assert v.message.startswith(
        "ResourceClaim rdma-dranet/shape-any on BM.GPU.B4.8 (node pools gpu-b4): claim shape-any is unaligned"
    )


def test_a_gpu_only_claim_lands_wherever_the_gpu_driver_runs_and_asks_no_pairing_there():
    """A claim for GPUs alone can land on the A10 and H100 pools (the GPU driver runs there), but it asks
    for no rails: there is no GPU/rail pairing to judge, so their missing topology does not block it
    (issue 22 item 3); a rail claim that reaches them still is blocked, once per pool."""
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"] = claim["spec"]["devices"]["requests"][:1]
    claim["spec"]["devices"].pop("constraints", None)
    other = {**claim, "metadata": {**claim["metadata"], "name": "gpus-b"}}
    assert judged(k8s(claim), k8s(other), plan=_fleet())[0] == []
    plan = _fleet(("BM.GPU.B4.8", "BM.GPU.H100.8"))
    found, _ = judged(k8s(claim), k8s(seed000("pair-check")), k8s(seed000("rails-8-a")), plan=plan)
    assert [v.urn.rsplit("::", 1)[-1] for v in found] == ["gpu-h100"]


def test_a_claim_whose_selectors_exclude_the_unverified_shape_is_judged_where_it_lands():
    """A rail claim pinned to BM.GPU.B4.8 by oke.dra.net/shape (what the stack's multi-shape templates do)
    never lands on the H100 pool, so that pool's missing topology does not block it; unpinned, it does."""
    plan = _fleet(("BM.GPU.B4.8", "BM.GPU.H100.8"))
    pinned = seed000("pair-check")
    pinned["spec"]["devices"]["requests"][1]["exactly"]["selectors"].append(
        {"cel": {"expression": 'device.attributes["oke.dra.net"].shape == "BM.GPU.B4.8"'}}
    )
    assert judged(k8s(pinned), plan=plan)[0] == []
    (v,) = judged(k8s(seed000("pair-check")), plan=plan)[0]
    assert v.urn.endswith("::gpu-h100")
    # Pinned to the H100 shape instead, the B4.8 pool has no device for it and the H100 pool still blocks.
    other = seed000("pair-check")
    other["spec"]["devices"]["requests"][1]["exactly"]["selectors"].append(
        {"cel": {"expression": 'device.attributes["oke.dra.net"].shape == "BM.GPU.H100.8"'}}
    )
    assert any(v.urn.endswith("::gpu-h100") for v in judged(k8s(other), plan=plan)[0])


def test_a_taint_the_driver_does_not_tolerate_keeps_it_off_the_pool():
    """DRANET selects every GPU shape but tolerates only NoSchedule taints (its chart's default): an H100
    pool tainted NoExecute gets no DRANET pod (the DaemonSet controller's rule), so no rail claim lands."""
    plan = _fleet(("BM.GPU.B4.8", "BM.GPU.H100.8"))
    plan[-5] = _pool("gpu-h100", "BM.GPU.H100.8", GPU_TAINT, "dedicated=train:NoExecute")
    assert judged(k8s(seed000("pair-check")), plan=plan)[0] == []


# -- issue 22 item 3: verdicts that follow upstream's rules ---------------------------------------------------


def _template(name, requests, constraints=(), namespace="rdma-dranet", version="v1"):
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": list(requests), "constraints": list(constraints)}}},
    }


GPUS_4 = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}}
RAILS_8 = seed000("rails-8-a")["spec"]["spec"]["devices"]["requests"][0]


def _pod(*claims, kind="Pod", name="split"):
    spec = {
        "containers": [{"name": "w", "image": "nccl"}],
        "resourceClaims": [{"name": c, "resourceClaimTemplateName": t} for c, t in claims],
    }
    meta = {"name": name, "namespace": "rdma-dranet"}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"template": {"spec": spec}}}


@pytest.mark.parametrize("kind", ["Pod", "Job"])
def test_gpus_from_one_claim_and_rails_from_another_are_unaligned(kind):
    """matchAttribute constraints hold within one claim (structured allocator: constraints per claim)."""
    pod = _pod(("g", "gpus-4"), ("r", "rails-8-a"), kind=kind)
    found, _ = judged(k8s(_template("gpus-4", [GPUS_4])), k8s(seed000("rails-8-a")), k8s(pod))
    (v,) = found
    assert v.level == "mandatory"
    assert (
        "unaligned: GPUs from claim g = ResourceClaimTemplate rdma-dranet/gpus-4 (requests gpus)" in v.message
    )
    assert (
        "DRANET rails from claim r = ResourceClaimTemplate rdma-dranet/rails-8-a (requests rails)"
        in v.message
    )
    assert "in one claim" in v.message
    # A rails-only claim next to an aligned claim: its rails are not tied to the GPUs either.
    found, _ = judged(
        k8s(seed000("aligned-4gpu-8rails-a")),
        k8s(seed000("rails-8-a")),
        k8s(_pod(("a", "aligned-4gpu-8rails-a"), ("r", "rails-8-a"), kind=kind)),
    )
    assert len([v for v in found if "split" in v.message]) == 1
    # Two aligned claims (each with GPUs and rails) are each judged on their own: no split.
    found, _ = judged(
        k8s(seed000("aligned-4gpu-8rails-a")),
        k8s(_pod(("a", "aligned-4gpu-8rails-a"), ("b", "aligned-4gpu-8rails-a"), kind=kind)),
    )
    assert [v for v in found if "split" in v.message] == []


def _distinct_rails():
    claim = seed000("aligned-4gpu-8rails-a")
    claim["spec"]["spec"]["devices"]["constraints"].append(
        {"requests": ["rails-1"], "distinctAttribute": "dra.net/ifName"}
    )
    return claim


def test_feature_gated_fields_are_judged_at_the_stacks_kubernetes_version():
    """distinctAttribute is served and allocated on v1.36 (DRAConsumableCapacity beta and on) and dropped on
    v1.35, where the constraint is then left without an attribute and the API server rejects the claim."""
    found, findings = judged(k8s(_distinct_rails()), config={POLICY: {"kubernetesVersion": "v1.36.4"}})
    assert found == [] and notes(findings, POLICY) == []
    # Distinct PCIe roots across GPUs and rails: never aligned, and judged so.
    spread = _distinct_rails()
    spread["spec"]["spec"]["devices"]["constraints"] = [
        {"requests": ["gpus-1", "rails-1"], "distinctAttribute": "resource.kubernetes.io/pcieRoot"}
    ]
    (v,) = judged(k8s(spread), config={POLICY: {"kubernetesVersion": "v1.36.4"}})[0]
    assert "unaligned" in v.message or "never" in v.message, v.message
    found, _ = judged(k8s(_distinct_rails()), config={POLICY: {"kubernetesVersion": "v1.35.2"}})
    (v,) = found
    assert v.level == "mandatory" and "aligned-4gpu-8rails-a" in v.message
    assert (
        "distinctAttribute is dropped by the API server: feature gate DRAConsumableCapacity is alpha and off"
        in (v.message)
    )
    from preview.policy_check import PackConfigError

    with pytest.raises(
        PackConfigError, match=r"kubernetesVersion: Kubernetes version '1.x' is not of the form"
    ):
        judged(k8s(_distinct_rails()), config={POLICY: {"kubernetesVersion": "1.x"}})


def test_device_tolerations_are_validated_at_the_stacks_version():
    claim = seed000("aligned-4gpu-8rails-a")
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        {"key": "example.com/drain", "operator": "Exists", "value": "now"}
    ]
    (v,) = judged(k8s(claim))[0]
    assert "tolerations[0]: value 'now': must be empty for operator `Exists`" in v.message


def test_selectors_on_the_child_range_see_the_configured_range():
    """Every rail publishes oke.dra.net/rdmaChildIpv4Cidr = the range DRANET runs with (seed 003)."""
    claim = seed000("rails-8-a")
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"].append(
        {"cel": {"expression": 'device.attributes["oke.dra.net"].rdmaChildIpv4Cidr == "10.176.0.0/12"'}}
    )
    # The stack's DRANET release runs with 10.176.0.0/12: the claim finds its rails.
    found, _ = judged(k8s(claim), plan=[*seed_plan(), dranet_release(child="10.176.0.0/12")])
    assert found == []
    # Without DRANET in the stack, the pack config's childRange (the stack's dranet.childRange) counts.
    assert judged(k8s(claim), config={POLICY: {"childRange": "10.176.0.0/12"}})[0] == []
    # With DRANET's default range (10.208.0.0/12) the selector matches no rail: never allocated.
    for plan in ([*seed_plan(), dranet_release()], None):
        (v,) = judged(k8s(claim), plan=plan)[0]
        assert "can never be allocated" in v.message


def _namespace(labels):
    return k8s(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rdma-dranet", "labels": labels}}
    )


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_admin_access_needs_the_namespace_label(version):
    """kube-apiserver AuthorizedForAdmin (pkg/registry/resource/utils.go): adminAccess only in a namespace
    labelled resource.kubernetes.io/admin-access: "true"."""
    claim = seed000("rails-8-a")
    request = claim["spec"]["spec"]["devices"]["requests"][0]
    if version == "v1":
        request["exactly"]["adminAccess"] = True
    else:
        claim["apiVersion"] = "resource.k8s.io/v1beta1"
        request.update(request.pop("exactly"), adminAccess=True)
    for labels, shown in (
        (
            {"team": "ml"},
            "the stack's Namespace rdma-dranet does not set resource.kubernetes.io/admin-access",
        ),
        ({"resource.kubernetes.io/admin-access": "True"}, "has resource.kubernetes.io/admin-access='True'"),
        ({"resource.k8s.io/admin-access": "true"}, "does not set resource.kubernetes.io/admin-access"),
        (None, "the stack does not declare namespace rdma-dranet"),
    ):
        extra = [] if labels is None else [_namespace(labels)]
        (v,) = judged(k8s(claim), *extra)[0]
        assert v.level == "mandatory" and "request rails asks for adminAccess" in v.message, v.message
        assert (
            shown in v.message and "AuthorizedForAdmin" in v.message and "Fix: label Namespace" in v.message
        )
    assert judged(k8s(claim), _namespace({"resource.kubernetes.io/admin-access": "true"}))[0] == []


def test_a_namespace_patch_of_the_stack_can_set_the_admin_access_label():
    claim = seed000("rails-8-a")
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    patch = {
        "apiVersion": "v1",
        "kind": "NamespacePatch",
        "metadata": {"name": "rdma-dranet", "labels": {"resource.kubernetes.io/admin-access": "true"}},
    }
    assert judged(k8s(claim), k8s(patch, name="ns-patch"))[0] == []


def test_an_invalid_claim_that_lands_only_on_unverified_pools_is_still_invalid():
    """A GPU-only claim on a stack whose only GPU pool (H100) has no verified topology: no pairing to judge
    there, yet what the API server refuses is refused on every shape."""
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"] = [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": -1}}
    ]
    claim["spec"]["devices"].pop("constraints", None)
    plan = [*seed_plan()[:3], _pool("gpu-h100", "BM.GPU.H100.8", GPU_TAINT), _gpu_driver()]
    (v,) = judged(k8s(claim), plan=plan)[0]
    assert v.urn.endswith("::pair-check") and "would be rejected by the API server" in v.message
    claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    assert judged(k8s(claim), plan=plan)[0] == []


def test_cidr_selectors_on_the_child_range_evaluate_against_the_configured_range():
    claim = seed000("rails-8-a")
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"].append(
        {
            "cel": {
                "expression": 'cidr(device.attributes["oke.dra.net"].rdmaChildIpv4Cidr).containsIP("10.176.9.1")'
            }
        }
    )
    assert judged(k8s(claim), plan=[*seed_plan(), dranet_release(child="10.176.0.0/12")])[0] == []
    (v,) = judged(k8s(claim), plan=[*seed_plan(), dranet_release(child="10.192.0.0/12")])[0]
    assert "can never be allocated" in v.message


GB200_STACKS = Path(__file__).resolve().parents[2] / "fixtures" / "stacks"


@pytest.fixture(scope="module")
def gb200_next_to_b4():
    """tests/fixtures/stacks/Pulumi.gb200-b4.yaml previewed: the program, then the pack on what it declared."""
    return preview("gb200-b4", [GB200_STACKS])


def test_a_gb200_pool_next_to_a_b4_pool_previews_clean_with_templates_for_both(gb200_next_to_b4):
    assert gb200_next_to_b4.findings == []
    names = sorted(
        r.inputs["metadata"]["name"]
        for r in gb200_next_to_b4.run.resources
        if r.type == "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
    )
    # The first pool's shape (B4.8) keeps the shape-free names too (issue 23 item 4).
    assert names == [
        "aligned-2gpu-4rails",
        "aligned-2gpu-4rails-bm-gpu-b4-8",
        "aligned-2gpu-4rails-numa0-bm-gpu-gb200-v3-4",
        "aligned-2gpu-4rails-numa1-bm-gpu-gb200-v3-4",
        "aligned-4gpu-8rails",
        "aligned-4gpu-8rails-bm-gpu-b4-8",
        "aligned-4gpu-8rails-bm-gpu-gb200-v3-4",
        "all-rails",
        "all-rails-bm-gpu-b4-8",
        "all-rails-bm-gpu-gb200-v3-4",
    ]


def test_a_template_crossing_gb200_numa_nodes_is_rejected_naming_both(gb200_next_to_b4):
    run = gb200_next_to_b4.run
    numa0 = next(r for r in run.resources if r.name.endswith("aligned-2gpu-4rails-numa0-bm-gpu-gb200-v3-4"))
    numa1 = next(r for r in run.resources if r.name.endswith("aligned-2gpu-4rails-numa1-bm-gpu-gb200-v3-4"))
    spec = json.loads(json.dumps(numa0.inputs["spec"]))
    # NUMA node 0's GPUs with NUMA node 1's rails.
    spec["spec"]["devices"]["requests"][1] = numa1.inputs["spec"]["spec"]["devices"]["requests"][1]
    crossing = k8s(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "crossing", "namespace": "rdma-dranet"},
            "spec": spec,
        },
        provider=numa0.provider,
    )
    findings = analyze_resources([*run.resources, crossing], gb200_next_to_b4.pack_config)
    (v,) = violations(findings, POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::crossing")
    assert v.message.startswith(
        "ResourceClaimTemplate rdma-dranet/crossing on BM.GPU.GB200-v3.4 (node pools gpu-gb200-nodes): claim "
        "crossing is unaligned on BM.GPU.GB200-v3.4: the scheduler could pick GPU 0, GPU 1 on NUMA node 0; "
    )
    assert "GPUs without a claimed rail in their NUMA node: GPU 0, GPU 1 on NUMA node 0" in v.message


def test_a_template_stating_another_alignment_level_than_its_shape_is_rejected(gb200_next_to_b4):
    run = gb200_next_to_b4.run
    numa0 = next(r for r in run.resources if r.name.endswith("aligned-2gpu-4rails-numa0-bm-gpu-gb200-v3-4"))
    document = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": "says-root",
            "namespace": "rdma-dranet",
            "annotations": {"oke-gpu-rdma/alignment": "pcieRoot"},
        },
        "spec": numa0.inputs["spec"],
    }
    findings = analyze_resources(
        [*run.resources, k8s(document, provider=numa0.provider)], gb200_next_to_b4.pack_config
    )
    (v,) = violations(findings, POLICY)
    assert v.message == (
        "ResourceClaimTemplate rdma-dranet/says-root on BM.GPU.GB200-v3.4: its annotation oke-gpu-rdma/alignment "
        "says 'pcieRoot', but BM.GPU.GB200-v3.4 aligns GPUs and rails at numaNode "
        "(oke_gpu_rdma/nodes/shapes/BM.GPU.GB200-v3.4.yaml). Fix: set it to 'numaNode'"
    )


def _one_root(shape: str) -> dict:
    """``shape``'s topology with every GPU and rail under one PCIe root: it makes every claim aligned."""
    from oke_gpu_rdma.nodes.shape_catalog import CATALOG
    from tests.support import topology_to_dict

    topology = topology_to_dict(CATALOG.topology(shape))
    del topology["shape"]
    roots = topology["roots"]
    topology["roots"] = [
        {
            "name": roots[0]["name"],
            "numaNode": roots[0]["numaNode"],
            "gpus": [g for r in roots for g in r["gpus"]],
            "rails": [x for r in roots for x in r["rails"]],
        }
    ]
    return topology


def test_a_supplied_topology_for_a_verified_shape_does_not_silence_an_unaligned_claim():
    """issue 28: a stack's one-root topology for BM.GPU.B4.8 would make shape-any aligned; the pack
    judges against the verified file and names the refused override."""
    config = {POLICY: {"shapeTopologies": {"BM.GPU.B4.8": _one_root("BM.GPU.B4.8")}}}
    found, _ = judged(k8s(seed000("shape-any")), config=config)
    unaligned = [v for v in found if v.urn.endswith("::shape-any")]
    assert len(unaligned) == 1 and "on BM.GPU.B4.8" in unaligned[0].message
    (refused,) = [v for v in found if "pack config" in v.message]
    assert "shapeTopologies.BM.GPU.B4.8" in refused.message
    assert "BM.GPU.B4.8 has a verified topology" in refused.message


# -- issue 34, round 5: verdicts that follow upstream where a pool has no topology -----------------------------

H100 = "BM.GPU.H100.8"
ONBOARDING_H100 = {POLICY: {"onboardingShapes": [H100]}}


def _pinned(claim: dict, shape: str) -> dict:
    """``claim`` (seed pair-check) with its rail request pinned to ``shape`` by oke.dra.net/shape."""
    claim["spec"]["devices"]["requests"][1]["exactly"]["selectors"].append(
        {"cel": {"expression": f'device.attributes["oke.dra.net"].shape == "{shape}"'}}
    )
    return claim


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (
            {"selectors": [{"cel": {"expression": 'device.driver == "dra.net" &&'}}]},
            "request rails: selector #0: CEL compile error in selector",
        ),
        (
            {"tolerations": [{"key": "example.com/drain", "operator": "exists"}]},
            "request rails: tolerations[0]: operator 'exists': Unsupported value",
        ),
    ],
)
def test_a_claim_the_api_server_refuses_is_rejected_even_where_it_lands_only_on_an_onboarding_pool(
    broken, said
):
    """Round 5, finding 1: DRANET runs only on the onboarding H100 pool, so the rail claim lands only there; the
    API server's validation (a CEL expression must compile, validateDeviceToleration's operator enum) needs no
    topology, so the claim is refused there as on every shape, not waved through with the onboarding note."""
    claim = seed000("pair-check")
    claim["spec"]["devices"]["requests"][1]["exactly"].update(broken)
    found, findings = judged(k8s(claim), plan=_fleet((H100,)), config=ONBOARDING_H100)
    (v,) = found
    assert v.level == "mandatory" and v.urn.endswith("::pair-check")
    assert v.message.startswith(
        "ResourceClaim rdma-dranet/pair-check: claim pair-check would be rejected by the API server: "
    )
    assert said in v.message
    # The onboarding pool is still named as not judged: the pairing there waits for its topology.
    assert [n.message.split("not checked: ", 1)[1].split(":", 1)[0] for n in notes(findings, POLICY)] == [
        "node pool gpu-h100"
    ]


def test_a_claim_pinned_to_the_onboarding_shape_is_not_judged_on_the_shape_it_can_never_land_on():
    """Round 5, finding 2: pinned by oke.dra.net/shape to the onboarding H100 shape, the claim finds no rail on a
    B4.8 node, so the scheduler's DRA Filter never places it there: B4.8 says nothing about it, and the H100 pool
    is the onboarding note. Unpinned, a claim B4.8 cannot hold (9 GPUs) can land there and is rejected there, and
    one pinned to B4.8 is judged there as before."""
    plan = _fleet(("BM.GPU.B4.8", H100))
    found, findings = judged(k8s(_pinned(seed000("pair-check"), H100)), plan=plan, config=ONBOARDING_H100)
    assert found == []
    (note,) = notes(findings, POLICY)
    assert "node pool gpu-h100: BM.GPU.H100.8 is onboarding" in note.message
    nine = seed000("pair-check")
    nine["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9
    (v,) = judged(k8s(nine), plan=plan, config=ONBOARDING_H100)[0]
    assert "can never be allocated on BM.GPU.B4.8" in v.message
    unaligned = _pinned(seed000("pair-check"), "BM.GPU.B4.8")
    unaligned["spec"]["devices"]["constraints"] = []
    (v,) = judged(k8s(unaligned), plan=plan, config=ONBOARDING_H100)[0]
    assert "on BM.GPU.B4.8 (node pools gpu-b4)" in v.message and "unaligned" in v.message


GB200 = "BM.GPU.GB200-v3.4"
GB200_4 = "aligned-4gpu-8rails-bm-gpu-gb200-v3-4"


def _with_pods(stack, *objects):
    """The gb200-b4 stack's resources with ``objects`` declared on its Kubernetes provider."""
    run = stack.run
    template = next(r for r in run.resources if r.name.endswith(GB200_4))
    namespace = template.inputs["metadata"]["namespace"]
    declared = []
    for obj in objects:
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["namespace"] = namespace
        declared.append(k8s(obj, provider=template.provider))
    return analyze_resources([*run.resources, *declared], stack.pack_config), namespace


def _gpu_pod(template, node_selector=None, affinity=None, name="train-0"):
    spec = {
        "containers": [{"name": "w", "image": "nccl", "resources": {"claims": [{"name": "gpus-rails"}]}}],
        "resourceClaims": [{"name": "gpus-rails", "resourceClaimTemplateName": template}],
    }
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_a_pod_whose_node_selector_and_claim_template_never_meet_on_one_node_is_rejected(gb200_next_to_b4):
    """Round 5, finding 4: the GB200 template's rails are pinned to BM.GPU.GB200-v3.4 (oke.dra.net/shape), the
    pod's nodeSelector names BM.GPU.B4.8: kube-scheduler's NodeAffinity Filter keeps it on B4.8 nodes, its DRA
    Filter off them, so no node passes both and the pod stays Pending forever."""
    pod = _gpu_pod(GB200_4, {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"})
    findings, ns = _with_pods(gb200_next_to_b4, pod)
    (v,) = violations(findings, POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::train-0")
    assert v.message == (
        f"Pod {ns}/train-0 spec: claim gpus-rails = ResourceClaimTemplate {ns}/{GB200_4} can be allocated only on "
        f"{GB200} (node pools gpu-gb200-nodes), and its nodeSelector node.kubernetes.io/instance-type=BM.GPU.B4.8 "
        "admits only node pools gpu-b4-nodes (BM.GPU.B4.8): no node passes both kube-scheduler's NodeAffinity "
        "Filter and its DynamicResources Filter, so the pod stays Pending forever. Fix: select nodes of "
        f"{GB200} (nodeSelector node.kubernetes.io/instance-type: {GB200}), or use a claim template that can be "
        "allocated on BM.GPU.B4.8, such as aligned-4gpu-8rails-bm-gpu-b4-8"
    )


def test_a_job_whose_affinity_keeps_its_workers_off_the_shape_of_their_template_is_rejected(gb200_next_to_b4):
    term = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["BM.GPU.B4.8"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [term]}]
            }
        }
    }
    pod = _gpu_pod(GB200_4, affinity=affinity)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {"template": {"spec": pod["spec"]}},
    }
    findings, ns = _with_pods(gb200_next_to_b4, job)
    (v,) = violations(findings, POLICY)
    assert v.urn.endswith("::train") and v.message.startswith(
        f"Job {ns}/train spec.template.spec: claim gpus-rails"
    )
    assert "its required node affinity admits only node pools gpu-b4-nodes (BM.GPU.B4.8)" in v.message


def test_pods_that_can_meet_their_claim_on_some_node_pass(gb200_next_to_b4):
    pods = [
        _gpu_pod(GB200_4, {"node.kubernetes.io/instance-type": GB200}, name="on-gb200"),
        _gpu_pod(GB200_4, name="anywhere"),  # the DRA Filter places it on the GB200 nodes
        _gpu_pod("aligned-4gpu-8rails", {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}, name="on-b4"),
        # a node label known only when the node runs (its fabric block) decides nothing here
        _gpu_pod(GB200_4, {"oke-gpu-rdma/rdma-local-block": "block-1"}, name="in-a-block"),
    ]
    findings, _ = _with_pods(gb200_next_to_b4, *pods)
    assert violations(findings, POLICY) == []


def test_a_pod_whose_claims_are_pinned_to_two_shapes_is_rejected(gb200_next_to_b4):
    """Each claim fits some node, never the same one: the DynamicResources Filter allocates all of a pod's claims
    on the node it filters (dynamicresources.go l. 848-879), so no node passes, with or without a nodeSelector."""
    pod = _gpu_pod("aligned-2gpu-4rails-bm-gpu-b4-8", name="both")
    pod["spec"]["resourceClaims"].append(
        {"name": "more", "resourceClaimTemplateName": "aligned-2gpu-4rails-numa0-bm-gpu-gb200-v3-4"}
    )
    findings, ns = _with_pods(gb200_next_to_b4, pod)
    (v,) = violations(findings, POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::both")
    assert v.message == (
        f"Pod {ns}/both spec: its claims can never be allocated on one node (claim gpus-rails = "
        f"ResourceClaimTemplate {ns}/aligned-2gpu-4rails-bm-gpu-b4-8 only on BM.GPU.B4.8; claim more = "
        f"ResourceClaimTemplate {ns}/aligned-2gpu-4rails-numa0-bm-gpu-gb200-v3-4 only on {GB200}): no node passes "
        "kube-scheduler's DynamicResources Filter for all of them, so the pod stays Pending forever. Fix: give the "
        "pod claims that can all be allocated on one shape (the stack's templates for one shape end in its name)"
    )
