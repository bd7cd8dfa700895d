"""The MPIJobs the acceptance gate and the scheduled check run: launcher and worker templates, the
scripts they run, the NCCL and per-rail specs, queued through Kueue when the stack schedules with it, and
the options that make `pulumi up` wait for a gating job (components/health/acceptance_jobs.py declares them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.claims.rdma_workloads import SCRIPTS, TOOLS_CONFIGMAP, TOOLS_MOUNT
from components.sriov.network_operator import WAIT_FOR_ANNOTATION
from components.typed_inputs import to_input_type
from oke_gpu_rdma.drivers import compute_domains
from oke_gpu_rdma.drivers.nccl import NCCL_SETTINGS
from oke_gpu_rdma.nodes.labels import INSTANCE_TYPE_LABEL, POOL_LABEL
from oke_gpu_rdma.scheduling import kueue_objects
from stack_config.claims.claim_plan import PlannedTemplate
from stack_config.health.acceptance_settings import AcceptanceJobsConfig
from stack_config.nodes.pool_settings import Taint, tolerations

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
# ssh between the job's pods, keyed per job (issue 28). The MPI operator generates one key pair per MPIJob (a
# Secret <job>-ssh) and mounts it at sshAuthMountPath as id_rsa, id_rsa.pub and authorized_keys (kubeflow/
# mpi-operator pkg/controller/mpi_job_controller.go `newSSHAuthSecret`, `sshVolumeItems`, at the pinned
# commit). The workers' sshd uses that key as its host key too, so the launcher knows every worker's host key
# before it connects: it writes known_hosts from the hostfile's names and the job's public key, and ssh
# checks it strictly. sshd listens on the pod's own address only (the Downward API's status.podIP), which
# the hostfile's names resolve to through the job's headless Service; it runs as root, the one user of the
# seed's image, with root login by key only.
SSH_DIR: Final = "/root/.ssh"
POD_IP_ENV: Final = {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
SSHD_OPTIONS: Final = (
    'ListenAddress="$POD_IP"',
    f"HostKey={SSH_DIR}/id_rsa",
    f"AuthorizedKeysFile={SSH_DIR}/authorized_keys",
    "PasswordAuthentication=no",
    "KbdInteractiveAuthentication=no",
    "PermitRootLogin=prohibit-password",
)
WORKER_SSHD_COMMAND: Final = "mkdir -p /run/sshd\nexec /usr/sbin/sshd -D -e " + " ".join(
    f"-o {o}" for o in SSHD_OPTIONS
)
KNOWN_HOSTS: Final = "/tmp/known_hosts"
SSH_CLIENT_CONFIG: Final = f"""cat > /etc/ssh/ssh_config <<'SSHCONFIG'
Host *
  StrictHostKeyChecking yes
  UserKnownHostsFile {KNOWN_HOSTS}
  GlobalKnownHostsFile /dev/null
  IdentityFile {SSH_DIR}/id_rsa
  PasswordAuthentication no
SSHCONFIG
"""
# The launcher's ssh (mpirun's, the gates'): each worker of the hostfile with the job's key.
SSH_CLIENT_SETUP = (
    f"""awk -v key="$(cat {SSH_DIR}/id_rsa.pub)" '{{print $1, key}}' /etc/mpi/hostfile > {KNOWN_HOSTS}\n"""
    + SSH_CLIENT_CONFIG
)
# A worker's ssh (OpenMPI's tree spawn starts daemons from workers too): no hostfile there, so any host
# name, but only with the job's own key.
WORKER_SSH_SETUP = f"""echo "* $(cat {SSH_DIR}/id_rsa.pub)" > {KNOWN_HOSTS}\n""" + SSH_CLIENT_CONFIG
WORKER_SSHD = ["/bin/bash", "-c", WORKER_SSH_SETUP + WORKER_SSHD_COMMAND]
WAIT_FOR_WORKERS = f"""{SSH_CLIENT_SETUP}until (for host in $(awk '{{print $1}}' /etc/mpi/hostfile); do ssh -o ConnectTimeout=5 "$host" exit 2>/dev/null || exit 1; done); do
  echo "Waiting for workers to be ready..."
  sleep 5
done
"""


def run_script(name: str, args: str, sourced: Sequence[str] = ()) -> str:
    """Shell lines that write components/health/scripts/<name> (and the files it sources, ``sourced``) into the
    launcher and run it with ``args`` (shell words). The files under components/health/scripts/ are the one
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


@dataclass(frozen=True)
class JobQueue:
    """How a gating MPIJob goes through Kueue (workloads.scheduling): the LocalQueue it is submitted to, the
    Topology level its workers must share, and the CPUs a worker requests so that Kueue's topology-aware
    scheduling, which counts container requests and not DRA claims, puts one worker on a node
    (oke_gpu_rdma/nodes/node_sizes.py NodeSize.whole_node_cpus; docs/tas-and-dra-claims.md)."""

    local_queue: str
    level: str
    worker_cpus: int
    shape: str
    """The workers' shape, pinned in their nodeSelector: Kueue matches a pod set to a ResourceFlavor by the
    flavor's nodeLabels keys only (node.kubernetes.io/instance-type here, one flavor per shape), so the pool label
    alone lets it admit the job on another shape's flavor where the claims never fit (a policy of the pack
    rejects that)."""
    launcher_node_selector: Mapping[str, str] = field(default_factory=dict)
    """The system flavor's node labels (none without a system pool): where the launchers run (queued_launcher)."""


def queued_worker(worker: dict[str, Any], queue: JobQueue | None) -> dict[str, Any]:
    """The worker pod template with the required-topology annotation Kueue reads on it and the whole-node CPU
    request on its container, its shape in the nodeSelector (unchanged without a queue)."""
    if queue is None:
        return worker
    metadata = dict(worker.get("metadata", {}))
    metadata["annotations"] = {
        **metadata.get("annotations", {}),
        **kueue_objects.pod_topology_annotation(queue.level),
    }
    queued = whole_node_worker({**worker, "metadata": metadata}, queue.worker_cpus)
    node_selector = {**worker["spec"].get("nodeSelector", {}), INSTANCE_TYPE_LABEL: queue.shape}
    queued["spec"] = {**queued["spec"], "nodeSelector": node_selector}
    return queued


def whole_node_worker(worker: dict[str, Any], cpus: int) -> dict[str, Any]:
    """The worker pod template with ``cpus`` (more than half its node's) requested by its first container: what
    Kueue's topology-aware scheduling counts of it, since it counts container requests and not DRA claims."""
    containers = [dict(c) for c in worker["spec"]["containers"]]
    containers[0]["resources"] = {**containers[0].get("resources", {}), "requests": {"cpu": str(cpus)}}
    return {**worker, "spec": {**worker["spec"], "containers": containers}}


def held_by_check(spec: dict[str, Any], queue: JobQueue | None) -> dict[str, Any]:
    """An MPIJob spec for the scheduled fabric check (components/health/fabric_checks.py), which pins its workers to a
    pair of idle nodes itself and so stays outside the queue. With a queue, its workers request a whole node's
    CPUs as the queued workers do: Kueue's TAS then sees the nodes they hold as taken. It counts a pod outside
    TAS by its container requests once the pod is bound (pkg/controller/tas/non_tas_usage_controller.go
    belongsToNonTASCache l. 133-148; pkg/cache/scheduler/tas_flavor_snapshot.go addNonTASUsage l. 259-264), and without a
    CPU request the check's workers count as nothing and a queued job is admitted onto their nodes. Its launcher
    runs where the queued launchers do (queued_launcher)."""
    if queue is None:
        return spec
    replicas = spec["mpiReplicaSpecs"]
    worker = whole_node_worker(replicas["Worker"]["template"], queue.worker_cpus)
    held = {
        **spec,
        "mpiReplicaSpecs": {**replicas, "Worker": {**replicas["Worker"], "template": worker}},
    }
    return queued_launcher(held, queue)


def awaited(
    name: str,
    namespace: str,
    expected: str,
    threshold: str,
    timeout_minutes: int,
    queue: JobQueue | None = None,
) -> k8s.meta.v1.ObjectMetaArgs:
    """Metadata of a gating MPIJob: Pulumi awaits its Succeeded condition; the annotations say what it
    must reach and where its figures are (the launcher Job's log; the operator names it <job>-launcher).
    With a queue, the label that submits it to Kueue (Kueue suspends it until admitted; the await spans the wait)."""
    return k8s.meta.v1.ObjectMetaArgs(
        name=name,
        namespace=namespace,
        labels=kueue_objects.queue_label(queue.local_queue) if queue is not None else None,
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


# What a launcher requests: mpirun and ssh to a few workers. Never nothing: Kueue v0.19.2 (8eab687) checks a
# topology-aware pod set against each node's remaining capacity by how many of its pods fit there, and a pod
# that requests nothing fits zero times (pkg/resources/slice_requests.go CountInWithLimitingResource l. 351-353,
# VectorizedResourceRequests on by default since 0.19; pkg/cache/scheduler/clusterqueue_snapshot.go Fits
# l. 144-151): the workload is nominated, then fails "after nomination" every cycle and is never admitted
# (pkg/scheduler/scheduler.go updateAssignmentIfNeeded l. 705-753).
LAUNCHER_REQUESTS = {"cpu": "250m", "memory": "256Mi"}


def launcher_template(image: str, script: str, taints: list[Taint] | None = None) -> dict[str, Any]:
    """The launcher's pod template: no GPU, no rail, one container running ``script`` with a small request
    (LAUNCHER_REQUESTS); with ``taints`` it tolerates them (the NCCL launchers, so that they also run where the
    cluster has only GPU nodes)."""
    spec: dict[str, Any] = {} if taints is None else {"tolerations": tolerations(taints)}
    spec["containers"] = [
        {
            "name": "mpi-launcher",
            "image": image,
            "command": ["bash", "-c"],
            "args": [script],
            "resources": {"requests": dict(LAUNCHER_REQUESTS)},
        }
    ]
    launcher = {"spec": spec}
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, launcher, "template")
    return launcher


def mpijob(slots: int, launcher: dict[str, Any], worker: dict[str, Any], workers: int) -> dict[str, Any]:
    """The MPIJob spec (kubeflow.org/v2beta1): one launcher, ``workers`` workers of ``slots`` ranks each; the
    workers' sshd learns its pod's address (POD_IP, where it listens)."""
    container = worker["spec"]["containers"][0]
    container["env"] = [*container.get("env", []), dict(POD_IP_ENV)]
    return {
        "slotsPerWorker": slots,
        "runPolicy": run_policy(),
        "sshAuthMountPath": SSH_DIR,
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": launcher},
            "Worker": {"replicas": workers, "template": worker},
        },
    }


# A ComputeDomain job (oke_gpu_rdma/drivers/compute_domains.py): NCCL over multi-node NVLink, or the job fails rather than
# falling back to the rails (NCCL_MNNVL_ENABLE=1), with cuMem allocations, which MNNVL needs (NCCL_CUMEM_ENABLE=1);
# oracle-quickstart/oci-hpc-oke manifests/nccl-tests/kueue/BM.GPU.GB200-v3.4.yaml runs with both.
MNNVL_EXPORTS: Final = ("NCCL_MNNVL_ENABLE=1", "NCCL_CUMEM_ENABLE=1")


def mpijob_spec(
    config: AcceptanceJobsConfig,
    claim: PlannedTemplate,
    pool: str,
    taints: list[Taint],
    min_busbw: float,
    queue: JobQueue | None = None,
    compute_domain: str | None = None,
) -> dict[str, Any]:
    """The NCCL MPIJob spec (kubeflow.org/v2beta1); pod templates are checked by the typed classes. With a
    ``compute_domain`` each worker also claims a channel of that ComputeDomain and NCCL must use NVLink across
    nodes."""
    # The launcher needs no GPU; it tolerates the GPU pools' taints so that it also runs where the
    # cluster has no other nodes (an existing cluster), and on the system pool where there is one.
    script = (
        launcher_script(
            claim.gpus_per_worker,
            min_busbw,
            MNNVL_EXPORTS,
            note=f"Multi-node NVLink through ComputeDomain {compute_domain}: NCCL may not fall back to the rails.",
        )
        if compute_domain is not None
        else launcher_script(claim.gpus_per_worker, min_busbw)
    )
    launcher = launcher_template(config.image, script, taints)
    pod_claims = [{"name": "gpus-rails", "resourceClaimTemplateName": claim.name}]
    container_claims = [{"name": "gpus-rails"}]
    if compute_domain is not None:
        pod_claims.append(compute_domains.pod_claim(compute_domain))
        container_claims.append(compute_domains.container_claim())
    worker = {
        "spec": {
            "nodeSelector": {POOL_LABEL: pool},
            "tolerations": tolerations(taints),
            "resourceClaims": pod_claims,
            "volumes": [shm_volume()],
            "containers": [
                {
                    "name": "mpi-worker",
                    "image": config.image,
                    "command": WORKER_SSHD,
                    "volumeMounts": [shm_mount()],
                    "resources": {"claims": container_claims},
                }
            ],
        }
    }
    worker = queued_worker(worker, queue)
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, worker, "template")
    return queued_launcher(mpijob(claim.gpus_per_worker, launcher, worker, config.workers), queue)


def queued_launcher(spec: dict[str, Any], queue: JobQueue | None) -> dict[str, Any]:
    """With a queue and a system pool, the launcher's nodeSelector names the system flavor's node labels itself.
    Kueue writes them into the MPIJob's launcher template on admission, but the MPI operator v0.6.0 has by then
    created the launcher Job from the unadmitted template (at startup, while Kueue holds the MPIJob suspended,
    and with launcherCreationPolicy WaitForWorkersReady too: a suspended job has no workers, so "all" of them
    are ready) and on admission only flips the Job's `suspend` (pkg/controller/mpi_job_controller.go
    l. 649-681): the launcher would land on any node it tolerates, a GPU node too. Kueue's own injection of the
    same labels then agrees with them (it refuses only a conflicting value)."""
    if queue is None or not queue.launcher_node_selector:
        return spec
    replicas = spec["mpiReplicaSpecs"]
    template = replicas["Launcher"]["template"]
    pod = template["spec"]
    pinned = {**pod, "nodeSelector": {**pod.get("nodeSelector", {}), **queue.launcher_node_selector}}
    return {
        **spec,
        "mpiReplicaSpecs": {
            **replicas,
            "Launcher": {**replicas["Launcher"], "template": {**template, "spec": pinned}},
        },
    }


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
    config: AcceptanceJobsConfig,
    rails_template: str,
    pool: str,
    taints: list[Taint],
    min_gbps: float,
    queue: JobQueue | None = None,
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
    worker = queued_worker(worker, queue)
    to_input_type(k8s.core.v1.PodTemplateSpecArgs, worker, "template")
    return queued_launcher(mpijob(1, launcher, worker, 2), queue)
