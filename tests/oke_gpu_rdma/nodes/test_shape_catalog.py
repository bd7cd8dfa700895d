"""The shape catalog: one file per shape, read whole; supplied topologies on top; bad files named."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from oke_gpu_rdma.claims import aligned_claim_spec, judge_claim
from oke_gpu_rdma.common.errors import TopologyError, TopologyFormatError, UnverifiedTopologyError
from oke_gpu_rdma.nodes.shape_catalog import CATALOG, SHAPES_DIR, ShapeCatalog
from oke_gpu_rdma.nodes.topology import DEFAULT_SHAPE
from tests.support import topology_to_dict

ROOT = Path(__file__).resolve().parents[3]

# A made-up 4-GPU shape: 2 roots of 2 GPUs and 2 rails each.
NEW_SHAPE = "BM.GPU.T4.4"
NEW_FILE = """
evidence: verified
source: a test's made-up node
note: 4 GPUs, 4 rails, 2 PCIe roots
roots:
  - name: pci0000:10
    numaNode: 0
    gpus: ["0000:11:00.0", "0000:12:00.0"]
    rails:
      - {name: rdma0, pciAddress: "0000:13:00.0"}
      - {name: rdma1, pciAddress: "0000:13:00.1"}
  - name: pci0000:80
    numaNode: 1
    gpus: ["0000:81:00.0", "0000:82:00.0"]
    rails:
      - {name: rdma2, pciAddress: "0000:83:00.0"}
      - {name: rdma3, pciAddress: "0000:83:00.1"}
"""


def _shapes_dir(tmp_path: Path) -> Path:
    """A copy of the package's shape files."""
    directory = tmp_path / "shapes"
    shutil.copytree(SHAPES_DIR, directory)
    return directory


def test_a_verified_shape_is_added_by_one_file(tmp_path: Path) -> None:
    directory = _shapes_dir(tmp_path)
    with pytest.raises(TopologyError, match="not in the catalog"):
        ShapeCatalog.load(directory).topology(NEW_SHAPE)
    (directory / f"{NEW_SHAPE}.yaml").write_text(NEW_FILE)
    catalog = ShapeCatalog.load(directory)
    assert NEW_SHAPE in catalog.names
    topology = catalog.topology(NEW_SHAPE)
    assert (topology.evidence, topology.source) == ("verified", "a test's made-up node")
    assert [(r.name, len(r.gpus), [x.name for x in r.rails]) for r in topology.roots] == [
        ("pci0000:10", 2, ["rdma0", "rdma1"]),
        ("pci0000:80", 2, ["rdma2", "rdma3"]),
    ]
    # The claim judge takes it like any verified shape: 4 GPUs split into two aligned pairs.
    spec = aligned_claim_spec(topology, 4)
    assert [c["requests"] for c in spec["devices"]["constraints"]] == [
        ["gpus-1", "rails-1"],
        ["gpus-2", "rails-2"],
    ]
    assert [r["exactly"]["count"] for r in spec["devices"]["requests"]] == [2, 2, 2, 2]
    assert judge_claim(spec, topology).kind == "aligned"


def test_the_package_lists_every_shape_file_and_verifies_the_default() -> None:
    assert CATALOG.names == tuple(sorted(p.stem for p in SHAPES_DIR.glob("*.yaml")))
    assert CATALOG.info(DEFAULT_SHAPE).evidence == "verified"
    assert [s for s in CATALOG.names if CATALOG.info(s).evidence == "verified"] == [
        DEFAULT_SHAPE,
        "BM.GPU.GB200-v3.4",
    ]
    assert "seed 000" in CATALOG.info(DEFAULT_SHAPE).source


def test_the_shape_files_are_package_data() -> None:
    # A wheel (and a non-editable install) ships only what pyproject.toml's package-data names.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["oke_gpu_rdma"]
    package = ROOT / "oke_gpu_rdma"
    # Files the code reads; a README (claims/README.md) is for readers of the source, not shipped.
    data = {p for p in package.rglob("*") if p.is_file() and p.suffix not in {".py", ".pyc", ".md"}}
    shipped = {p for pattern in patterns for p in package.glob(pattern)}
    assert data == shipped
    assert SHAPES_DIR / f"{DEFAULT_SHAPE}.yaml" in shipped


def test_supplied_topologies_take_precedence_and_are_parsed_when_looked_up() -> None:
    b4 = topology_to_dict(CATALOG.topology(DEFAULT_SHAPE))
    del b4["shape"]
    catalog = CATALOG.with_topologies({"BM.GPU.A100-v2.8": b4, "BM.GPU.H100.8": {"roots": "no"}})
    a100 = catalog.topology("BM.GPU.A100-v2.8")
    assert (a100.shape, a100.evidence) == ("BM.GPU.A100-v2.8", "user-supplied")
    assert a100.roots == CATALOG.topology(DEFAULT_SHAPE).roots
    assert catalog.topology(DEFAULT_SHAPE) is CATALOG.topology(DEFAULT_SHAPE)
    assert catalog.problems() == {
        "BM.GPU.H100.8": ("topology.roots: required, a non-empty list of PCIe roots",)
    }
    with pytest.raises(TopologyError, match=r"^topology\.roots: required"):
        catalog.topology("BM.GPU.H100.8")
    with pytest.raises(UnverifiedTopologyError):
        CATALOG.topology("BM.GPU.A100-v2.8")  # the catalog without them is unchanged


def test_a_verified_shape_keeps_its_file_whatever_is_supplied() -> None:
    one_root = {"roots": [{"name": "pci0000:00", "numaNode": 0, "gpus": ["0000:0f:00.0"], "rails": []}]}
    catalog = CATALOG.with_topologies({DEFAULT_SHAPE: one_root, "BM.GPU.H100.8": one_root})
    assert catalog.topology(DEFAULT_SHAPE) is CATALOG.topology(DEFAULT_SHAPE)
    assert catalog.topology("BM.GPU.H100.8").evidence == "user-supplied"
    assert catalog.verified_overrides() == (DEFAULT_SHAPE,)
    assert catalog.problems() == {}  # the verified shape's entry is never parsed: it is refused whole
    assert catalog.is_verified(DEFAULT_SHAPE) and not catalog.is_verified("BM.GPU.H100.8")
    assert not catalog.is_verified("BM.GPU.NOT-A-SHAPE")


def test_a_supplied_topology_that_is_no_mapping() -> None:
    assert CATALOG.with_topologies({"X": "rdma"}).problems() == {
        "X": ("topology: expected a mapping, got str",)
    }


def _file(**change: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(NEW_FILE)
    data.update(change)
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize(
    ("change", "problems"),
    [
        ({"roots": None}, ["roots: required for a verified shape, a non-empty list of PCIe roots"]),
        (
            {"evidence": "unverified"},
            [
                "roots: an unverified shape's roots are never used: verify them (evidence: verified) or drop them"
            ],
        ),
        (
            {"evidence": "user-supplied"},
            [
                "evidence: 'user-supplied' is not verified or unverified: a supplied topology belongs under "
                "shapeTopologies"
            ],
        ),
        ({"source": None, "note": ""}, ["source: required, a string saying where the layout comes from"]),
        ({"shape": "BM.GPU.T4.4"}, ["shape: the file name is the shape; remove the key"]),
    ],
)
def test_a_bad_shape_file_names_the_file_and_the_key(
    tmp_path: Path, change: dict[str, Any], problems: list[str]
) -> None:
    directory = _shapes_dir(tmp_path)
    (directory / f"{NEW_SHAPE}.yaml").write_text(yaml.safe_dump(_file(**change)))
    with pytest.raises(TopologyFormatError) as info:
        ShapeCatalog.load(directory)
    assert list(info.value.problems)[: len(problems)] == [f"{NEW_SHAPE}.yaml: {p}" for p in problems]


def test_a_shape_file_that_is_not_yaml(tmp_path: Path) -> None:
    (tmp_path / f"{NEW_SHAPE}.yaml").write_text("roots: [")
    with pytest.raises(TopologyError, match=rf"^{NEW_SHAPE}\.yaml: cannot read the shape file: "):
        ShapeCatalog.load(tmp_path)
    with pytest.raises(TopologyError, match="no shape files"):
        ShapeCatalog.load(tmp_path / "none")
