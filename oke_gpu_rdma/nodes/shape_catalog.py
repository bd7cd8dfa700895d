"""The shape catalog: the shapes this project knows, read from data files, plus supplied topologies.

One :class:`ShapeCatalog` answers every "what does a node of this shape look like" question: the
claim plan, the SR-IOV plan and the pack config of a stack (with the stack's ``shapeTopologies``),
the pack's policies (with the pack config's ``shapeTopologies``), and the claim judge's convenience
functions (:data:`CATALOG`, the files alone).

The files are ``oke_gpu_rdma/nodes/shapes/<shape>.yaml``, one per shape, in the format of
:mod:`oke_gpu_rdma.nodes.topology` (the file name is the shape). The directory is read whole: adding a
shape is adding its file. A supplied topology is for a shape whose file is unverified, or that has no
file: a verified file cannot be overridden (issue 28: a one-root topology for BM.GPU.B4.8 would silence
the pack's alignment verdicts). :meth:`ShapeCatalog.problems` names such an override and
:meth:`ShapeCatalog.topology` keeps answering with the verified file, so a caller that reads past the
problem (the pack given such a config) still judges against what was measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from oke_gpu_rdma.common.errors import TopologyError, TopologyFormatError, UnverifiedTopologyError
from oke_gpu_rdma.nodes.topology import ShapeFile, ShapeInfo, Topology, parse, topology_from_dict

SHAPES_DIR: Final = Path(__file__).with_name("shapes")
"""The shape files (package data, see pyproject.toml; the built policy pack vendors them too)."""


def supplied_topology(shape: str, data: Any) -> Topology:
    """The topology supplied for ``shape`` (a ``shapeTopologies`` entry: its key names the shape)."""
    if not isinstance(data, Mapping):
        raise TopologyError(f"topology: expected a mapping, got {type(data).__name__}")
    return topology_from_dict({**data, "shape": shape})


def load_shape_file(path: Path) -> ShapeInfo:
    """The catalog entry a shape file describes; :class:`TopologyError` naming the file and key."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise TopologyError(f"{path.name}: cannot read the shape file: {err}") from None
    if isinstance(data, Mapping) and "shape" in data:
        raise TopologyFormatError([f"{path.name}: shape: the file name is the shape; remove the key"])
    entry = parse(
        ShapeFile, {**data, "shape": path.stem} if isinstance(data, Mapping) else data, path.name, ": "
    )
    assert isinstance(entry, ShapeFile)
    return entry.info()


def verified_override_problem(shape: str) -> str:
    """Why a topology supplied for a verified shape is refused, and the fix."""
    return (
        f"{shape} has a verified topology (oke_gpu_rdma/nodes/shapes/{shape}.yaml, measured on the shape) that a "
        "supplied one cannot override; remove this entry (only shapes without a file or with an unverified "
        "one can be supplied), or change the shape file with its evidence (docs/onboarding-a-shape.md)"
    )


class ShapeCatalog:
    """Shapes listed by the shape files, and topologies supplied for shapes (listed or not)."""

    def __init__(self, listed: Mapping[str, ShapeInfo], supplied: Mapping[str, Any] | None = None) -> None:
        self._listed = dict(listed)
        self._supplied = dict(supplied or {})  # shape -> topology dict, parsed when first looked up
        self._parsed: dict[str, Topology] = {}

    @classmethod
    def load(cls, directory: Path = SHAPES_DIR) -> ShapeCatalog:
        """The shapes of every ``*.yaml`` file in ``directory``."""
        files = sorted(directory.glob("*.yaml"))
        if not files:
            raise TopologyError(f"{directory}: no shape files (<shape>.yaml)")
        return cls({path.stem: load_shape_file(path) for path in files})

    def with_topologies(self, supplied: Mapping[str, Any]) -> ShapeCatalog:
        """This catalog plus ``supplied`` (``shapeTopologies``: shape -> topology dict), which take
        precedence over unverified files. A malformed one raises when its shape is looked up
        (:meth:`problems` lists them all); one for a verified shape is never used
        (:meth:`verified_overrides` lists them, for the caller to refuse)."""
        return ShapeCatalog(self._listed, {**self._supplied, **supplied})

    def is_verified(self, shape: str) -> bool:
        """Whether ``shape`` has a file with a verified topology (which nothing supplied overrides)."""
        info = self._listed.get(shape)
        return info is not None and info.topology is not None and info.evidence == "verified"

    def verified_overrides(self) -> tuple[str, ...]:
        """The supplied shapes whose file is verified: their supplied topology is never used."""
        return tuple(shape for shape in self._supplied if self.is_verified(shape))

    def problems(self) -> dict[str, tuple[str, ...]]:
        """The problems of each malformed supplied topology, by shape (one line per problem); a
        topology supplied for a verified shape is not parsed (never used)."""
        found: dict[str, tuple[str, ...]] = {}
        for shape in self._supplied:
            if self.is_verified(shape):
                continue
            try:
                self._supplied_topology(shape)
            except TopologyFormatError as err:
                found[shape] = err.problems
            except TopologyError as err:
                found[shape] = (str(err),)
        return found

    def _supplied_topology(self, shape: str) -> Topology:
        if shape not in self._parsed:
            self._parsed[shape] = supplied_topology(shape, self._supplied[shape])
        return self._parsed[shape]

    @property
    def names(self) -> tuple[str, ...]:
        """The listed shapes (a file each), verified or not."""
        return tuple(self._listed)

    def __contains__(self, shape: object) -> bool:
        return shape in self._listed

    def info(self, shape: str) -> ShapeInfo:
        """The listed entry of ``shape``; :class:`TopologyError` for a shape without a file."""
        try:
            return self._listed[shape]
        except KeyError:
            raise TopologyError(
                f"shape {shape!r} is not in the catalog (known: {', '.join(self._listed)}); "
                "supply its topology with topology_from_dict"
            ) from None

    def topology(self, shape: str) -> Topology:
        """The verified topology of ``shape``, else its supplied one; refuses shapes whose pairing is
        not verified (:class:`UnverifiedTopologyError`) or not listed. A verified file wins over a
        supplied topology (:meth:`verified_overrides`), so an override never changes a verdict."""
        if shape in self._supplied and not self.is_verified(shape):
            return self._supplied_topology(shape)
        info = self.info(shape)
        if info.topology is None or info.evidence != "verified":
            raise UnverifiedTopologyError(
                f"shape {shape} has no verified GPU/NIC pairing ({info.note}); "
                "supply its topology with topology_from_dict (see oke_gpu_rdma.nodes.topology for the format)"
            )
        return info.topology

    def resolve(self, shape: str | Topology | Mapping[str, Any]) -> Topology:
        """A :class:`Topology` from a shape name (:meth:`topology`), a Topology, or a topology dict."""
        if isinstance(shape, Topology):
            return shape
        if isinstance(shape, str):
            return self.topology(shape)
        if isinstance(shape, Mapping):
            return topology_from_dict(shape)
        raise TopologyError(
            f"expected a shape name, a Topology or a topology dict, got {type(shape).__name__}"
        )


CATALOG: Final = ShapeCatalog.load()
"""The shape files alone; :meth:`ShapeCatalog.with_topologies` adds a stack's or a pack config's."""


def multi_node_nvlink(shape: str) -> bool:
    """Whether the catalog's own file for ``shape`` states multi-node NVLink (a stack's supplied topology never
    does: the pack would otherwise trust a stack file's word for a fabric, issue 36 item 5)."""
    if shape not in CATALOG:
        return False
    topology = CATALOG.info(shape).topology
    return topology is not None and topology.multi_node_nvlink
