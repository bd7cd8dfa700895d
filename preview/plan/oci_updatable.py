"""Which pulumi-oci input properties change in place and which force a new resource, read from the
installed SDK.

pulumi-oci's Python SDK is generated from the provider schema, whose descriptions come from the OCI
Terraform provider's docs: every input property the provider updates in place starts its docstring
with "(Updatable)", and the docs say of the rest "Any change to a property that does not support
update will force the destruction and recreation of the resource with the new property values"
(see `NodePoolArgs.__init__`). Nested inputs (`NodePoolNodeConfigDetailsArgs` in
`pulumi_oci/containerengine/_inputs.py`) carry the same mark per field.

So a property path is updatable when every property on it is marked, from the resource's `*Args`
class down through the nested `*Args` classes its annotations name: `nodeConfigDetails.size` is
(the block and the field are marked), `nodeConfigDetails.computeClusterId` is not (the field is
unmarked). Below a map or a scalar (`nodeMetadata.user_data`) the last property decides; list
indices are skipped.

Only the installed package's files are read (no import of the large generated modules), one class at
a time, so the table costs milliseconds and follows whatever pulumi-oci version requirements.txt pins.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

UPDATABLE_MARK = "(Updatable)"
PACKAGE = "pulumi_oci"


@dataclass(frozen=True)
class InputProperty:
    """One input property as the engine names it (camelCase), with what the SDK says of it."""

    name: str
    updatable: bool
    nested: str | None
    """The `*Args` class of a nested input object (or of list items), when the annotation names one."""


@dataclass(frozen=True)
class ArgsClass:
    """A `*Args` class of the SDK: the input properties of a resource or of a nested input type."""

    name: str
    module: str
    """The SDK subpackage (`containerengine`), where its nested types live (`_inputs.py`)."""
    properties: Mapping[str, InputProperty]


@dataclass(frozen=True)
class Verdict:
    """What a change at a property path does."""

    updatable: bool
    decided_by: str
    """The property whose docstring decides, as a path (`nodeConfigDetails.computeClusterId`)."""
    documented: bool = True
    """False when the SDK has no such resource or property (the change is then taken as a replace)."""


def package_dir() -> Path:
    """The installed pulumi_oci package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{PACKAGE} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def _resource_modules() -> dict[str, tuple[str, str, str]]:
    """Type token -> (subpackage, module file stem, class), from the SDK's own registration table."""
    source = (package_dir() / "__init__.py").read_text()
    match = re.search(r'resource_modules="""(.*?)"""', source, re.S)
    if match is None:
        return {}
    table: dict[str, tuple[str, str, str]] = {}
    for module in json.loads(match.group(1)):
        subpackage = module["fqn"].split(".", 1)[1]
        # "ContainerEngine/nodePool" is generated into containerengine/node_pool.py.
        stem = re.sub(r"(?<!^)(?=[A-Z])", "_", module["mod"].split("/", 1)[1]).lower()
        for token, cls in module["classes"].items():
            table[token] = (subpackage, stem, cls)
    return table


@functools.cache
def _source(path: Path) -> str:
    return path.read_text()


def _class_source(source: str, name: str) -> str | None:
    """The text of `class <name>:` up to the next top-level class, decorator or definition."""
    match = re.search(rf"^class {re.escape(name)}:\n", source, re.M)
    if match is None:
        return None
    end = re.compile(r"^(?:class |@|def |if |[A-Za-z_]\w* = )", re.M).search(source, match.end())
    return source[match.start() : end.start() if end else len(source)]


def _getter_name(node: ast.FunctionDef) -> str | None:
    """The engine's name of a property getter (`@pulumi.getter(name="nodeShape")`, else the Python name)."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "getter":
            if isinstance(decorator, ast.Call):
                for keyword in decorator.keywords:
                    if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                        return str(keyword.value.value)
            return node.name
    return None


_NESTED = re.compile(r"'(\w+Args)'")


@functools.cache
def args_class(module: str, name: str, file_stem: str = "_inputs") -> ArgsClass | None:
    """The `*Args` class `name` of SDK subpackage `module`, read from `<module>/<file_stem>.py`."""
    path = package_dir() / module / f"{file_stem}.py"
    if not path.is_file():
        return None
    text = _class_source(_source(path), name)
    if text is None:
        return None
    (cls,) = ast.parse(text).body
    assert isinstance(cls, ast.ClassDef)
    properties: dict[str, InputProperty] = {}
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        engine_name = _getter_name(node)
        if engine_name is None:
            continue
        doc = ast.get_docstring(node) or ""
        annotation = ast.unparse(node.returns) if node.returns else ""
        nested = _NESTED.search(annotation)
        properties[engine_name] = InputProperty(
            engine_name, UPDATABLE_MARK in doc, nested.group(1) if nested else None
        )
    return ArgsClass(name, module, properties)


def resource_args(token: str) -> ArgsClass | None:
    """The input properties of the pulumi-oci resource with type token `token`, or None if unknown."""
    found = _resource_modules().get(token)
    if found is None:
        return None
    module, stem, cls = found
    return args_class(module, f"{cls}Args", stem)


def verdict(token: str, path: Sequence[str | int]) -> Verdict:
    """Whether a change at `path` (engine names, list indices as ints) is applied in place."""
    cls = resource_args(token)
    if cls is None:
        return Verdict(False, token, documented=False)
    walked: list[str] = []
    for segment in path:
        if isinstance(segment, int):
            continue
        if cls is None:
            break  # below a map or a scalar: the property above decides
        prop = cls.properties.get(segment)
        walked.append(segment)
        if prop is None:
            if len(walked) == 1:
                return Verdict(False, segment, documented=False)
            break  # a key of a map-typed property
        if not prop.updatable:
            return Verdict(False, ".".join(walked))
        cls = args_class(cls.module, prop.nested) if prop.nested else None
    return Verdict(True, ".".join(walked))


def table(token: str, depth: int = 4) -> dict[str, bool]:
    """Every documented input path of a resource -> updatable (each marked segment on the way)."""
    out: dict[str, bool] = {}

    def walk(cls: ArgsClass, prefix: str, updatable: bool, level: int) -> None:
        for name, prop in sorted(cls.properties.items()):
            path = f"{prefix}{name}"
            out[path] = updatable and prop.updatable
            nested = args_class(cls.module, prop.nested) if prop.nested and level < depth else None
            if nested is not None:
                walk(nested, path + ".", out[path], level + 1)

    cls = resource_args(token)
    if cls is not None:
        walk(cls, "", True, 1)
    return out


def installed_version() -> str:
    """The installed pulumi-oci's version (the pin in requirements.txt)."""
    return importlib.metadata.version(PACKAGE)
