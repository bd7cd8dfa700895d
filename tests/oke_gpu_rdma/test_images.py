"""oke_gpu_rdma/images.py: images by the digest a public source publishes, the tag kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oke_gpu_rdma import images
from oke_gpu_rdma.releases import device_plugin

PLUGIN_DIGEST = "sha256:25cc340fe6fd53c101e16fc452f503e7a92c219c64a80ed5381784b522dbbf77"


def test_a_published_digest_pins_the_image_and_keeps_the_tag() -> None:
    assert images.pinned(device_plugin.IMAGE) == f"nvcr.io/nvidia/k8s-device-plugin:v0.19.3@{PLUGIN_DIGEST}"
    assert images.pinned_tag(device_plugin.IMAGE) == f"v0.19.3@{PLUGIN_DIGEST}"
    # Without a published digest the tag stays (a known gap, docs/kubernetes.md); a digest given stays as is.
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
