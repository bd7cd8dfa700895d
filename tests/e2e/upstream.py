"""Upstream objects the e2e control plane needs besides the stack's own: the CRDs and webhooks of Kueue, the
MPI operator's manifest and the Prometheus operator's CRDs, each read at its pinned release from the Go
module of its repository (a module zip holds the repository's files at the tag; `go mod download` checks
it against the Go checksum database, and the h1 sums below pin it as a go.sum line would). Nothing is
copied into this repository. The NVIDIA DRA driver's ComputeDomain CRD is the exception: its module is not
served, so it is built from the schema the project records at the pinned commit (compute_domain_crds).
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from oke_gpu_rdma.common import crd_schemas
from oke_gpu_rdma.drivers import compute_domains
from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from oke_gpu_rdma.scheduling import mpi_operator
from tests.e2e.control_plane import MODULE


@dataclass(frozen=True)
class Module:
    path: str
    version: str
    sum: str
    """The module's h1 hash (its go.sum line)."""
    commit: str = ""
    """The repository commit the version's tag names (checked against the proxy's Origin)."""


# Kueue's pin (oke_gpu_rdma/scheduling/kueue_chart.py DEFAULT_VERSION); the manager is built at the same version
# (tests/e2e/cluster/go.mod).
KUEUE = Module(
    "sigs.k8s.io/kueue",
    f"v{kueue.DEFAULT_VERSION}",
    "h1:mPNzr37u0nwI7ikST5QQl5gg6EgtYOAvC9ZbTgywdN8=",
    "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb",
)
# The MPI operator release the stack applies: its tag is the commit the stack's manifest URL names
# (oke_gpu_rdma/scheduling/mpi_operator_releases.json).
MPI_OPERATOR = Module(
    "github.com/kubeflow/mpi-operator",
    "v0.6.0",
    "h1:RzzG03oyQIiHe/SH2k19N+Hp4QkxEsG2l9G1T7US+ys=",
    mpi_operator.release("v0.6.0").commit,
)
# kube-prometheus-stack 88.5.3 installs the CRDs of prometheus-operator v0.93.1 (prometheus-community/
# helm-charts at tag kube-prometheus-stack-88.5.3: Chart.yaml appVersion v0.93.1, and the first line of each
# charts/crds/crds/crd-*.yaml names example/prometheus-operator-crd/ at v0.93.1, the files read here).
PROMETHEUS_OPERATOR_FOR_CHART = {"88.5.3": "v0.93.1"}
PROMETHEUS_OPERATOR = Module(
    "github.com/prometheus-operator/prometheus-operator",
    PROMETHEUS_OPERATOR_FOR_CHART[kps.DEFAULT_VERSION],
    "h1:4Juk8v93RdG1DSGD/mGp+SeQKPmnlLIj2iq3blLZgFY=",
)


class UpstreamError(Exception):
    pass


@functools.cache
def module_dir(module: Module) -> Path:
    """The module's files, downloaded (or found in GOMODCACHE) and checked against the pinned sum."""
    done = subprocess.run(
        ["go", "mod", "download", "-json", f"{module.path}@{module.version}"],
        cwd=MODULE,
        capture_output=True,
        text=True,
    )
    info = json.loads(done.stdout or "{}")
    if done.returncode != 0 or "Error" in info:
        raise UpstreamError(
            f"go mod download {module.path}@{module.version}: {info.get('Error') or done.stderr}"
        )
    if info["Sum"] != module.sum:
        raise UpstreamError(f"{module.path}@{module.version}: sum {info['Sum']}, pinned {module.sum}")
    origin = (info.get("Origin") or {}).get("Hash")
    if module.commit and origin and origin != module.commit:
        raise UpstreamError(
            f"{module.path}@{module.version} is commit {origin}, the stack pins {module.commit}"
        )
    return Path(info["Dir"])


def documents(path: Path) -> Iterator[dict[str, Any]]:
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict):
            yield doc


def _url(base: str, path: str) -> dict[str, Any]:
    return {"url": base + path}


def kueue_crds(webhook_base: str, ca_bundle: str) -> list[dict[str, Any]]:
    """Kueue's CRDs as its kustomization assembles them (config/components/crd/kustomization.yaml): the bases,
    with the conversion webhook its `webhook_in_*` patches add, called by URL."""
    crd_dir = module_dir(KUEUE) / "config" / "components" / "crd"
    kustomization = yaml.safe_load((crd_dir / "kustomization.yaml").read_text())
    converted = set()
    for patch in kustomization.get("patches") or ():
        for doc in documents(crd_dir / patch["path"]):
            if (doc.get("spec") or {}).get("conversion"):
                converted.add(doc["metadata"]["name"])
    crds = []
    for resource in kustomization["resources"]:
        for crd in documents(crd_dir / resource):
            if crd["metadata"]["name"] in converted:
                crd["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {**_url(webhook_base, "/convert"), "caBundle": ca_bundle},
                        "conversionReviewVersions": ["v1"],
                    },
                }
            crds.append(crd)
    return crds


def kueue_webhooks(webhook_base: str, ca_bundle: str) -> list[dict[str, Any]]:
    """Kueue's webhook configurations (config/components/webhook/manifests.yaml) with the namespace selector its
    kustomization puts on the job and pod webhooks (kube-system and kueue-system left out), called by URL."""
    webhook_dir = module_dir(KUEUE) / "config" / "components" / "webhook"
    kustomization = yaml.safe_load((webhook_dir / "kustomization.yaml").read_text())
    selectors: dict[str, Any] = {}
    for patch in kustomization.get("patches") or ():
        for doc in yaml.safe_load_all(patch["patch"]):
            for hook in doc.get("webhooks") or ():
                selectors[hook["name"]] = hook["namespaceSelector"]
    for replacement in kustomization.get("replacements") or ():
        source = replacement["source"]["fieldPath"]  # webhooks.[name=vpod.kb.io].namespaceSelector
        selector = selectors[source.split("[name=", 1)[1].split("]", 1)[0]]
        for target in replacement["targets"]:
            for field in target["fieldPaths"]:
                selectors[field.split("[name=", 1)[1].split("]", 1)[0]] = selector
    configs = []
    for doc in documents(webhook_dir / "manifests.yaml"):
        doc = copy.deepcopy(doc)
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {**_url(webhook_base, path), "caBundle": ca_bundle}
            if hook["name"] in selectors:
                hook["namespaceSelector"] = selectors[hook["name"]]
        configs.append(doc)
    return configs


def mpi_operator_manifest() -> list[dict[str, Any]]:
    """deploy/v2beta1/mpi-operator.yaml at the pinned release, as upstream wrote it."""
    return list(documents(module_dir(MPI_OPERATOR) / mpi_operator.MANIFEST_PATH))


# The monitoring kinds the stack writes, by the plural their CRD file is named with.
MONITORING_PLURALS = {kps.POD_MONITOR_KIND: "podmonitors", kps.PROMETHEUS_RULE_KIND: "prometheusrules"}


def prometheus_operator_crds(kinds: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The CRDs of the monitoring kinds the stack writes (kind -> plural), as the chart installs them."""
    crd_dir = module_dir(PROMETHEUS_OPERATOR) / "example" / "prometheus-operator-crd"
    wanted = MONITORING_PLURALS if kinds is None else kinds
    return [
        crd
        for plural in wanted.values()
        for crd in documents(crd_dir / f"{kps.MONITORING_API.split('/')[0]}_{plural}.yaml")
    ]


def compute_domain_crds() -> list[dict[str, Any]]:
    """The NVIDIA DRA driver's ComputeDomain CRD, built from the schema recorded at the pinned commit
    (oke_gpu_rdma/drivers/compute_domain_crd_schemas.json, written by `python -m tools.record_crd_schemas --source
    dra-driver-nvidia-gpu` from the chart's crds/ file at oke_gpu_rdma/drivers/compute_domains.py SOURCE_COMMIT).

    Unlike the other upstream objects it is not read from a Go module: neither the driver's chart nor its module
    is served here (proxy.golang.org answers "not available" for sigs.k8s.io/dra-driver-nvidia-gpu, and
    registry.k8s.io, where the chart is published, is unreachable), and the chart version the stack pins has no
    tag to download anyway. The CRD file declares nothing else the API server reads: the group, names and scope,
    one version (v1beta1) served and stored with the status subresource, and its openAPIV3Schema, which the
    recorded file keeps whole but for the descriptions (validation never reads them).
    """
    data = crd_schemas.COMPUTE_DOMAINS.load()
    version = data["apiVersion"].split("/", 1)[1]
    recorded = data["kinds"][compute_domains.KIND]
    names = recorded["names"]
    return [
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{names['plural']}.{recorded['group']}"},
            "spec": {
                "group": recorded["group"],
                "names": copy.deepcopy(names),
                "scope": recorded["scope"],
                "versions": [
                    {
                        "name": version,
                        "served": True,
                        "storage": True,
                        "subresources": copy.deepcopy(recorded["subresources"]),
                        "schema": {"openAPIV3Schema": copy.deepcopy(recorded["schema"])},
                    }
                ],
            },
        }
    ]
