"""oke_gpu_rdma/common/images.py: images by the digest a public source publishes, the tag kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oke_gpu_rdma.common import images
from oke_gpu_rdma.drivers import device_plugin

PLUGIN_DIGEST = "sha256:25cc340fe6fd53c101e16fc452f503e7a92c219c64a80ed5381784b522dbbf77"


def test_a_published_digest_pins_the_image_and_keeps_the_tag() -> None:
    assert images.pinned(device_plugin.IMAGE) == f"nvcr.io/nvidia/k8s-device-plugin:v0.19.3@{PLUGIN_DIGEST}"
    assert images.pinned_tag(device_plugin.IMAGE) == f"v0.19.3@{PLUGIN_DIGEST}"
    # Without a published digest the tag stays (a known gap, docs/pod-security-and-images.md); a digest given stays as is.
    assert images.pinned("mpioperator/mpi-operator:0.6.0") == "mpioperator/mpi-operator:0.6.0"
    assert images.pinned(f"x/y:1@{PLUGIN_DIGEST}") == f"x/y:1@{PLUGIN_DIGEST}"


def test_every_digest_names_its_public_source() -> None:
    for entry in images.digests().values():
        assert entry.source and " " in entry.source  # repository, version and file


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"x/y": {"digest": PLUGIN_DIGEST, "source": "s"}}, "x/y: give the image by tag (repo:tag)"),
        (
            {"x/y:1": {"digest": "sha256:abc", "source": "s"}},
            "x/y:1: digest 'sha256:abc' is not sha256:<64 hex>",
        ),
        ({"x/y:1": {"digest": PLUGIN_DIGEST}}, "x/y:1: say where the digest is published (source)"),
    ],
)
def test_a_bad_entry_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: dict, said: str
) -> None:
    data = tmp_path / "image_digests.json"
    data.write_text(json.dumps({"images": entry}))
    monkeypatch.setattr(images, "DIGESTS_FILE", data)
    images.digests.cache_clear()
    try:
        with pytest.raises(images.ImageDigestError) as err:
            images.digests()
        assert str(err.value) == f"image_digests.json: {said}"
    finally:
        monkeypatch.undo()
        images.digests.cache_clear()


KUBECTL = "registry.k8s.io/kubectl:v1.36.3"
KUBECTL_DIGEST = "sha256:6e4fce3c83651edb91b74bc67701c5cd263dd8aa3cd4254b1798d6425a5ab789"
ALPINE_K8S = "docker.io/alpine/k8s:1.36.2"
ALPINE_K8S_DIGEST = "sha256:44ef4942e171939b9c665a4a84beb80e2dcdb9a24330d4651cfdfd2e9deecc47"


def test_the_rail_agent_and_the_fabric_check_run_by_the_published_digest() -> None:
    """Issue 36, finding 8: the images the stack's own manifests write carry their digest. kubectl v1.36.0 has
    none published, v1.36.3 has (argoproj/argo-workflows v4.1.2 Dockerfile l. 144): same image, same minor, the
    same bash, jq and coreutils (kubernetes build/server-image/kubectl); alpine/k8s 1.36.2 likewise."""
    from oke_gpu_rdma.health import health_marks as health
    from stack_config.health.acceptance_settings import AcceptanceJobsConfig

    rail_agent = health.RAIL_AGENT_IMAGE
    assert rail_agent == f"{KUBECTL}@{KUBECTL_DIGEST}"
    check_image = AcceptanceJobsConfig.model_fields["check_image"].default
    assert check_image == f"{ALPINE_K8S}@{ALPINE_K8S_DIGEST}"
    # Written literally, held to image_digests.json: a refreshed digest must be written there too.
    for image in (health.RAIL_AGENT_IMAGE, check_image):
        assert images.is_pinned(image)
        assert images.pinned(images.tag_of(image)) == image


def test_a_known_gap_has_no_recorded_digest_and_says_why() -> None:
    recorded = images.digests()
    for image, why in images.KNOWN_GAPS.items():
        assert image not in recorded and not images.is_pinned(image)
        assert why
    # The acceptance jobs' default image is one of them, as the stack config writes it.
    from stack_config.health.acceptance_settings import AcceptanceJobsConfig

    assert AcceptanceJobsConfig.model_fields["image"].default == images.NCCL_TESTS_IMAGE
    assert set(images.stack_images()) == set(recorded) | set(images.KNOWN_GAPS)


@pytest.mark.parametrize(
    ("image", "pinned"),
    [
        (f"{KUBECTL}@{KUBECTL_DIGEST}", True),
        (f"registry.k8s.io/kubectl@{KUBECTL_DIGEST}", True),
        (KUBECTL, False),
        ("registry.k8s.io/kubectl:v1.36.3@sha256:6e4f", False),
        (f"{KUBECTL}@sha512:{'0' * 128}", False),
    ],
)
def test_pinned_means_a_sha256_digest(image: str, pinned: bool) -> None:
    assert images.is_pinned(image) is pinned


def test_the_allowance_lists_only_known_gaps() -> None:
    written = [images.DRANET_IMAGE, "docker.io/me/mine:1", images.NCCL_TESTS_IMAGE]
    assert images.allowance_for(written).properties() == {
        "allowUnpinned": sorted([images.DRANET_IMAGE, images.NCCL_TESTS_IMAGE])
    }
    assert images.PinnedImagesSettings().allow_unpinned == ()  # nothing allowed by default


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ({"allowUnpinned": [f"{KUBECTL}@{KUBECTL_DIGEST}"]}, "is not an image by tag (repo:tag)"),
        ({"allowUnpinned": ["registry.k8s.io/kubectl"]}, "is not an image by tag (repo:tag)"),
        ({"allowUnpinned": [KUBECTL, KUBECTL]}, "listed more than once"),
        ({"allowUnpinned": "x:1"}, "expected a list of images"),
    ],
)
def test_a_bad_allowance_is_refused_by_key(raw: dict, said: str) -> None:
    from oke_gpu_rdma.common.pack_settings import SettingsError

    with pytest.raises(SettingsError) as err:
        images.PinnedImagesSettings.from_properties(raw)
    (problem,) = err.value.problems
    assert problem.startswith("images-pinned-by-digest.allowUnpinned") and said in problem


def test_every_chart_digest_is_a_sha256_with_its_source() -> None:
    from oke_gpu_rdma.common import charts
    from oke_gpu_rdma.drivers import device_plugin

    entry = charts.CHART_DIGESTS[(device_plugin.CHART_NAME, device_plugin.DEFAULT_VERSION)]
    assert entry.sha256 == "8f01067500e712508fe55fe060b6f895814dc7efc1cb96323db2ce4f777f6e96"
    for (chart, version), found in charts.CHART_DIGESTS.items():
        assert (found.chart, found.version) == (chart, version)
        assert len(found.sha256) == 64 and int(found.sha256, 16) >= 0 and " " in found.source
