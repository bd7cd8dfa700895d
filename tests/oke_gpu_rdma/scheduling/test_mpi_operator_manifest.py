"""oke_gpu_rdma/scheduling/mpi_operator.py: the MPI operator manifest the stack applies is refused unless its bytes have
the sha256 recorded for the release (issue 36, finding 9)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from oke_gpu_rdma.scheduling import mpi_operator

# kubeflow/mpi-operator v0.6.0 (c983759c) deploy/v2beta1/mpi-operator.yaml, `git show <commit>:<path> | sha256sum`.
V060_SHA256 = "d133cbe394147e3cb6be458ffff9bf9792ea528c4f533cd02a823315d0fcf077"


def serving(body: bytes, seen: list[Any]) -> Any:
    @contextmanager
    def opener(url: str, timeout: float) -> Iterator[io.BytesIO]:
        seen.append((url, timeout))
        yield io.BytesIO(body)

    return opener


def test_every_release_records_the_sha256_of_its_manifest_with_its_source() -> None:
    release = mpi_operator.release(mpi_operator.DEFAULT_VERSION)
    assert release.manifest_digest is not None
    assert release.manifest_digest.sha256 == V060_SHA256
    assert release.commit in release.manifest_digest.source
    for found in mpi_operator.releases().values():
        assert found.manifest_digest is not None, found.version


def test_the_recorded_manifest_is_fetched_from_the_commit_and_passes() -> None:
    body = b"apiVersion: v1\nkind: Namespace\n"
    release = dataclasses.replace(
        mpi_operator.release("v0.6.0"),
        manifest_digest=mpi_operator.ManifestDigest(hashlib.sha256(body).hexdigest(), "test"),
    )
    seen: list[Any] = []
    assert mpi_operator.fetch_manifest(release, serving(body, seen)) == body
    assert seen == [(release.manifest_url, mpi_operator.FETCH_TIMEOUT_SECONDS)]


def test_other_bytes_are_refused_naming_the_release_the_url_and_both_digests() -> None:
    release = mpi_operator.release("v0.6.0")
    body = b"kind: Deployment  # not upstream's\n"
    with pytest.raises(mpi_operator.ManifestDigestError) as err:
        mpi_operator.fetch_manifest(release, serving(body, []))
    message = str(err.value)
    assert message.startswith(
        "MPI operator v0.6.0: the manifest fetched from https://raw.githubusercontent.com/"
    )
    assert hashlib.sha256(body).hexdigest() in message and V060_SHA256 in message
    assert "it is not applied" in message


def test_a_release_without_a_recorded_sha256_is_not_applied() -> None:
    release = dataclasses.replace(mpi_operator.release("v0.6.0"), manifest_digest=None)
    with pytest.raises(mpi_operator.ManifestDigestError) as err:
        mpi_operator.check_manifest(release, b"")
    assert "no sha256 of its manifest is recorded" in str(err.value) and "manifestSha256.v0.6.0" in str(
        err.value
    )


def test_a_malformed_record_is_one_line(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.loads(mpi_operator.RELEASES_FILE.read_text())
    data[mpi_operator.MANIFEST_SHA256_KEY]["v0.6.0"] = {"sha256": "abc", "source": "s"}
    path = tmp_path / "mpi_operator_releases.json"
    path.write_text(json.dumps(data))
    monkeypatch.setattr(mpi_operator, "RELEASES_FILE", path)
    mpi_operator.releases.cache_clear()
    try:
        with pytest.raises(mpi_operator.ManifestDigestError) as err:
            mpi_operator.releases()
        assert (
            str(err.value)
            == "mpi_operator_releases.json: manifestSha256.v0.6.0: give sha256 (64 hex) and source"
        )
    finally:
        monkeypatch.undo()
        mpi_operator.releases.cache_clear()
