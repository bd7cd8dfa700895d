"""Jobs that show a deployed stack delivers the seed's numbers (optional, off by default).

- The Kubeflow MPI operator and an MPIJob running NCCL all_reduce_perf with GPUs and rails from one
  aligned claim per worker. Expected (seed 000): about 190 GB/s busbw at 8 GiB for 16 GPUs
  (190.13 GB/s), and about 96 GB/s per job when two 4-GPU jobs share the nodes (96.29 / 96.34).
- Two pods holding every rail of their node, for `rail-bandwidth.sh` (ib_write_bw per rail).
  Expected: at least 96.8 Gb/s per rail (96.87-96.88 in the seed, hostNetwork 96.86-96.88).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from oke_gpu_rdma import resource_types
from oke_gpu_rdma.labels import POOL_LABEL
from oke_gpu_rdma.nccl import NCCL_SETTINGS
from stack_config.claim_plan import PlannedTemplate
from stack_config.model import AcceptanceJobsConfig, Taint, tolerations

from .rdma_workloads import TOOLS_CONFIGMAP, TOOLS_MOUNT
from .typed_inputs import to_input_type

MPI_OPERATOR_MANIFEST = (
    "https://raw.githubusercontent.com/kubeflow/mpi-operator/{version}/deploy/v2beta1/mpi-operator.yaml"
)
EXPECTED_NCCL = (
    "busbw at 8 GiB: about 190 GB/s for 16 GPUs on 2 x BM.GPU.B4.8 (seed 000: 190.13 GB/s); "
    "about 96 GB/s per job when two 4-GPU jobs share the nodes (96.29 / 96.34 GB/s)"
)
EXPECTED_RAILS = "ib_write_bw per rail: >= 96.8 Gb/s (seed 000: 96.87-96.88 Gb/s, hostNetwork 96.86-96.88)"
RAIL_POD_LABEL = "oke-gpu-rdma/rail-test"
# What the seed measured for a job or pod, on the object, for whoever reads its results.
EXPECTED_ANNOTATION = "oke-gpu-rdma/expected"


ALL_REDUCE = "/workspace/nccl-tests/build/all_reduce_perf -b 4G -e 8G -f 2 -g 1 -c 1"


def launcher_script(
    gpus_per_worker: int, extra_exports: Sequence[str] = (), command: str = ALL_REDUCE, note: str = ""
) -> str:
    """The seed's launcher: wait for the workers' sshd, then mpirun all_reduce_perf up to 8 GiB.

    ``extra_exports`` adds `-x NAME=value` settings, ``command`` replaces the benchmark invocation and
    ``note`` adds a comment line (the SR-IOV jobs use all three).
    """
    exports = " \\\n  ".join(
        f"-x {setting}" for setting in [*extra_exports, *(f"{k}={v}" for k, v in NCCL_SETTINGS.items())]
    )
    comment = f"# {note}\n" if note else ""
    return f"""set -e -o pipefail
NUM_GPUS={gpus_per_worker}
NUM_HOSTS=$(sed -n '$=' /etc/mpi/hostfile)
NP=$((NUM_HOSTS * NUM_GPUS))
until (for host in $(awk '{{print $1}}' /etc/mpi/hostfile); do ssh -o ConnectTimeout=5 -o StrictHostKeyChecking=no "$host" exit 2>/dev/null || exit 1; done); do
  echo "Waiting for workers to be ready..."
  sleep 5
done
{comment}# The 40 GB GPUs cannot hold 16 GiB buffers with validation (-c 1), so the test stops at 8 GiB.
mpirun --allow-run-as-root --hostfile /etc/mpi/hostfile -mca coll ^hcoll \\
  -np "$NP" -npernode "$NUM_GPUS" --bind-to numa \\
  -x NCCL_DEBUG=WARN \\
  {exports} \\
  {command}
"""


# The launcher reaches the workers over ssh; NCCL wants a large /dev/shm.
SHM_VOLUME: dict[str, Any] = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}


def mpi_worker(config: AcceptanceJobsConfig) -> dict[str, Any]:
    """The worker container of both rail paths' NCCL jobs: sshd for the launcher, /dev/shm from SHM_VOLUME."""
    return {
        "name": "mpi-worker",
        "image": config.image,
        "command": ["/bin/bash", "-c", "mkdir -p /var/run/sshd; /usr/sbin/sshd -D"],
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
    }


def mpijob_around(
    config: AcceptanceJobsConfig, slots: int, script: str, worker: dict[str, Any]
) -> dict[str, Any]:
    """The MPIJob spec (kubeflow.org/v2beta1): `config.workers` workers like `worker`, `slots` ranks each.

    Its launcher runs `script`; the launcher's template is checked by the typed classes.
    """
    launcher = {
        "spec": {
            "containers": [
                {"name": "mpi-launcher", "image": config.image, "command": ["bash", "-c"], "args": [script]}
            ]
        }
    }
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, launcher, "template")
    return {
        "slotsPerWorker": slots,
        "runPolicy": {"cleanPodPolicy": "Running"},
        "sshAuthMountPath": "/root/.ssh",
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": launcher},
            "Worker": {"replicas": config.workers, "template": worker},
        },
    }


def mpijob_spec(
    config: AcceptanceJobsConfig, claim: PlannedTemplate, pool: str, taints: list[Taint]
) -> dict[str, Any]:
    """The NCCL MPIJob whose workers get GPUs and rails from `claim`, its templates checked by the typed classes."""
    worker = {
        "spec": {
            "nodeSelector": {POOL_LABEL: pool},
            "tolerations": tolerations(taints),
            "resourceClaims": [{"name": "gpus-rails", "resourceClaimTemplateName": claim.name}],
            "volumes": [SHM_VOLUME],
            "containers": [{**mpi_worker(config), "resources": {"claims": [{"name": "gpus-rails"}]}}],
        }
    }
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, worker, "template")
    return mpijob_around(config, claim.gpus_per_worker, launcher_script(claim.gpus_per_worker), worker)


def one_per_node(label: str) -> dict[str, Any]:
    """The pod affinity that keeps two pods labelled `label` off one node (the rail test pair)."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {label: "true"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def rail_pod_spec(
    config: AcceptanceJobsConfig, rails_template: str, pool: str, taints: list[Taint]
) -> dict[str, Any]:
    """A pod holding every rail of its node, one per node (anti-affinity), with the rail tools."""
    return {
        "nodeSelector": {POOL_LABEL: pool},
        "tolerations": tolerations(taints),
        "affinity": one_per_node(RAIL_POD_LABEL),
        "resourceClaims": [{"name": "rails", "resourceClaimTemplateName": rails_template}],
        "containers": [
            {
                "name": "rdma",
                "image": config.image,
                "command": ["sleep", "infinity"],
                "resources": {"claims": [{"name": "rails"}]},
                "volumeMounts": [{"name": "tools", "mountPath": TOOLS_MOUNT, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "tools", "configMap": {"name": TOOLS_CONFIGMAP, "defaultMode": 0o555}}],
    }


def mpi_operator(
    name: str, config: AcceptanceJobsConfig, opts: pulumi.ResourceOptions
) -> k8s.yaml.v2.ConfigFile:
    """The Kubeflow MPI operator (its release manifest), which both rail paths' NCCL jobs need."""
    return k8s.yaml.v2.ConfigFile(
        f"{name}-mpi-operator",
        file=MPI_OPERATOR_MANIFEST.format(version=config.mpi_operator_version),
        opts=opts,
    )


def mpijob(
    name: str,
    job: str,
    namespace: str,
    expected: str,
    spec: dict[str, Any],
    child: pulumi.ResourceOptions,
    depends_on: Sequence[pulumi.Resource],
) -> k8s.apiextensions.CustomResource:
    """The MPIJob `job`, annotated with what the seed measured; after the MPI operator and `depends_on`."""
    return k8s.apiextensions.CustomResource(
        f"{name}-{job}",
        api_version="kubeflow.org/v2beta1",
        kind="MPIJob",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=job, namespace=namespace, annotations={EXPECTED_ANNOTATION: expected}
        ),
        spec=spec,
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(depends_on))),
    )


def rail_test_pods(
    name: str,
    pod: str,
    namespace: str,
    label: str,
    annotations: dict[str, str],
    spec: dict[str, Any],
    child: pulumi.ResourceOptions,
    depends_on: Sequence[pulumi.Resource],
) -> None:
    """The per-rail ib_write_bw pair, `pod`-server and `pod`-client, labelled `label` (their anti-affinity)."""
    for role in ("server", "client"):
        k8s.core.v1.Pod(
            f"{name}-{pod}-{role}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"{pod}-{role}", namespace=namespace, labels={label: "true"}, annotations=annotations
            ),
            spec=to_input_type(k8s.core.v1.PodSpecArgs, spec, "spec"),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(depends_on))),
        )


@dataclass
class AcceptanceJobsArgs:
    config: AcceptanceJobsConfig
    """Validated acceptance-job config (enabled)."""
    namespace: str
    """Workload namespace (Pod Security baseline)."""
    nccl_template: PlannedTemplate | None
    """The aligned template the NCCL workers use (None: no MPI operator, no NCCL job)."""
    rails_template: PlannedTemplate | None
    """The rails-only template of the rail test pods (None: no rail pods)."""
    pool: str
    """The GPU pool the jobs run in: one compute cluster, so one RDMA fabric (two pools share none)."""
    taints: list[Taint]
    """Taints of the GPU pools."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    depends_on: list[pulumi.Resource]
    """Templates and drivers the jobs need."""


class AcceptanceJobs(pulumi.ComponentResource):
    """MPI operator and the NCCL MPIJob, or the rail test pod pair (never both: each takes every rail)."""

    def __init__(
        self, name: str, args: AcceptanceJobsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.ACCEPTANCE_JOBS_COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        if args.nccl_template is not None:
            operator = mpi_operator(name, args.config, child)
            mpijob(
                name,
                "nccl-all-reduce",
                args.namespace,
                EXPECTED_NCCL,
                mpijob_spec(args.config, args.nccl_template, args.pool, args.taints),
                child,
                [operator, *args.depends_on],
            )
        if args.rails_template is not None:
            rail_test_pods(
                name,
                "rail-bw",
                args.namespace,
                RAIL_POD_LABEL,
                {EXPECTED_ANNOTATION: EXPECTED_RAILS},
                rail_pod_spec(args.config, args.rails_template.name, args.pool, args.taints),
                child,
                args.depends_on,
            )
        self.register_outputs({})
