"""Images by digest: the digests public sources publish for the tags the stack renders, kept as data.

A tag can be moved; a digest cannot. Every image the stack writes into a manifest goes through
:func:`pinned`, which keeps the tag for people and adds the digest (`repo:tag@sha256:...`; the container
runtime pulls by the digest and ignores the tag) when ``image_digests.json`` holds one for that tag. Each
digest there comes from a public, citable file that pins the image (its ``source``: repository, tag or
commit, path), or from the registry itself when tools/refresh_digests.py asked it (``source`` "registry
<host>, <date>"); none is computed or guessed. An image without a published digest keeps its tag and is a
known gap (:data:`KNOWN_GAPS`, docs/pod-security-and-images.md), which the pack's images-pinned-by-digest policy refuses
unless its pack config allows it (:class:`PinnedImagesSettings`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from oke_gpu_rdma.common.pack_settings import PinnedImagesSettings
from oke_gpu_rdma.drivers import nvidia_gpu

DIGESTS_FILE: Final = Path(__file__).with_name("image_digests.json")
_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
# How a reference names its digest (distribution/reference reference.go: `name[:tag][@digest]`); only sha256,
# the algorithm every registry the stack pulls from uses.
PINNED_SUFFIX: Final = re.compile(r"@sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class PinnedDigest:
    image: str
    """The image as the stack names it, by tag (`repo:tag`)."""
    digest: str
    source: str
    """Where the digest is published: repository, tag or commit, file."""


class ImageDigestError(ValueError):
    """An entry of image_digests.json that is not a tagged image with a sha256 digest and a source."""


@cache
def digests() -> dict[str, PinnedDigest]:
    """The published digests by image (`repo:tag`)."""
    data = json.loads(DIGESTS_FILE.read_text())
    found: dict[str, PinnedDigest] = {}
    for image, entry in data["images"].items():
        digest, source = entry.get("digest"), entry.get("source")
        if "@" in image or ":" not in image.rsplit("/", 1)[-1]:
            raise ImageDigestError(f"{DIGESTS_FILE.name}: {image}: give the image by tag (repo:tag)")
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise ImageDigestError(f"{DIGESTS_FILE.name}: {image}: digest {digest!r} is not sha256:<64 hex>")
        if not isinstance(source, str) or not source:
            raise ImageDigestError(
                f"{DIGESTS_FILE.name}: {image}: say where the digest is published (source)"
            )
        found[image] = PinnedDigest(image, digest, source)
    return found


def pinned(image: str) -> str:
    """``image`` (`repo:tag`) with its published digest (`repo:tag@sha256:...`), or as given when no public
    source publishes one (or it names a digest already)."""
    if "@" in image:
        return image
    entry = digests().get(image)
    return f"{image}@{entry.digest}" if entry else image


def digest_of(image: str) -> str | None:
    """The published digest of ``image`` (`repo:tag`), if any."""
    entry = digests().get(image)
    return entry.digest if entry else None


def pinned_tag(image: str) -> str:
    """The tag part of :func:`pinned` (`v0.19.3@sha256:...`), for charts that write `<repository>:<tag>`."""
    name, _, rest = pinned(image).partition("@")
    tag = name.rsplit(":", 1)[1]
    return f"{tag}@{rest}" if rest else tag


def is_pinned(image: str) -> bool:
    """Whether ``image`` names its content by digest (`repo[:tag]@sha256:<64 hex>`)."""
    return bool(PINNED_SUFFIX.search(image))


# The images the project's own stacks write that no public, citable file publishes a digest for (searched:
# GitHub code, promotion manifests and pull requests, operator bundles), as the stack writes them, and why.
# The pack's images-pinned-by-digest policy refuses each unless the stack's pack config allows it
# (PinnedImagesSettings.allow_unpinned): :func:`allowance_for` is that section for a stack's images.
# alpine/k8s (bash, sh, kubectl, jq): the fabric check's controller and the Grafana admin Job, one reference for
# both, with its digest from image_digests.json.
KUBECTL_SHELL_IMAGE: Final = pinned("docker.io/alpine/k8s:1.36.2")
# Python 3 (the standard library): the remediation controller, and its repair Jobs, which install the OCI SDK
# from a hashed lock (oke_gpu_rdma/health/remediation/).
PYTHON_IMAGE: Final = pinned("docker.io/library/python:3.12-alpine")
NCCL_TESTS_IMAGE: Final = "iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0"
MPI_OPERATOR_IMAGE: Final = "mpioperator/mpi-operator:0.6.0"
DRANET_IMAGE: Final = "registry.k8s.io/networking/dranet:v1.5.0"
NETWORK_OPERATOR_IMAGES: Final = tuple(
    f"nvcr.io/nvidia/mellanox/{name}:network-operator-v26.7.1"
    for name in ("nvidia-k8s-ipam", "plugins", "multus-cni")
)
KNOWN_GAPS: Final[dict[str, str]] = {
    NCCL_TESTS_IMAGE: "the acceptance jobs' image (workloads.acceptanceJobs.image) is a tenancy's OCIR "
    "repository; no public file publishes its digest (set the key to repo:tag@sha256:... to pin your own)",
    MPI_OPERATOR_IMAGE: "kubeflow/mpi-operator v0.6.0 deploy/v2beta1/mpi-operator.yaml l. 8655 names the tag "
    "only; no public file publishes its digest",
    DRANET_IMAGE: "the dranet chart writes image.repository:image.tag (deployments/helm/dranet/templates/"
    "daemonset.yaml l. 48); kubernetes/k8s.io promotion PRs publish digests up to v1.4.0 (PR #9736), none "
    "for v1.5.0",
    **{
        image: "the NicClusterPolicy's image for chart 26.7.1 (the operator writes repository/image:version, "
        "or repository/image@version for a sha256: version: Mellanox/network-operator pkg/render/render.go "
        "imagePath); no public file publishes its digest"
        for image in NETWORK_OPERATOR_IMAGES
    },
}


def allowance_for(written: Any) -> PinnedImagesSettings:
    """The images-pinned-by-digest section for a stack that writes the images ``written``: the known gaps
    among them, in name order (what the project's example stacks need; no other image is allowed)."""
    return PinnedImagesSettings(allow_unpinned=tuple(sorted({i for i in written if i in KNOWN_GAPS})))


@dataclass(frozen=True)
class ChartImage:
    """Where a chart takes an image from the values the stack sets: it writes `<repository>:<tag>`, so a tag
    of `<tag>@sha256:...` pins the digest and keeps the tag."""

    repository_value: str
    tag_value: str
    default_repository: str | None
    """The chart's own `repository` default, when its values file is cited; None: not recorded here."""


# By the chart's name (<capability>/<chart>_chart.py CHART_NAME), each cited where its templates build the image.
CHART_IMAGES: Final[dict[str, ChartImage]] = {
    # kubernetes-sigs/dranet deployments/helm/dranet values.yaml l. 4-8, templates/daemonset.yaml l. 48
    # (v1.4.0; v1.5.0 the same per drivers/dranet.py VALUE_PATHS).
    "dranet": ChartImage("image.repository", "image.tag", "registry.k8s.io/networking/dranet"),
    # NVIDIA/k8s-device-plugin v0.19.3 values.yaml l. 49-53, templates/_helpers.tpl l. 83-86.
    "nvidia-device-plugin": ChartImage("image.repository", "image.tag", "nvcr.io/nvidia/k8s-device-plugin"),
    # drivers/nvidia_gpu.py VALUE_PATHS: image.repository, image.tag.
    nvidia_gpu.CHART_NAME: ChartImage("image.repository", "image.tag", None),
    # kubernetes-sigs/kueue hack/helm-chart-package.sh l. 74-75 (scheduling/kueue_chart.py).
    "kueue": ChartImage(
        "controllerManager.manager.image.repository",
        "controllerManager.manager.image.tag",
        "registry.k8s.io/kueue/kueue",
    ),
}


def tag_of(image: str) -> str:
    """``image`` without its digest (`repo:tag`), as image_digests.json keys it."""
    return image.split("@", 1)[0]


def stack_images() -> list[str]:
    """Every image by tag the stack names: the ones with a recorded digest and the known gaps."""
    return sorted(set(digests()) | set(KNOWN_GAPS))
