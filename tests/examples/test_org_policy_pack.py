"""The example organisation pack (examples/org-policy-pack/): what its own virtualenv installs, and its config.

Its verdicts on the rendered stacks, started as the CLI starts it, are tests/preview/test_org_pack.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tools.build_pack import pack_requirements

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "org-policy-pack"


def test_its_requirements_are_the_built_packs() -> None:
    """The pins `make pack` writes for the oke-gpu-rdma pack: the policies it copies in run on those versions."""
    lines = [
        line.strip()
        for line in (EXAMPLE / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines == pack_requirements()


def test_it_is_a_python_pack_with_a_version_and_its_config_sets_a_level_and_settings() -> None:
    project = yaml.safe_load((EXAMPLE / "PulumiPolicy.yaml").read_text())
    assert project["runtime"] == {"name": "python", "options": {"virtualenv": "venv"}}
    assert project["version"] == "1.0.0"
    config = json.loads((EXAMPLE / "pack-config.json").read_text())
    assert config["acme-gpu-pool-cost-centre"]["enforcementLevel"] == "mandatory"
    assert config["acme-gpu-pool-cost-centre"]["allowedValues"]
