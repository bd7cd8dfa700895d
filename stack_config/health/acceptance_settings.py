"""The stack config's `workloads.acceptanceJobs`: the gate's jobs, thresholds and schedule."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)

from oke_gpu_rdma.common import cron, images
from oke_gpu_rdma.health.acceptance import SEED_NCCL_BUSBW_GBS, SEED_RAIL_GBPS
from oke_gpu_rdma.scheduling import mpi_operator
from stack_config.settings_types import MAX_NODES_PER_POOL, ConfigModel, DnsLabel


def _known_mpi_operator(version: str) -> str:
    # The facts of each release the stack can install (oke_gpu_rdma/scheduling/mpi_operator_releases.json).
    known = mpi_operator.releases()
    if version not in known:
        raise ValueError(
            f"MPI operator {version} has no facts in oke_gpu_rdma/scheduling/mpi_operator_releases.json (known: "
            f"{', '.join(sorted(known))}); use one of those, or add it with "
            f"`python -m tools.mpi_operator_facts <its {mpi_operator.MANIFEST_PATH}> --version {version} "
            "--commit <the tag's commit>`"
        )
    return version


# pulumi-kubernetes reads pulumi.com/timeoutSeconds into a Go time.Duration (int64 nanoseconds), which holds
# at most 2^63 ns, about 292 years: 153,722,867 minutes.
MAX_TIMEOUT_MINUTES = (2**63 - 1) // (60 * 10**9)


def _cron_schedule(value: str) -> str:
    found = cron.problem(value)
    if found is not None:
        raise ValueError(found)
    return value


class AcceptanceJobsConfig(ConfigModel):
    """Jobs that measure what the setup delivers (off by default: they hold whole nodes)."""

    enabled: StrictBool = Field(False, description="Deploy the acceptance jobs chosen below.")
    nccl: StrictBool = Field(True, description="The MPI operator and the NCCL all_reduce MPIJob.")
    rail_bandwidth: StrictBool = Field(
        False,
        alias="railBandwidth",
        description="The rail test MPIJob (ib_write_bw on every rail); not together with nccl (both take every rail).",
    )
    image: str = Field(
        "iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0",
        description="Image with NCCL tests, perftest and sshd (the seed's).",
    )
    workers: StrictInt = Field(
        2, ge=2, le=MAX_NODES_PER_POOL, description="MPIJob workers, one per node of the jobs' pool."
    )
    claim_template: DnsLabel | None = Field(
        None,
        alias="claimTemplate",
        description="Template the NCCL workers use; default: the one made for the jobs' pool's shape with all of "
        "a node's GPUs (aligned-8gpu-16rails on BM.GPU.B4.8, aligned-4gpu-8rails on BM.GPU.GB200-v3.4).",
    )
    mpi_operator_version: Annotated[str, AfterValidator(_known_mpi_operator)] = Field(
        mpi_operator.DEFAULT_VERSION,
        alias="mpiOperatorVersion",
        description="Kubeflow MPI operator release; its manifest is applied from the release's commit at "
        "apply time; its facts must be in oke_gpu_rdma/scheduling/mpi_operator_releases.json (tools/mpi_operator_facts.py).",
    )
    node_pool: DnsLabel | None = Field(
        None,
        alias="nodePool",
        description="Pool the jobs run in (default: the first pool): one compute cluster, one RDMA fabric.",
    )
    rail_gbps: float | None = Field(
        None,
        alias="railGbps",
        gt=0,
        allow_inf_nan=False,
        description="Minimum ib_write_bw per rail in Gb/s; a rail below it fails the job and `pulumi up`. "
        f"Default: the seed's lowest rail, DRANET {SEED_RAIL_GBPS['dranet']} (seed 000), SR-IOV "
        f"{SEED_RAIL_GBPS['sriov']} (seed 001).",
    )
    nccl_busbw_gbs: float | None = Field(
        None,
        alias="ncclBusbwGBs",
        gt=0,
        allow_inf_nan=False,
        description="Minimum NCCL all_reduce busbw at 8 GiB (out of place) in GB/s of each NCCL job; below "
        "it the job fails and `pulumi up` with it. Default: the seed's figure for the job's GPUs per worker "
        f"on 2 nodes, DRANET {SEED_NCCL_BUSBW_GBS['dranet']} (seed 000), SR-IOV "
        f"{SEED_NCCL_BUSBW_GBS['sriov']} (seed 001); required for other GPU counts.",
    )
    timeout_minutes: StrictInt = Field(
        30,
        alias="timeoutMinutes",
        ge=1,
        le=MAX_TIMEOUT_MINUTES,
        description="How long `pulumi up` waits for a job to succeed (pulumi.com/timeoutSeconds): a job that "
        "fails shows as this timeout, since the job's Succeeded condition never comes; the scheduled checks "
        "give up on a job (skipped, no mark) after as long.",
    )
    schedule: Annotated[str, AfterValidator(_cron_schedule)] | None = Field(
        None,
        description="Run the checks chosen by nccl and railBandwidth again on this CronJob schedule (e.g. "
        "'0 3 * * *'), one after the other, only on pairs of nodes of the jobs' pool that no pod with a "
        "ResourceClaim holds, with the same claim templates and thresholds (components/health/fabric_checks.py); a "
        "rail below railGbps is tainted oke-gpu-rdma/rail-unhealthy, a node pair below ncclBusbwGBs labelled "
        "oke-gpu-rdma/fabric-check=fail with the node condition FabricCheckFailed. Independent of enabled "
        "(the apply-time gate). Off (null) by default: a small stack rarely has two idle nodes.",
    )
    check_image: str = Field(
        images.KUBECTL_SHELL_IMAGE,
        alias="checkImage",
        description="Image of the scheduled checks' controller: bash, kubectl and jq (alpine/k8s, the kubectl "
        "release of the cluster's minor).",
    )

    @property
    def active(self) -> bool:
        """Whether the stack runs these jobs at all: as the apply-time gate, on a schedule, or both."""
        return self.enabled or self.schedule is not None

    @model_validator(mode="after")
    def _one_at_a_time(self) -> AcceptanceJobsConfig:
        # The scheduled checks run their jobs one after the other, so both may be on there.
        if self.enabled and self.nccl and self.rail_bandwidth:
            raise ValueError(
                "nccl and railBandwidth both hold every rail of their nodes, so one would wait for the other "
                "forever; enable one at a time"
            )
        return self
