"""Regenerate `preview/plan/oci_schema_rules.json`: update or replace for every OCI resource type the
program declares, read from terraform-provider-oci's own schema.

pulumi-oci is a bridge of terraform-provider-oci: the engine replaces a resource exactly when the
Terraform plan says `RequiresNew`, which terraform-plugin-sdk v2 sets from the schema's `ForceNew`
(helper/schema/schema.go `finalizeDiff`) or from a `CustomizeDiff` (`customdiff.ForceNewIfChange`).
The SDK's "(Updatable)" docstrings are copied from the Terraform docs and are wrong in places, so the
plan reads this file instead (preview/plan/oci_schema.py), and keeps the docstrings as a cross-check.

Usage, from a checkout of https://github.com/oracle/terraform-provider-oci at the version pulumi-oci's
pin is built on:

    python -m tools.oci_schema_rules --checkout ../terraform-provider-oci [--version v8.28.0 --commit SHA]

The Go schema literals of each resource file are parsed (brace matching that skips strings and
comments): per field its type, `ForceNew`, `MaxItems` (a `MaxItems: 1` block is an object in
Pulumi, not a list), whether it is an input (`Required`/`Optional`), and nested blocks. Field names are
matched to the installed pulumi-oci SDK's input names (camelCase), and every field the SDK does not
have is reported, so a version mismatch between the checkout and the pin shows.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from preview.plan import oci_schema, oci_updatable  # noqa: E402

# The OCI resource types the program can declare (components/nodes/network.py, cluster.py, gpu_node_pool.py,
# __main__.py). tests/preview/plan/test_oci_schema.py checks that every OCI type any example stack
# renders is here.
RESOURCE_TYPES = (
    "oci:ContainerEngine/cluster:Cluster",
    "oci:ContainerEngine/nodePool:NodePool",
    "oci:Core/computeCluster:ComputeCluster",
    "oci:Core/internetGateway:InternetGateway",
    "oci:Core/natGateway:NatGateway",
    "oci:Core/networkSecurityGroup:NetworkSecurityGroup",
    "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule",
    "oci:Core/routeTable:RouteTable",
    "oci:Core/securityList:SecurityList",
    "oci:Core/serviceGateway:ServiceGateway",
    "oci:Core/subnet:Subnet",
    "oci:Core/vcn:Vcn",
    "oci:Identity/policy:Policy",
)


class SchemaParseError(Exception):
    """The Go source is not shaped as expected: regenerate by hand and say where."""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def terraform_name(token: str) -> tuple[str, str]:
    """`oci:ContainerEngine/nodePool:NodePool` -> (`containerengine`, `containerengine_node_pool`)."""
    module, resource = token.split(":")[1].split("/")
    service = module.lower()
    return service, f"{service}_{_snake(resource)}"


def camel(name: str) -> str:
    """The bridge's input name for a Terraform field: `ipv4cidr_blocks` -> `ipv4cidrBlocks`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# --- Go source scanning ------------------------------------------------------------------------------


def _skip(text: str, i: int) -> int:
    """The index after a string, rune or comment starting at `i`, or `i` when none starts there."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        return text.index("*/", i) + 2
    quote = text[i]
    if quote == "`":
        return text.index("`", i + 1) + 1
    if quote in "\"'":
        j = i + 1
        while text[j] != quote:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def matching_brace(text: str, start: int) -> int:
    """The index of the `}` that closes the `{` at `start`."""
    depth = 0
    i = start
    while i < len(text):
        j = _skip(text, i)
        if j != i:
            i = j
            continue
        if text[i] in "{([":
            depth += 1
        elif text[i] in "})]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise SchemaParseError(f"no closing brace for the one at offset {start}")


def top_level_items(body: str) -> Iterator[str]:
    """The comma-separated items of a composite literal's body, comments dropped."""
    depth, i, start = 0, 0, 0
    while i < len(body):
        j = _skip(body, i)
        if j != i:
            if body.startswith("//", i) or body.startswith("/*", i):
                body = body[:i] + " " * (j - i) + body[j:]
            i = j
            continue
        c = body[i]
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
        elif c == "," and depth == 0:
            if body[start:i].strip():
                yield body[start:i].strip()
            start = i + 1
        i += 1
    if body[start:].strip():
        yield body[start:].strip()


_SCHEMA_MAP = "map[string]*schema.Schema{"


@dataclass
class Field:
    name: str
    kind: str
    """string, int, bool, float, map, list (of primitives), set (of primitives), block."""
    force_new: bool
    is_input: bool
    max_items: int | None = None
    collection: str = ""
    """For a block: list or set (Terraform's type); a block with MaxItems 1 is an object in Pulumi."""
    fields: dict[str, Field] | None = None
    unparsed: str = ""

    def to_json(self, sdk_names: dict[str, str]) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "forceNew": self.force_new}
        if self.kind == "block":
            out["collection"] = self.collection
            out["object"] = self.max_items == 1
            out["fields"] = {}
            for f in sorted((self.fields or {}).values(), key=lambda f: f.name):
                if f.is_input:
                    out["fields"][sdk_names.get(f.name, camel(f.name))] = f.to_json(sdk_names)
        if self.unparsed:
            out["unparsed"] = self.unparsed
        return out


_TYPES = {
    "schema.TypeString": "string",
    "schema.TypeInt": "int",
    "schema.TypeBool": "bool",
    "schema.TypeFloat": "float",
    "schema.TypeMap": "map",
    "schema.TypeList": "list",
    "schema.TypeSet": "set",
}


def parse_field(name: str, literal: str) -> Field:
    """One `"name": {Type: ..., ForceNew: true, Elem: ...}` entry (literal = the text inside the braces)."""
    props: dict[str, str] = {}
    for item in top_level_items(literal):
        key, _, value = item.partition(":")
        props[key.strip()] = value.strip()
    type_ = _TYPES.get(props.get("Type", ""))
    if type_ is None:
        raise SchemaParseError(f"field {name}: unknown Type {props.get('Type')!r}")
    field = Field(
        name=name,
        kind=type_,
        force_new=props.get("ForceNew") == "true",
        is_input=props.get("Required") == "true" or props.get("Optional") == "true",
        max_items=int(props["MaxItems"]) if props.get("MaxItems", "").isdigit() else None,
    )
    elem = props.get("Elem", "")
    if type_ in ("list", "set") and elem.startswith("&schema.Resource{"):
        field.collection, field.kind = type_, "block"
        start = elem.find(_SCHEMA_MAP)
        if start < 0:
            field.unparsed = "Elem is a schema.Resource whose Schema is not a literal map"
            field.fields = {}
        else:
            brace = start + len(_SCHEMA_MAP) - 1
            field.fields = parse_schema_map(elem[brace + 1 : matching_brace(elem, brace)])
    return field


def parse_schema_map(body: str) -> dict[str, Field]:
    """The entries of a `map[string]*schema.Schema{...}` literal."""
    fields: dict[str, Field] = {}
    for item in top_level_items(body):
        match = re.match(r"\"([A-Za-z0-9_]+)\"\s*:\s*", item)
        if match is None:
            raise SchemaParseError(f"unexpected schema map entry: {item[:80]!r}")
        value = item[match.end() :]
        if not value.startswith("{"):
            raise SchemaParseError(f"field {match[1]}: schema given by an expression ({value[:60]!r})")
        fields[match[1]] = parse_field(match[1], value[1 : matching_brace(value, 0)])
    return fields


def parse_resource(source: str, function: str) -> tuple[dict[str, Field], list[dict[str, str]], list[str]]:
    """The top-level schema of `func <function>() *schema.Resource`, its ForceNewIfChange paths, and
    any other CustomizeDiff it has (reported, not modelled)."""
    start = source.find(f"func {function}() *schema.Resource {{")
    if start < 0:
        raise SchemaParseError(f"no func {function}")
    body = source[start : matching_brace(source, source.index("{", start)) + 1]
    schema_at = body.find("Schema: " + _SCHEMA_MAP)
    if schema_at < 0:
        raise SchemaParseError(f"{function}: no literal Schema map")
    brace = schema_at + len("Schema: " + _SCHEMA_MAP) - 1
    fields = parse_schema_map(body[brace + 1 : matching_brace(body, brace)])
    force_new_if_change = [
        {"path": m[1], "condition": _condition(body, m.end())}
        for m in re.finditer(r'customdiff\.ForceNewIfChange\("([^"]+)"', body)
    ]
    other = [
        name
        for name in re.findall(r"customdiff\.(\w+)\(", body)
        if name not in ("All", "ForceNewIfChange", "Sequence")
    ]
    return fields, force_new_if_change, other


def _condition(body: str, at: int) -> str:
    """What a ForceNewIfChange function decides on, as text a reviewer can check (its comment)."""
    comment = re.search(r"//\s*(.+)", body[at : at + 600])
    return comment[1].strip() if comment else ""


# --- output ------------------------------------------------------------------------------------------


def pulumi_path(terraform_path: str, fields: dict[str, Field], sdk_names: dict[str, str]) -> str:
    """`endpoint_config.0.subnet_id` -> `endpointConfig.subnetId` (a MaxItems 1 block is an object)."""
    out: list[str] = []
    current: dict[str, Field] | None = fields
    parts = terraform_path.split(".")
    i = 0
    while i < len(parts):
        part = parts[i]
        field = (current or {}).get(part)
        if field is None:
            raise SchemaParseError(f"ForceNewIfChange path {terraform_path}: no field {part}")
        out.append(sdk_names.get(part, camel(part)))
        current = field.fields
        if field.kind == "block" and i + 1 < len(parts) and parts[i + 1].isdigit():
            if field.max_items != 1:
                out.append(f"[{parts[i + 1]}]")
            i += 1
        i += 1
    return ".".join(out).replace(".[", "[")


def _sdk_names(token: str) -> dict[str, str]:
    """Terraform field name -> the SDK's input name, for every *Args class reachable from the resource."""
    names: dict[str, str] = {}
    args = oci_updatable.resource_args(token)
    seen: set[str] = set()
    stack = [args] if args else []
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        for prop in current.properties.values():
            names[_snake(prop.name)] = prop.name
            if prop.nested:
                nested = oci_updatable.args_class(current.module, prop.nested)
                if nested:
                    stack.append(nested)
    return names


def _sdk_missing(fields: dict[str, Field], token: str, prefix: str = "") -> Iterator[str]:
    args = oci_updatable.resource_args(token)
    known = set(_sdk_names(token).values()) if args else set()
    for f in fields.values():
        if not f.is_input:
            continue
        path = f"{prefix}{camel(f.name)}"
        if camel(f.name) not in known:
            yield path
        if f.fields:
            yield from _sdk_missing(f.fields, token, path + ".")


def resource_entry(checkout: Path, token: str) -> dict[str, Any]:
    service, tf_name = terraform_name(token)
    relative = f"internal/service/{service}/{tf_name}_resource.go"
    function = "".join(part.capitalize() for part in tf_name.split("_")) + "Resource"
    source = (checkout / relative).read_text()
    fields, force_new_if_change, other = parse_resource(source, function)
    sdk_names = {tf: sdk for tf, sdk in _sdk_names(token).items()}
    entry: dict[str, Any] = {
        "terraform": f"oci_{tf_name}",
        "file": relative,
        "fields": {
            sdk_names.get(f.name, camel(f.name)): f.to_json(sdk_names)
            for f in sorted(fields.values(), key=lambda f: f.name)
            if f.is_input
        },
        "forceNewIfChange": [
            {**rule, "path": pulumi_path(rule["path"], fields, sdk_names)} for rule in force_new_if_change
        ],
    }
    if other:
        entry["customizeDiffNotModelled"] = other
    missing = list(_sdk_missing(fields, token))
    if missing:
        entry["notInSdk"] = missing
    return entry


def _git(checkout: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else ""


def generate(checkout: Path, version: str | None, commit: str | None) -> dict[str, Any]:
    version = version or _git(checkout, "describe", "--tags", "--exact-match")
    commit = commit or _git(checkout, "rev-parse", "HEAD")
    if not version or not commit:
        raise SystemExit("error: not a git checkout at a tag: pass --version vX.Y.Z and --commit SHA")
    return {
        "provenance": {
            "repository": "https://github.com/oracle/terraform-provider-oci",
            "version": version,
            "commit": commit,
            "pulumiOci": oci_updatable.installed_version(),
            "generatedBy": "python -m tools.oci_schema_rules --checkout <terraform-provider-oci>",
            "rules": "terraform-plugin-sdk v2 helper/schema/schema.go: a field replaces when ForceNew; "
            "a ForceNew block (list/set of schema.Resource) only when its element count changes; the "
            "elements of a primitive list/set or map inherit its ForceNew; CustomizeDiff "
            "ForceNewIfChange adds its path.",
        },
        "resources": {token: resource_entry(checkout, token) for token in RESOURCE_TYPES},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--checkout", type=Path, required=True, help="a terraform-provider-oci work tree")
    parser.add_argument("--version", default=None, help="its release tag, when the checkout is not git")
    parser.add_argument("--commit", default=None, help="its commit, when the checkout is not git")
    parser.add_argument("--out", type=Path, default=oci_schema.DATA_FILE)
    args = parser.parse_args(argv)
    try:
        data = generate(args.checkout, args.version, args.commit)
    except (OSError, SchemaParseError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    for token, entry in data["resources"].items():
        for path in entry.get("notInSdk", []):
            print(f"note: {token} {path}: in the Terraform schema, not in pulumi-oci's SDK", file=sys.stderr)
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
