"""The remediation controller (oke_gpu_rdma/health/remediation/controller.py) against an in-memory API that answers
the requests it makes: the marks it reads, the requests each transition makes, the Jobs it creates from the
component's templates, and a restart mid-drain. Against the real API server: tests/e2e/test_remediation.py."""

from __future__ import annotations

import copy
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from components.health import node_remediation as component
from oke_gpu_rdma.health.remediation import controller, machine
from oke_gpu_rdma.health.remediation.controller import ApiError, Controller, node_views
from stack_config.health.health_settings import RemediationConfig

POOL = "gpu-b4-a"
CONFIG = component.controller_config(
    RemediationConfig.model_validate({"pools": [POOL], "afterMinutes": 1, "graceMinutes": 1}),
    {POOL: "ocid1.nodepool.oc1.iad.example"},
    "node",
    "rdma-dranet",
    {
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {
                        "serviceAccountName": "fabric-check",
                        "containers": [
                            {"name": "controller", "image": "check", "env": [{"name": "POOL", "value": "x"}]}
                        ],
                    }
                }
            }
        }
    },
)


def node(name: str, block: str = "b1", created: str = "2026-01-01T00:00:00Z", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "labels": {CONFIG["poolLabel"]: POOL, CONFIG["blockLabel"]: block},
        },
        "spec": {"providerID": f"oci://ocid1.instance.oc1.iad.{name}", **spec},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(
    namespace: str, name: str, on: str, workload: str | None = None, daemon: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": namespace, "name": name}
    if workload:
        meta["annotations"] = {controller.WORKLOAD_ANNOTATION: workload}
    if daemon:
        meta["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds"}]
    return {"metadata": meta, "spec": {"nodeName": on}, "status": {"phase": "Running"}}


class FakeApi:
    """The API server as the controller uses it: each request recorded, each answered from ``objects``."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: list[dict[str, Any]] = []
        self.slices: list[dict[str, Any]] = []
        self.jobs: dict[str, dict[str, Any]] = {}
        self.state: dict[str, Any] | None = None
        self.workloads: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, Any]] = []
        self.fail: set[str] = set()

    def request(self, method: str, path: str, body: Any = None, content_type: str = "") -> Any:
        self.calls.append((method, path, body))
        route = urllib.parse.urlparse(path).path
        for prefix in self.fail:
            if route.startswith(prefix):
                raise ApiError(500, "injected")
        if route.endswith(f"/configmaps/{CONFIG['stateConfigMap']}"):
            if method == "GET":
                if self.state is None:
                    raise ApiError(404, "not found")
                return copy.deepcopy(self.state)
            assert (
                self.state is not None
                and body["metadata"]["resourceVersion"] == self.state["metadata"]["resourceVersion"]
            )
            self.state = body | {
                "metadata": body["metadata"]
                | {"resourceVersion": str(int(body["metadata"]["resourceVersion"]) + 1)}
            }
            return {}
        if route.endswith("/configmaps") and method == "POST":
            self.state = body | {"metadata": body["metadata"] | {"resourceVersion": "1"}}
            return {}
        if route == "/api/v1/nodes":
            return {"items": copy.deepcopy(list(self.nodes.values()))}
        if route.startswith("/api/v1/nodes/") and method == "PATCH":
            target = self.nodes[route.rsplit("/", 1)[1]]
            value = body["spec"]["unschedulable"]
            if value is None:
                target["spec"].pop("unschedulable", None)
            else:
                target["spec"]["unschedulable"] = value
            return {}
        if route == "/api/v1/pods":
            return {"items": copy.deepcopy(self.pods)}
        if route.endswith("/eviction"):
            namespace, name = route.split("/")[4], route.split("/")[6]
            self.pods = [
                p
                for p in self.pods
                if (p["metadata"]["namespace"], p["metadata"]["name"]) != (namespace, name)
            ]
            return {}
        if route.endswith("/resourceslices"):
            return {"items": copy.deepcopy(self.slices)}
        if "/workloads/" in route:
            key = "/".join(route.split("/")[5:8:2])
            self.workloads[key] = body["spec"]
            return {}
        if route.endswith("/jobs") and method == "GET":
            return {"items": copy.deepcopy(list(self.jobs.values()))}
        if route.endswith("/jobs") and method == "POST":
            if body["metadata"]["name"] in self.jobs:
                raise ApiError(409, "exists")
            self.jobs[body["metadata"]["name"]] = body
            return {}
        if "/jobs/" in route and method == "DELETE":
            if self.jobs.pop(route.rsplit("/", 1)[1], None) is None:
                raise ApiError(404, "not found")
            return {}
        if route.endswith("/events"):
            return {}
        raise AssertionError(f"unexpected request {method} {path}")

    def items(self, path: str, **params: str) -> list[dict[str, Any]]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return list(self.request("GET", path + query).get("items", []))

    def finish(self, job: str, condition: str) -> None:
        self.jobs[job]["status"] = {"conditions": [{"type": condition, "status": "True"}]}

    def records(self) -> dict[str, machine.Record]:
        assert self.state is not None
        return machine.from_json(json.loads(self.state["data"]["records"]))


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def api() -> FakeApi:
    fake = FakeApi()
    for i in range(1, 5):
        fake.nodes[f"n{i}"] = node(f"n{i}", block="b1" if i < 3 else "b2")
    return fake


def run(api: FakeApi, clock: Clock, seconds: float = 0) -> machine.Step:
    clock.now += seconds
    return Controller(api, CONFIG, clock).round()  # type: ignore[arg-type]


def test_marks_are_read_as_the_stacks_writers_put_them() -> None:
    nodes = [
        node("a", taints=[{"key": CONFIG["railKey"], "value": "rail-agent", "effect": "NoSchedule"}]),
        node("b"),
        node("c"),
        node("d"),
        {
            **node("e"),
            "status": {
                "conditions": [{"type": CONFIG["checkCondition"], "status": "True", "message": "120 GB/s"}]
            },
        },
    ]
    slices = [
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "b", "devices": [
            {"name": "gpu-3", "taints": [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]},
            {"name": "gpu-4", "taints": [{"key": "gpu.nvidia.com/xid", "value": "13", "effect": "None"}]},
        ]}},
    ]  # fmt: skip
    rules = [
        {
            "metadata": {"ownerReferences": [{"kind": "Node", "name": "c"}]},
            "spec": {
                "deviceSelector": {"device": "eth2"},
                "taint": {"key": CONFIG["railKey"], "value": "rail-agent", "effect": "NoSchedule"},
            },
        }
    ]
    views = {v.name: v for v in node_views(CONFIG, nodes, [], slices, rules, [])}
    assert views["a"].marks == (f"rail: {CONFIG['railKey']}=rail-agent",)
    assert views["b"].marks == ("gpu gpu-3: gpu.nvidia.com/xid=79",)  # the None-effect XID keeps nothing out
    assert views["c"].marks == ("rail eth2: rail-agent",)
    assert views["d"].marks == ()
    assert views["e"].marks == ("fabric check: 120 GB/s",)


def test_pods_are_told_apart_as_kueue_workloads_drainable_pods_and_daemons() -> None:
    pods = [
        pod("t", "w-0", "a", workload="job-a"),
        pod("t", "lone", "a"),
        pod("kube-system", "agent", "a", daemon=True),
        {**pod("t", "gone", "a", workload="job-b"), "status": {"phase": "Succeeded"}},
    ]
    [view] = node_views(CONFIG, [node("a")], pods, [], [], [])
    assert view.workloads == ("t/job-a",)
    assert view.pods == ("t/lone", "t/w-0")


def test_a_node_from_mark_to_return_through_the_api(api: FakeApi) -> None:
    clock = Clock()
    api.nodes["n1"]["spec"]["taints"] = [
        {"key": CONFIG["railKey"], "value": "rail-agent", "effect": "NoSchedule"}
    ]
    api.pods = [pod("train", "job-a-0", "n1", workload="job-a"), pod("train", "job-a-1", "n2", workload="job-a"),
                pod("other", "job-b-0", "n3", workload="job-b"), pod("kube-system", "ds", "n1", daemon=True)]  # fmt: skip
    run(api, clock)
    assert api.records()["n1"].state == "watching"
    run(api, clock, 60)
    assert api.nodes["n1"]["spec"]["unschedulable"] is True
    run(api, clock, 60)  # the grace is over: Kueue is asked to evict job-a
    assert api.workloads == {"train/job-a": {"active": False}}
    # Kueue suspends the job and its pods go (the MPI operator deletes them).
    api.pods = [p for p in api.pods if p["metadata"]["name"] not in ("job-a-0", "job-a-1")]
    run(api, clock, 10)
    assert api.workloads == {"train/job-a": {"active": True}}  # requeued
    assert api.records()["n1"].state == "draining"
    run(api, clock, 10)
    [repair] = api.jobs.values()
    env = {e["name"]: e["value"] for e in repair["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (
        env["NODE_OCID"] == "ocid1.instance.oc1.iad.n1"
        and env["NODE_POOL_ID"] == "ocid1.nodepool.oc1.iad.example"
    )
    assert repair["metadata"]["namespace"] == CONFIG["namespace"]
    # Nobody else's pod was evicted; the DaemonSet's stays.
    assert {p["metadata"]["name"] for p in api.pods} == {"job-b-0", "ds"}
    api.finish(repair["metadata"]["name"], "Complete")
    run(api, clock, 10)
    assert api.records()["n1"].state == "replacing"
    del api.nodes["n1"]
    api.pods = [p for p in api.pods if p["spec"]["nodeName"] != "n1"]
    run(api, clock, 10)
    api.nodes["n5"] = node("n5", created="2030-01-01T00:00:00Z")
    run(api, clock, 10)
    assert api.nodes["n5"]["spec"]["unschedulable"] is True
    [check] = [j for j in api.jobs.values() if j["metadata"]["labels"][controller.KIND_LABEL] == "check"]
    env = {e["name"]: e["value"] for e in check["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (
        env["ONLY_NODE"] == "n5" and env["POOL"] == POOL and check["metadata"]["namespace"] == "rdma-dranet"
    )
    api.finish(check["metadata"]["name"], "Complete")
    result = run(api, clock, 10)
    assert "unschedulable" not in api.nodes["n5"]["spec"]
    assert api.records() == {}
    assert [e.reason for e in result.events] == ["Returned"]


def test_a_controller_restarted_mid_drain_resumes_from_its_configmap(api: FakeApi) -> None:
    clock = Clock()
    api.nodes["n1"]["spec"]["unschedulable"] = True
    api.pods = [pod("a", "p1", "n1"), pod("a", "p2", "n1")]
    api.state = {
        "metadata": {"name": CONFIG["stateConfigMap"], "resourceVersion": "7"},
        "data": {
            "records": json.dumps(machine.to_json({"n1": machine.Record("draining", clock.now, POOL, "b1")}))
        },
    }
    api.fail = {"/api/v1/namespaces/a/pods/p2"}  # the first controller dies mid-drain: p1 evicted, p2 not
    with pytest.raises(ApiError):
        run(api, clock, 5)
    assert [p["metadata"]["name"] for p in api.pods] == ["p2"]
    assert api.records()["n1"].state == "draining"  # nothing saved by the failed round
    api.fail = set()
    run(api, clock, 5)  # a new controller: the same record, the eviction still to do
    assert api.pods == [] and api.records()["n1"].state == "draining"
    run(api, clock, 5)
    assert api.records()["n1"].state == "repairing" and len(api.jobs) == 1


def test_metrics_say_every_state_of_every_pool(api: FakeApi) -> None:
    c = Controller(api, CONFIG, Clock())  # type: ignore[arg-type]
    c.round()
    text = c.metrics()
    for state in machine.STATES:
        assert f'oke_gpu_rdma_remediation_nodes{{pool="{POOL}",state="{state}"}} 0' in text


def test_job_names_are_dns_names_whatever_the_node_is_called() -> None:
    name = controller.job_name("repair", "10.140.64.11")
    assert name.startswith("remediation-repair-10-140-64-11-") and len(name) <= 63
    assert controller.job_name("check", "A" * 200) != controller.job_name("check", "A" * 199)


def test_a_new_node_spec_rolls_the_pool_one_block_at_a_time_and_a_first_one_rolls_nothing(
    api: FakeApi,
) -> None:
    clock = Clock()
    config = {**CONFIG, "rollouts": {POOL: "spec-1"}}
    first = Controller(api, config, clock).round()  # type: ignore[arg-type]
    assert first.actions == [] and first.records == {}
    clock.now += 10
    changed = {**CONFIG, "rollouts": {POOL: "spec-2"}}
    result = Controller(api, changed, clock).round()  # type: ignore[arg-type]
    # Block b1 (n1, n2) first; maxNodesPerPool 1: n1 alone.
    assert [(a.kind, a.node) for a in result.actions] == [("cordon", "n1")]
    assert api.records()["n1"].cause == "rollout"
    state = json.loads(api.state["data"]["rollouts"])  # type: ignore[index]
    assert state[POOL] == {"generation": "spec-2", "since": clock.now, "done": False}
    # Every node replaced by a newer one: done, said once.
    api.nodes = {f"m{i}": node(f"m{i}", created="2030-01-01T00:00:00Z") for i in range(1, 5)}
    api.state["data"]["records"] = "{}"  # type: ignore[index]
    clock.now += 10
    events = Controller(api, changed, clock).round().events  # type: ignore[arg-type]
    assert json.loads(api.state["data"]["rollouts"])[POOL]["done"] is True  # type: ignore[index]
    assert Controller(api, changed, clock).round().actions == []  # type: ignore[arg-type]
    assert events == []  # rollout events are the controller's, not the machine's


def test_the_jobs_the_controller_creates_from_the_rendered_config_are_valid_kubernetes() -> None:
    """The repair and check Jobs are JSON in the controller's ConfigMap, which the preview's schema check does not
    see: each as the controller completes it is held to the Kubernetes v1.36 OpenAPI schema, strictly."""
    import kubernetes_validate
    import yaml

    root = Path(__file__).resolve().parents[4]
    rendered = root / "rendered" / "full" / "manifests" / "configmap.node-remediation.node-remediation.yaml"
    config = json.loads(yaml.safe_load(rendered.read_text())["data"]["config.json"])
    target = node("10.140.64.11")
    target["metadata"]["labels"][config["poolLabel"]] = "gpu-b4-a"
    for kind in ("repair", "check"):
        namespace, manifest = controller.job_for(config, kind, target)
        assert manifest["metadata"]["namespace"] == namespace
        kubernetes_validate.validate(manifest, "1.36.0", strict=True)
