"""Read a stack file as the Pulumi CLI would, or refuse it with one line per problem, quickly.

The CLI reads `Pulumi.<stack>.yaml` with Go's yaml.v3 and hands the program each value as JSON text.
PyYAML differs where that matters, so this loader follows the CLI or refuses what it cannot pass:

- a key given twice in one mapping is an error naming both lines (yaml.v3 refuses it: "mapping key
  ... already defined at line N", go-yaml/yaml v3 decode.go);
- an unquoted date (an image tag `2025-01-15`, an impossible `2025-02-30`) stays the text it is:
  yaml.v3 decodes a timestamp into `interface{}` as a string (decode.go: "It looks like a timestamp but
  for backward compatibility reasons we set it as a string");
- what JSON cannot hold is refused: binary (`!!binary`), sets (`!!set`), ordered pairs, keys that are
  not text, integers Python cannot convert (more than 4,300 digits), a value that contains itself
  (recursive alias);
- the whole document is bounded before anything expands it: its size in bytes, nesting depth and the
  number of values after aliases are expanded (an alias bomb grows exponentially when json.dumps writes
  it out);
- a file that is not UTF-8 is refused with the offset of the first bad byte.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

from stack_config.config_namespaces import closest
from stack_config.settings_types import PROJECT

# Deeper than any setting nests (shapeTopologies, the deepest, is 6 levels under its key).
MAX_DEPTH = 32
# Values of the document with every alias expanded: the examples hold a few hundred; a stack with the
# most pools OKE allows (stack_config/model.py MAX_NODE_POOLS) and long topologies stays far below.
MAX_VALUES = 200_000
_MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
# The bytes of a stack file: PyYAML reads about 150 KB a second, so this keeps reading within seconds, and
# the largest stack OKE could run (2,000 single-node pools, stack_config/model.py) writes about 320 KB.
MAX_BYTES = 1 << 20
# The top-level keys of a stack settings file (Pulumi docs, "Stack settings file": config, environment,
# and the secrets provider's secretsprovider, encryptedkey, encryptionsalt).
STACK_FILE_KEYS = ("config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt")


class StackFileError(Exception):
    """The stack file cannot be read; the message is one line per problem."""


class _Refused(ConstructorError):
    """A value the loader refuses, with the line it is on."""

    def __init__(self, node: Node, what: str) -> None:
        super().__init__(None, None, what, node.start_mark)


class StackLoader(yaml.SafeLoader):
    """PyYAML's safe loader made to read stack files as the Pulumi CLI does (module docstring)."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        # PyYAML's scalar constructors raise plain Python errors for text their explicit tag cannot hold
        # (`!!float abc`, `!!int ""`, `!!bool maybe`): each becomes a refusal naming the line.
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, KeyError, TypeError, OverflowError, IndexError):
            kind = node.tag.rsplit(":", 1)[-1]
            shown = repr(node.value) if isinstance(node, ScalarNode) else "this value"
            raise _Refused(
                node, f"{shown} is no {kind} (its tag !!{kind} says it is); remove the tag or fix the value"
            ) from None

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            if not isinstance(key_node, ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                shown = key_node.value if isinstance(key_node, ScalarNode) else "a list or mapping"
                raise _Refused(
                    key_node, f'the key {shown!r} is not text; quote it ("{shown}") or fix the key'
                )
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _Refused(
                    key_node,
                    f"the key {key!r} is given twice in one mapping (lines {seen[key]} and {line}); keep one",
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: ScalarNode) -> int:
        digits = sum(c.isdigit() for c in node.value)
        if digits > _MAX_INT_DIGITS:
            raise _Refused(node, f"an integer of {digits} digits; no setting takes a number that large")
        value: int = super().construct_yaml_int(node)
        return value

    def construct_text(self, node: ScalarNode) -> str:
        """A timestamp as the text it is (yaml.v3 decodes one into interface{} as a string)."""
        return str(self.construct_scalar(node))

    def refuse_kind(self, node: Node) -> Any:
        kind = node.tag.rsplit(":", 1)[-1]
        raise _Refused(
            node,
            f"a !!{kind} value, which stack config cannot hold (values are text, numbers, booleans, lists "
            "and mappings); write it as one of those",
        )


StackLoader.add_constructor("tag:yaml.org,2002:int", StackLoader.construct_yaml_int)
StackLoader.add_constructor("tag:yaml.org,2002:timestamp", StackLoader.construct_text)
for _tag in ("binary", "set", "omap", "pairs"):
    StackLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", StackLoader.refuse_kind)


def _one_line(err: yaml.YAMLError) -> str:
    """PyYAML's multi-line message as one line: where, then what."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(err, "problem", None)
    context = getattr(err, "context", None)
    what = " ".join(str(p) for p in (context, problem) if p) or " ".join(str(err).split())
    return where + what


def _measure(document: Any) -> str | None:
    """What makes the document too big, too deep or self-containing to hand on; None when it is fine.

    Walks each distinct object once (aliases share objects), so an alias bomb is measured, not expanded.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def walk(value: Any, depth: int) -> int:
        if not isinstance(value, dict | list):
            return 1
        ident = id(value)
        if ident in active:
            raise _Measured("a value contains itself (a recursive alias); no setting can hold it")
        if ident in sizes:
            return sizes[ident]
        if depth > MAX_DEPTH:
            raise _Measured(f"values nest deeper than {MAX_DEPTH} levels; no setting nests that deep")
        active.add(ident)
        children = value.values() if isinstance(value, dict) else value
        total = 1 + sum(walk(child, depth + 1) for child in children)
        active.discard(ident)
        if total > MAX_VALUES:
            raise _Measured(
                f"it holds more than {MAX_VALUES:,} values once its aliases are expanded (an alias bomb?); "
                "write each value once"
            )
        sizes[ident] = total
        return total

    try:
        walk(document, 0)
    except _Measured as err:
        return str(err)
    return None


class _Measured(Exception):
    pass


def read_stack_file(path: Path, shown: str) -> Mapping[str, Any]:
    """The YAML document of the stack file at ``path`` (``shown``: how messages name it), checked to be a
    mapping with a `config:` mapping that the CLI could hand to the program."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise StackFileError(f"{shown}: cannot be read ({err.strerror})") from None
    if len(data) > MAX_BYTES:
        raise StackFileError(
            f"{shown}: is {len(data):,} bytes, more than the {MAX_BYTES:,} a stack file may hold here (the largest "
            "stack OKE could run takes about 320 KB); write each setting once"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise StackFileError(
            f"{shown}: is not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}); save it as UTF-8"
        ) from None
    try:
        document = yaml.load(text, Loader=StackLoader) or {}
    except yaml.YAMLError as err:
        raise StackFileError(f"{shown}: is not a valid stack file: {_one_line(err)}") from None
    except RecursionError:
        raise StackFileError(
            f"{shown}: values nest deeper than {MAX_DEPTH} levels; no setting nests that deep"
        ) from None
    if not isinstance(document, Mapping) or not isinstance(document.get("config") or {}, Mapping):
        raise StackFileError(f"{shown}: must be a mapping with a `config:` mapping of keys to values")
    unknown = [key for key in document if key not in STACK_FILE_KEYS]
    if unknown:
        guess = closest(str(unknown[0]), STACK_FILE_KEYS)
        raise StackFileError(
            f"{shown}: {unknown[0]} is not a key of a stack file (they are {', '.join(STACK_FILE_KEYS)})"
            + (f"; did you mean {guess}?" if guess else "; settings go under config:")
        )
    if document.get("environment"):
        raise StackFileError(
            f"{shown}: environment: the offline preview cannot open Pulumi ESC environments, so it would judge "
            "the stack without their values; put the settings under config: (or check with pulumi preview)"
        )
    measured = _measure(document)
    if measured is not None:
        raise StackFileError(f"{shown}: {measured}")
    return document


def _secrets_in(value: Any, path: str) -> list[str]:
    """Key paths of the `{secure: ...}` values inside ``value`` (a structured value may hold some)."""
    if isinstance(value, Mapping):
        if set(value) == {"secure"} and isinstance(value["secure"], str):
            return [path]
        return [p for k, v in value.items() for p in _secrets_in(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secrets_in(v, f"{path}[{i}]")]
    return []


def undecryptable(document: Mapping[str, Any], shown: str, typed: Collection[str] = ()) -> list[str]:
    """A line for each secret (`secure:`) setting the offline run would judge: the program's own keys, and
    the provider keys in ``typed`` (read as a bool, int or list). Offline there is no secrets provider to
    decrypt them, so the ciphertext would be judged as the value; other provider settings (text) are passed
    on untouched, as the program only hands them to the provider."""
    config = document.get("config") or {}
    found: list[str] = []
    for key, value in config.items():
        if ":" in key and key.partition(":")[0] != PROJECT and key not in typed:
            continue
        found += [
            f"{shown}: {p} is a secret (secure:) the offline preview cannot decrypt, so it cannot judge the "
            "value; keep this setting in plain text (a compartment or subnet OCID is no secret), or check the "
            "stack with pulumi preview"
            for p in _secrets_in(value, key if ":" in key else f"{PROJECT}:{key}")
        ]
    return found
