"""Pod Security Standards: the levels, the namespace labels that enforce one, and a checker of pod specs.

The checks follow the Pod Security admission controller's own, one per file in
kubernetes/kubernetes `staging/src/k8s.io/pod-security-admission/policy/` (tag v1.36.0): baseline
`check_hostProcess.go`, `check_hostNamespaces.go`, `check_privileged.go`, `check_capabilities_baseline.go`,
`check_hostPathVolumes.go`, `check_hostPorts.go`, `check_appArmorProfile.go`, `check_seLinuxOptions.go`,
`check_procMount.go`, `check_seccompProfile_baseline.go`, `check_sysctls.go`; restricted adds
`check_restrictedVolumes.go`, `check_allowPrivilegeEscalation.go`, `check_runAsNonRoot.go`,
`check_runAsUser.go`, `check_seccompProfile_restricted.go`, `check_capabilities_restricted.go`. The tests run
:func:`violations` on every pod spec the stack renders, at the level of the namespace it runs in (the
levels below say which level each namespace the stack creates gets, and why).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal

Level = Literal["privileged", "baseline", "restricted"]
PRIVILEGED: Final = "privileged"
BASELINE: Final = "baseline"
RESTRICTED: Final = "restricted"
LEVELS: Final[tuple[Level, ...]] = ("privileged", "baseline", "restricted")  # least strict first

# The labels Pod Security admission reads (https://kubernetes.io/docs/concepts/security/pod-security-admission/):
# enforce rejects a pod, warn and audit report it; all three at one level, so a pod that would fail is
# named before it is refused.
MODES: Final = ("enforce", "warn", "audit")
LABEL_PREFIX: Final = "pod-security.kubernetes.io/"


# The level of each kind of namespace the stack creates: the strictest its pods pass.
# - The charts that run node agents (the GPU DRA driver's kubelet plugin, the GPU Operator's operands, the
#   Network Operator's SR-IOV config daemon, the device plugin): DaemonSets with hostPath volumes and
#   privileged containers. The GPU Operator labels its own namespace privileged when it manages Pod Security
#   (NVIDIA/gpu-operator controllers/state_manager.go podSecurityLevelPrivileged).
NODE_AGENTS_LEVEL: Final[Level] = PRIVILEGED
# - RDMA workloads: seed 000 ran every RDMA pod under baseline (the nodes set unlimited memlock, so no
#   IPC_LOCK); the acceptance workers run sshd as root (the image has no other user), which restricted refuses.
WORKLOADS_LEVEL: Final[Level] = BASELINE
# - The MPI operator: one Deployment, which passes restricted with the securityContext the stack gives it
#   (components/health/acceptance_jobs.py).
MPI_OPERATOR_LEVEL: Final[Level] = RESTRICTED
# - kube-prometheus-stack without its node exporter: the operator, Prometheus, Alertmanager, Grafana,
#   kube-state-metrics and the webhook hook Jobs all run non-root, without escalation or capabilities, with
#   seccomp RuntimeDefault (oke_gpu_rdma/monitoring/chart_pods.py, the chart at 88.5.3).
MONITORING_LEVEL: Final[Level] = RESTRICTED
# - The node exporter, in a namespace of its own: host network, host PID and hostPath mounts.
NODE_EXPORTER_LEVEL: Final[Level] = PRIVILEGED
# - The rail health agent: host network, to see the node's rails (components/health/rail_health.py).
RAIL_AGENT_LEVEL: Final[Level] = PRIVILEGED


def namespace_labels(level: Level) -> dict[str, str]:
    """The labels that make a namespace enforce, warn at and audit ``level``."""
    return {f"{LABEL_PREFIX}{mode}": level for mode in MODES}


# check_capabilities_baseline.go: what a container may add at baseline (the container runtimes' defaults).
BASELINE_CAPABILITIES: Final = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# check_sysctls.go: the safe sysctls at v1.36 (the later ones joined in 1.27, 1.29 and 1.32).
SAFE_SYSCTLS: Final = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
# check_seLinuxOptions.go: the types a pod may set at baseline.
SELINUX_TYPES: Final = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
# check_restrictedVolumes.go: the volume sources allowed at restricted (image joined in 1.33).
RESTRICTED_VOLUMES: Final = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "image",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
_VOLUME_KEYS: Final = frozenset({"name"})


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(field) or ():
            if isinstance(container, Mapping):
                yield f"{field[:-1]} {container.get('name', '?')}", container


def _context(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    context = obj.get("securityContext")
    return context if isinstance(context, Mapping) else {}


def _capability(name: object) -> str:
    return str(name).upper().removeprefix("CAP_")


def _baseline(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    pod = _context(spec)
    if (pod.get("windowsOptions") or {}).get("hostProcess") is True:
        found.append("securityContext.windowsOptions.hostProcess: true")
    found += [f"{key}: true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key) is True]
    for volume in spec.get("volumes") or ():
        if isinstance(volume, Mapping) and "hostPath" in volume:
            found.append(f"volume {volume.get('name', '?')} is a hostPath volume")
    found += _profile_problems("pod", pod, annotations, "*")
    for sysctl in pod.get("sysctls") or ():
        name = sysctl.get("name") if isinstance(sysctl, Mapping) else None
        if name not in SAFE_SYSCTLS:
            found.append(f"sysctl {name} is not one of the safe sysctls")
    for where, container in _containers(spec):
        context = _context(container)
        if context.get("privileged") is True:
            found.append(f"{where} is privileged")
        added = sorted(
            _capability(c)
            for c in (context.get("capabilities") or {}).get("add") or ()
            if _capability(c) not in BASELINE_CAPABILITIES
        )
        if added:
            found.append(f"{where} adds capabilities {', '.join(added)}")
        if (context.get("windowsOptions") or {}).get("hostProcess") is True:
            found.append(f"{where} sets windowsOptions.hostProcess: true")
        for port in container.get("ports") or ():
            if isinstance(port, Mapping) and port.get("hostPort") not in (None, 0):
                found.append(f"{where} uses hostPort {port.get('hostPort')}")
        if context.get("procMount") not in (None, "Default"):
            found.append(f"{where} sets procMount {context.get('procMount')}")
        found += _profile_problems(where, context, annotations, str(container.get("name", "")))
    return found


def _profile_problems(
    where: str, context: Mapping[str, Any], annotations: Mapping[str, Any], container: str
) -> list[str]:
    """AppArmor, SELinux and seccomp at baseline: no unconfined profile, no custom SELinux user or role."""
    found: list[str] = []
    apparmor = context.get("appArmorProfile") or {}
    if isinstance(apparmor, Mapping) and apparmor.get("type") == "Unconfined":
        found.append(f"{where} sets appArmorProfile Unconfined")
    key = f"container.apparmor.security.beta.kubernetes.io/{container}"
    if container != "*" and annotations.get(key) == "unconfined":
        found.append(f"{where} has AppArmor annotation unconfined")
    selinux = context.get("seLinuxOptions") or {}
    if isinstance(selinux, Mapping):
        if selinux.get("type", "") not in SELINUX_TYPES:
            found.append(f"{where} sets seLinuxOptions.type {selinux.get('type')}")
        found += [f"{where} sets seLinuxOptions.{k}" for k in ("user", "role") if selinux.get(k)]
    seccomp = context.get("seccompProfile") or {}
    if isinstance(seccomp, Mapping) and seccomp.get("type") == "Unconfined":
        found.append(f"{where} sets seccompProfile Unconfined")
    return found


def _restricted(spec: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    pod = _context(spec)
    for volume in spec.get("volumes") or ():
        if isinstance(volume, Mapping):
            kinds = sorted(set(volume) - _VOLUME_KEYS - RESTRICTED_VOLUMES)
            if kinds:
                found.append(f"volume {volume.get('name', '?')} is a {kinds[0]} volume")
    pod_non_root = pod.get("runAsNonRoot")
    pod_seccomp = (pod.get("seccompProfile") or {}).get("type")
    if pod.get("runAsUser") == 0:
        found.append("pod runs as user 0")
    for where, container in _containers(spec):
        context = _context(container)
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{where} does not set allowPrivilegeEscalation: false")
        non_root = context.get("runAsNonRoot", pod_non_root)
        if non_root is not True:
            found.append(f"{where} does not set runAsNonRoot: true (on it or the pod)")
        if context.get("runAsUser") == 0:
            found.append(f"{where} runs as user 0")
        seccomp = (context.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{where} sets no seccompProfile RuntimeDefault or Localhost (on it or the pod)")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in {_capability(c) for c in capabilities.get("drop") or ()}:
            found.append(f"{where} does not drop ALL capabilities")
        added = sorted(
            _capability(c) for c in capabilities.get("add") or () if _capability(c) != "NET_BIND_SERVICE"
        )
        if added:
            found.append(
                f"{where} adds capabilities {', '.join(added)} (restricted allows only NET_BIND_SERVICE)"
            )
    return found


def violations(
    spec: Mapping[str, Any], level: Level, annotations: Mapping[str, Any] | None = None
) -> list[str]:
    """What in the pod spec ``spec`` (its ``annotations``: the pod template's) Pod Security admission refuses
    at ``level``; empty when the pod passes."""
    if level == PRIVILEGED:
        return []
    found = _baseline(spec, annotations or {})
    if level == RESTRICTED:
        found += _restricted(spec)
    return found


def strictest(spec: Mapping[str, Any], annotations: Mapping[str, Any] | None = None) -> Level:
    """The strictest level the pod passes."""
    return next(level for level in reversed(LEVELS) if not violations(spec, level, annotations))
