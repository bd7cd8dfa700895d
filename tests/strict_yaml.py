"""The tests' reader of Pulumi YAML (Pulumi.yaml, Pulumi.<stack>.yaml, PulumiPlugin.yaml, PulumiPolicy.yaml):
PyYAML's safe loader refusing a mapping that gives a key twice.

PyYAML keeps the last of two equal keys without a word, so a test reading a file with it sees one value
where the Pulumi CLI refuses the file: the CLI reads these files with gopkg.in/yaml.v3 (pulumi/pulumi
sdk/go/common/encoding/marshal.go), whose decoder fails with `mapping key "dependsOn" already defined at
line N` (gopkg.in/yaml.v3 decode.go, decoder.mapping). A key that a merge (`<<: *anchor`) brings in may be
given again: that overrides it, in both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

_MERGE = "tag:yaml.org,2002:merge"


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader whose mappings refuse a key given twice, naming the key and both lines."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: PyYAML's own construct_mapping names it
                break
            if first is not None:
                raise ConstructorError(
                    None,
                    None,
                    f"the key {key!r} is given twice in one mapping (lines {first} and {line})",
                    key_node.start_mark,
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> Any:
    """``text`` as YAML, refusing duplicate keys."""
    return yaml.load(text, Loader=UniqueKeyLoader)


def load_file(path: Path) -> Any:
    """The YAML file at ``path``, refusing duplicate keys."""
    return load(path.read_text())
