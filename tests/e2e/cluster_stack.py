"""A stack applied to a fresh control plane: its nodes, the upstream CRDs and operators it needs, and every
Kubernetes object it writes, each by server-side apply with field validation Strict.

The objects are the program's own (rendered/<stack>/manifests/ as the program declares it now) plus the MPI
operator's release manifest passed through the component's own transform (components/health/acceptance_jobs.py
narrowed_object), which is what the ConfigFile applies. Objects of a Helm release's chart are not applied
(out of scope), but for the GPU DRA driver's DeviceClass, which the claims name (its selector is a recorded
fact of the chart, oke_gpu_rdma/drivers/nvidia_gpu.py). Custom resources whose CRD ships only inside a chart
that no module registry serves (the NVIDIA Network Operator's: NicClusterPolicy, SriovNetwork...) are listed
in ``skipped``, never dropped silently.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.scheduling.mpi_operator_install import narrowed_object
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.drivers import compute_domains, nvidia_gpu
from oke_gpu_rdma.scheduling import mpi_operator
from stack_config.drivers import compute_domain_plan
from tests.e2e import compute_domain_driver, upstream
from tests.e2e.control_plane import ControlPlane, Process, free_port
from tests.e2e.kube import ApiError, Kube, describe
from tests.e2e.nodes import FakeNode, Placement, register, stack_nodes
from tests.e2e.stacks import RenderedStack

# Groups whose CRDs come with a chart no module registry serves here (oke_gpu_rdma/sriov/network_operator_chart.py).
CHART_ONLY_GROUPS = frozenset({"mellanox.com", "sriovnetwork.openshift.io", "nv-ipam.nvidia.com"})
# cmd/mpi-operator/app/server.go at v0.6.0: healthCheckPort = 8080, on every interface, not configurable.
MPI_OPERATOR_HEALTH_PORT = 8080
MPI_OPERATOR_SA = "system:serviceaccount:{namespace}:{name}"


@dataclass
class Refusal:
    what: str
    message: str

    def __str__(self) -> str:
        return f"{self.what}: {self.message}"


@dataclass
class StackCluster:
    stack: RenderedStack
    plane: ControlPlane
    nodes: list[FakeNode] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)

    @property
    def kube(self) -> Kube:
        return self.plane.kube

    def node(self, name: str) -> FakeNode:
        return next(n for n in self.nodes if n.name == name)


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60, every: float = 0.5) -> Any:
    """Poll ``check`` until it returns something truthy; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not after {timeout:.0f} s (last: {last!r})")


def mpi_pods(kube: Kube, job: Mapping[str, Any], role: str) -> list[dict[str, Any]]:
    """The MPI operator's pods of ``job`` in ``role`` (its labels: training.kubeflow.org/job-name and
    training.kubeflow.org/job-role, pkg/controller/mpi_job_controller.go at v0.6.0)."""
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role={role}"
    found: list[dict[str, Any]] = kube.list("v1", "Pod", namespace, labelSelector=selector)
    return found


def bound_workers(kube: Kube, job: Mapping[str, Any], what: str) -> list[dict[str, Any]]:
    """Every worker pod of the MPIJob ``job``, once each has a node."""
    replicas = job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    found: list[dict[str, Any]] = wait_for(
        lambda: (
            (p := mpi_pods(kube, job, "worker"))
            and len(p) == replicas
            and all(x["spec"].get("nodeName") for x in p)
            and p
        ),
        what,
    )
    return found


def one_per_node_within(cluster: StackCluster, pods: list[dict[str, Any]], label: str) -> set[str]:
    """The nodes of ``pods``, asserted one pod a node and one value of the node label ``label`` among them."""
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert len(nodes) == len(pods), f"two pods on one node: {sorted(nodes)}"
    values = {cluster.node(n).labels[label] for n in nodes}
    assert len(values) == 1, f"pods across {label} values: {sorted(nodes)}"
    return nodes


def _group(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else ""


def _wait_established(kube: Kube, crds: Iterable[Mapping[str, Any]]) -> None:
    for crd in crds:
        name = crd["metadata"]["name"]

        def established(name: str = name) -> bool:
            found = kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}") or {}
            conditions = (found.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

        wait_for(established, f"CRD {name} established", 30, 0.2)


def _mpi_operator_objects(stack: RenderedStack) -> tuple[list[dict[str, Any]], mpi_operator.Release | None]:
    config = stack.stack.config
    jobs = config.workloads.acceptance_jobs
    if not any(m.get("kind") == "MPIJob" for m in stack.manifests.values()):
        return [], None
    release = mpi_operator.release(jobs.mpi_operator_version)
    # The namespace the component limits the operator to (its --namespace, in the component's inputs).
    [component] = [r for r in stack.resources if r.type == resource_types.MPI_OPERATOR_COMPONENT]
    deployment = f"Deployment {release.deployment['namespace']}/{release.deployment['name']}"
    [namespace] = [
        a.split("=", 1)[1]
        for a in component.inputs["narrowed"][deployment]["args"]
        if a.startswith(f"{mpi_operator.NAMESPACE_FLAG}=")
    ]
    objects = []
    for obj in upstream.mpi_operator_manifest():
        narrowed = narrowed_object(dict(obj), release, namespace)
        objects.append(obj if narrowed is None else narrowed)
    return objects, release


def _ordered(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces and CRDs first, as `kubectl apply` and pulumi-kubernetes' yaml/v2 order them."""
    first = {"Namespace": 0, "CustomResourceDefinition": 1}
    return sorted(objects, key=lambda o: first.get(o["kind"], 2))


class Installer:
    def __init__(self, plane: ControlPlane, stack: RenderedStack) -> None:
        self.cluster = StackCluster(stack, plane)
        self.mpi_operator_args: list[str] = []

    def _apply(self, obj: Mapping[str, Any]) -> None:
        try:
            self.cluster.kube.apply(obj)
            self.cluster.applied.append(describe(obj))
        except ApiError as err:
            self.cluster.refused.append(Refusal(describe(obj), err.message))

    def install(self, placement: Placement | None = None) -> StackCluster:
        cluster, kube, stack = self.cluster, self.cluster.kube, self.cluster.stack
        config = stack.stack.config
        manifests = list(stack.manifests.values())
        operator_objects, release = _mpi_operator_objects(stack)
        everything = _ordered([*manifests, *operator_objects])
        kinds = {(o["apiVersion"], o["kind"]) for o in everything}

        # CRDs: the MPI operator's (in its manifest), Prometheus operator's for the monitoring kinds, Kueue's.
        crds = [o for o in everything if o["kind"] == "CustomResourceDefinition"]
        monitoring = {kind for api, kind in kinds if api == upstream.kps.MONITORING_API}
        if monitoring:
            plurals = {k: v for k, v in upstream.MONITORING_PLURALS.items() if k in monitoring}
            crds += upstream.prometheus_operator_crds(plurals)
        kueue_config = stack.kueue_manager_config()
        webhook_base = ""
        if kueue_config is not None:
            cluster.plane.webhook_port = cluster.plane.webhook_port or free_port()
            webhook_base = f"https://127.0.0.1:{cluster.plane.webhook_port}"
            crds += upstream.kueue_crds(webhook_base, cluster.plane.ca_bundle())
        if any(_group(o["apiVersion"]) == compute_domains.API_GROUP for o in everything):
            crds += upstream.compute_domain_crds()
        for crd in crds:
            self._apply(crd)
        _wait_established(kube, crds)

        if config.gpu_driver.enabled:
            self._apply(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "DeviceClass",
                    "metadata": {"name": nvidia_gpu.DEVICE_CLASS},
                    "spec": {"selectors": [{"cel": {"expression": nvidia_gpu.CLASS_SELECTOR}}]},
                }
            )
        if compute_domain_plan.enabled(config):
            # The ComputeDomain release's chart creates these; no chart is applied here.
            for device_class in compute_domain_driver.device_classes():
                self._apply(device_class)
        cluster.nodes = stack_nodes(stack, placement)
        register(kube, cluster.nodes)

        for obj in everything:
            if obj["kind"] == "Namespace":
                self._apply(obj)
        if kueue_config is not None:
            cluster.plane.start_kueue(kueue_config, str((stack.helm_release("/kueue") or {})["namespace"]))
            for webhook in upstream.kueue_webhooks(webhook_base, cluster.plane.ca_bundle()):
                self._apply(webhook)
        kube.forget_kinds()  # new CRDs
        for obj in everything:
            if obj["kind"] in ("Namespace", "CustomResourceDefinition"):
                continue
            if _group(obj["apiVersion"]) in CHART_ONLY_GROUPS:
                cluster.skipped.append(describe(obj))
                continue
            self._apply(obj)
        # The driver's controller writes each ComputeDomain's channel template (tests/e2e/compute_domain_driver.py).
        for obj in everything:
            if obj["kind"] == compute_domains.KIND and describe(obj) in cluster.applied:
                self._apply(compute_domain_driver.channel_template(kube.get(kube.path_of(obj))))
        if release is not None:
            [deployment] = [
                o
                for o in operator_objects
                if o["kind"] == "Deployment" and o["metadata"]["name"] == release.deployment["name"]
            ]
            self.mpi_operator_args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            self.start_mpi_operator(release)
        return cluster

    def start_mpi_operator(self, release: mpi_operator.Release) -> Process:
        """The operator built from its module, with the flags the stack's Deployment gives it, as its service
        account (the stack's narrowed RBAC is what it may do)."""
        plane = self.cluster.plane
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", MPI_OPERATOR_HEALTH_PORT)) == 0:
                raise RuntimeError(
                    f"port {MPI_OPERATOR_HEALTH_PORT} is taken (another e2e run's MPI operator?): the operator "
                    "serves its health check there and cannot be moved"
                )
        sa_namespace, sa_name = release.service_account
        kubeconfig = yaml.safe_load(plane.kubeconfig.read_text())
        kubeconfig["users"][0]["user"]["as"] = MPI_OPERATOR_SA.format(namespace=sa_namespace, name=sa_name)
        path = plane.workdir / "mpi-operator.kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig))
        return plane._start("mpi-operator", [*self.mpi_operator_args, f"--kubeConfig={path}"])


def install_stack(workdir: Path, stack: RenderedStack, placement: Placement | None = None) -> StackCluster:
    plane = ControlPlane(workdir).start()
    try:
        return Installer(plane, stack).install(placement)
    except BaseException:
        plane.stop()
        raise
