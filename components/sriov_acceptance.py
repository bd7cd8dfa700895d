"""Acceptance jobs for SR-IOV pools: a pod shape that asks for one VF of every rail, the NCCL run, the rail test.

Every pod asks for one VF of every rail (`nvidia.com/rdma-vf-N: 1` for N in rail order, or
`nvidia.com/rdma-vf: 16` with one resource) and lists the networks in rail order in the Multus
annotation, so net1 is rail 0. GPUs come from the device plugin (`nvidia.com/gpu`): the kubelet does
not pair them with VFs, but since every pod holds a VF on every rail, NCCL uses the NICs next to its
GPUs. Expectations are seed 001's measurements, never computed:

- With 2 VFs per PF (two RDMA pods per node): two MPIJobs with 4 GPUs per worker at the same time,
  96.28 and 96.35 GB/s busbw at 8 GiB (a job alone with 4 GPUs per node: 96.64 GB/s in part 1).
- With 1 VF per PF: one MPIJob with 8 GPUs per worker, 190.55 GB/s busbw at 8 GiB for 16 GPUs.
- ib_write_bw per rail between two pods (`scripts/vf-rail-bandwidth.sh`, run by an MPIJob's launcher
  over ssh): 96.86 to 96.88 Gb/s.

Each is an MPIJob that gates `pulumi up` as on the DRANET path (components/acceptance_jobs.py): the
launcher exits non-zero below the stack's threshold (defaults: seed 001's figures) and Pulumi awaits
the job's Succeeded condition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from oke_gpu_rdma import resource_types
from oke_gpu_rdma.acceptance import nccl_threshold, rail_threshold
from oke_gpu_rdma.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.sriov import NCCL_VF_HCA_EXPORT, NETWORKS_ANNOTATION, VF_GID_INDEX
from stack_config.model import AcceptanceJobsConfig, Taint, tolerations
from stack_config.sriov_plan import SriovPlan

from .acceptance_jobs import (
    ALL_REDUCE,
    WORKER_SSHD,
    GateReport,
    busbw_threshold,
    gate_options,
    gating_mpijob,
    launcher_script,
    mpi_operator,
    one_per_node,
    rail_launcher_script,
    rail_threshold_text,
    run_policy,
)
from .typed_inputs import to_input_type

EXPECTED_TWO_JOBS: Final = (
    "busbw at 8 GiB with the other 4-GPU job running at the same time: about 96 GB/s each "
    "(seed 001, 2 VFs per PF, a resource per rail: 96.28 / 96.35 GB/s; one resource split 8/8 without "
    "2 VFs per rail: 17.95 / 8.99 GB/s)"
)
EXPECTED_ONE_JOB: Final = (
    "busbw at 8 GiB: about 190 GB/s for 16 GPUs on 2 x BM.GPU.B4.8 (seed 001, 1 VF per PF: 190.55 GB/s)"
)
EXPECTED_VF_RAILS: Final = (
    "ib_write_bw per rail: >= 96.8 Gb/s (seed 001: 96.86-96.88 Gb/s; exclusive mode without a top-level "
    "rdmaQoS: 43.20-59.45 Gb/s)"
)
RAIL_POD_LABEL: Final = "oke-gpu-rdma/vf-rail-test"
GPUS_PER_NODE: Final = 8
VF_RAIL_CHECK: Final = "vf-rail-bandwidth.sh"
VF_RAIL_JOB: Final = "vf-rail-bandwidth"


def sriov_launcher_script(gpus_per_worker: int, min_busbw: float) -> str:
    """seed 001's launcher: NCCL over the pod's own VFs (GID index 3, NCCL_IB_HCA from net1 ... net16)."""
    return launcher_script(
        gpus_per_worker,
        min_busbw,
        extra_exports=[f"NCCL_IB_GID_INDEX={VF_GID_INDEX}"],
        command=f"bash -c '{NCCL_VF_HCA_EXPORT}; exec {ALL_REDUCE}'",
        note="Each rank uses only the RDMA devices of the VFs in its own pod (net1 to net16).",
    )


def vf_pod_template(
    plan: SriovPlan, container: dict[str, Any], taints: list[Taint], gpus: int = 0
) -> dict[str, Any]:
    """A pod template with one VF of every rail: the networks annotation in rail order and the VF limits.

    `container` is the pod's only container; its limits get the VFs (and `gpus` device-plugin GPUs).
    """
    limits: dict[str, Any] = {NVIDIA_GPU_RESOURCE: gpus} if gpus else {}
    limits.update(plan.pod_vf_limits())
    template = {
        "metadata": {"annotations": {NETWORKS_ANNOTATION: plan.pod_networks()}},
        "spec": {
            "nodeSelector": dict(plan.node_selector),
            "tolerations": tolerations(taints),
            "containers": [{**container, "resources": {"limits": limits}}],
        },
    }
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, template, "template")
    return template


def sriov_mpijob_spec(
    config: AcceptanceJobsConfig, plan: SriovPlan, gpus_per_worker: int, taints: list[Taint], min_busbw: float
) -> dict[str, Any]:
    """An MPIJob (kubeflow.org/v2beta1) whose workers hold one VF of every rail and `gpus_per_worker` GPUs."""
    # No GPU, no VF: it tolerates the SR-IOV pools' taints to run anywhere (components/acceptance_jobs.py).
    launcher = {
        "spec": {
            "tolerations": tolerations(taints),
            "containers": [
                {
                    "name": "mpi-launcher",
                    "image": config.image,
                    "command": ["bash", "-c"],
                    "args": [sriov_launcher_script(gpus_per_worker, min_busbw)],
                }
            ],
        }
    }
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, launcher, "template")
    worker = vf_pod_template(
        plan,
        {
            "name": "mpi-worker",
            "image": config.image,
            "command": WORKER_SSHD,
            "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
        },
        taints,
        gpus=gpus_per_worker,
    )
    worker["spec"]["volumes"] = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}]
    return {
        "slotsPerWorker": gpus_per_worker,
        "runPolicy": run_policy(),
        "sshAuthMountPath": "/root/.ssh",
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": launcher},
            "Worker": {"replicas": config.workers, "template": worker},
        },
    }


def nccl_jobs(plan: SriovPlan) -> list[tuple[str, int, str]]:
    """(name, GPUs per worker, expectation): two jobs side by side when a node holds two RDMA pods."""
    if plan.pods_per_node >= 2:
        per_job = GPUS_PER_NODE // 2
        return [("nccl-vf-a", per_job, EXPECTED_TWO_JOBS), ("nccl-vf-b", per_job, EXPECTED_TWO_JOBS)]
    return [("nccl-vf", GPUS_PER_NODE, EXPECTED_ONE_JOB)]


def vf_rail_mpijob_spec(
    config: AcceptanceJobsConfig, plan: SriovPlan, taints: list[Taint], min_gbps: float
) -> dict[str, Any]:
    """The VF rail test as an MPIJob: two workers, one per node, each with one VF of every rail; the
    launcher runs `scripts/vf-rail-bandwidth.sh` between them over ssh."""
    launcher = {
        "spec": {
            "containers": [
                {
                    "name": "mpi-launcher",
                    "image": config.image,
                    "command": ["bash", "-c"],
                    "args": [rail_launcher_script(VF_RAIL_CHECK, f'{min_gbps} "$SERVER" "$CLIENT"')],
                }
            ]
        }
    }
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, launcher, "template")
    worker = vf_pod_template(
        plan, {"name": "mpi-worker", "image": config.image, "command": WORKER_SSHD}, taints
    )
    worker["metadata"]["labels"] = {RAIL_POD_LABEL: "true"}
    worker["spec"]["affinity"] = one_per_node(RAIL_POD_LABEL)
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, worker, "template")
    return {
        "slotsPerWorker": 1,
        "runPolicy": run_policy(),
        "sshAuthMountPath": "/root/.ssh",
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": launcher},
            "Worker": {"replicas": 2, "template": worker},
        },
    }


@dataclass
class SriovAcceptanceJobsArgs:
    config: AcceptanceJobsConfig
    """Validated acceptance-job config (enabled)."""
    plan: SriovPlan
    """The SR-IOV plan: networks, resources, node selection."""
    taints: list[Taint]
    """Taints of the SR-IOV pools."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    depends_on: list[pulumi.Resource]
    """The networks (and node policies) the pods need."""


class SriovAcceptanceJobs(pulumi.ComponentResource):
    """MPI operator and the NCCL MPIJob(s), or the VF rail test MPIJob, in the networks' namespace."""

    reports: dict[str, GateReport]
    """Per job name: its threshold and where its launcher prints the figures."""

    def __init__(
        self, name: str, args: SriovAcceptanceJobsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.SRIOV_ACCEPTANCE_COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        config = args.config
        namespace = args.plan.operator.network_namespace
        self.reports = {}
        if not (config.nccl or config.rail_bandwidth):
            self.register_outputs({})
            return
        # Its Deployment runs on the system pool, which is among what the jobs wait for.
        operator = mpi_operator(name, config, list(args.depends_on), child)
        needs = gate_options(child, [operator, *args.depends_on])
        if config.nccl:
            for job, gpus, expected in nccl_jobs(args.plan):
                # seed 001 measured both job shapes (8 and 4 GPUs per worker), so a default always exists.
                min_busbw = nccl_threshold("sriov", gpus, config.nccl_busbw_gbs)
                assert min_busbw is not None
                self.reports[job] = gating_mpijob(
                    f"{name}-{job}",
                    job,
                    namespace,
                    expected,
                    busbw_threshold(min_busbw),
                    sriov_mpijob_spec(config, args.plan, gpus, args.taints, min_busbw),
                    config,
                    needs,
                )
        if config.rail_bandwidth:
            min_gbps = rail_threshold("sriov", config.rail_gbps)
            self.reports[VF_RAIL_JOB] = gating_mpijob(
                f"{name}-{VF_RAIL_JOB}",
                VF_RAIL_JOB,
                namespace,
                EXPECTED_VF_RAILS,
                rail_threshold_text(min_gbps),
                vf_rail_mpijob_spec(config, args.plan, args.taints, min_gbps),
                config,
                needs,
            )
        self.register_outputs({"acceptanceJobs": {job: r.to_output() for job, r in self.reports.items()}})
