"""The remediation controller: every round it reads the remediated pools' nodes and what marks them, asks
:mod:`machine` what to do, does it, and keeps the records (docs/health.md, "Remediation").

Standard library only, like :mod:`machine` beside it: the controller's pod runs both files from a ConfigMap in
a pinned Python image (components/node_remediation.py), talking to the API server over HTTPS with its service
account's token, which it reads again before each request (the kubelet rotates it). Its settings are one JSON
file (``CONFIG``, written by the component).

Marks it reads, each as the stack's writers put them:
- rails: the node taint ``railKey`` (NoSchedule, any value: the rail agent's and the fabric check's) or, from
  Kubernetes 1.37, a DeviceTaintRule with that key, whose node is its Node owner (both writers set one);
- GPUs: a device taint in the GPU DRA driver's ResourceSlices of the node with one of ``gpuTaintKeys`` and
  effect NoSchedule (cmd/gpu-kubelet-plugin/device_health.go);
- the fabric check: the node condition ``checkCondition`` True (a pair below the NCCL threshold).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.server
import importlib
import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any

if __package__:
    from . import machine
else:  # pragma: no cover - the pod runs the two files side by side, as scripts
    machine = importlib.import_module("machine")

# Kueue puts the admitted Workload's name on each pod of a TAS job (apis/kueue/v1beta2/topology_types.go
# WorkloadAnnotation, set by pkg/controller/jobframework/reconciler.go when it starts the job).
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
KUEUE_WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2"
# The node a repair or check Job is for (an annotation: a node name can be longer than a label value).
NODE_ANNOTATION = "oke-gpu-rdma/remediation-node"
KIND_LABEL = "oke-gpu-rdma/remediation-job"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# The metrics the controller serves (Controller.metrics), which the alert rules and the dashboard may name
# (oke_gpu_rdma/monitoring/catalog.py lists them as this project's own exporter).
NODES_METRIC = "oke_gpu_rdma_remediation_nodes"
EVENTS_METRIC = "oke_gpu_rdma_remediation_events_total"
ERRORS_METRIC = "oke_gpu_rdma_remediation_round_errors_total"
LAST_ROUND_METRIC = "oke_gpu_rdma_remediation_last_round_timestamp_seconds"
METRICS = (NODES_METRIC, EVENTS_METRIC, ERRORS_METRIC, LAST_ROUND_METRIC)


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class Kube:
    """The API server, from inside a pod (the in-cluster config client-go builds: KUBERNETES_SERVICE_HOST and
    _PORT, the service account's token and CA)."""

    def __init__(self, server: str, token_file: str, ca_file: str | None, timeout: float = 10) -> None:
        self.server = server.rstrip("/")
        self.token_file = token_file
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()

    @classmethod
    def in_cluster(cls) -> Kube:
        sa = "/var/run/secrets/kubernetes.io/serviceaccount"
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        host = f"[{host}]" if ":" in host else host
        return cls(
            f"https://{host}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}",
            f"{sa}/token",
            f"{sa}/ca.crt",
        )

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        with open(self.token_file) as f:
            token = f.read().strip()
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.context) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("message", detail)
            raise ApiError(err.code, detail) from None
        return json.loads(raw) if raw else {}

    def items(self, path: str, **params: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        query = dict(params)
        while True:
            page = self.request("GET", f"{path}?{urllib.parse.urlencode(query)}" if query else path)
            found += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return found
            query["continue"] = token


def _timestamp(text: str | None) -> float:
    if not text:
        return 0.0
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def _ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _job_result(job: Mapping[str, Any]) -> machine.JobResult:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in ("Complete", "SuccessCriteriaMet"):
            return "succeeded"
        if c.get("status") == "True" and c.get("type") in ("Failed", "FailureTarget"):
            return "failed"
    return "running"


def _rule_node(rule: Mapping[str, Any]) -> str:
    owners = (rule.get("metadata") or {}).get("ownerReferences") or []
    named = [o.get("name", "") for o in owners if o.get("kind") == "Node"]
    return str(named[0] if named else ((rule.get("spec") or {}).get("deviceSelector") or {}).get("pool", ""))


def node_views(
    config: Mapping[str, Any],
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    slices: Iterable[Mapping[str, Any]],
    rules: Iterable[Mapping[str, Any]],
    jobs: Iterable[Mapping[str, Any]],
) -> list[machine.NodeView]:
    """What :func:`machine.step` needs of each node of the remediated pools, from the API's objects."""
    pool_label, block_label = config["poolLabel"], config["blockLabel"]
    rail_key, gpu_keys = config["railKey"], set(config["gpuTaintKeys"])
    marks: dict[str, list[str]] = {}
    for rule in rules:
        taint = (rule.get("spec") or {}).get("taint") or {}
        if taint.get("key") == rail_key and taint.get("effect", "NoSchedule") == "NoSchedule":
            device = ((rule.get("spec") or {}).get("deviceSelector") or {}).get("device", "?")
            marks.setdefault(_rule_node(rule), []).append(f"rail {device}: {taint.get('value', '')}")
    for piece in slices:
        spec = piece.get("spec") or {}
        for device in spec.get("devices") or []:
            for taint in device.get("taints") or []:
                if taint.get("key") in gpu_keys and taint.get("effect") == "NoSchedule":
                    value = f"={taint['value']}" if taint.get("value") else ""
                    marks.setdefault(spec.get("nodeName", ""), []).append(
                        f"gpu {device.get('name', '?')}: {taint['key']}{value}"
                    )
    workloads: dict[str, set[str]] = {}
    evictable: dict[str, list[str]] = {}
    for pod in pods:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        node = spec.get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        name = f"{meta.get('namespace')}/{meta.get('name')}"
        if not meta.get("deletionTimestamp") and (
            workload := (meta.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
        ):
            workloads.setdefault(node, set()).add(f"{meta.get('namespace')}/{workload}")
        daemon = any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or [])
        if not daemon and MIRROR_ANNOTATION not in (meta.get("annotations") or {}):
            evictable.setdefault(node, []).append(name)
    results: dict[tuple[str, str], machine.JobResult] = {}
    for job in jobs:
        annotations = (job.get("metadata") or {}).get("annotations") or {}
        labels = (job.get("metadata") or {}).get("labels") or {}
        if NODE_ANNOTATION in annotations and KIND_LABEL in labels:
            results[(annotations[NODE_ANNOTATION], labels[KIND_LABEL])] = _job_result(job)
    views = []
    for node in nodes:
        meta, spec = node.get("metadata") or {}, node.get("spec") or {}
        labels = meta.get("labels") or {}
        pool, name = str(labels.get(pool_label, "")), str(meta.get("name", ""))
        if pool not in config["pools"]:
            continue
        found = list(marks.get(name, []))
        for taint in spec.get("taints") or []:
            if taint.get("key") == rail_key and taint.get("effect") == "NoSchedule":
                found.append(f"rail: {rail_key}={taint.get('value', '')}")
        for c in (node.get("status") or {}).get("conditions") or []:
            if c.get("type") == config["checkCondition"] and c.get("status") == "True":
                found.append(f"fabric check: {c.get('message') or c.get('reason') or 'failed'}")
        views.append(
            machine.NodeView(
                name=name,
                pool=pool,
                block=labels.get(block_label, ""),
                created=_timestamp(meta.get("creationTimestamp")),
                ready=_ready(node),
                unschedulable=bool(spec.get("unschedulable")),
                marks=tuple(found),
                workloads=tuple(sorted(workloads.get(name, ()))),
                pods=tuple(sorted(evictable.get(name, ()))),
                repair=results.get((name, "repair")),
                check=results.get((name, "check")),
            )
        )
    return views


def job_name(kind: str, node: str) -> str:
    """A Job's name for a node: DNS-1123 whatever the node's name, unique by its hash."""
    digest = hashlib.sha256(node.encode()).hexdigest()[:10]
    stem = "".join(ch if ch.isalnum() else "-" for ch in node.lower()).strip("-")[:30]
    return f"remediation-{kind}-{stem}-{digest}"


def job_for(config: Mapping[str, Any], kind: str, node: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The namespace and manifest of the repair or check Job of ``node`` from the component's templates."""
    template = config[f"{kind}Job"]
    name = node["metadata"]["name"]
    pool = (node["metadata"].get("labels") or {}).get(config["poolLabel"], "")
    env = {"NODE_NAME": name}
    if kind == "repair":
        provider = (node.get("spec") or {}).get("providerID", "")
        env |= {
            "NODE_OCID": provider.removeprefix("oci://"),
            "NODE_POOL_ID": config["pools"][pool]["nodePoolId"],
        }
    else:
        env |= {"ONLY_NODE": name, "POOL": pool}
    manifest = json.loads(json.dumps(template["job"]))
    manifest["metadata"] = {
        "name": job_name(kind, name),
        "namespace": template["namespace"],
        "labels": {KIND_LABEL: kind, **(manifest.get("metadata") or {}).get("labels", {})},
        "annotations": {NODE_ANNOTATION: name},
    }
    for container in manifest["spec"]["template"]["spec"]["containers"]:
        kept = [e for e in container.get("env", []) if e["name"] not in env]
        container["env"] = kept + [{"name": k, "value": v} for k, v in env.items()]
    return template["namespace"], manifest


class Controller:
    def __init__(self, kube: Kube, config: Mapping[str, Any], clock: Any = time.time) -> None:
        self.kube, self.clock = kube, clock
        self.configure(config)
        self.records: dict[str, machine.Record] = {}
        self.totals: dict[tuple[str, str], int] = {}
        self.errors = 0
        self.last_round = 0.0

    def configure(self, config: Mapping[str, Any]) -> None:
        """Take ``config`` (read again every round: an apply that changes it updates the mounted ConfigMap,
        and the kubelet the file, without a restart)."""
        self.config = config
        self.settings = machine.Settings(**config["settings"])
        self.namespace = config["namespace"]

    # -- state --------------------------------------------------------------------------------------
    def _state_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/configmaps/{self.config['stateConfigMap']}"

    def load(self) -> tuple[dict[str, machine.Record], dict[str, dict[str, Any]], str | None]:
        """The records, each pool's rollout ({generation, since, done}) and the ConfigMap's resourceVersion."""
        try:
            found = self.kube.request("GET", self._state_path())
        except ApiError as err:
            if err.status == 404:
                return {}, {}, None
            raise
        data = found.get("data") or {}
        records = machine.from_json(json.loads(data.get("records", "{}")))
        return records, json.loads(data.get("rollouts", "{}")), found["metadata"].get("resourceVersion")

    def save(
        self, records: Mapping[str, machine.Record], rollouts: Mapping[str, Any], version: str | None
    ) -> None:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.config["stateConfigMap"], "namespace": self.namespace},
            "data": {
                "records": json.dumps(machine.to_json(records), sort_keys=True),
                "rollouts": json.dumps(rollouts, sort_keys=True),
            },
        }
        if version is None:
            self.kube.request("POST", f"/api/v1/namespaces/{self.namespace}/configmaps", body)
        else:
            body["metadata"]["resourceVersion"] = (
                version  # a conflict (409) skips the round: no double actions
            )
            self.kube.request("PUT", self._state_path(), body)

    # -- reads --------------------------------------------------------------------------------------
    def read(self) -> tuple[list[dict[str, Any]], list[machine.NodeView]]:
        pools = ",".join(sorted(self.config["pools"]))
        nodes = self.kube.items("/api/v1/nodes", labelSelector=f"{self.config['poolLabel']} in ({pools})")
        pods = self.kube.items("/api/v1/pods", fieldSelector="spec.nodeName!=")
        slices = [
            s
            for s in self.kube.items("/apis/resource.k8s.io/v1/resourceslices")
            if (s.get("spec") or {}).get("driver") == self.config["gpuDriver"]
        ]
        rules = (
            self.kube.items("/apis/resource.k8s.io/v1/devicetaintrules")
            if self.config["markMode"] == "device"
            else []
        )
        jobs = []
        for kind in ("repair", "check"):
            namespace = self.config[f"{kind}Job"]["namespace"]
            jobs += self.kube.items(
                f"/apis/batch/v1/namespaces/{namespace}/jobs", labelSelector=f"{KIND_LABEL}={kind}"
            )
        return nodes, node_views(self.config, nodes, pods, slices, rules, jobs)

    # -- actions ------------------------------------------------------------------------------------
    def act(self, action: machine.Action, nodes: Mapping[str, Mapping[str, Any]]) -> None:
        merge = "application/merge-patch+json"
        if action.kind in ("cordon", "uncordon"):
            value = True if action.kind == "cordon" else None
            self.kube.request(
                "PATCH", f"/api/v1/nodes/{action.node}", {"spec": {"unschedulable": value}}, merge
            )
        elif action.kind in ("deactivate", "reactivate"):
            namespace, name = action.target.split("/", 1)
            path = f"{KUEUE_WORKLOADS}/namespaces/{namespace}/workloads/{name}"
            try:
                self.kube.request("PATCH", path, {"spec": {"active": action.kind == "reactivate"}}, merge)
            except ApiError as err:
                if err.status != 404:  # a finished job's Workload may be gone: nothing to requeue
                    raise
        elif action.kind == "evict":
            namespace, name = action.target.split("/", 1)
            body = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": name, "namespace": namespace},
            }
            try:
                self.kube.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body)
            except ApiError as err:
                # 429: a PodDisruptionBudget says not now (the next round asks again); 404: already gone.
                if err.status not in (404, 429):
                    raise
        elif action.kind in ("start-repair", "start-check"):
            kind = action.kind.removeprefix("start-")
            if action.node not in nodes:
                return
            namespace, manifest = job_for(self.config, kind, nodes[action.node])
            try:
                self.kube.request("POST", f"/apis/batch/v1/namespaces/{namespace}/jobs", manifest)
            except ApiError as err:
                if err.status != 409:  # it exists: the round that made it did not save its record
                    raise
        elif action.kind == "delete-jobs":
            for kind in ("repair", "check"):
                namespace = self.config[f"{kind}Job"]["namespace"]
                path = f"/apis/batch/v1/namespaces/{namespace}/jobs/{job_name(kind, action.node)}"
                try:
                    self.kube.request("DELETE", path, {"propagationPolicy": "Background"})
                except ApiError as err:
                    if err.status != 404:
                        raise

    def event(self, event: machine.Event, pool: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(self.clock()))
        node = event.node if ":" not in event.node else ""  # successor:<pool>, rollout:<pool>
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"generateName": "node-remediation-", "namespace": self.namespace},
            "eventTime": now,
            "reportingController": "oke-gpu-rdma/node-remediation",
            "reportingInstance": os.environ.get("POD_NAME", "node-remediation"),
            "action": event.reason,
            "reason": event.reason,
            "type": "Warning" if event.warning else "Normal",
            "note": event.message[:1024],
            **({"regarding": {"kind": "Node", "apiVersion": "v1", "name": node}} if node else {}),
        }
        # An event is a courtesy; the record and the metric carry the state.
        with contextlib.suppress(ApiError):
            self.kube.request("POST", f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events", body)
        self.totals[(pool, event.reason)] = self.totals.get((pool, event.reason), 0) + 1
        print(f"{event.node}: {event.reason}: {event.message}", flush=True)

    def rollouts(
        self,
        known: Mapping[str, Any],
        views: list[machine.NodeView],
        records: Mapping[str, machine.Record],
        now: float,
    ) -> tuple[dict[str, Any], list[machine.NodeView], list[tuple[str, machine.Event]]]:
        """Each pool's rollout against the generation the stack now declares (config ``rollouts``: a digest of
        what OKE builds a new node from). A generation first seen starts nothing (every node counts as
        current); a changed one starts a rollout at ``now``: a node created before it is outdated, which the
        machine replaces one local block at a time. Once none is left and none is out of service for it,
        the rollout is done (said once)."""
        out: dict[str, Any] = {k: dict(v) for k, v in known.items()}
        events: list[tuple[str, machine.Event]] = []
        for pool, generation in (self.config.get("rollouts") or {}).items():
            state = out.get(pool)
            if state is None:
                out[pool] = {"generation": generation, "since": 0, "done": True}
            elif state["generation"] != generation:
                out[pool] = {"generation": generation, "since": now, "done": False}
                message = f"pool {pool} has a new node spec ({generation[:12]}); its nodes roll one local block at a time"
                events.append((pool, machine.Event(f"rollout:{pool}", "RolloutStarted", message)))
        since = {pool: float(state["since"]) for pool, state in out.items() if not state.get("done")}
        views = [
            dataclasses.replace(v, outdated=v.pool in since and v.created < since[v.pool]) for v in views
        ]
        for pool in since:
            if not any(v.outdated for v in views if v.pool == pool) and not any(
                r.pool == pool and r.cause == "rollout" and r.state in machine.ACTIVE
                for r in records.values()
            ):
                out[pool]["done"] = True
                events.append(
                    (
                        pool,
                        machine.Event(
                            f"rollout:{pool}", "RolloutDone", f"every node of pool {pool} is current"
                        ),
                    )
                )
        return out, views, events

    def round(self) -> machine.Step:
        records, known, version = self.load()
        nodes, views = self.read()
        now = self.clock()
        rollouts, views, rollout_events = self.rollouts(known, views, records, now)
        result = machine.step(now, views, records, self.settings)
        by_name = {n["metadata"]["name"]: n for n in nodes}
        for action in result.actions:
            self.act(action, by_name)
        self.save(result.records, rollouts, version)
        pools = {v.name: v.pool for v in views} | {
            k: r.pool for k, r in {**records, **result.records}.items()
        }
        for pool, event in rollout_events:
            self.event(event, pool)
        for event in result.events:
            self.event(event, pools.get(event.node, event.node.removeprefix("successor:")))
        self.records = result.records
        self.last_round = self.clock()
        return result

    def metrics(self) -> str:
        lines = [
            f"# HELP {NODES_METRIC} Nodes of a remediated pool by remediation state.",
            f"# TYPE {NODES_METRIC} gauge",
        ]
        for (pool, state), n in sorted(machine.counts(self.records, self.config["pools"]).items()):
            lines.append(f'{NODES_METRIC}{{pool="{pool}",state="{state}"}} {n}')
        lines += [
            f"# HELP {EVENTS_METRIC} Remediation transitions by pool and reason.",
            f"# TYPE {EVENTS_METRIC} counter",
        ]
        for (pool, reason), n in sorted(self.totals.items()):
            lines.append(f'{EVENTS_METRIC}{{pool="{pool}",reason="{reason}"}} {n}')
        lines += [
            f"# HELP {ERRORS_METRIC} Rounds that failed (API errors).",
            f"# TYPE {ERRORS_METRIC} counter",
            f"{ERRORS_METRIC} {self.errors}",
            f"# HELP {LAST_ROUND_METRIC} When the last round completed.",
            f"# TYPE {LAST_ROUND_METRIC} gauge",
            f"{LAST_ROUND_METRIC} {self.last_round}",
        ]
        return "\n".join(lines) + "\n"


def serve_metrics(controller: Controller, port: int) -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = controller.metrics().encode() if self.path == "/metrics" else b"ok\n"
            healthy = (
                self.path != "/healthz"
                or time.time() - controller.last_round < 10 * controller.config["intervalSeconds"]
            )
            self.send_response(200 if healthy else 503)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main() -> int:  # pragma: no cover - the pod's entry point, run by the e2e tests
    with open(os.environ["CONFIG"]) as f:
        config = json.load(f)
    kube = (
        Kube(os.environ["KUBE_SERVER"], os.environ["KUBE_TOKEN_FILE"], os.environ.get("KUBE_CA"))
        if os.environ.get("KUBE_SERVER")
        else Kube.in_cluster()
    )
    controller = Controller(kube, config)
    controller.last_round = time.time()
    serve_metrics(controller, int(config["metricsPort"]))
    while True:
        try:
            with open(os.environ["CONFIG"]) as f:
                controller.configure(json.load(f))
            controller.round()
        except (ApiError, OSError, ValueError) as err:
            controller.errors += 1
            print(f"round failed: {err}", file=sys.stderr, flush=True)
        time.sleep(config["intervalSeconds"])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
