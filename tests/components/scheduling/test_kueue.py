"""Kueue as the stack declares it (components/scheduling/kueue.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from components.component_inputs import ComponentInputError
from components.scheduling.kueue import Kueue, KueueArgs
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from stack_config.loading import load_stack
from stack_config.scheduling.scheduling_plan import objects
from tests.support import EXAMPLE_REGION, Run, raw_config

RELEASE = "kubernetes:helm.sh/v3:Release"
PREFIX = "kubernetes:kueue.x-k8s.io/v1beta2:"


def test_off_by_default(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    assert [r for r in run.resources if r.type.startswith(PREFIX)] == []
    assert all(r.inputs["chart"] != kueue.CHART for r in run.of_type(RELEASE))


def test_the_release_and_its_configuration(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    release = run.one(RELEASE, "kueue-release")
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["namespace"], inputs.get("createNamespace")) == (
        "oci://registry.k8s.io/kueue/charts/kueue",
        "0.19.2",
        "kueue-system",
        None,
    )
    # The component declares its namespace, at Pod Security baseline (Helm's createNamespace cannot label it).
    own = run.one("kubernetes:core/v1:Namespace", "kueue-namespace")
    assert own.inputs["metadata"]["name"] == "kueue-system"
    assert own.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert own.urn in release.dependencies
    config = yaml.safe_load(inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["resources"]["deviceClassMappings"] == [
        {"name": "oke-gpu-rdma/gpus", "deviceClassNames": ["gpu.nvidia.com"]},
        {"name": "oke-gpu-rdma/rails", "deviceClassNames": ["dra.net"]},
    ]
    # Its jobs' integrations, webhooks and readiness wait as oke_gpu_rdma/scheduling/kueue_chart.py writes them, for the
    # stack's workload namespace (issue 34 items 5 and 6).
    assert config["integrations"]["frameworks"] == ["batch/job", "kubeflow.org/mpijob"]
    assert config["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == ["rdma-dranet"]
    assert config["waitForPodsReady"]["timeout"] == "15m"
    # It waits for the system pool its controller runs on and for the workload namespace.
    system = run.one("oci:ContainerEngine/nodePool:NodePool", "system-nodes").urn
    namespace = run.one("kubernetes:core/v1:Namespace", "workloads-namespace").urn
    assert {system, namespace} <= set(release.dependencies)


def test_the_objects_are_the_plans(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    stack = load_stack(raw_config("full"), "full", EXAMPLE_REGION)
    assert stack.scheduling is not None
    release = run.one(RELEASE, "kueue-release").urn
    declared = {}
    for r in run.resources:
        if r.type.startswith(PREFIX):
            assert release in r.dependencies  # the chart brings the CRDs and webhooks
            metadata = {k: v for k, v in r.inputs["metadata"].items() if v is not None}
            declared[(r.type.removeprefix(PREFIX), metadata.get("namespace"), metadata["name"])] = r.inputs[
                "spec"
            ]
    expected = {
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]): m["spec"]
        for m in objects(stack.scheduling)
    }
    assert declared == expected
    assert run.run.outputs["scheduling"] == {
        "clusterQueue": "rdma-gpus",
        "localQueue": "rdma-gpus",
        "topology": "rdma-fabric",
    }


def args(**changes: Any) -> KueueArgs:
    base: dict[str, Any] = {
        "flavors": [{"name": "gpu", "node_labels": {"a": "b"}, "quotas": {"oke-gpu-rdma/gpus": "8"}}],
        "levels": ["x/block", "kubernetes.io/hostname"],
        "namespaces": ["work"],
    }
    return KueueArgs(**(base | changes))  # type: ignore[typeddict-item]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"levels": ["kubernetes.io/hostname", "x/block"]},
            "kubernetes.io/hostname may only be the last level",
        ),
        ({"namespaces": []}, "input namespaces = []: is empty"),
        ({"cluster_queue": "Not_A_Label"}, "input clusterQueue = 'Not_A_Label'"),
        (
            {"flavors": [{"name": "gpu", "node_labels": {}, "quotas": {}}]},
            "input flavors[0].nodeLabels = {}: is empty; a flavor with a topology needs at least one node label",
        ),
        ({"topology": "hosts"}, "input topology = 'hosts': is the name of the hosts-only Topology"),
        ({"pods_ready_timeout_minutes": 0}, "input podsReadyTimeoutMinutes = 0: must be a whole number"),
    ],
)
def test_bad_inputs_are_one_message_and_nothing_declared(
    declare: Callable[[Callable[[], object]], Run], changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ComponentInputError) as err:
        declare(lambda: Kueue("kueue", args(**changes)))
    assert message in str(err.value)
    assert str(err.value).startswith("Kueue 'kueue': invalid inputs:")


def test_a_component_built_from_plain_inputs(declare: Callable[[Callable[[], object]], Run]) -> None:
    run = declare(lambda: Kueue("kueue", args()))
    flavor = run.one(PREFIX + "ResourceFlavor")
    assert flavor.inputs["spec"] == {"nodeLabels": {"a": "b"}, "topologyName": "rdma-fabric"}
    name = flavor.inputs["metadata"]["name"]
    assert name.startswith("gpu-")
    queue = run.one(PREFIX + "ClusterQueue")
    assert queue.inputs["spec"]["resourceGroups"][0]["flavors"] == [
        {"name": name, "resources": [{"name": "oke-gpu-rdma/gpus", "nominalQuota": "8"}]}
    ]
    assert run.one(PREFIX + "LocalQueue").inputs["metadata"]["namespace"] == "work"


def test_a_hosts_only_flavor_makes_the_queue_tas_only(declare: Callable[[Callable[[], object]], Run]) -> None:
    """Issue 34 item 1: a flavor of nodes without fabric labels schedules over the hosts Topology the component
    declares, so every flavor of the ClusterQueue has a topology."""
    system = {"name": "system", "node_labels": {"pool": "system"}, "hosts_only": True, "quotas": {"cpu": "8"}}
    run = declare(lambda: Kueue("kueue", args(flavors=[system, *args()["flavors"]])))
    topologies = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in run.of_type(PREFIX + "Topology")}
    assert topologies == {
        "rdma-fabric": {"levels": [{"nodeLabel": "x/block"}, {"nodeLabel": "kubernetes.io/hostname"}]},
        "hosts": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
    }
    flavors = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in run.of_type(PREFIX + "ResourceFlavor")}
    assert sorted(spec["topologyName"] for spec in flavors.values()) == ["hosts", "rdma-fabric"]
    queue = run.one(PREFIX + "ClusterQueue").inputs["spec"]
    assert queue["resourceGroups"][0]["flavors"][0]["name"].startswith("system-")
