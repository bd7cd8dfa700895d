"""A real Kubernetes control plane on loopback, built from the upstream Go modules (tests/e2e/cluster/go.mod).

etcd (embedded), kube-apiserver, kube-controller-manager and kube-scheduler at the stack's Kubernetes version,
and Kueue's manager at the stack's Kueue pin. No kubelet: nodes are API objects (tests/e2e/nodes.py), pods
are scheduled and bound by the real scheduler, claims made by the real resourceclaim controller and
allocated by the scheduler's DRA plugin. Feature gates stay at their defaults: OKE does not let a cluster
change them (oke_gpu_rdma/claims/feature_gates.py).

Deviations from a cluster, each because nothing runs on the nodes:
- kube-controller-manager runs without its node lifecycle controller, which would taint every node
  `unreachable` once no kubelet renews its lease (pkg/controller/nodelifecycle).
- Kueue's webhooks are called by URL on 127.0.0.1 with a certificate made here instead of through the
  chart's Service and Kueue's internal cert rotation (no Service can route to loopback: Endpoints validation
  refuses loopback addresses, pkg/apis/core/validation ValidateEndpoints / validateNonSpecialIP).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from tests.e2e.kube import Kube

ROOT = Path(__file__).resolve().parents[2]
MODULE = Path(__file__).resolve().parent / "cluster"
# The MPI operator the stack applies, in a module of its own (its Kubernetes libraries are v0.31).
MPI_OPERATOR_MODULE = Path(__file__).resolve().parent / "mpi-operator"
MPI_OPERATOR_COMMAND = "github.com/kubeflow/mpi-operator/cmd/mpi-operator"
BIN = ROOT / "build" / "e2e" / "bin"
# The main packages the module builds (its `tool` block and its own commands).
COMMANDS = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    # The in-cluster scripts' client: tests/e2e/test_rail_agent_script.py runs rail-health.sh with it.
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    "kueue": "sigs.k8s.io/kueue/cmd/kueue",
    "etcd": "./cmd/etcd",
    "pki": "./cmd/pki",
}
ADMIN_TOKEN = "e2e-admin-token"
KUEUE_METRICS_CERTS = "/etc/kueue/metrics/certs"
# The cluster's service range, as the example stacks' clusters have it (examples/*.yaml servicesCidr).
SERVICE_CIDR = "10.96.0.0/16"


class ControlPlaneError(Exception):
    """A component did not build or start; the message names it and ends with its log."""


def _go(*args: str, module: Path = MODULE) -> str:
    done = subprocess.run(["go", *args], cwd=module, capture_output=True, text=True)
    if done.returncode != 0:
        raise ControlPlaneError(f"go {' '.join(args)} failed in {module}:\n{done.stderr[-4000:]}")
    return done.stdout


def module_versions() -> dict[str, str]:
    """The versions go.mod pins for Kubernetes and Kueue (what the binaries are stamped with)."""
    out = _go("list", "-m", "-f", "{{.Path}} {{.Version}}", "k8s.io/kubernetes", "sigs.k8s.io/kueue")
    return dict(line.split(" ", 1) for line in out.splitlines())


def build() -> Path:
    """Build every command into build/e2e/bin (incremental: GOCACHE keeps the compiled packages).

    The version stamps are the ones Kubernetes' and Kueue's release builds set (hack/lib/version.sh:
    k8s.io/component-base/version.gitVersion and friends; Kueue's Makefile: pkg/version.GitVersion), from
    the module versions go.mod pins, so `/version` and `--version` report what was built.
    """
    versions = module_versions()
    kube = versions["k8s.io/kubernetes"]
    major, minor = kube.lstrip("v").split(".")[:2]
    ldflags = " ".join(
        [
            f"-X k8s.io/component-base/version.gitVersion={kube}",
            f"-X k8s.io/component-base/version.gitMajor={major}",
            f"-X k8s.io/component-base/version.gitMinor={minor}",
            "-X k8s.io/component-base/version.gitTreeState=clean",
            f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={versions['sigs.k8s.io/kueue']}",
        ]
    )
    BIN.mkdir(parents=True, exist_ok=True)
    _go("build", "-buildvcs=false", "-trimpath", "-ldflags", ldflags, "-o", f"{BIN}/", *COMMANDS.values())
    _go(
        "build",
        "-buildvcs=false",
        "-trimpath",
        "-o",
        f"{BIN}/",
        MPI_OPERATOR_COMMAND,
        module=MPI_OPERATOR_MODULE,
    )
    return BIN


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    handle: IO[bytes]

    def tail(self, lines: int = 40) -> str:
        self.handle.flush()
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise ControlPlaneError(f"{self.name} exited with {self.popen.returncode}:\n{self.tail()}")


@dataclass
class ControlPlane:
    """The running components; ``kube`` is an admin client (system:masters)."""

    workdir: Path
    kube: Kube = field(init=False)
    processes: dict[str, Process] = field(default_factory=dict)
    kubeconfig: Path = field(init=False)
    webhook_port: int = 0

    def _start(self, name: str, args: list[str], env: Mapping[str, str] | None = None) -> Process:
        log = self.workdir / f"{name}.log"
        handle = log.open("wb")
        popen = subprocess.Popen(
            [str(BIN / name), *args],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        process = Process(name, popen, log, handle)
        self.processes[name] = process
        return process

    def _wait(self, process: Process, ready: Any, what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            process.check_alive()
            try:
                if ready():
                    return
            except Exception:  # not up yet: connection refused, 5xx while starting
                pass
            time.sleep(0.5)
        raise ControlPlaneError(f"{process.name}: not {what} after {timeout:.0f} s:\n{process.tail()}")

    def start(self) -> ControlPlane:
        self.workdir.mkdir(parents=True, exist_ok=True)
        pki = self.workdir / "pki"
        subprocess.run([str(BIN / "pki"), "--dir", str(pki)], check=True)
        (pki / "tokens.csv").write_text(f'{ADMIN_TOKEN},e2e-admin,e2e-admin,"system:masters"\n')

        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd = self._start(
            "etcd",
            [
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-url=http://127.0.0.1:{etcd_port}",
                f"--listen-peer-url=http://127.0.0.1:{peer_port}",
            ],
        )
        self._wait(
            etcd, lambda: socket.create_connection(("127.0.0.1", etcd_port), 1).close() or True, "serving"
        )

        apiserver = self._start(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                # No endpoints for the `kubernetes` Service: Endpoints refuse loopback addresses, and nothing
                # here reaches the API server through a Service.
                "--endpoint-reconciler-type=none",
                f"--secure-port={api_port}",
                f"--cert-dir={pki / 'apiserver'}",
                f"--token-auth-file={pki / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # The GPU Operator's and DRANET's pods and the rail agent are privileged, as on OKE.
                "--allow-privileged=true",
            ],
        )
        self.kube = Kube(f"https://127.0.0.1:{api_port}", ADMIN_TOKEN)
        self._wait(apiserver, lambda: self.kube.raw_get("/readyz") == "ok", "ready")

        self.kubeconfig = self.workdir / "kubeconfig"
        self.kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "e2e",
                            "cluster": {"server": self.kube.server, "insecure-skip-tls-verify": True},
                        }
                    ],
                    "users": [{"name": "admin", "user": {"token": ADMIN_TOKEN}}],
                    "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
                    "current-context": "e2e",
                }
            )
        )

        def client_of_the_api_server() -> list[str]:
            """What the controller manager and the scheduler share: the admin kubeconfig for their client and
            their own authentication, a secure port of their own on loopback, no leader election (one each)."""
            return [
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "--leader-elect=false",
            ]

        self._start(
            "kube-controller-manager",
            [
                *client_of_the_api_server(),
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'tls.crt'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--controllers=*,-node-lifecycle-controller,-cloud-node-lifecycle-controller",
            ],
        )
        scheduler = self._start("kube-scheduler", client_of_the_api_server())
        # The controller manager has made the default ServiceAccount (pods need it to be admitted).
        self._wait(
            self.processes["kube-controller-manager"],
            lambda: self.kube.get("/api/v1/namespaces/default/serviceaccounts/default") is not None,
            "running (no default ServiceAccount)",
        )
        scheduler.check_alive()
        return self

    def start_kueue(self, manager_config: Mapping[str, Any], namespace: str) -> Process:
        """Kueue's manager with the stack's Configuration (the chart's managerConfig), its webhook server on
        loopback with this run's certificate, and leader election as configured, in the release's
        ``namespace`` (in a pod, controller-runtime takes the pod's namespace)."""
        config = json.loads(json.dumps(manager_config))
        config["leaderElection"] = {**config.get("leaderElection", {}), "resourceNamespace": namespace}
        self.webhook_port = self.webhook_port or free_port()
        pki = self.workdir / "pki"
        config["internalCertManagement"] = {"enable": False}
        config["webhook"] = {**config.get("webhook", {}), "host": "127.0.0.1", "port": self.webhook_port}
        config["webhook"]["certDir"] = str(pki)
        config["metrics"] = {**config.get("metrics", {}), "bindAddress": f"127.0.0.1:{free_port()}"}
        config["health"] = {**config.get("health", {}), "healthProbeBindAddress": f"127.0.0.1:{free_port()}"}
        config["visibilityServer"] = {**config.get("visibilityServer", {}), "bindPort": free_port()}
        self._metrics_certs(pki)
        path = self.workdir / "kueue-config.yaml"
        path.write_text(yaml.safe_dump(config))
        # VisibilityOnDemand off: its server is an aggregated API reached through a Service (none can route to
        # loopback) and reads its certificate from /visibility (cmd/kueue/main.go); no scenario reads it.
        kueue = self._start(
            "kueue",
            [
                f"--config={path}",
                f"--kubeconfig={self.kubeconfig}",
                "--feature-gates=VisibilityOnDemand=false",
                "--zap-log-level=2",
            ],
        )
        health = config["health"]["healthProbeBindAddress"]
        self._wait(kueue, lambda: self.kube.session.get(f"http://{health}/readyz", timeout=2).ok, "ready")
        return kueue

    @staticmethod
    def _metrics_certs(pki: Path) -> None:
        """Kueue without its internal cert management reads its metrics certificate from a fixed path
        (cmd/kueue/main.go: metricsCertPath "/etc/kueue/metrics/certs"); put this run's certificate there,
        once, marked as the e2e tests' own."""
        target = Path(KUEUE_METRICS_CERTS)
        marker = target / "e2e-owned"
        if target.exists() and not marker.exists():
            raise ControlPlaneError(f"{target} exists and is not the e2e tests' own; Kueue would read it")
        target.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            shutil.copyfile(pki / name, target / name)
        marker.write_text("written by tests/e2e/control_plane.py\n")

    def ca_bundle(self) -> str:
        """The webhook certificate (self-signed), base64 as a webhook configuration's caBundle."""
        return base64.b64encode((self.workdir / "pki" / "tls.crt").read_bytes()).decode()

    def versions(self) -> dict[str, str]:
        """What the running binaries report: kube-apiserver's /version, kube-scheduler --version, and the
        version Kueue's manager logs at start ("Initializing", gitVersion)."""
        api = self.kube.get("/version") or {}
        scheduler = subprocess.run(
            [str(BIN / "kube-scheduler"), "--version"], capture_output=True, text=True, check=True
        ).stdout.split()[-1]
        kueue = ""
        if "kueue" in self.processes:
            for line in self.processes["kueue"].tail(10_000).splitlines():
                if '"Initializing"' in line and '"gitVersion"' in line:
                    kueue = json.loads(line[line.index("{") :]).get("gitVersion", "")
                    break
        return {"kube-apiserver": str(api.get("gitVersion")), "kube-scheduler": scheduler, "kueue": kueue}

    def stop(self) -> None:
        """Terminate every component, and kill what is still up after a few seconds: a test cluster keeps
        nothing worth a graceful shutdown (kube-apiserver's drains for far longer)."""
        for process in reversed(list(self.processes.values())):
            if process.popen.poll() is None:
                process.popen.terminate()
        deadline = time.monotonic() + 3
        for process in self.processes.values():
            try:
                process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()
            process.handle.close()


def fresh_workdir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
