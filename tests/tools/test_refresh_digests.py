"""tools/refresh_digests.py against a fake registry on loopback: HEAD /v2/<name>/manifests/<tag> behind the
anonymous bearer-token flow (OCI distribution spec v1.1.1 spec.md l. 204-214; distribution token.md), the
digest from Docker-Content-Digest written to image_digests.json as "registry <host>, <date>"."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tools import refresh_digests

DIGEST = "sha256:" + "ab" * 32
OLD = "sha256:" + "cd" * 32
TOKEN = "anonymous-pull-token"


class Registry(BaseHTTPRequestHandler):
    """team/app:1.0 exists (behind a token); everything else is 404. Records what it was asked."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _record(self) -> None:
        self.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers)})

    def do_GET(self) -> None:
        self._record()
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            self.send_response(404)
            self.end_headers()
            return
        query = urllib.parse.parse_qs(url.query)
        assert query == {"service": ["fake-registry"], "scope": ["repository:team/app:pull"]}
        body = json.dumps({"token": TOKEN, "expires_in": 300}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:
        self._record()
        host = self.headers["Host"]
        if self.path.startswith("/v2/team/app/") and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self.send_response(401)
            self.send_header(
                "WWW-Authenticate",
                f'Bearer realm="http://{host}/token",service="fake-registry",scope="repository:team/app:pull"',
            )
            self.end_headers()
            return
        if self.path == "/v2/team/app/manifests/1.0":
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.oci.image.index.v1+json")
            self.send_header("Docker-Content-Digest", DIGEST)
            self.end_headers()
            return
        self.send_response(404)
        self.end_headers()


@pytest.fixture
def registry() -> Iterator[str]:
    Registry.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_tags_digest_is_recorded_with_the_registry_and_the_date(registry: str, tmp_path: Path) -> None:
    file = tmp_path / "image_digests.json"
    image = f"{registry}/team/app:1.0"
    file.write_text(json.dumps({"images": {image: {"digest": OLD, "source": "a file"}}}))
    assert (
        refresh_digests.main(["--file", str(file), "--date", "2026-09-01", "--plain-http", registry, image])
        == 0
    )
    assert json.loads(file.read_text()) == {
        "images": {image: {"digest": DIGEST, "source": f"registry {registry}, 2026-09-01"}}
    }
    # Challenged, a token fetched anonymously, asked again with it; the index types accepted first.
    (first, token, second) = Registry.seen
    assert (first["method"], first["path"]) == ("HEAD", "/v2/team/app/manifests/1.0")
    assert "Authorization" not in first["headers"]
    assert token["method"] == "GET" and token["path"].startswith("/token?")
    assert second["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert second["headers"]["Accept"].startswith("application/vnd.oci.image.index.v1+json")
    # The result is what images.py reads.
    from oke_gpu_rdma.common import images

    data = json.loads(file.read_text())
    assert images._DIGEST.match(data["images"][image]["digest"])


def test_an_image_the_registry_does_not_name_keeps_its_entry_and_fails_the_run(
    registry: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "image_digests.json"
    kept = {"digest": OLD, "source": "a file"}
    missing = f"{registry}/other/app:2.0"
    file.write_text(json.dumps({"images": {missing: kept}}))
    found = f"{registry}/team/app:1.0"
    args = ["--file", str(file), "--date", "2026-09-01", "--plain-http", registry, missing, found]
    assert refresh_digests.main(args) == 1
    data = json.loads(file.read_text())["images"]
    assert data[missing] == kept and data[found]["digest"] == DIGEST  # a gap filled, the other kept
    err = capsys.readouterr().err
    assert (
        err == f"refresh_digests: {missing}: HEAD http://{registry}/v2/other/app/manifests/2.0 answered 404\n"
    )


@pytest.mark.parametrize(
    ("image", "host", "name", "tag"),
    [
        ("docker.io/alpine/k8s:1.36.2", "registry-1.docker.io", "alpine/k8s", "1.36.2"),
        ("alpine:3.20", "registry-1.docker.io", "library/alpine", "3.20"),
        ("mpioperator/mpi-operator:0.6.0", "registry-1.docker.io", "mpioperator/mpi-operator", "0.6.0"),
        ("registry.k8s.io/kubectl:v1.36.3@sha256:" + "0" * 64, "registry.k8s.io", "kubectl", "v1.36.3"),
        ("localhost:5000/a/b:c", "localhost:5000", "a/b", "c"),
    ],
)
def test_references_are_split_as_docker_spells_them(image: str, host: str, name: str, tag: str) -> None:
    assert refresh_digests.parse_reference(image) == refresh_digests.Reference(host, name, tag)


def test_an_image_without_a_tag_is_refused() -> None:
    with pytest.raises(refresh_digests.RegistryError, match="not an image by tag"):
        refresh_digests.parse_reference("registry.k8s.io/kubectl")
