"""tests/strict_yaml.py: the tests' reader of Pulumi YAML refuses a key given twice, as the CLI does; and
every Pulumi YAML file of the repository reads with it (the CLI would refuse one that does not)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.strict_yaml import load, load_file

ROOT = Path(__file__).resolve().parent.parent


def pulumi_yaml_files() -> list[Path]:
    """The tracked and new Pulumi.yaml, Pulumi.<stack>.yaml, PulumiPlugin.yaml and PulumiPolicy.yaml files, the
    user's own stacks/ left out: a stack file of theirs never fails make test (make preview checks it, duplicate
    keys included)."""
    listed = subprocess.run(
        [
            "git",
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
            "**/Pulumi*.yaml",
            "Pulumi*.yaml",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return sorted(
        {ROOT / name for name in listed if (ROOT / name).is_file() and not name.startswith("stacks/")}
    )


def test_a_key_given_twice_is_refused_with_both_lines() -> None:
    text = "resources:\n  kueue:\n    options:\n      dependsOn: [a]\n      dependsOn: [a, b]\n"
    assert yaml.safe_load(text)["resources"]["kueue"]["options"]["dependsOn"] == [
        "a",
        "b",
    ]  # PyYAML: last wins
    with pytest.raises(
        yaml.YAMLError, match=r"the key 'dependsOn' is given twice in one mapping \(lines 4 and 5\)"
    ):
        load(text)


def test_a_key_a_merge_brings_may_be_given_again() -> None:
    assert load("base: &b {k: 1, j: 2}\nover:\n  <<: *b\n  k: 3\n")["over"] == {"k": 3, "j": 2}


def test_equal_keys_in_different_mappings_are_fine() -> None:
    assert load("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}


def test_every_pulumi_yaml_file_gives_each_key_once() -> None:
    files = pulumi_yaml_files()
    assert ROOT / "examples" / "package-consumer" / "Pulumi.yaml" in files
    assert ROOT / "provider" / "PulumiPlugin.yaml" in files
    for path in files:
        load_file(path)
