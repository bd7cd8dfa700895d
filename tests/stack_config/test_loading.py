"""The stack config model and its error messages (components/config.py, stack_config.py)."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

import pytest

from oke_gpu_rdma.nodes import cidr_rules as cidr
from preview.mock_runtime import pulumi_config_map
from stack_config.loading import ConfigError, load_program_stack, load_stack, parse_stack_config
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import GPU_TAINT
from tests.support import EXAMPLE_REGION, raw_config, stack_document, without_remediation

SOURCE = "stacks/Pulumi.dev.yaml"


def problems_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw, SOURCE, EXAMPLE_REGION)
    return str(caught.value).splitlines()[1:]


def only_problem(raw: dict[str, Any]) -> str:
    lines = problems_of(raw)
    assert len(lines) == 1, lines
    return lines[0].strip()


def test_dev_stack_matches_the_seed_cluster() -> None:
    config = parse_stack_config(raw_config("dev"), SOURCE, EXAMPLE_REGION)
    assert isinstance(config, StackConfig)
    existing = config.network.existing
    assert existing is not None
    assert existing.vcn_cidrs == [IPv4Network("10.140.0.0/16")]
    assert existing.worker_subnet.cidr == IPv4Network("10.140.64.0/19")
    assert config.network.rdma_cidr == cidr.DEFAULT_OCA_RDMA_NETWORK
    cluster = config.cluster.existing
    assert cluster is not None
    assert (cluster.pods_cidr, cluster.services_cidr) == (
        IPv4Network("10.240.0.0/12"),
        IPv4Network("10.96.0.0/16"),
    )
    (pool,) = config.node_pools
    assert (pool.shape, pool.count) == ("BM.GPU.B4.8", 2)
    assert pool.taints == [GPU_TAINT]
    assert config.gpu_driver.enabled and config.dranet.enabled
    assert config.dranet.child_range == cidr.DEFAULT_CHILD_RANGE


def test_full_stack_is_valid() -> None:
    config = parse_stack_config(raw_config("full"), SOURCE, EXAMPLE_REGION)
    assert config.network.create is not None and config.cluster.create is not None
    assert [p.name for p in config.node_pools] == ["gpu-b4-a", "gpu-b4-b"]


def test_unknown_node_shape() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["shape"] = "BM.GPU.X9.8"
    line = only_problem(raw)
    assert line.startswith(f"{SOURCE}: nodePools[0].shape = 'BM.GPU.X9.8': is not a known RDMA GPU shape")
    assert "BM.GPU.B4.8" in line


def test_node_count_below_one() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["count"] = 0
    assert only_problem(raw) == f"{SOURCE}: nodePools[0].count = 0: must be at least 1"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10.140.64.0", "has no prefix length; write it as a CIDR like 10.140.64.0/16"),
        ("10.140.64.0/40", "is not an IPv4 CIDR"),
        ("banana", "has no prefix length"),
        ("10.140.64.1/19", "host bits set); did you mean 10.140.64.0/19?"),
        ("fd00::/64", "is IPv6"),
    ],
)
def test_malformed_or_unmasked_cidr(value: str, expected: str) -> None:
    raw = raw_config("dev")
    raw["network"]["existing"]["workerSubnet"]["cidr"] = value
    line = only_problem(raw)
    assert line.startswith(f"{SOURCE}: network.existing.workerSubnet.cidr = {value!r}: ")
    assert expected in line


@pytest.mark.parametrize("child", ["10.0.0.0/7", "10.208.0.0/31"])
def test_child_range_prefix_outside_8_to_30(child: str) -> None:
    raw = raw_config("dev")
    raw["dranet"] = {"childRange": child}
    line = only_problem(raw)
    assert line.startswith(f"{SOURCE}: dranet.childRange = {child!r}: has prefix /")
    assert "from /8 to /30" in line


@pytest.mark.parametrize("version", ["1.34.1", "v1.34", "v2.0.0", "latest"])
def test_kubernetes_version_not_v1_x_y(version: str) -> None:
    raw = raw_config("dev")
    raw["cluster"]["existing"]["kubernetesVersion"] = version
    assert only_problem(raw) == (
        f"{SOURCE}: cluster.existing.kubernetesVersion = {version!r}: "
        "is not a Kubernetes version of the form v1.X.Y (for example v1.34.1)"
    )


def test_missing_compartment() -> None:
    raw = raw_config("dev")
    del raw["compartmentId"]
    assert only_problem(raw) == f"{SOURCE}: compartmentId is missing; it is required"


def test_malformed_compartment() -> None:
    raw = raw_config("dev")
    raw["compartmentId"] = "my-compartment"
    assert "compartmentId = 'my-compartment': is not an OCI OCID" in only_problem(raw)


def test_availability_domain_missing_when_compute_cluster_is_created() -> None:
    raw = raw_config("dev")
    del raw["nodePools"][0]["availabilityDomain"]
    line = only_problem(raw)
    assert line.startswith(f"{SOURCE}: nodePools[0]")
    assert "availabilityDomain is required when the stack creates the compute cluster" in line


def test_availability_domain_optional_with_existing_compute_cluster() -> None:
    raw = raw_config("dev")
    del raw["nodePools"][0]["availabilityDomain"]
    raw["nodePools"][0]["computeClusterId"] = "ocid1.computecluster.oc1.iad.aaaaaaaaexisting"
    assert parse_stack_config(raw, SOURCE, EXAMPLE_REGION).node_pools[0].availability_domain is None


def test_misspelt_key_is_an_error() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["cout"] = 3
    assert only_problem(raw) == f"{SOURCE}: nodePools[0].cout is not a known key; did you mean count?"
    raw = raw_config("dev")
    raw["nodepools"] = raw.pop("nodePools")
    lines = problems_of(raw)
    assert f"{SOURCE}: nodepools is not a known key; did you mean nodePools?" in [
        line.strip() for line in lines
    ]


def test_every_problem_is_reported_once() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["count"] = 0
    raw["cluster"]["existing"]["kubernetesVersion"] = "1.34"
    lines = problems_of(raw)
    assert len(lines) == 2
    assert any("nodePools[0].count" in line for line in lines)
    assert any("kubernetesVersion" in line for line in lines)


def test_child_range_overlapping_the_pods_cidr() -> None:
    raw = raw_config("dev")
    raw["dranet"] = {"childRange": "10.240.0.0/12"}
    line = only_problem(raw)
    assert line.startswith(
        f"{SOURCE}: dranet.childRange = '10.240.0.0/12': child range 10.240.0.0/12 overlaps"
    )
    assert "pods CIDR (cluster.existing.podsCidr) 10.240.0.0/12" in line


def test_child_range_too_small_for_the_worker_subnet() -> None:
    raw = raw_config("dev")
    raw["dranet"] = {"childRange": "10.208.0.0/16"}
    line = only_problem(raw)
    assert "too small for 16 rails on worker subnet" in line
    assert "needs /15 or larger" in line


def test_subnet_outside_the_vcn() -> None:
    raw = raw_config("dev")
    raw["network"]["existing"]["workerSubnet"]["cidr"] = "10.141.64.0/19"
    assert "lies outside the VCN (10.140.0.0/16)" in only_problem(raw)


def test_services_cidr_overlapping_the_vcn() -> None:
    raw = raw_config("dev")
    raw["cluster"]["existing"]["servicesCidr"] = "10.140.128.0/20"
    assert "cluster.existing.servicesCidr = '10.140.128.0/20': overlaps the VCN" in only_problem(raw)


def test_cluster_creation_needs_an_endpoint_subnet() -> None:
    raw = raw_config("dev")
    raw["cluster"] = {"create": {"kubernetesVersion": "v1.34.1"}}
    raw["systemPool"] = {"imageId": "ocid1.image.oc1.iad.aaaaaaaaexampleoracleolinuxoke"}
    assert only_problem(raw).startswith(f"{SOURCE}: network.existing.apiEndpointSubnet is required")


def test_network_needs_exactly_one_mode() -> None:
    raw = raw_config("dev")
    raw["network"]["create"] = {}
    assert "set exactly one of network.create or network.existing" in only_problem(raw)


def test_duplicate_pool_names() -> None:
    raw = raw_config("dev")
    raw["nodePools"].append(dict(raw["nodePools"][0]))
    assert "node pool names must be unique; repeated: gpu-b4" in only_problem(raw)


def test_cycling_must_make_progress() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["cycling"] = {"maximumSurge": 0, "maximumUnavailable": 0}
    assert "cannot both be 0" in only_problem(raw)


@pytest.mark.parametrize("gpus", [3, 12])
def test_claim_template_gpu_count_the_topology_cannot_align(gpus: int) -> None:
    raw = raw_config("dev")
    raw["workloads"] = {"claimTemplates": [{"name": "odd", "gpusPerWorker": gpus}]}
    line = only_problem(raw)
    assert line.startswith(f"{SOURCE}: workloads.claimTemplates[0].gpusPerWorker = {gpus}: ")
    assert f"{gpus} GPUs per worker cannot be aligned on BM.GPU.B4.8" in line
    assert "use one of 1, 2, 4, 6, 8" in line


def test_unverified_shape_needs_a_topology_for_claim_templates() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["shape"] = "BM.GPU.H100.8"
    line = only_problem(raw)
    assert line.startswith(f"{SOURCE}: nodePools[0].shape = 'BM.GPU.H100.8': BM.GPU.H100.8 has no GPU/NIC")
    # The onboarding path, not a switch that takes every pool's templates away (the full message:
    # tests/stack_config/claims/test_claim_plan.py).
    assert "onboard it: set nodePools[0].onboarding: true" in line and "claimTemplates" not in line


def test_unverified_shape_without_templates_is_fine() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["shape"] = "BM.GPU.H100.8"
    raw["workloads"] = {"claimTemplates": [], "railsOnlyTemplate": None}
    assert parse_stack_config(raw, SOURCE, EXAMPLE_REGION).node_pools[0].shape == "BM.GPU.H100.8"


def test_duplicate_template_names() -> None:
    raw = raw_config("dev")
    raw["workloads"] = {"claimTemplates": [{"name": "all-rails", "gpusPerWorker": 8}]}
    assert "claim template names must be unique; repeated: all-rails" in only_problem(raw)


def test_device_plugin_label_is_not_a_free_label() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["labels"] = {"nvidia.com/gpu.deploy.device-plugin": "true"}
    assert "label nvidia.com/gpu.deploy.device-plugin is set from gpuDriver.enabled" in only_problem(raw)


def test_a_template_is_refused_on_the_shape_it_cannot_align_on() -> None:
    # A second shape of 2 roots with 4 GPUs and 8 rails each: 6 GPUs per worker align on B4.8 (2+2+2) but
    # not there; each shape's templates come from its own topology (issue 19 item 1), so the config names it.
    raw = raw_config("dev")
    second = {**raw["nodePools"][0], "name": "gpu-a100", "shape": "BM.GPU.A100-v2.8"}
    raw["nodePools"].append(second)
    roots = [
        {
            "name": f"pci0000:{i:02x}",
            "numaNode": i,
            "gpus": [f"0000:{16 + 4 * i + g:02x}:00.0" for g in range(4)],
            "rails": [
                {"name": f"rdma{8 * i + r}", "pciAddress": f"0000:{64 + 8 * i + r:02x}:00.0"}
                for r in range(8)
            ],
        }
        for i in range(2)
    ]
    raw["shapeTopologies"] = {"BM.GPU.A100-v2.8": {"roots": roots}}
    # Named for both shapes, it is refused on the one that cannot hold it (issue 34: templates per shape).
    six = {"name": "six", "gpusPerWorker": 6, "shapes": ["BM.GPU.B4.8", "BM.GPU.A100-v2.8"]}
    raw["workloads"] = {"claimTemplates": [six], "railsOnlyTemplate": None}
    assert only_problem(raw).startswith(
        f"{SOURCE}: workloads.claimTemplates[0].shapes[1] = 'BM.GPU.A100-v2.8': 6 GPUs per worker cannot be "
        "aligned on BM.GPU.A100-v2.8"
    )
    # Naming no shapes, it is made for the shape that can hold it.
    del six["shapes"]
    stack = load_stack(raw, SOURCE, EXAMPLE_REGION)
    assert [(t.name, t.shape) for t in stack.claims.templates] == [
        ("six-bm-gpu-b4-8", "BM.GPU.B4.8"),
        ("six", "BM.GPU.B4.8"),
    ]


def test_a_boolean_is_not_a_node_count() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["count"] = True
    assert (
        only_problem(raw) == f"{SOURCE}: nodePools[0].count = true: takes a whole number, not true (a switch)"
    )


def test_unknown_top_level_key_is_reported_once() -> None:
    raw = raw_config("dev")
    raw["nodepool"] = []
    assert only_problem(raw) == f"{SOURCE}: nodepool is not a known key; did you mean nodePools?"


def test_a_pool_without_rails_needs_its_ad_and_no_compute_cluster() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0] |= {"rdma": "none", "shape": "VM.GPU.A10.1"}
    raw |= {"dranet": {"enabled": False}, "gpuDriver": {"enabled": False}}
    config = parse_stack_config(raw, SOURCE, EXAMPLE_REGION)
    assert not config.node_pools[0].in_compute_cluster and config.railless_pools == config.node_pools
    del raw["nodePools"][0]["availabilityDomain"]
    assert only_problem(raw) == (
        f"{SOURCE}: nodePools[0]: availabilityDomain is required with rdma: none: the pool is placed in that AD on "
        "the worker subnet"
    )
    raw["nodePools"][0]["computeClusterId"] = "ocid1.computecluster.oc1.iad.aaaaaaaaexisting"
    assert only_problem(raw) == (
        f"{SOURCE}: nodePools[0]: computeClusterId is set but rdma is none: a compute cluster is for the RDMA "
        "fabric between bare-metal nodes, and a pool without rails is not placed in one. Remove computeClusterId, "
        "or set rdma: dranet or sriov"
    )


def test_a_rail_less_pool_is_refused_as_the_acceptance_jobs_pool() -> None:
    raw = without_remediation(raw_config("full"))
    raw["nodePools"].append(
        {**raw["nodePools"][0], "name": "infer-a10", "shape": "VM.GPU.A10.1", "rdma": "none"}
    )
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, "nodePool": "infer-a10"}}
    assert only_problem(raw) == (
        f"{SOURCE}: workloads.acceptanceJobs.nodePool = 'infer-a10': is an rdma: none pool, which has no rails "
        "to test; name a pool with rdma: dranet or sriov"
    )


def test_a_vm_shape_with_rails_is_refused() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["shape"] = "VM.GPU.A10.1"
    assert only_problem(raw) == (
        f"{SOURCE}: nodePools[0]: shape VM.GPU.A10.1 is a VM shape but rdma is dranet: the RDMA rails need the "
        "pool in a compute cluster, which takes bare-metal shapes only. Set rdma: none for a pool without rails, "
        "or use a bare-metal (BM.) shape"
    )


def test_a_structured_value_with_a_number_python_cannot_read_is_one_line() -> None:
    # The CLI hands the program JSON text; an integer of more than 4,300 digits cannot become an int.
    config_map = pulumi_config_map(stack_document("dev"))
    config_map["oke-gpu-rdma:nodePools"] = '[{"name": "a", "count": ' + "9" * 5000 + "}]"
    with pytest.raises(ConfigError) as caught:
        load_program_stack(config_map, "dev")
    assert str(caught.value).splitlines()[1:] == [
        f"  {SOURCE}: nodePools is JSON with an integer of 5000 digits; no setting takes a number that large"
    ]


def test_a_structured_value_nested_past_recursion_is_one_line() -> None:
    config_map = pulumi_config_map(stack_document("dev"))
    config_map["oke-gpu-rdma:dranet"] = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ConfigError) as caught:
        load_program_stack(config_map, "dev")
    assert str(caught.value).splitlines()[1:] == [
        f"  {SOURCE}: dranet is JSON nested deeper than Python reads; no setting nests that deep"
    ]


@pytest.mark.parametrize(
    ("set_value", "line"),
    [
        (
            lambda raw: raw.update(compartmentId="ocid1.subnet.oc1.iad.aaaaaaaaexample"),
            "compartmentId = 'ocid1.subnet.oc1.iad.aaaaaaaaexample': is a subnet OCID; this key takes a "
            "compartment or tenancy OCID (ocid1.compartment.oc1..<unique id>)",
        ),
        (
            lambda raw: raw.update(compartmentId="ocid1.compartment.oc1.iad.aaaaaaaaexample"),
            "compartmentId = 'ocid1.compartment.oc1.iad.aaaaaaaaexample': has a region, but a compartment OCID is "
            "tenancy-wide (ocid1.compartment.oc1..<unique id>); copy it whole from OCI",
        ),
        (
            lambda raw: raw["network"]["existing"]["workerSubnet"].update(
                id="ocid1.vcn.oc1.iad.aaaaaaaaexample"
            ),
            "network.existing.workerSubnet.id = 'ocid1.vcn.oc1.iad.aaaaaaaaexample': is a vcn OCID; this key takes "
            "a subnet OCID (ocid1.subnet.oc1.<region>.<unique id>)",
        ),
        (
            lambda raw: raw["network"]["existing"].update(vcnId="ocid1.subnet.oc1.iad.aaaaaaaaexample"),
            "network.existing.vcnId = 'ocid1.subnet.oc1.iad.aaaaaaaaexample': is a subnet OCID; this key takes a "
            "vcn OCID (ocid1.vcn.oc1.<region>.<unique id>)",
        ),
        (
            lambda raw: raw["cluster"]["existing"].update(id="ocid1.nodepool.oc1.iad.aaaaaaaaexample"),
            "cluster.existing.id = 'ocid1.nodepool.oc1.iad.aaaaaaaaexample': is a nodepool OCID; this key takes a "
            "cluster OCID (ocid1.cluster.oc1.<region>.<unique id>)",
        ),
        (
            lambda raw: raw["nodePools"][0].update(imageId="ocid1.image.oc1..aaaaaaaaexample"),
            "nodePools[0].imageId = 'ocid1.image.oc1..aaaaaaaaexample': has no region, but an image OCID is "
            "regional (ocid1.image.oc1.<region>.<unique id>); copy it whole from OCI",
        ),
        (
            lambda raw: raw["nodePools"][0].update(computeClusterId="ocid1.cluster.oc1.iad.aaaaaaaaexample"),
            "nodePools[0].computeClusterId = 'ocid1.cluster.oc1.iad.aaaaaaaaexample': is a cluster OCID; this key "
            "takes a computecluster OCID (ocid1.computecluster.oc1.<region>.<unique id>)",
        ),
        (
            lambda raw: raw.update(compartmentId="ocid2.compartment.oc1..x"),
            "compartmentId = 'ocid2.compartment.oc1..x': is not an OCI OCID (expected "
            "ocid1.compartment.oc1..<unique id>)",
        ),
    ],
)
def test_an_ocid_of_the_wrong_kind_or_region_form_is_refused(set_value: Any, line: str) -> None:
    raw = raw_config("dev")
    set_value(raw)
    assert only_problem(raw) == f"{SOURCE}: {line}"


def test_ocids_of_every_documented_form_pass() -> None:
    # The tenancy as compartment; a regional OCID with the optional future-use field.
    raw = raw_config("dev")
    raw["compartmentId"] = "ocid1.tenancy.oc1..aaaaaaaaexampletenancy"
    raw["nodePools"][0]["imageId"] = "ocid1.image.oc1.iad.future.aaaaaaaaexampleimage"
    parse_stack_config(raw, SOURCE, EXAMPLE_REGION)


def test_a_shape_in_the_wrong_case_gets_the_closest_name() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["shape"] = "bm.gpu.h100.8"
    assert only_problem(raw).startswith(
        f"{SOURCE}: nodePools[0].shape = 'bm.gpu.h100.8': is not a known RDMA GPU shape; did you mean "
        "BM.GPU.H100.8? (shape names are case-sensitive) known shapes: BM.GPU.A100-v2.8,"
    )


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            lambda raw: raw["nodePools"][0].update(count=10**30),
            "nodePools[0].count = 1000000000000000000000000000000: must be at most 1000",
        ),
        (
            lambda raw: raw["nodePools"][0].update(
                taints=[{"key": "gpu", "value": "a"}, {"key": "gpu", "value": "b", "effect": "NoSchedule"}]
            ),
            "nodePools[0]: taints: gpu:NoSchedule is given twice; Kubernetes refuses a node whose taints repeat a "
            "key and effect, so keep one",
        ),
        (
            lambda raw: raw["nodePools"][0].update(labels={"team/" + "x" * 64: "a"}),
            f"nodePools[0]: label team/{'x' * 64}='a' is not a valid Kubernetes label (key: an optional DNS prefix "
            "of at most 253 characters and '/', then at most 63 letters, digits, '-', '_' or '.'; value: at most 63 "
            "of those)",
        ),
        (
            lambda raw: raw["nodePools"][0].update(cycling={"maximumSurge": 3}),
            "nodePools[0]: cycling.maximumSurge 3 is more than the pool's 2 nodes; OKE takes 0 to the pool size",
        ),
        (
            lambda raw: raw.update(workloads={"acceptanceJobs": {"enabled": True, "railGbps": float("inf")}}),
            "workloads.acceptanceJobs.railGbps = Infinity: must be a finite number",
        ),
        (
            lambda raw: raw.update(workloads={"acceptanceJobs": {"ncclBusbwGBs": float("nan")}}),
            "workloads.acceptanceJobs.ncclBusbwGBs = NaN: must be a finite number",
        ),
        (
            lambda raw: raw.update(workloads={"acceptanceJobs": {"railGbps": -5}}),
            "workloads.acceptanceJobs.railGbps = -5: must be more than 0",
        ),
        (
            lambda raw: raw.update(workloads={"acceptanceJobs": {"timeoutMinutes": 10**30}}),
            "workloads.acceptanceJobs.timeoutMinutes = 1000000000000000000000000000000: must be at most 153722867",
        ),
    ],
)
def test_values_past_oci_and_kubernetes_limits_are_refused(change: Any, line: str) -> None:
    raw = raw_config("dev")
    change(raw)
    assert only_problem(raw) == f"{SOURCE}: {line}"


def test_five_thousand_pools_are_refused_by_the_limit_alone() -> None:
    # One line, from the list's bound, not one per pool (benchmarks/bench_stack_fuzz.py prints how long it takes).
    raw = raw_config("dev")
    raw["nodePools"] = [dict(raw["nodePools"][0], name=f"p{i}") for i in range(5000)]
    line = only_problem(raw)
    assert line.startswith(f"{SOURCE}: nodePools = [") and line.endswith(": must hold at most 2000 items")


def test_a_verified_shapes_topology_cannot_be_overridden() -> None:
    """issue 28: a stack's shapeTopologies entry for a verified shape is refused, naming the key and the
    shape, whatever the entry holds (a one-root topology would make every claim look aligned)."""
    raw = raw_config("dev")
    raw["shapeTopologies"] = {"BM.GPU.B4.8": {"roots": []}}
    assert only_problem(raw) == (
        f"{SOURCE}: shapeTopologies.BM.GPU.B4.8: BM.GPU.B4.8 has a verified topology "
        "(oke_gpu_rdma/nodes/shapes/BM.GPU.B4.8.yaml, measured on the shape) that a supplied one cannot override; "
        "remove this entry (only shapes without a file or with an unverified one can be supplied), or change "
        "the shape file with its evidence (docs/onboarding-a-shape.md)"
    )


def test_policy_pack_settings_reach_the_pack_config_and_bad_ones_are_one_line() -> None:
    from stack_config.pack_config import policy_pack_config

    raw = raw_config("dev")
    raw["policyPack"] = {"managedDeviceClasses": ["rails.example.com"], "managedHelmReleases": ["training"]}
    claims = policy_pack_config(parse_stack_config(raw, SOURCE, EXAMPLE_REGION)).claims
    assert claims is not None
    assert claims.managed_device_classes == ("rails.example.com",)
    assert claims.managed_helm_releases == ("training",)
    raw["policyPack"] = {"managedDeviceClasses": ["Rails"]}
    assert only_problem(raw) == (
        f"{SOURCE}: policyPack.managedDeviceClasses = [\"Rails\"]: 'Rails' is not a DeviceClass name (a lowercase "
        "RFC 1123 subdomain of at most 253 characters, such as dra.net)"
    )
    raw["policyPack"] = {"managedHelmReleases": ["a", "a"]}
    assert only_problem(raw) == (
        f'{SOURCE}: policyPack.managedHelmReleases = ["a", "a"]: listed more than once: a; list each once'
    )


@pytest.mark.parametrize("namespace", ["default", "kube-system"])
def test_sriov_pods_do_not_run_in_a_namespace_the_stack_does_not_own(namespace: str) -> None:
    raw = raw_config("sriov")
    raw["networkOperator"]["networkNamespace"] = namespace
    assert only_problem(raw) == (
        f"{SOURCE}: networkOperator.networkNamespace = '{namespace}': {namespace} is a namespace every cluster "
        "has, whose Pod Security level the stack does not set; the SR-IOV pods need one the stack creates and "
        "labels baseline: use rdma-sriov (the default) or another name"
    )


@pytest.mark.parametrize(
    ("edit", "line"),
    [
        # YAML reads an unquoted 1.33 as a float; quoting it alone would not do, and the message says so.
        (
            lambda raw: raw["cluster"].update(
                existing={**raw["cluster"]["existing"], "kubernetesVersion": 1.33}
            ),
            "cluster.existing.kubernetesVersion = 1.33: takes text, not the number 1.33; YAML reads an unquoted "
            '1.33 as a number: write it in quotes, and even as "1.33" it is refused: is not a Kubernetes version '
            "of the form v1.X.Y (for example v1.34.1)",
        ),
        (
            lambda raw: raw["nodePools"][0].update(count="2"),
            "nodePools[0].count = '2': takes a whole number, not the text '2'; write the number without quotes",
        ),
        # pydantic's lax mode would take "yes" as true; a switch takes true or false only.
        (
            lambda raw: raw["nodePools"][0].update(inTransitEncryption="yes"),
            "nodePools[0].inTransitEncryption = 'yes': takes true or false, not the text 'yes'; write true or "
            "false without quotes",
        ),
        (
            lambda raw: raw["nodePools"][0].update(rdma="sriovv"),
            "nodePools[0].rdma = 'sriovv': takes one of: dranet, sriov, none; did you mean sriov?",
        ),
        (
            lambda raw: raw["nodePools"][0].update(count=[2]),
            "nodePools[0].count = [2]: takes a whole number, not a list",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_told_in_yamls_words(edit: Any, line: str) -> None:
    raw = raw_config("dev")
    edit(raw)
    assert only_problem(raw) == f"{SOURCE}: {line}"


@pytest.mark.parametrize(("text", "value"), [("false", False), ("True", True)])
def test_a_top_level_switch_set_by_the_cli_is_read_as_get_bool_reads_it(text: str, value: bool) -> None:
    # `pulumi config set createComputeClusterPolicy false` stores the text "false".
    raw = raw_config("dev")
    raw["createComputeClusterPolicy"] = text
    assert parse_stack_config(raw, SOURCE, EXAMPLE_REGION).create_compute_cluster_policy is value
    raw["createComputeClusterPolicy"] = "no"
    assert only_problem(raw) == (
        f"{SOURCE}: createComputeClusterPolicy = 'no': takes true or false, not the text 'no'; write true or "
        "false without quotes"
    )
