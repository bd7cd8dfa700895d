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

Each is an MPIJob that gates `pulumi up` as on the DRANET path (components/health/acceptance_jobs.py): the
launcher exits non-zero below the stack's threshold (defaults: seed 001's figures) and Pulumi awaits
the job's Succeeded condition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.health.acceptance_jobs import GatingJobs, busbw_threshold, rail_threshold_text
from components.health.mpijob_specs import (
    ALL_REDUCE,
    WORKER_SSHD,
    launcher_script,
    launcher_template,
    mpijob,
    one_per_node,
    rail_launcher_script,
    shm_mount,
    shm_volume,
)
from components.typed_inputs import to_input_type
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.health.acceptance import nccl_threshold, rail_threshold
from oke_gpu_rdma.sriov.operator_objects import NCCL_VF_HCA_EXPORT, NETWORKS_ANNOTATION, VF_GID_INDEX
from stack_config.health.acceptance_settings import AcceptanceJobsConfig
from stack_config.nodes.pool_settings import Taint, tolerations
from stack_config.sriov.sriov_plan import SriovPlan, SriovShapePlan, nccl_job_sizes

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
    plan: SriovShapePlan, container: dict[str, Any], taints: list[Taint], gpus: int = 0
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
    config: AcceptanceJobsConfig,
    plan: SriovShapePlan,
    gpus_per_worker: int,
    taints: list[Taint],
    min_busbw: float,
) -> dict[str, Any]:
    """An MPIJob (kubeflow.org/v2beta1) whose workers hold one VF of every rail and `gpus_per_worker` GPUs."""
    # No GPU, no VF: it tolerates the SR-IOV pools' taints to run anywhere (components/health/acceptance_jobs.py).
    launcher = launcher_template(config.image, sriov_launcher_script(gpus_per_worker, min_busbw), taints)
    worker = vf_pod_template(
        plan,
        {
            "name": "mpi-worker",
            "image": config.image,
            "command": WORKER_SSHD,
            "volumeMounts": [shm_mount()],
        },
        taints,
        gpus=gpus_per_worker,
    )
    worker["spec"]["volumes"] = [shm_volume()]
    return mpijob(gpus_per_worker, launcher, worker, config.workers)


def nccl_jobs(plan: SriovShapePlan) -> list[tuple[str, int, str]]:
    """(name, GPUs per worker, expectation): two jobs side by side, each with half of a node's GPUs (its shape's
    topology), when a node holds two RDMA pods; else one with all of them."""
    expected = EXPECTED_TWO_JOBS if plan.pods_per_node >= 2 else EXPECTED_ONE_JOB
    return [(job, gpus, expected) for job, gpus in nccl_job_sizes(plan)]


def vf_rail_mpijob_spec(
    config: AcceptanceJobsConfig, plan: SriovShapePlan, taints: list[Taint], min_gbps: float
) -> dict[str, Any]:
    """The VF rail test as an MPIJob: two workers, one per node, each with one VF of every rail; the
    launcher runs `scripts/vf-rail-bandwidth.sh` between them over ssh."""
    launcher = launcher_template(
        config.image, rail_launcher_script(VF_RAIL_CHECK, f'{min_gbps} "$SERVER" "$CLIENT"')
    )
    worker = vf_pod_template(
        plan, {"name": "mpi-worker", "image": config.image, "command": WORKER_SSHD}, taints
    )
    worker["metadata"]["labels"] = {RAIL_POD_LABEL: "true"}
    worker["spec"]["affinity"] = one_per_node(RAIL_POD_LABEL)
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, worker, "template")
    return mpijob(1, launcher, worker, 2)


@dataclass
class SriovAcceptanceJobsArgs:
    config: AcceptanceJobsConfig
    """Validated acceptance-job config (enabled)."""
    plan: SriovPlan
    """The SR-IOV plan: the networks' namespace."""
    shape: SriovShapePlan
    """The shape the jobs run on: its networks, resources, node selection and GPUs per node."""
    taints: list[Taint]
    """Taints of the SR-IOV pools."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    depends_on: list[pulumi.Resource]
    """The networks (and node policies) the pods need."""


class SriovAcceptanceJobs(GatingJobs):
    """MPI operator and the NCCL MPIJob(s), or the VF rail test MPIJob, in the networks' namespace."""

    def __init__(
        self, name: str, args: SriovAcceptanceJobsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.SRIOV_ACCEPTANCE_COMPONENT, name, opts)
        config = args.config
        namespace = args.plan.operator.network_namespace
        if not (config.nccl or config.rail_bandwidth):
            self.finish()
            return
        needs = self.declare_operator(name, config, namespace, args.provider, args.depends_on)
        if config.nccl:
            for job, gpus, expected in nccl_jobs(args.shape):
                # The stack config refused a GPU count without a seed figure and no setting (sriov_plan.py).
                min_busbw = nccl_threshold("sriov", gpus, config.nccl_busbw_gbs)
                assert min_busbw is not None
                self.gate(
                    name,
                    job,
                    namespace,
                    expected,
                    busbw_threshold(min_busbw),
                    sriov_mpijob_spec(config, args.shape, gpus, args.taints, min_busbw),
                    config,
                    needs,
                )
        if config.rail_bandwidth:
            min_gbps = rail_threshold("sriov", config.rail_gbps)
            self.gate(
                name,
                VF_RAIL_JOB,
                namespace,
                EXPECTED_VF_RAILS,
                rail_threshold_text(min_gbps),
                vf_rail_mpijob_spec(config, args.shape, args.taints, min_gbps),
                config,
                needs,
            )
        self.finish()
