"""Refresh `oke_gpu_rdma/common/image_digests.json` from the registries: the digest each tag names now.

For every image the stack names (:func:`oke_gpu_rdma.common.images.stack_images`: the recorded ones and the known
gaps), or the images given, it asks the image's registry over the OCI distribution API which manifest the tag
names, and records that digest with the source `registry <host>, <date>`:

- `HEAD /v2/<name>/manifests/<tag>`, the digest in the `Docker-Content-Digest` header (opencontainers/
  distribution-spec v1.1.1 spec.md l. 204-214, "Checking if content exists in the registry"; end-3 in its
  endpoint table), with an `Accept` of the index and manifest types (l. 168; image-spec media-types.md), so
  that a multi-platform image answers with its index's digest, the one a pod pulls by on any node;
- anonymous pull access as registries grant it: a `401` with `WWW-Authenticate: Bearer realm=...,service=...,
  scope=...` is answered by `GET <realm>?service=...&scope=...`, whose JSON `token` (or `access_token`) goes
  back as `Authorization: Bearer <token>` (distribution/distribution docs/content/spec/auth/token.md, "How to
  authenticate", "Requesting a Token", "Using the Bearer token"; RFC 6750 s. 3);
- Docker Hub references as Docker spells them: `docker.io/x/y` is served by `registry-1.docker.io`
  (moby/moby registry/config.go DefaultRegistryHost) and a one-part name is `library/<name>`
  (distribution/reference normalize.go).

It rewrites only the entries it could refresh; an image whose registry did not answer keeps its entry (or stays
a gap) and is named on stderr, and the exit status is 1. A digest that changed is printed with the files that
write the old `repo:tag@digest` literally (oke_gpu_rdma/health/health_marks.py, stack_config/model.py), which a test then
requires to follow.

    python -m tools.refresh_digests [--file oke_gpu_rdma/common/image_digests.json] [--date YYYY-MM-DD]
        [--plain-http HOST[:PORT]]... [IMAGE...]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oke_gpu_rdma.common import images  # noqa: E402

DOCKER_HUB: Final = "docker.io"
DOCKER_HUB_REGISTRY: Final = "registry-1.docker.io"
# The manifest types asked for, index types first (opencontainers/image-spec media-types.md; Docker's
# manifest list and v2 manifest, which Docker Hub still serves for older pushes).
ACCEPT: Final = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
DIGEST_HEADER: Final = "Docker-Content-Digest"
_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
_CHALLENGE_PARAM: Final = re.compile(r'(\w+)="([^"]*)"')
# Files that write pinned references literally (the constants a test holds to image_digests.json).
LITERAL_FILES: Final = ("oke_gpu_rdma/health/health_marks.py", "stack_config/model.py")
TIMEOUT_SECONDS: Final = 30

# urllib.request.urlopen, or a stand-in: called with a Request and a timeout, a context manager whose
# response has .headers and .read(); urllib raises HTTPError for a 4xx/5xx answer.
Opener = Callable[..., Any]


class RegistryError(Exception):
    """A registry that did not name a digest for a tag; the message says which and what it answered."""


@dataclass(frozen=True)
class Reference:
    """An image reference split as the distribution API addresses it."""

    host: str
    """The registry's API host (`registry-1.docker.io` for Docker Hub)."""
    name: str
    tag: str

    @property
    def shown_host(self) -> str:
        return DOCKER_HUB if self.host == DOCKER_HUB_REGISTRY else self.host


def parse_reference(image: str) -> Reference:
    """`[host/]name:tag[@digest]` split (distribution/reference normalize.go: a first part with a dot or a
    colon, or `localhost`, is a host; anything else is on Docker Hub)."""
    named = images.tag_of(image)
    first, _, rest = named.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host, path = first, rest
    else:
        host, path = DOCKER_HUB, named
    if host in (DOCKER_HUB, "index.docker.io"):
        host = DOCKER_HUB_REGISTRY
        if "/" not in path:
            path = f"library/{path}"
    name, sep, tag = path.rpartition(":")
    if not sep or not name or "/" in tag:
        raise RegistryError(f"{image}: not an image by tag (repo:tag)")
    return Reference(host, name, tag)


def _challenge(header: str) -> dict[str, str]:
    """The parameters of a `Bearer` WWW-Authenticate challenge (RFC 6750 s. 3); empty for another scheme."""
    scheme, _, params = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return {}
    return dict(_CHALLENGE_PARAM.findall(params))


def _token(challenge: dict[str, str], ref: Reference, opener: Opener) -> str:
    realm = challenge.get("realm")
    if not realm:
        raise RegistryError(
            f"{ref.shown_host}/{ref.name}: the registry asks for a login, not an anonymous token"
        )
    query = {"scope": challenge.get("scope") or f"repository:{ref.name}:pull"}
    if challenge.get("service"):
        query["service"] = challenge["service"]
    url = f"{realm}{'&' if '?' in realm else '?'}{urllib.parse.urlencode(query)}"
    try:
        with opener(urllib.request.Request(url), timeout=TIMEOUT_SECONDS) as response:
            body = json.loads(response.read())
    except (urllib.error.URLError, ValueError) as err:
        raise RegistryError(f"{ref.shown_host}/{ref.name}: no anonymous token from {realm} ({err})") from None
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise RegistryError(f"{ref.shown_host}/{ref.name}: {realm} answered without a token")
    return token


def head_digest(ref: Reference, scheme: str = "https", opener: Opener = urllib.request.urlopen) -> str:
    """The digest the registry names for ``ref``'s tag (HEAD /v2/<name>/manifests/<tag>)."""
    url = f"{scheme}://{ref.host}/v2/{ref.name}/manifests/{urllib.parse.quote(ref.tag)}"
    headers = {"Accept": ACCEPT}
    for attempt in range(2):
        request = urllib.request.Request(url, headers=headers, method="HEAD")
        try:
            with opener(request, timeout=TIMEOUT_SECONDS) as response:
                digest = response.headers.get(DIGEST_HEADER)
                break
        except urllib.error.HTTPError as err:
            challenge = _challenge(err.headers.get("WWW-Authenticate", "")) if err.code == 401 else {}
            if attempt == 0 and challenge:
                headers = {**headers, "Authorization": f"Bearer {_token(challenge, ref, opener)}"}
                continue
            raise RegistryError(
                f"{ref.shown_host}/{ref.name}:{ref.tag}: HEAD {url} answered {err.code}"
            ) from None
        except urllib.error.URLError as err:
            raise RegistryError(f"{ref.shown_host}/{ref.name}:{ref.tag}: {url}: {err.reason}") from None
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise RegistryError(
            f"{ref.shown_host}/{ref.name}:{ref.tag}: the answer names no sha256 digest in {DIGEST_HEADER} "
            f"({digest!r})"
        )
    return digest


def _literal_uses(old: str) -> list[str]:
    found = []
    for name in LITERAL_FILES:
        path = ROOT / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if old in line:
                found.append(f"{name}:{number}")
    return found


def refresh(
    file: Path,
    wanted: Iterable[str],
    date: str,
    plain_http: Sequence[str] = (),
    opener: Opener = urllib.request.urlopen,
) -> tuple[list[str], list[str]]:
    """Rewrite ``file`` with the registries' digests of ``wanted``; (what changed, what failed)."""
    data: dict[str, Any] = json.loads(file.read_text()) if file.is_file() else {"images": {}}
    entries: dict[str, Any] = data.setdefault("images", {})
    changed: list[str] = []
    failed: list[str] = []
    for image in dict.fromkeys(images.tag_of(i) for i in wanted):
        try:
            ref = parse_reference(image)
            scheme = "http" if ref.host in plain_http else "https"
            digest = head_digest(ref, scheme, opener)
        except RegistryError as err:
            failed.append(str(err))
            continue
        old = entries.get(image, {}).get("digest")
        entries[image] = {"digest": digest, "source": f"registry {ref.shown_host}, {date}"}
        if old != digest:
            uses = _literal_uses(f"{image}@{old}") if old else []
            where = f"; written literally at {', '.join(uses)}: update those" if uses else ""
            changed.append(f"{image}: {old or 'no digest'} -> {digest}{where}")
    data["images"] = dict(sorted(entries.items()))
    file.write_text(json.dumps(data, indent=2) + "\n")
    return changed, failed


def main(argv: Sequence[str] | None = None, opener: Opener = urllib.request.urlopen) -> int:
    parser = argparse.ArgumentParser(prog="refresh_digests", description=__doc__.split("\n\n")[0])
    parser.add_argument("images", nargs="*", help="images by tag (default: every image the stack names)")
    parser.add_argument("--file", type=Path, default=images.DIGESTS_FILE)
    parser.add_argument("--date", default=datetime.datetime.now(datetime.UTC).date().isoformat())
    parser.add_argument(
        "--plain-http",
        action="append",
        default=[],
        metavar="HOST",
        help="a registry to ask over http (a local one)",
    )
    args = parser.parse_args(argv)
    changed, failed = refresh(
        args.file, args.images or images.stack_images(), args.date, args.plain_http, opener
    )
    for line in changed:
        print(line)
    for line in failed:
        print(f"refresh_digests: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
