"""The seams between the program and the pack: one home per shared fact, layers kept apart.

These read the product's source with `ast` (string constants, imports), so they check what ships,
not what a test happens to build.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import preview.policy_check  # noqa: F401  (puts policies/ on sys.path)
from oke_gpu_rdma.common import pack_settings, stack_keys
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.nodes import labels
from oke_gpu_rdma.sriov import network_operator_chart as network_operator
from oke_gpu_rdma.sriov import operator_objects as sriov
from stack_config.model import StackConfig
from tools import layout_map

import oke_rdma_policies  # isort: skip

ROOT = Path(__file__).resolve().parent.parent
# The four jobs' packages (docs/contributing/architecture.md) and the packaging and CI helpers.
PRODUCT = [
    "__main__.py",
    "components",
    "stack_config",
    "preview",
    "oke_gpu_rdma",
    "policies/oke_rdma_policies",
    "tools",
]


def product_files() -> list[Path]:
    files: list[Path] = []
    for entry in PRODUCT:
        path = ROOT / entry
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


@functools.cache
def string_constants(path: Path) -> tuple[str, ...]:
    """String literals of a module, docstrings (prose, not values) left out (parsed once per file)."""
    return tuple(_string_constants(path))


def _string_constants(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value


def policy_home(rule: oke_rdma_policies.registry.Rule) -> str:
    """Where a policy's name is spelt: the settings model the program writes with, else its own module."""
    if rule.settings is not None and rule.settings.__module__ == pack_settings.__name__:
        return "oke_gpu_rdma/common/pack_settings.py"
    return "policies/" + rule.module.replace(".", "/") + ".py"


# Each shared string and the one module allowed to spell it.
SHARED = {
    **{rule.name: policy_home(rule) for rule in oke_rdma_policies.RULES},
    "ocaRdmaNetwork": "oke_gpu_rdma/common/pack_settings.py",
    "existingCidrs": "oke_gpu_rdma/common/pack_settings.py",
    "workerSubnetCidrs": "oke_gpu_rdma/common/pack_settings.py",
    dranet.CHILD_RANGE_KEY: "oke_gpu_rdma/drivers/dranet.py",
    nvidia_gpu.CHART_NAME: "oke_gpu_rdma/drivers/nvidia_gpu.py",
    labels.POD_SECURITY_ENFORCE_LABEL: "oke_gpu_rdma/nodes/labels.py",
    NVIDIA_GPU_RESOURCE: "oke_gpu_rdma/drivers/attributes.py",
    network_operator.NAMESPACE: "oke_gpu_rdma/sriov/network_operator_chart.py",
    labels.RDMA_PATH_LABEL: "oke_gpu_rdma/nodes/labels.py",
    sriov.RDMA_QOS_KEY: "oke_gpu_rdma/sriov/operator_objects.py",
    sriov.NETWORKS_ANNOTATION: "oke_gpu_rdma/sriov/operator_objects.py",
    sriov.RESOURCE_BASE: "oke_gpu_rdma/sriov/operator_objects.py",
    sriov.NV_IPAM_TYPE: "oke_gpu_rdma/sriov/operator_objects.py",
}


@pytest.mark.parametrize("text", sorted(SHARED))
def test_each_shared_string_is_defined_once(text: str) -> None:
    homes = [
        str(path.relative_to(ROOT))
        for path in product_files()
        for constant in string_constants(path)
        if constant == text
        or (len(text) > 12 and re.search(rf"(?<![\w.]){re.escape(text)}(?![\w.-])", constant))
    ]
    assert homes == [SHARED[text]], f"{text!r} is spelt in {homes}; import it from {SHARED[text]}"


def _resolve(key: str) -> bool:
    """Whether `a.b[].c` names a field of the stack config model (camelCase aliases, [] for list items)."""
    model: Any = StackConfig
    for part in key.split("."):
        name = part.removesuffix("[]")
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        if name not in fields:
            return False
        annotation = fields[name].annotation
        model = _model_in(annotation)
        if model is None:
            return part == key.split(".")[-1]
    return True


def _model_in(annotation: Any) -> Any:
    """The pydantic model inside `X`, `list[X]`, `X | None` and the like; None for plain values."""
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("key", stack_keys.ALL)
def test_every_key_a_message_names_is_a_stack_config_key(key: str) -> None:
    assert _resolve(key), f"stack_keys names {key!r}, which the stack config does not have"


def test_policy_messages_name_stack_settings_only_through_stack_keys() -> None:
    policies = ROOT / "policies" / "oke_rdma_policies"
    for path in policies.rglob("*.py"):
        for constant in string_constants(path):
            assert "stack config" not in constant, (
                f"{path.name} spells a stack setting in {constant!r}; use oke_gpu_rdma.common.stack_keys"
            )


def test_resolve_refuses_a_key_that_does_not_exist() -> None:
    assert not _resolve("nodePools[].gpusFromDra")
    assert _resolve("nodePools[].labels") and _resolve("gpuDriver.enabled")


def _imports(path: Path) -> Iterator[tuple[str, str | None]]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                yield node.module, alias.name


def test_every_module_under_components_is_a_pulumi_layer() -> None:
    for path in sorted((ROOT / "components").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        modules = {module.split(".")[0] for module, _ in _imports(path)}
        assert modules & {"pulumi", "pulumi_kubernetes", "pulumi_oci"}, (
            f"components/{path.name} imports no Pulumi: it belongs in stack_config/ or oke_gpu_rdma/"
        )


@pytest.mark.parametrize("package", ["oke_gpu_rdma", "stack_config"])
def test_the_plain_layers_import_no_pulumi(package: str) -> None:
    for path in sorted((ROOT / package).rglob("*.py")):
        modules = {module.split(".")[0] for module, _ in _imports(path)}
        assert not modules & {"pulumi", "pulumi_kubernetes", "pulumi_oci", "pulumi_policy"}, path.relative_to(
            ROOT
        )


# The one module allowed pulumi-policy's internals: it copies them from a pinned release
# (tests/policies/test_sdk_adapter.py).
SDK_ADAPTER = ROOT / "policies" / "oke_rdma_policies" / "sdk_adapter.py"


def test_no_product_module_imports_a_private_pulumi_name() -> None:
    for path in product_files():
        for module, name in _imports(path):
            top = module.split(".")[0]
            if top not in ("pulumi", "pulumi_kubernetes", "pulumi_policy"):
                continue
            if top == "pulumi_policy" and path == SDK_ADAPTER:
                continue
            private = [p for p in [*module.split("."), name or ""] if p.startswith("_")]
            assert not private, f"{path.relative_to(ROOT)} imports {module}.{name or ''}"


# The CLI's stack lookup: what names it and the calls that use it unless given folders.
USER_STACK_NAMES = {"USER_STACKS", "STACK_DIRS", "STACKS_DIR"}
LOOKUPS = {"load_stack": 2, "stack_file": 2, "preview": 2}


def _stack_lookups_without_folders(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        name = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else node.name
            if isinstance(node, ast.alias)
            else None
        )
        if name in USER_STACK_NAMES:
            yield getattr(node, "lineno", 0), name
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if callee in LOOKUPS and len(node.args) + len(node.keywords) < LOOKUPS[callee]:
            yield node.lineno, f"{callee}() with the default folders"
        if callee == "main" and node.args and isinstance(node.args[0], ast.List):
            flags = {e.value for e in node.args[0].elts if isinstance(e, ast.Constant)}
            if "--stack" in flags and "--stacks-dir" not in flags:
                yield node.lineno, "cli.main() without --stacks-dir"


def test_no_test_reads_the_users_stacks() -> None:
    # A stack of the user's in stacks/ (any name, one sorting before the examples, a misspelt region,
    # invalid YAML) never fails `make test`, which both workflows run before they deploy: tests use
    # the examples or stack files of their own. (tests/preview/test_cli.py's run_cli reads the
    # examples unless told otherwise.)
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line, what in _stack_lookups_without_folders(ast.parse(path.read_text()))
    ]
    assert offenders == []


def test_only_the_sdk_adapter_reads_name_mangled_attributes() -> None:
    for path in product_files():
        if path == SDK_ADAPTER:
            continue
        mangled = [
            node.attr
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and re.match(r"^_[A-Za-z]\w*__\w", node.attr)
        ]
        assert not mangled, f"{path.relative_to(ROOT)} reads {mangled}; only sdk_adapter.py may"


def test_the_sdk_adapter_is_where_the_private_sdk_names_are() -> None:
    private = [
        name
        for module, name in _imports(SDK_ADAPTER)
        if module.startswith("pulumi_policy") and name and name.startswith("_")
    ]
    assert private, "sdk_adapter.py uses no SDK internals any more: drop it and its exemption"


ARCHITECTURE = ROOT / "docs" / "contributing" / "architecture.md"


def _architecture_tree() -> Iterator[str]:
    """The paths the architecture page's layout tree names: top-level entries and the entries under them."""
    block = ARCHITECTURE.read_text().split("```", 2)[1]
    parent = ""
    for line in block.splitlines():
        match = re.match(r"^( {0,2})(\S+)(?: {2,}|$)", line)
        if match is None:
            continue
        indent, name = match.groups()
        if not indent:
            parent = name
            yield name
        else:
            yield parent + name


def test_every_path_of_the_layout_tree_exists() -> None:
    missing = sorted(p for p in _architecture_tree() if not (ROOT / p).exists())
    assert missing == []


def test_the_layout_tree_names_every_module_at_a_layer_root() -> None:
    # A module added at a layer's root without its line in the tree is a map that no longer matches the
    # territory; modules in capability folders (and the plan's, preview/) are mapped by tools/layout_map.py.
    named = set(_architecture_tree())
    unnamed = sorted(
        str(path.relative_to(ROOT))
        for package in ("stack_config", "components", "oke_gpu_rdma")
        for path in (ROOT / package).glob("*.py")
        if path.name not in ("__init__.py", "__main__.py") and str(path.relative_to(ROOT)) not in named
    )
    assert unnamed == []


# The layers whose modules live in capability folders (docs/contributing/architecture.md, "The layout").
CAPABILITY_LAYERS = [layer for layer, _ in layout_map.LAYERS]
# What may sit at a layer's root: it serves every capability of the layer.
LAYER_ROOT_MODULES = {
    "stack_config": {
        "model.py",
        "settings_types.py",
        "loading.py",
        "type_messages.py",
        "problems.py",
        "config_namespaces.py",
        "pack_config.py",
    },
    "oke_gpu_rdma": set(),
    "components": {"package.py", "component_inputs.py", "typed_inputs.py", "sdk_modules.py"},
    "policies/oke_rdma_policies/rules": set(),
}


@pytest.mark.parametrize("layer", CAPABILITY_LAYERS)
def test_every_module_of_a_layer_sits_in_a_capability_folder(layer: str) -> None:
    folder = ROOT / layer
    at_root = {p.name for p in folder.glob("*.py")} - {"__init__.py"}
    assert at_root == LAYER_ROOT_MODULES[layer], (
        f"{layer}/: put {sorted(at_root - LAYER_ROOT_MODULES[layer])} in a capability folder"
    )
    folders = {p.name for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders <= set(layout_map.CAPABILITIES), (
        f"{layer}/ has folders that are no capability: {sorted(folders - set(layout_map.CAPABILITIES))}"
    )


def test_no_module_name_stands_twice_in_the_product() -> None:
    # A name in a message, a traceback or a review then says which file it is.
    seen: dict[str, list[str]] = {}
    for path in product_files():
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in product_files()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these by what they hold: {long}"


@pytest.mark.parametrize("layer", CAPABILITY_LAYERS)
def test_the_tests_mirror_the_capability_folders(layer: str) -> None:
    tests = ROOT / "tests" / ("policies" if layer.startswith("policies/") else layer)
    for folder in sorted(p for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert folder.name in layout_map.CAPABILITIES or (ROOT / layer / folder.name).is_dir(), (
            f"{folder.relative_to(ROOT)} mirrors no folder of {layer}/"
        )
        for test in folder.rglob("test_*.py"):
            source = ROOT / layer / test.relative_to(tests).parent / (test.name.removeprefix("test_"))
            assert (ROOT / layer / test.relative_to(tests).parent).is_dir(), (
                f"{test.relative_to(ROOT)}: {source.parent.relative_to(ROOT)} does not exist"
            )


def test_the_architecture_page_maps_each_job_to_its_package() -> None:
    jobs = ARCHITECTURE.read_text().split("```", 1)[0]
    table = [line for line in jobs.splitlines() if line.startswith("| ")][1:]  # rows under the header
    packages = {p for row in table for p in re.findall(r"`([\w./]+/)`", row.split("|")[2])}
    assert {
        "components/",
        "stack_config/",
        "preview/",
        "preview/plan/",
        "oke_gpu_rdma/claims/",
        "policies/",
    } <= packages
    assert sorted(p for p in packages if not (ROOT / p).is_dir()) == []


# The program's own modules: what `pulumi up` runs from the project's venv, which the CLI fills from
# requirements.txt alone.
_PROGRAM = ("__main__.py", "components", "stack_config", "oke_gpu_rdma")


def _top_level_imports(paths: tuple[str, ...]) -> set[str]:
    found: set[str] = set()
    for name in paths:
        path = ROOT / name
        for source in [path] if path.is_file() else path.rglob("*.py"):
            for node in ast.walk(ast.parse(source.read_text())):
                if isinstance(node, ast.Import):
                    found |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return found


def _requirement_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[=<>!~;\[ ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_requirements_txt_is_what_the_program_imports_and_no_more() -> None:
    """`pulumi up` installs requirements.txt: every third-party package the program imports is there,
    and nothing only the preview or the tests use (kubernetes-validate lives in requirements-preview.txt)."""
    import importlib.metadata
    import sys

    distributions = importlib.metadata.packages_distributions()
    own = {"components", "stack_config", "oke_gpu_rdma", "preview", "policies", "tools", "tests"}
    # `google` is a namespace package of several distributions: the program imports google.protobuf.
    namespaces = {"google": ["protobuf"]}
    imported = {
        dist.lower().replace("_", "-")
        for module in _top_level_imports(_PROGRAM) - own - set(sys.stdlib_module_names)
        for dist in namespaces.get(module) or distributions.get(module, [module])
    }
    required = _requirement_names(ROOT / "requirements.txt")
    assert imported <= required, f"imported by the program but not in requirements.txt: {imported - required}"
    assert required <= imported, (
        f"in requirements.txt but never imported by the program: {required - imported}"
    )
    assert "kubernetes-validate" in _requirement_names(ROOT / "requirements-preview.txt")
