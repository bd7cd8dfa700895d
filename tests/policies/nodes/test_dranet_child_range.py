"""dranet-child-range: the seed plan passes with the default range; every rule has a failing case."""

from __future__ import annotations

import copy

import pytest

from tests.policies.policy_helpers import (
    DRANET_CHART,
    K8S_PROVIDER,
    UNKNOWN,
    analyze,
    dranet_release,
    k8s,
    notes,
    resource,
    seed_plan,
    violations,
)

POLICY = "dranet-child-range"


def child_violations(*extra, config=None, child=None, plan=None):
    findings = analyze(
        [*(plan if plan is not None else seed_plan()), dranet_release(child=child), *extra], config
    )
    return violations(findings, POLICY), findings


def test_seed_plan_with_default_child_range_passes():
    found, findings = child_violations()
    assert found == []
    assert notes(findings, POLICY) == []


def test_explicit_default_range_passes_and_release_is_named():
    found, _ = child_violations(child="10.208.0.0/12")
    assert found == []


def test_not_a_masked_prefix():
    (v,) = child_violations(child="10.208.1.0/12")[0]
    assert v.level == "mandatory"
    assert "10.208.1.0/12" in v.message and "did you mean 10.208.0.0/12" in v.message
    assert "DRANET stops at startup" in v.message
    assert v.urn.endswith("::dranet")


@pytest.mark.parametrize("child", ["10.208.0.0", "fd00::/8", "banana"])
def test_not_ipv4_cidr(child):
    (v,) = child_violations(child=child)[0]
    assert "DRANET stops at startup" in v.message


@pytest.mark.parametrize(("child", "prefix"), [("10.0.0.0/7", "/7"), ("10.208.0.0/31", "/31")])
def test_prefix_outside_8_to_30(child, prefix):
    found, _ = child_violations(child=child)
    assert any(f"has prefix {prefix}; DRANET accepts /8 to /30" in v.message for v in found)


@pytest.mark.parametrize(
    ("child", "label"),
    [
        ("0.0.0.0/8", "this-network"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("224.0.0.0/8", "multicast"),
        ("240.0.0.0/8", "reserved"),
    ],
)
def test_special_ranges(child, label):
    found, _ = child_violations(child=child)
    assert any(label in v.message for v in found)


def test_overlaps_oca_rdma_network_default_and_configured():
    (v,) = child_violations(child="10.224.0.0/12")[0]
    assert "OCA RDMA network" in v.message and "10.224.0.0/12" in v.message
    found, _ = child_violations(child="10.192.0.0/14", config={POLICY: {"ocaRdmaNetwork": "10.192.0.0/12"}})
    assert any("OCA RDMA network (pack config ocaRdmaNetwork) 10.192.0.0/12" in v.message for v in found)


def test_overlaps_vcn():
    found, _ = child_violations(plan=seed_plan(vcn="10.208.0.0/16", workers="10.208.64.0/19"))
    assert any("VCN vcn (oci:Core/vcn:Vcn) 10.208.0.0/16" in v.message for v in found)
    assert all("child range 10.208.0.0/12" in v.message for v in found)


def test_overlaps_subnet_outside_vcn_list():
    extra = resource("oci:Core/subnet:Subnet", "lb", {"cidrBlock": "10.209.0.0/24"})
    found, _ = child_violations(extra)
    (v,) = found
    assert "subnet lb (oci:Core/subnet:Subnet) 10.209.0.0/24" in v.message
    assert "DRANET Release dranet" in v.message


def test_overlaps_pods_cidr():
    found, _ = child_violations(plan=seed_plan(pods="10.208.0.0/12"))
    assert any("cluster oke pods CIDR" in v.message and "10.208.0.0/12" in v.message for v in found)


def test_overlaps_services_cidr():
    found, _ = child_violations(plan=seed_plan(services="10.210.0.0/16"))
    assert any("cluster oke services CIDR" in v.message and "10.210.0.0/16" in v.message for v in found)


def test_cluster_without_cidrs_uses_oke_defaults():
    cluster = resource("oci:ContainerEngine/cluster:Cluster", "plain", {"options": {}})
    found, _ = child_violations(cluster, child="10.240.0.0/12")
    assert any("cluster plain pods CIDR (OKE default" in v.message for v in found)


def test_overlaps_pack_config_cidr():
    config = {POLICY: {"existingCidrs": [{"name": "existing cluster pods CIDR", "cidr": "10.208.128.0/17"}]}}
    (v,) = child_violations(config=config)[0]
    assert "existing cluster pods CIDR (pack config existingCidrs) 10.208.128.0/17" in v.message


def test_too_small_for_16_rails_on_the_worker_subnet():
    (v,) = child_violations(child="10.208.0.0/16")[0]
    assert "too small for 16 rails" in v.message and "10.140.64.0/19" in v.message
    assert "/15 or larger" in v.message
    # The pack config's worker subnet wins over the stack's.
    found, _ = child_violations(
        child="10.208.0.0/16", config={POLICY: {"workerSubnetCidrs": ["10.140.64.0/20"]}}
    )
    assert found == []


def test_no_worker_subnet_known_is_reported_not_guessed():
    plan = [r for r in seed_plan() if r.type != "oci:ContainerEngine/nodePool:NodePool"]
    found, findings = child_violations(child="10.208.0.0/16", plan=plan)
    assert found == []
    (note,) = notes(findings, POLICY)
    assert note.level == "advisory" and "workerSubnetCidrs" in note.message


def test_two_ranges_on_one_cluster():
    other = dranet_release("dranet-b", child="10.192.0.0/12")
    found, _ = child_violations(other)
    assert len(found) == 2
    assert all("10.208.0.0/12" in v.message and "10.192.0.0/12" in v.message for v in found)
    assert {v.urn.rsplit("::", 1)[-1] for v in found} == {"dranet", "dranet-b"}


def test_two_ranges_on_two_clusters_are_fine():
    other = dranet_release("dranet-b", child="10.192.0.0/12", provider=K8S_PROVIDER.replace("k8s", "k8s-b"))
    assert child_violations(other)[0] == []


def test_helm_v4_chart_and_staging_chart_reference():
    chart = resource(
        "kubernetes:helm.sh/v4:Chart",
        "dranet-v4",
        {
            "chart": "oci://gcr.io/k8s-staging-networking/charts/dranet",
            "values": {
                "args": {
                    "cloudProviderHint": "OKE",
                    "cloudProviderOptions": {"oke": {"rdma-child-ipv4-cidr": "10.240.0.0/14"}},
                }
            },
        },
        provider=K8S_PROVIDER,
    )
    findings = analyze([*seed_plan(), chart])
    (v,) = violations(findings, POLICY)
    assert "DRANET Chart dranet-v4" in v.message and "pods CIDR" in v.message


DAEMONSET = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "dranet", "namespace": "kube-system"},
    "spec": {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "dranet",
                        "image": "registry.k8s.io/networking/dranet:v1.5.0",
                        "args": [
                            "--cloud-provider-hint=OKE",
                            "--cloud-provider-options=oke.rdma-child-ipv4-cidr=10.96.0.0/12",
                        ],
                    }
                ]
            }
        }
    },
}


def test_raw_daemonset_args():
    findings = analyze([*seed_plan(), k8s(DAEMONSET)])
    found = violations(findings, POLICY)
    assert any("DaemonSet dranet" in v.message and "services CIDR" in v.message for v in found)


def test_daemonset_rendered_by_a_dranet_chart_is_not_counted_twice():
    chart = resource(
        "kubernetes:helm.sh/v4:Chart",
        "dranet-v4",
        {"chart": DRANET_CHART, "values": {}},
        provider=K8S_PROVIDER,
    )
    child = k8s(DAEMONSET, parent=chart.urn)
    found = violations(analyze([*seed_plan(), chart, child]), POLICY)
    # Issue 11 item 5: a v4 Chart is checked through the objects it renders (its children), once.
    (v,) = found
    assert v.urn == child.urn and "services CIDR" in v.message


def test_other_cloud_provider_hint_is_not_an_oke_installation():
    release = dranet_release()
    release.struct["values"]["args"]["cloudProviderHint"] = "GCE"
    assert violations(analyze([*seed_plan(pods="10.208.0.0/12"), release]), POLICY) == []


def test_unknown_subnet_cidr_is_a_note_and_known_problems_still_fail():
    plan = seed_plan()
    plan[1] = resource("oci:Core/subnet:Subnet", "workers", {"cidrBlock": UNKNOWN})
    findings = analyze([*plan, dranet_release(child="10.96.0.0/12")])
    (v,) = violations(findings, POLICY)
    assert v.level == "mandatory" and "services CIDR" in v.message
    (note,) = notes(findings, POLICY)
    assert note.level == "advisory" and "subnet workers cidrBlock unknown" in note.message


def test_unknown_child_range_is_a_note():
    findings = analyze([*seed_plan(), dranet_release(child=UNKNOWN)])
    assert violations(findings, POLICY) == []
    assert "unknown until apply" in notes(findings, POLICY)[0].message


def test_values_of_the_wrong_shape_get_a_violation_not_a_traceback():
    release = dranet_release()
    release.struct["values"]["args"] = "OKE"
    (v,) = violations(analyze([*seed_plan(), release]), POLICY)
    assert "values.args must be an object, got a string ('OKE')" in v.message


# -- issue 11 item 5: what the engine sends during preview ---------------------------------------------


def _release_with_files(files, values=UNKNOWN):
    props = {"chart": DRANET_CHART, "valueYamlFiles": files, "values": values}
    return resource("kubernetes:helm.sh/v3:Release", "dranet-files", props, provider=K8S_PROVIDER)


def _string_asset(text):
    # How the engine sends a StringAsset (pulumi/sdk properties.go: the asset signature and its text).
    return {"4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17", "text": text}


def test_value_files_are_read_when_values_are_unknown():
    """Helm merges valueYamlFiles, then values (helm pkg/cli/values MergeValues)."""
    text = "args:\n  cloudProviderOptions:\n    oke:\n      rdma-child-ipv4-cidr: 10.96.0.0/12\n"
    findings = analyze([*seed_plan(), _release_with_files([_string_asset(text)])])
    (v,) = violations(findings, POLICY)
    assert "10.96.0.0/12" in v.message and "services CIDR" in v.message
    assert any("checked with valueYamlFiles only" in n.message for n in notes(findings, POLICY))


def test_values_override_value_files():
    text = "args:\n  cloudProviderOptions:\n    oke:\n      rdma-child-ipv4-cidr: 10.96.0.0/12\n"
    values = {"args": {"cloudProviderOptions": {"oke": {"rdma-child-ipv4-cidr": "10.192.0.0/14"}}}}
    findings = analyze([*seed_plan(), _release_with_files([_string_asset(text)], values)])
    assert violations(findings, POLICY) == []


def test_file_asset_values_are_read(tmp_path):
    path = tmp_path / "dranet-values.yaml"
    path.write_text("args:\n  cloudProviderOptions:\n    oke:\n      rdma-child-ipv4-cidr: 10.240.0.0/14\n")
    asset = {"4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17", "path": str(path)}
    (v,) = violations(analyze([*seed_plan(), _release_with_files([asset])]), POLICY)
    assert "pods CIDR" in v.message


def test_created_cluster_with_unknown_cidrs_is_checked_against_okes_defaults():
    """OKE's documented defaults: pods 10.244.0.0/16, services 10.96.0.0/16 (oke_gpu_rdma.nodes.cidr_rules)."""
    cluster = resource("oci:ContainerEngine/cluster:Cluster", "new", {"options": UNKNOWN})
    plan = [r for r in seed_plan() if r.type != "oci:ContainerEngine/cluster:Cluster"] + [cluster]
    findings = analyze([*plan, dranet_release(child="10.96.0.0/12")])
    (v,) = violations(findings, POLICY)
    assert "cluster new services CIDR (OKE default, its value unknown until apply" in v.message
    assert violations(analyze([*plan, dranet_release(child="10.192.0.0/14")]), POLICY) == []


# -- issue 11 item 6: DRANET options as DRANET reads them -------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # seed 003 / discovery CheckHint: OKE options with another hint stop DRANET at startup.
        (
            {
                "cloudProviderHint": "GCE",
                "cloudProviderOptions": {"oke": {"rdma-child-ipv4-cidr": "10.192.0.0/14"}},
            },
            "stops",
        ),
        (
            {
                "cloudProviderHint": "NONE",
                "cloudProviderOptions": {"oke": {"rdma-child-ipv4-cidr": "10.192.0.0/14"}},
            },
            "stops",
        ),
        # ParseProviderOptions: an unknown OKE option, a provider without options, an upper-case provider.
        ({"cloudProviderOptions": {"oke": {"rdma-child-cidr": "10.192.0.0/14"}}}, "does not know"),
        ({"cloudProviderOptions": {"OKE": {"rdma-child-ipv4-cidr": "10.192.0.0/14"}}}, "defines no options"),
        ({"cloudProviderOptions": {"gce": {"a": "1"}}}, "defines no options"),
        # values.schema.json: cloudProviderHint is a case-sensitive enum.
        ({"cloudProviderHint": "oke"}, "values schema accepts"),
    ],
)
def test_broken_dranet_options_are_violations(args, said):
    release = dranet_release()
    release.struct["values"]["args"] = args
    found = violations(analyze([*seed_plan(), release]), POLICY)
    assert found and any(said in v.message for v in found)


@pytest.mark.parametrize(
    "args",
    [
        {
            "cloudProviderHint": "OKE",
            "cloudProviderOptions": {"oke": {"rdma-child-ipv4-cidr": "10.192.0.0/14"}},
        },
        {"cloudProviderOptions": {"oke": {"rdma-child-ipv4-cidr": "10.192.0.0/14"}}},  # auto-discovery
        {"cloudProviderHint": "GCE"},  # another provider, no OKE options: no child range
        {},
    ],
)
def test_dranet_options_dranet_accepts_pass(args):
    release = dranet_release()
    release.struct["values"]["args"] = args
    assert violations(analyze([*seed_plan(), release]), POLICY) == []


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--cloud-provider-hint=GCE", "--cloud-provider-options=oke.rdma-child-ipv4-cidr=10.192.0.0/14"],
            "stops",
        ),
        (["--cloud-provider-options=oke.rdma-child-ipv4-cidr"], "not <provider>.<option>=<value>"),
        (
            [
                "--cloud-provider-options=oke.rdma-child-ipv4-cidr=10.192.0.0/14",
                "--cloud-provider-options=oke.rdma-child-ipv4-cidr=10.192.0.0/14",
            ],
            "repeats",
        ),
        (["--cloud-provider-options=oke.unknown=1"], "does not know"),
        (["--cloud-provider-hint=oke"], "not a provider DRANET knows"),
    ],
)
def test_broken_dranet_flags_are_violations(flags, said):
    ds = copy.deepcopy(DAEMONSET)
    ds["spec"]["template"]["spec"]["containers"][0]["args"] = flags
    found = violations(analyze([*seed_plan(), k8s(ds)]), POLICY)
    assert any(said in v.message for v in found)


def test_dranet_flags_dranet_accepts_pass():
    ds = copy.deepcopy(DAEMONSET)
    ds["spec"]["template"]["spec"]["containers"][0]["args"] = [
        "--cloud-provider-hint=OKE",
        "--cloud-provider-options=oke.rdma-child-ipv4-cidr=10.192.0.0/14",
    ]
    assert violations(analyze([*seed_plan(), k8s(ds)]), POLICY) == []


def test_daemonset_args_are_expanded_from_the_container_env_as_the_kubelet_does():
    """kubernetes pkg/kubelet/container/helpers.go ExpandContainerCommandAndArgs: `$(CHILD)` in args takes
    the container's env value before DRANET parses its flags; `$$(CHILD)` is an escaped, literal `$(CHILD)`."""
    daemonset = copy.deepcopy(DAEMONSET)
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "CHILD", "value": "10.96.0.0/12"}]
    container["args"][1] = "--cloud-provider-options=oke.rdma-child-ipv4-cidr=$(CHILD)"
    found = violations(analyze([*seed_plan(), k8s(daemonset)]), POLICY)
    assert any("DaemonSet dranet" in v.message and "services CIDR" in v.message for v in found)
    container["env"] = [{"name": "CHILD", "value": "10.224.0.0/12"}]
    container["args"][1] = "--cloud-provider-options=oke.rdma-child-ipv4-cidr=$$(CHILD)"
    found = violations(analyze([*seed_plan(), k8s(daemonset)]), POLICY)
    assert any("'$(CHILD)'" in v.message for v in found), [v.message for v in found]


# -- DRANET recognised by what it is, not by what its chart reference is called (issue 28) ---------------------

DRANET_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "rails"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
}
OVERLAPPING = "10.140.0.0/16"  # the seed VCN itself


def _renamed(**kwargs):
    release = dranet_release(child=OVERLAPPING, **kwargs)
    release.inputs["chart"] = "oci://mirror.example.com/charts/rdma-networking"
    release.struct.update({"chart": release.inputs["chart"]})
    return release


def _overlap_on(name: str, findings) -> list:
    return [
        v for v in violations(findings, POLICY) if v.urn.endswith(f"::{name}") and OVERLAPPING in v.message
    ]


def test_a_renamed_dranet_chart_beside_its_device_class_still_gets_its_child_range_checked():
    component = resource("oke-gpu-rdma:index:Dranet", "net", {})
    component.custom = False
    release = _renamed(parent=component.urn)
    device_class = k8s(DRANET_CLASS, parent=component.urn)
    findings = analyze([*seed_plan(), component, release, device_class])
    assert _overlap_on("dranet", findings)


def test_a_renamed_dranet_chart_a_device_class_depends_on_is_checked():
    release = _renamed()
    device_class = k8s(DRANET_CLASS, dependencies=[release.urn])
    assert _overlap_on("dranet", analyze([*seed_plan(), release, device_class]))


def test_a_renamed_dranet_chart_is_known_by_the_chart_name_helm_recorded():
    release = _renamed()
    release.struct.update({"status": {"chart": "dranet", "version": "v1.5.0"}})
    assert _overlap_on("dranet", analyze([*seed_plan(), release]))


def test_an_unrelated_chart_at_the_stacks_top_level_is_not_taken_for_dranet():
    """Every top-level resource is the stack's child: sharing it ties no chart to a DeviceClass."""
    stack = resource("pulumi:pulumi:Stack", "oke-gpu-rdma-test", {})
    stack.custom = False
    release = _renamed(parent=stack.urn)
    device_class = k8s(DRANET_CLASS, parent=stack.urn)
    assert _overlap_on("dranet", analyze([*seed_plan(), stack, release, device_class])) == []
