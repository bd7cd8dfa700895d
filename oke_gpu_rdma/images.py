"""Images by digest: the digests public sources publish for the tags the stack renders, kept as data.

A tag can be moved; a digest cannot. Every image the stack writes into a manifest goes through
:func:`pinned`, which keeps the tag for people and adds the digest (`repo:tag@sha256:...`; the container
runtime pulls by the digest and ignores the tag) when ``image_digests.json`` holds one for that tag. This
machine reaches no registry, so each digest there comes from a public, citable file that pins the image
(its ``source``: repository, tag, path); none is computed or guessed. An image without a published digest
keeps its tag and is listed as a known gap in docs/kubernetes.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

DIGESTS_FILE: Final = Path(__file__).with_name("image_digests.json")
_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")


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
