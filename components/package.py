"""The components the oke-gpu-rdma component package serves (provider/): one list, read by the plugin
and by its tests, so a component added here is in the schema and tested there; and the package's version,
whose one home is pyproject.toml's [project].version."""

import re
import tomllib
from pathlib import Path
from typing import Final

import pulumi
from pulumi.provider.experimental.component import ComponentProvider

from components.claims.rdma_workloads import GpuRailClaimTemplates, RdmaWorkloadNamespace
from components.drivers.dra_drivers import Dranet, NvidiaComputeDomainDriver, NvidiaGpuDraDriver
from components.drivers.job_compute_domain import JobComputeDomain
from components.nodes.cluster import OkeCluster
from components.nodes.gpu_node_pool import RdmaGpuNodePool
from components.nodes.network import Network
from components.nodes.system_pool import SystemNodePool
from components.scheduling.kueue import Kueue
from oke_gpu_rdma.common import resource_types

PACKAGE_NAME: Final = resource_types.PACKAGE
"""The package name, the first part of every component's type token."""
PACKAGE_NAMESPACE: Final = "oke-gpu-rdma"
"""The publisher namespace the generated SDKs are named with."""

PYPROJECT: Final = Path(__file__).resolve().parent.parent / "pyproject.toml"
# A release X.Y.Z: the CLI checks a git source out at the tag v<version> (pulumi/pulumi
# sdk/go/common/workspace/plugins.go, gitSource.Download: refs/tags/v + the semver it was given).
_RELEASE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


def package_version(pyproject: Path = PYPROJECT) -> str:
    """The package's version: pyproject.toml's [project].version, the version of the domain library the
    package runs. The schema carries it (the SDK's host defaults to 0.0.0: pulumi/pulumi
    sdk/python/lib/pulumi/provider/experimental/host.py component_provider_host), and the generated SDKs
    take theirs from the schema (its language.<lang>.respectSchemaVersion)."""
    version = tomllib.loads(pyproject.read_text())["project"]["version"]
    if not isinstance(version, str) or not _RELEASE.match(version):
        raise ValueError(
            f"{pyproject}: [project].version is {version!r}; the component package needs a release version "
            "X.Y.Z (its git tag is vX.Y.Z)"
        )
    return version


PACKAGE_VERSION: Final = package_version()
"""The version the plugin serves in its schema and plugin info, and the release tag is v<version>."""

PACKAGE_COMPONENTS: Final[tuple[type[pulumi.ComponentResource], ...]] = (
    Network,
    OkeCluster,
    RdmaGpuNodePool,
    SystemNodePool,
    Dranet,
    NvidiaGpuDraDriver,
    NvidiaComputeDomainDriver,
    JobComputeDomain,
    RdmaWorkloadNamespace,
    GpuRailClaimTemplates,
    Kueue,
)


def package_provider() -> ComponentProvider:
    """The provider the plugin serves: what provider/__main__.py hosts (component_provider_host builds
    this very ComponentProvider, pulumi/pulumi sdk/python/lib/pulumi/provider/experimental/host.py)."""
    return ComponentProvider(list(PACKAGE_COMPONENTS), PACKAGE_NAME, PACKAGE_NAMESPACE, PACKAGE_VERSION)
