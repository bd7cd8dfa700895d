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


def mpijob_spec(
    config: AcceptanceJobsConfig, claim: PlannedTemplate, pool: str, taints: list[Taint]
) -> dict[str, Any]:
    """The MPIJob spec (kubeflow.org/v2beta1); pod templates are checked by the typed classes."""
    # The launcher needs no GPU; it tolerates the GPU pools' taints so that it also runs where the
    # cluster has no other nodes (an existing cluster), and on the system pool where there is one.
    launcher = {
        "spec": {
            "tolerations": tolerations(taints),
            "containers": [
                {
                    "name": "mpi-launcher",
                    "image": config.image,
                    "command": ["bash", "-c"],
                    "args": [launcher_script(claim.gpus_per_worker)],
                }
            ],
        }
    }
    worker = {
        "spec": {
            "nodeSelector": {POOL_LABEL: pool},
            "tolerations": tolerations(taints),
            "resourceClaims": [{"name": "gpus-rails", "resourceClaimTemplateName": claim.name}],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}],
            "containers": [
                {
                    "name": "mpi-worker",
                    "image": config.image,
                    "command": ["/bin/bash", "-c", "mkdir -p /var/run/sshd; /usr/sbin/sshd -D"],
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                    "resources": {"claims": [{"name": "gpus-rails"}]},
                }
            ],
        }
    }
    for template in (launcher, worker):
        to_input_type(k8s.core.v1.PodTemplateSpecArgs, template, "template")
    return {
        "slotsPerWorker": claim.gpus_per_worker,
        "runPolicy": {"cleanPodPolicy": "Running"},
        "sshAuthMountPath": "/root/.ssh",
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": launcher},
            "Worker": {"replicas": config.workers, "template": worker},
        },
    }


def rail_pod_spec(
    config: AcceptanceJobsConfig, rails_template: str, pool: str, taints: list[Taint]
) -> dict[str, Any]:
    """A pod holding every rail of its node, one per node (anti-affinity), with the rail tools."""
    return {
        "nodeSelector": {POOL_LABEL: pool},
        "tolerations": tolerations(taints),
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {RAIL_POD_LABEL: "true"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
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
            # Its Deployment runs on the system pool, which is among what the jobs wait for.
            operator = mpi_operator(
                name,
                args.config,
                pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(args.depends_on))),
            )
            k8s.apiextensions.CustomResource(
                f"{name}-nccl-all-reduce",
                api_version="kubeflow.org/v2beta1",
                kind="MPIJob",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name="nccl-all-reduce",
                    namespace=args.namespace,
                    annotations={"oke-gpu-rdma/expected": EXPECTED_NCCL},
                ),
                spec=mpijob_spec(args.config, args.nccl_template, args.pool, args.taints),
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[operator, *args.depends_on])
                ),
            )
        if args.rails_template is not None:
            for role in ("server", "client"):
                k8s.core.v1.Pod(
                    f"{name}-rail-bw-{role}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=f"rail-bw-{role}",
                        namespace=args.namespace,
                        labels={RAIL_POD_LABEL: "true"},
                        annotations={"oke-gpu-rdma/expected": EXPECTED_RAILS},
                    ),
                    spec=to_input_type(
                        k8s.core.v1.PodSpecArgs,
                        rail_pod_spec(args.config, args.rails_template.name, args.pool, args.taints),
                        "spec",
                    ),
                    opts=pulumi.ResourceOptions.merge(
                        child, pulumi.ResourceOptions(depends_on=list(args.depends_on))
                    ),
                )
        self.register_outputs({})
