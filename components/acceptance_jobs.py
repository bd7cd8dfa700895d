"""Jobs that prove a deployed stack delivers the seed's numbers, and gate `pulumi up` on them (optional,
off by default).

- The Kubeflow MPI operator and an MPIJob running NCCL all_reduce_perf with GPUs and rails from one
  aligned claim per worker. Expected (seed 000): about 190 GB/s busbw at 8 GiB for 16 GPUs
  (190.13 GB/s), and about 96 GB/s per job when two 4-GPU jobs share the nodes (96.29 / 96.34).
- An MPIJob whose two workers hold every rail of their node and whose launcher runs
  `scripts/rail-bandwidth.sh` (ib_write_bw per rail, over ssh as mpirun reaches the workers).
  Expected: 96.87-96.88 Gb/s per rail in the seed (hostNetwork 96.86-96.88).

The gate: each launcher prints the measured figures and exits non-zero below the stack's threshold
(`workloads.acceptanceJobs.railGbps` / `ncclBusbwGBs`, defaults in oke_gpu_rdma/acceptance.py), so the
MPIJob ends Failed instead of Succeeded. Each MPIJob carries pulumi-kubernetes' `pulumi.com/waitFor` on
its `Succeeded` condition and `pulumi.com/timeoutSeconds` (pulumi-kubernetes
`provider/pkg/metadata/overrides.go` `ReadyCondition`, `TimeoutDuration`): `pulumi up` reports the job
created only once it succeeded, and fails when it does not within the timeout. A custom resource has no
other await: without the annotation Pulumi would report it created at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from oke_gpu_rdma import fabric_check, resource_types
from oke_gpu_rdma import mpi_operator as mpi_operator_facts
from oke_gpu_rdma.acceptance import nccl_threshold, rail_threshold
from oke_gpu_rdma.labels import POOL_LABEL
from oke_gpu_rdma.nccl import NCCL_SETTINGS
from stack_config.claim_plan import PlannedTemplate
from stack_config.model import AcceptanceJobsConfig, Taint, tolerations

from . import fabric_checks
from .network_operator import WAIT_FOR_ANNOTATION
from .rdma_workloads import SCRIPTS, TOOLS_CONFIGMAP, TOOLS_MOUNT
from .typed_inputs import to_input_type

EXPECTED_NCCL = (
    "busbw at 8 GiB: about 190 GB/s for 16 GPUs on 2 x BM.GPU.B4.8 (seed 000: 190.13 GB/s); "
    "about 96 GB/s per job when two 4-GPU jobs share the nodes (96.29 / 96.34 GB/s)"
)
EXPECTED_RAILS = "ib_write_bw per rail: >= 96.8 Gb/s (seed 000: 96.87-96.88 Gb/s, hostNetwork 96.86-96.88)"
RAIL_POD_LABEL = "oke-gpu-rdma/rail-test"
EXPECTED_ANNOTATION: Final = "oke-gpu-rdma/expected"
THRESHOLD_ANNOTATION: Final = "oke-gpu-rdma/threshold"
RESULTS_ANNOTATION: Final = "oke-gpu-rdma/results"
# pulumi-kubernetes: how long an await may take (provider/pkg/metadata/annotations.go).
TIMEOUT_ANNOTATION: Final = "pulumi.com/timeoutSeconds"
# The MPI operator sets the condition Succeeded=True (reason MPIJobSucceeded) once the launcher Job, named
# <job>-launcher, succeeds, and Failed when it fails (kubeflow/mpi-operator
# `pkg/controller/mpi_job_controller_status.go`); a launcher below its threshold fails.
MPIJOB_SUCCEEDED: Final = 'jsonpath={.status.conditions[?(@.type=="Succeeded")].status}=True'
NCCL_CHECK: Final = "nccl-busbw-check.sh"
RAIL_CHECK: Final = "rail-bandwidth.sh"
# The functions both rail gates (RAIL_CHECK, sriov_acceptance.VF_RAIL_CHECK) source.
RAIL_GATE_FUNCTIONS: Final = "rail-gate.sh"
NCCL_LOG: Final = "/tmp/all_reduce.log"
RAIL_JOB: Final = "rail-bandwidth"


ALL_REDUCE = "/workspace/nccl-tests/build/all_reduce_perf -b 4G -e 8G -f 2 -g 1 -c 1"
WORKER_SSHD = ["/bin/bash", "-c", "mkdir -p /var/run/sshd; /usr/sbin/sshd -D"]
WAIT_FOR_WORKERS = """until (for host in $(awk '{print $1}' /etc/mpi/hostfile); do ssh -o ConnectTimeout=5 -o StrictHostKeyChecking=no "$host" exit 2>/dev/null || exit 1; done); do
  echo "Waiting for workers to be ready..."
  sleep 5
done
"""


def run_script(name: str, args: str, sourced: Sequence[str] = ()) -> str:
    """Shell lines that write components/scripts/<name> (and the files it sources, ``sourced``) into the
    launcher and run it with ``args`` (shell words). The files under components/scripts/ are the one
    source: the tests run them on the seeds' output."""
    files = "".join(
        f"cat > /tmp/{file} <<'SCRIPT'\n{(SCRIPTS / file).read_text()}SCRIPT\n" for file in [*sourced, name]
    )
    return f"{files}bash /tmp/{name} {args}\n"


def launcher_script(
    gpus_per_worker: int,
    min_busbw: float,
    extra_exports: Sequence[str] = (),
    command: str = ALL_REDUCE,
    note: str = "",
) -> str:
    """The seed's launcher: wait for the workers' sshd, mpirun all_reduce_perf up to 8 GiB, then the gate.

    ``extra_exports`` adds `-x NAME=value` settings, ``command`` replaces the benchmark invocation and
    ``note`` adds a comment line (the SR-IOV jobs use all three). The output goes to the log and to
    `scripts/nccl-busbw-check.sh`, which fails the launcher below ``min_busbw`` GB/s.
    """
    exports = " \\\n  ".join(
        f"-x {setting}" for setting in [*extra_exports, *(f"{k}={v}" for k, v in NCCL_SETTINGS.items())]
    )
    comment = f"# {note}\n" if note else ""
    return f"""set -e -o pipefail
NUM_GPUS={gpus_per_worker}
NUM_HOSTS=$(sed -n '$=' /etc/mpi/hostfile)
NP=$((NUM_HOSTS * NUM_GPUS))
{WAIT_FOR_WORKERS}{comment}# The 40 GB GPUs cannot hold 16 GiB buffers with validation (-c 1), so the test stops at 8 GiB.
mpirun --allow-run-as-root --hostfile /etc/mpi/hostfile -mca coll ^hcoll \\
  -np "$NP" -npernode "$NUM_GPUS" --bind-to numa \\
  -x NCCL_DEBUG=WARN \\
  {exports} \\
  {command} | tee {NCCL_LOG}
# The acceptance gate: busbw at 8 GiB below {min_busbw} GB/s fails this launcher, the MPIJob and `pulumi up`.
{run_script(NCCL_CHECK, f"{min_busbw} {NCCL_LOG}")}"""


def rail_launcher_script(check: str, args: str) -> str:
    """A launcher that waits for the two workers' sshd, then runs the rail gate ``check`` from the first
    worker (SERVER) to the second (CLIENT); ``args`` are its shell words, "$SERVER" and "$CLIENT" among them."""
    return f"""set -e -o pipefail
{WAIT_FOR_WORKERS}SERVER=$(awk 'NR == 1 {{print $1}}' /etc/mpi/hostfile)
CLIENT=$(awk 'NR == 2 {{print $1}}' /etc/mpi/hostfile)
# The acceptance gate: a rail below its threshold fails this launcher, the MPIJob and `pulumi up`.
{run_script(check, args, [RAIL_GATE_FUNCTIONS])}"""


def awaited(
    name: str, namespace: str, expected: str, threshold: str, timeout_minutes: int
) -> k8s.meta.v1.ObjectMetaArgs:
    """Metadata of a gating MPIJob: Pulumi awaits its Succeeded condition; the annotations say what it
    must reach and where its figures are (the launcher Job's log; the operator names it <job>-launcher)."""
    return k8s.meta.v1.ObjectMetaArgs(
        name=name,
        namespace=namespace,
        annotations={
            EXPECTED_ANNOTATION: expected,
            THRESHOLD_ANNOTATION: threshold,
            RESULTS_ANNOTATION: results_command(name, namespace),
            WAIT_FOR_ANNOTATION: MPIJOB_SUCCEEDED,
            TIMEOUT_ANNOTATION: str(timeout_minutes * 60),
        },
    )


def results_command(name: str, namespace: str) -> str:
    """Where a job's measured figures are printed: its launcher's log."""
    return f"kubectl -n {namespace} logs job/{name}-launcher"


def gate_options(
    child: pulumi.ResourceOptions, depends_on: Sequence[pulumi.Resource]
) -> pulumi.ResourceOptions:
    """A finished MPIJob never runs again: a change to its spec (a threshold, the image) replaces it, so
    the apply that makes the change runs the test again; the old one goes first (same name)."""
    return pulumi.ResourceOptions.merge(
        child,
        pulumi.ResourceOptions(
            depends_on=list(depends_on), replace_on_changes=["spec"], delete_before_replace=True
        ),
    )


def run_policy() -> dict[str, Any]:
    """No retry: a launcher below its threshold fails once and the workers are cleaned up at once."""
    return {"cleanPodPolicy": "Running", "backoffLimit": 0}


def shm_volume() -> dict[str, Any]:
    """The NCCL workers' shared memory (NCCL's buffers between the ranks of one pod), mounted by
    `shm_mount()`."""
    return {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}


def shm_mount() -> dict[str, Any]:
    return {"name": "shm", "mountPath": "/dev/shm"}


def launcher_template(image: str, script: str, taints: list[Taint] | None = None) -> dict[str, Any]:
    """The launcher's pod template: no GPU, no rail, one container running ``script``; with ``taints``
    it tolerates them (the NCCL launchers, so that they also run where the cluster has only GPU nodes)."""
    spec: dict[str, Any] = {} if taints is None else {"tolerations": tolerations(taints)}
    spec["containers"] = [
        {"name": "mpi-launcher", "image": image, "command": ["bash", "-c"], "args": [script]}
    ]
    launcher = {"spec": spec}
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, launcher, "template")
    return launcher


def mpijob(slots: int, launcher: dict[str, Any], worker: dict[str, Any], workers: int) -> dict[str, Any]:
    """The MPIJob spec (kubeflow.org/v2beta1): one launcher, ``workers`` workers of ``slots`` ranks each."""
    return {
        "slotsPerWorker": slots,
        "runPolicy": run_policy(),
        "sshAuthMountPath": "/root/.ssh",
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": launcher},
            "Worker": {"replicas": workers, "template": worker},
        },
    }


def mpijob_spec(
    config: AcceptanceJobsConfig, claim: PlannedTemplate, pool: str, taints: list[Taint], min_busbw: float
) -> dict[str, Any]:
    """The NCCL MPIJob spec (kubeflow.org/v2beta1); pod templates are checked by the typed classes."""
    # The launcher needs no GPU; it tolerates the GPU pools' taints so that it also runs where the
    # cluster has no other nodes (an existing cluster), and on the system pool where there is one.
    launcher = launcher_template(config.image, launcher_script(claim.gpus_per_worker, min_busbw), taints)
    worker = {
        "spec": {
            "nodeSelector": {POOL_LABEL: pool},
            "tolerations": tolerations(taints),
            "resourceClaims": [{"name": "gpus-rails", "resourceClaimTemplateName": claim.name}],
            "volumes": [shm_volume()],
            "containers": [
                {
                    "name": "mpi-worker",
                    "image": config.image,
                    "command": WORKER_SSHD,
                    "volumeMounts": [shm_mount()],
                    "resources": {"claims": [{"name": "gpus-rails"}]},
                }
            ],
        }
    }
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, worker, "template")
    return mpijob(claim.gpus_per_worker, launcher, worker, config.workers)


def one_per_node(label: str) -> dict[str, Any]:
    """Required pod anti-affinity on ``label``: the two rail workers land on two nodes."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {label: "true"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def rail_mpijob_spec(
    config: AcceptanceJobsConfig, rails_template: str, pool: str, taints: list[Taint], min_gbps: float
) -> dict[str, Any]:
    """The rail test as an MPIJob: two workers, one per node, each holding every rail of its node with
    the rail tools; the launcher runs `scripts/rail-bandwidth.sh` between them over ssh."""
    launcher = launcher_template(
        config.image, rail_launcher_script(RAIL_CHECK, f'{min_gbps} "$SERVER" "$CLIENT" {TOOLS_MOUNT}')
    )
    worker = {
        "metadata": {"labels": {RAIL_POD_LABEL: "true"}},
        "spec": {
            "nodeSelector": {POOL_LABEL: pool},
            "tolerations": tolerations(taints),
            "affinity": one_per_node(RAIL_POD_LABEL),
            "resourceClaims": [{"name": "rails", "resourceClaimTemplateName": rails_template}],
            "containers": [
                {
                    "name": "mpi-worker",
                    "image": config.image,
                    "command": WORKER_SSHD,
                    "resources": {"claims": [{"name": "rails"}]},
                    "volumeMounts": [{"name": "tools", "mountPath": TOOLS_MOUNT, "readOnly": True}],
                }
            ],
            "volumes": [{"name": "tools", "configMap": {"name": TOOLS_CONFIGMAP, "defaultMode": 0o555}}],
        },
    }
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, worker, "template")
    return mpijob(1, launcher, worker, 2)


def _moved_objects(component: pulumi.Resource, component_name: str) -> pulumi.ResourceTransform:
    """A transform that gives each object of the manifest the alias of the name it had when this
    component declared the objects itself, so that a stack moving to the ConfigFile keeps them (the CRD
    above all: deleting it deletes every MPIJob). Transforms reach the children a packaged component's
    provider registers (pulumi docs, Resource option: transforms), which the ConfigFile's are."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        metadata = args.props.get("metadata")
        kind = args.props.get("kind")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not args.custom or not isinstance(kind, str) or not isinstance(name, str):
            return None
        alias = pulumi.Alias(name=mpi_operator_facts.alias_name(component_name, kind, name), parent=component)
        return pulumi.ResourceTransformResult(
            args.props, pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(aliases=[alias]))
        )

    return transform


class MpiOperator(pulumi.ComponentResource):
    """The Kubeflow MPI operator, which both rail paths' NCCL jobs need: its release manifest
    (kubeflow/mpi-operator deploy/v2beta1/mpi-operator.yaml at the release's commit) applied by
    pulumi-kubernetes' yaml/v2 ConfigFile, which fetches it at apply time. What the preview needs of
    it (its objects, where its Deployment runs) are facts in oke_gpu_rdma/mpi_operator.py."""

    manifest: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        config: AcceptanceJobsConfig,
        needs: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions,
    ) -> None:
        super().__init__(resource_types.MPI_OPERATOR_COMPONENT, name, None, opts)
        release = mpi_operator_facts.release(config.mpi_operator_version)
        # yaml/v2 applies the Namespace and the CRD before the objects that need them; every object
        # waits for `needs` (the Deployment runs on the system pool), and the jobs wait for the
        # ConfigFile, whose registration ends after its last child's.
        self.config_file = k8s.yaml.v2.ConfigFile(
            f"{name}-manifest",
            file=release.manifest_url,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=list(needs), transforms=[_moved_objects(self, name)]
            ),
        )
        self.manifest = pulumi.Output.from_input(release.manifest_url)
        self.register_outputs({"manifest": self.manifest})


def mpi_operator(
    name: str, config: AcceptanceJobsConfig, needs: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions
) -> MpiOperator:
    """The Kubeflow MPI operator (its release manifest, applied at apply time), which both rail paths' NCCL jobs need."""
    return MpiOperator(f"{name}-mpi-operator", config, needs, opts)


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
    kubernetes_minor: int = 36
    """The cluster's Kubernetes minor: how the scheduled check marks a rail (oke_gpu_rdma/fabric_check.py)."""


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
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource],
    ) -> pulumi.ResourceOptions:
        """Declare the MPI operator; returns the options of the jobs, which wait for it and ``depends_on``."""
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        # Its Deployment runs on the system pool, which is among what the jobs wait for.
        operator = mpi_operator(name, config, list(depends_on), child)
        return gate_options(child, [operator.config_file, *depends_on])

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
    ) -> None:
        """Declare the MPIJob ``job`` that `pulumi up` awaits until it succeeds, and report where to read it."""
        k8s.apiextensions.CustomResource(
            f"{name}-{job}",
            api_version="kubeflow.org/v2beta1",
            kind="MPIJob",
            metadata=awaited(job, namespace, expected, threshold, config.timeout_minutes),
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
    (components/fabric_checks.py)."""

    def __init__(
        self, name: str, args: AcceptanceJobsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.ACCEPTANCE_JOBS_COMPONENT, name, opts)
        config = args.config
        if args.nccl_template is None and args.rails_template is None:
            self.finish()
            return
        needs = self.declare_operator(name, config, args.provider, args.depends_on)
        nccl_spec: dict[str, Any] | None = None
        rail_spec: dict[str, Any] | None = None
        if args.nccl_template is not None:
            gpus = args.nccl_template.gpus_per_worker
            # The stack config refused a GPU count without a seed figure and no setting (claim_plan.py).
            min_busbw = nccl_threshold("dranet", gpus, config.nccl_busbw_gbs)
            assert min_busbw is not None
            nccl_spec = mpijob_spec(config, args.nccl_template, args.pool, args.taints, min_busbw)
            if config.enabled:
                self.gate(
                    name,
                    "nccl-all-reduce",
                    args.namespace,
                    EXPECTED_NCCL,
                    busbw_threshold(min_busbw),
                    nccl_spec,
                    config,
                    needs,
                )
        if args.rails_template is not None:
            min_gbps = rail_threshold("dranet", config.rail_gbps)
            rail_spec = rail_mpijob_spec(config, args.rails_template.name, args.pool, args.taints, min_gbps)
            if config.enabled:
                self.gate(
                    name,
                    RAIL_JOB,
                    args.namespace,
                    EXPECTED_RAILS,
                    rail_threshold_text(min_gbps),
                    rail_spec,
                    config,
                    needs,
                )
        if config.schedule is not None:
            fabric_checks.declare(
                name,
                fabric_checks.FabricCheckArgs(
                    config=config,
                    pool=args.pool,
                    namespace=args.namespace,
                    mode=fabric_check.taint_mode(args.kubernetes_minor),
                    taints=args.taints,
                    rail_spec=rail_spec,
                    nccl_spec=nccl_spec,
                ),
                pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=needs.depends_on),
            )
        self.finish()
