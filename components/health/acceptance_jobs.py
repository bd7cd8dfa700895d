"""Jobs that prove a deployed stack delivers the seed's numbers, and gate `pulumi up` on them (optional,
off by default).

- The Kubeflow MPI operator and an MPIJob running NCCL all_reduce_perf with GPUs and rails from one
  aligned claim per worker. Expected (seed 000): about 190 GB/s busbw at 8 GiB for 16 GPUs
  (190.13 GB/s), and about 96 GB/s per job when two 4-GPU jobs share the nodes (96.29 / 96.34).
- An MPIJob whose two workers hold every rail of their node and whose launcher runs
  `scripts/rail-bandwidth.sh` (ib_write_bw per rail, over ssh as mpirun reaches the workers).
  Expected: 96.87-96.88 Gb/s per rail in the seed (hostNetwork 96.86-96.88).

The gate: each launcher prints the measured figures and exits non-zero below the stack's threshold
(`workloads.acceptanceJobs.railGbps` / `ncclBusbwGBs`, defaults in oke_gpu_rdma/health/acceptance.py), so the
MPIJob ends Failed instead of Succeeded. Each MPIJob carries pulumi-kubernetes' `pulumi.com/waitFor` on
its `Succeeded` condition and `pulumi.com/timeoutSeconds` (pulumi-kubernetes
`provider/pkg/metadata/overrides.go` `ReadyCondition`, `TimeoutDuration`): `pulumi up` reports the job
created only once it succeeded, and fails when it does not within the timeout. A custom resource has no
other await: without the annotation Pulumi would report it created at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.drivers.job_compute_domain import JobComputeDomain, JobComputeDomainArgs
from components.health import fabric_checks
from components.health.mpijob_specs import (
    EXPECTED_NCCL,
    EXPECTED_RAILS,
    RAIL_JOB,
    JobQueue,
    awaited,
    gate_options,
    held_by_check,
    mpijob_spec,
    rail_mpijob_spec,
    results_command,
)
from components.scheduling.mpi_operator_install import mpi_operator
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.health import fabric_check
from oke_gpu_rdma.health.acceptance import nccl_threshold, rail_threshold
from oke_gpu_rdma.scheduling import mpi_operator as mpi_operator_facts
from stack_config.claims.claim_plan import PlannedTemplate
from stack_config.health.acceptance_settings import AcceptanceJobsConfig
from stack_config.nodes.pool_settings import Taint

# The ComputeDomain of the NCCL gate over multi-node NVLink (its channel template: nccl-all-reduce-nvlink-channel).
NVLINK_GATE_DOMAIN: Final = "nccl-all-reduce-nvlink"


@dataclass(frozen=True)
class NvlinkGate:
    """The NCCL gate of a multi-node NVLink pool: its ComputeDomain, the busbw it must reach over NVLink and the
    figures that threshold comes from (oke_gpu_rdma/health/acceptance.py nvlink_threshold)."""

    domain: str
    min_busbw: float
    nvlink_gbps: float
    rail_ceiling_gbs: float

    def expected(self) -> str:
        return (
            f"busbw at 8 GiB across trays of one NVLink domain: up to NVIDIA's {self.nvlink_gbps:g} GB/s per GPU "
            "each way (no seed measured it); NCCL_MNNVL_ENABLE=1 fails the job where NVLink across nodes is not up"
        )

    def threshold(self) -> str:
        return (
            f"{busbw_threshold(self.min_busbw)} over multi-node NVLink (NVIDIA's figure: {self.nvlink_gbps:g} GB/s "
            f"per GPU each way; the rails alone carry at most {self.rail_ceiling_gbs:g} GB/s per GPU)"
        )


@dataclass
class AcceptanceJobsArgs:
    config: AcceptanceJobsConfig
    """Validated acceptance-job config (enabled)."""
    namespace: str
    """Workload namespace (Pod Security baseline)."""
    nccl_template: PlannedTemplate | None
    """The aligned template the NCCL workers use (None: no NCCL job)."""
    rails_template: PlannedTemplate | None
    """The rails-only template of the rail test workers (None: no rail test)."""
    pool: str
    """The GPU pool the jobs run in: one compute cluster, so one RDMA fabric (two pools share none)."""
    taints: list[Taint]
    """Taints of the GPU pools."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    depends_on: list[pulumi.Resource]
    """Templates and drivers the jobs need."""
    queue: JobQueue | None = None
    """Kueue's queue the jobs go through (None: straight to the scheduler)."""
    nvlink: NvlinkGate | None = None
    """The NCCL gate runs over multi-node NVLink in a ComputeDomain of its own (None: over the rails)."""
    kubernetes_minor: int = 36
    """The cluster's Kubernetes minor: how the scheduled check marks a rail (oke_gpu_rdma/health/fabric_check.py)."""


@dataclass(frozen=True)
class GateReport:
    """What one gating job must reach and where its figures are printed (the stack output)."""

    namespace: str
    threshold: str
    results: str

    def to_output(self) -> dict[str, str]:
        return {"namespace": self.namespace, "threshold": self.threshold, "results": self.results}


class GatingJobs(pulumi.ComponentResource):
    """A component of gating MPIJobs behind the Kubeflow MPI operator: what both rail paths' acceptance
    components share (the operator, the jobs' options, their reports and the stack output)."""

    reports: dict[str, GateReport]
    """Per job name: its threshold and where its launcher prints the figures."""

    def __init__(self, type_: str, name: str, opts: pulumi.ResourceOptions | None) -> None:
        super().__init__(type_, name, None, opts)
        self.reports = {}

    def declare_operator(
        self,
        name: str,
        config: AcceptanceJobsConfig,
        namespace: str,
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource],
    ) -> pulumi.ResourceOptions:
        """Declare the MPI operator for the jobs of ``namespace``; returns the options of the jobs, which wait
        for it (its roles too) and ``depends_on``."""
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        # Its Deployment runs on the system pool, which is among what the jobs wait for.
        operator = mpi_operator(name, config, namespace, list(depends_on), child)
        return gate_options(child, [operator.config_file, *operator.roles, *depends_on])

    def gate(
        self,
        name: str,
        job: str,
        namespace: str,
        expected: str,
        threshold: str,
        spec: dict[str, Any],
        config: AcceptanceJobsConfig,
        opts: pulumi.ResourceOptions,
        queue: JobQueue | None = None,
    ) -> None:
        """Declare the MPIJob ``job`` that `pulumi up` awaits until it succeeds, and report where to read it."""
        k8s.apiextensions.CustomResource(
            f"{name}-{job}",
            api_version=mpi_operator_facts.MPIJOB_API_VERSION,
            kind=mpi_operator_facts.MPIJOB_KIND,
            metadata=awaited(job, namespace, expected, threshold, config.timeout_minutes, queue),
            spec=spec,
            opts=opts,
        )
        self.reports[job] = GateReport(namespace, threshold, results_command(job, namespace))

    def finish(self) -> None:
        self.register_outputs(
            {"acceptanceJobs": {job: r.to_output() for job, r in self.reports.items()}}
            if self.reports
            else {}
        )


def busbw_threshold(value: float) -> str:
    return f"NCCL all_reduce busbw at 8 GiB (out of place) >= {value} GB/s"


def rail_threshold_text(value: float) -> str:
    return f"ib_write_bw >= {value} Gb/s on every rail"


class AcceptanceJobs(GatingJobs):
    """MPI operator and the NCCL MPIJob, or the rail test MPIJob (never both: each takes every rail), as
    the apply-time gate (``enabled``); with a ``schedule``, the same jobs again on idle nodes
    (components/health/fabric_checks.py)."""

    def __init__(
        self, name: str, args: AcceptanceJobsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.ACCEPTANCE_JOBS_COMPONENT, name, opts)
        config = args.config
        if args.nccl_template is None and args.rails_template is None:
            self.finish()
            return
        needs = self.declare_operator(name, config, args.namespace, args.provider, args.depends_on)
        # The scheduled checks pin a pair of idle nodes themselves (components/health/fabric_checks.py), so their specs
        # are the jobs without the queue, their workers still visible to TAS (held_by_check); the apply-time gates
        # go through it (workloads.scheduling).
        nccl_spec: dict[str, Any] | None = None
        rail_spec: dict[str, Any] | None = None
        if args.nccl_template is not None:
            gpus = args.nccl_template.gpus_per_worker
            # The stack config refused a GPU count without a seed figure and no setting (claim_plan.py).
            min_busbw = nccl_threshold("dranet", gpus, config.nccl_busbw_gbs)
            assert min_busbw is not None
            nccl_spec = held_by_check(
                mpijob_spec(config, args.nccl_template, args.pool, args.taints, min_busbw), args.queue
            )
            if config.enabled and args.nvlink is not None:
                # The gate's own ComputeDomain, declared before the job that claims its channels.
                domain = JobComputeDomain(
                    f"{name}-nccl-domain",
                    JobComputeDomainArgs(namespace=args.namespace, domain=args.nvlink.domain),
                    pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=needs.depends_on),
                )
                self.gate(
                    name,
                    "nccl-all-reduce",
                    args.namespace,
                    args.nvlink.expected(),
                    args.nvlink.threshold(),
                    mpijob_spec(
                        config,
                        args.nccl_template,
                        args.pool,
                        args.taints,
                        args.nvlink.min_busbw,
                        args.queue,
                        args.nvlink.domain,
                    ),
                    config,
                    pulumi.ResourceOptions.merge(needs, pulumi.ResourceOptions(depends_on=[domain])),
                    args.queue,
                )
            elif config.enabled:
                self.gate(
                    name,
                    "nccl-all-reduce",
                    args.namespace,
                    EXPECTED_NCCL,
                    busbw_threshold(min_busbw),
                    mpijob_spec(config, args.nccl_template, args.pool, args.taints, min_busbw, args.queue),
                    config,
                    needs,
                    args.queue,
                )
        if args.rails_template is not None:
            min_gbps = rail_threshold("dranet", config.rail_gbps)
            rail_spec = held_by_check(
                rail_mpijob_spec(config, args.rails_template.name, args.pool, args.taints, min_gbps),
                args.queue,
            )
            if config.enabled:
                self.gate(
                    name,
                    RAIL_JOB,
                    args.namespace,
                    EXPECTED_RAILS,
                    rail_threshold_text(min_gbps),
                    rail_mpijob_spec(
                        config, args.rails_template.name, args.pool, args.taints, min_gbps, args.queue
                    ),
                    config,
                    needs,
                    args.queue,
                )
        if config.schedule is not None:
            fabric_checks.declare(
                name,
                fabric_checks.FabricCheckArgs(
                    config=config,
                    pool=args.pool,
                    namespace=args.namespace,
                    mode=fabric_check.taint_mode(args.kubernetes_minor),
                    kubernetes_minor=args.kubernetes_minor,
                    taints=args.taints,
                    rail_spec=rail_spec,
                    nccl_spec=nccl_spec,
                    templates={
                        t.name: t.spec for t in (args.nccl_template, args.rails_template) if t is not None
                    },
                ),
                pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=needs.depends_on),
            )
        self.finish()
