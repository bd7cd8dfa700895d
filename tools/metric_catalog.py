"""Regenerate oke_gpu_rdma/monitoring/metric_catalog.json: the metric names each exporter the alert rules and
the dashboard read documents at the version the stack pins, read from the exporters' own repositories.

    python -m tools.metric_catalog --dcgm-exporter <git dir> --dranet <git dir> --node-exporter <git dir> \
        --kube-state-metrics <git dir> --dra-driver-nvidia-gpu <git dir>
    python -m tools.metric_catalog --only dra-driver-nvidia-gpu --dra-driver-nvidia-gpu <git dir>  # one entry

Each argument is a clone (or a bare git directory) of the exporter's repository; the file is read at the
ref the catalog records (SOURCES below), never from the working tree, so the catalog names exactly that
version. A version bump is a change of ref here and a rerun.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Final

from oke_gpu_rdma.drivers import nvidia_gpu

OUT: Final = Path(__file__).resolve().parent.parent / "oke_gpu_rdma" / "monitoring" / "metric_catalog.json"


def _git_show(git_dir: str, ref: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{ref}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def dcgm_counters(text: str) -> list[str]:
    """The DCGM fields of a dcgm-exporter counters CSV that are exported as metrics (`label` rows are
    turned into labels of the others, not metrics; `#` rows are comments)."""
    names = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[0] and not fields[0].startswith("#") and fields[1] != "label":
            names.append(fields[0])
    return names


def dranet_metrics(text: str) -> list[str]:
    """`Namespace_Subsystem_Name` of each client_golang collector in pkg/driver/metrics.go; a histogram
    is exported as its _bucket, _sum and _count series."""
    names = []
    pattern = re.compile(
        r"prometheus\.New(\w+?)(?:Vec)?\(prometheus\.\w+Opts\{\s*Namespace:\s*\"(\w+)\",\s*Subsystem:\s*\"(\w+)\",\s*"
        r"Name:\s*\"(\w+)\""
    )
    for kind, namespace, subsystem, name in pattern.findall(text):
        full = f"{namespace}_{subsystem}_{name}"
        names += [f"{full}_bucket", f"{full}_sum", f"{full}_count"] if kind == "Histogram" else [full]
    return names


def node_exporter_infiniband(text: str) -> list[str]:
    """node_infiniband_<name> for each metric of collector/infiniband_linux.go (its descriptions map and
    the info metric)."""
    described = re.findall(r'^\s*"(\w+)":\s*"', text, re.MULTILINE)
    return [f"node_infiniband_{name}" for name in [*described, "info"]]


def component_base_metrics(text: str) -> list[str]:
    """`Namespace_Name` of each k8s.io/component-base metrics collector (metrics.New<Kind>(&metrics.<Kind>Opts{
    Namespace: ..., Name: ...})); a histogram is exported as its _bucket, _sum and _count series."""
    names = []
    pattern = re.compile(
        r"metrics\.New(\w+?)(?:Vec)?\(\s*&metrics\.\w+Opts\{\s*Namespace:\s*\"(\w+)\",\s*Name:\s*\"(\w+)\""
    )
    for kind, namespace, name in pattern.findall(text):
        full = f"{namespace}_{name}"
        names += [f"{full}_bucket", f"{full}_sum", f"{full}_count"] if kind == "Histogram" else [full]
    return names


def kube_state_metrics(text: str) -> list[str]:
    """The first column of a kube-state-metrics docs/metrics table."""
    return re.findall(r"^\|\s*(kube_\w+)\s*\|", text, re.MULTILINE)


# exporter -> (repository, ref, files (space-separated), reader, why this version).
SOURCES: Final[dict[str, tuple[str, str, str, Callable[[str], list[str]], str]]] = {
    "dcgm-exporter": (
        "NVIDIA/dcgm-exporter",
        "4.5.3-4.8.2",
        "etc/dcp-metrics-included.csv",
        dcgm_counters,
        "the dcgm-exporter the GPU Operator v26.3.3 deploys (deployments/gpu-operator/values.yaml l. 285 "
        "dcgmExporter.version 4.5.3-4.8.2-distroless), with the counters file the operator points it at "
        "(assets/state-dcgm-exporter/0800_daemonset.yaml l. 47-48 DCGM_EXPORTER_COLLECTORS)",
    ),
    "dranet": (
        "kubernetes-sigs/dranet",
        "f258477cbea0551b7ad239e3873a997a7a3d116b",
        "pkg/driver/metrics.go",
        dranet_metrics,
        "DRANET's driver metrics, served on --bind-address (default :9177, cmd/dranet/app.go l. 79) at /metrics "
        "(l. 124); the newest snapshot of the repository (its v1.5.0 tag is not in it; metrics.go is unchanged "
        "since v1.4.0)",
    ),
    "node-exporter": (
        "prometheus/node_exporter",
        "v1.12.1",
        "collector/infiniband_linux.go",
        node_exporter_infiniband,
        "the node exporter kube-prometheus-stack 88.5.3 deploys (its prometheus-node-exporter 4.56.1 subchart, "
        "appVersion 1.12.1); the infiniband collector is on by default (l. 44)",
    ),
    "kube-state-metrics": (
        "kubernetes/kube-state-metrics",
        "v2.20.0",
        "docs/metrics/cluster/node-metrics.md docs/metrics/workload/pod-metrics.md",
        kube_state_metrics,
        "the kube-state-metrics kube-prometheus-stack 88.5.3 deploys (its kube-state-metrics 8.4.0 subchart, "
        "appVersion 2.20.0)",
    ),
    nvidia_gpu.CHART_NAME: (
        nvidia_gpu.REPOSITORY,
        nvidia_gpu.SOURCE_COMMIT,
        "pkg/metrics/computedomain_cluster.go pkg/metrics/dra_requests.go",
        component_base_metrics,
        "the GPU DRA driver's metrics (oke_gpu_rdma/drivers/nvidia_gpu.py, the snapshot its chart facts come "
        "from): the compute-domain controller serves compute_domain_info on controller.metrics.httpEndpoint "
        "(:8080), the kubelet plugins the request and prepare-error series on kubeletPlugin.metrics (:8080 GPUs, "
        ":8081 compute domains; values.yaml)",
    ),
}


def catalog(git_dirs: dict[str, str], only: str | None = None) -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = {}
    for exporter, (repo, ref, path, reader, why) in SOURCES.items():
        if only is not None and exporter != only:
            continue
        # A source may list several files (space-separated) of one repository at one ref.
        names = [name for file in path.split() for name in reader(_git_show(git_dirs[exporter], ref, file))]
        found[exporter] = {
            "repository": repo,
            "ref": ref,
            "file": path,
            "why": why,
            "metrics": sorted(set(names)),
        }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SOURCES), help="rewrite this exporter's entry alone")
    for exporter in SOURCES:
        parser.add_argument(f"--{exporter}", metavar="GIT_DIR")
    args = vars(parser.parse_args())
    only = args.pop("only")
    wanted = [only] if only else list(SOURCES)
    missing = [e for e in wanted if not args.get(e.replace("-", "_"))]
    if missing:
        parser.error(f"give the git directory of {', '.join(missing)} (--{' --'.join(missing)})")
    git_dirs = {e: args[e.replace("-", "_")] for e in wanted}
    found = catalog(git_dirs, only)
    if only:
        found = {**json.loads(OUT.read_text()), **found}
    OUT.write_text(json.dumps({e: found[e] for e in SOURCES if e in found}, indent=2) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
