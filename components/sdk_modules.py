"""Load of the Pulumi SDKs only the modules the program uses.

pulumi-oci and pulumi-kubernetes expose each service as a package whose `__init__` star-imports every
module of it (`pulumi_oci.identity`: 230 modules, identity domains and all, for the one `Policy` the
program declares), and the root packages load those packages on first attribute access
(`_utilities.lazy_import`, a whole-package importlib LazyLoader). Importing them that way was most of
`make preview`'s start-up.

:func:`defer_sdk_packages` replaces each not-yet-loaded service package with one whose names resolve
one at a time, from the module that defines them in the SDK's own generated layout: the resource's
module (`Vcn` in `core/vcn.py`, `Namespace` in `core/v1/Namespace.py`, `get_services` in
`core/get_services.py`), else the package's `_inputs`, `outputs` or `_enums` (the `*Args` input types,
output types and enums). A name found nowhere runs the package's own `__init__` once, so every name
the package exports still resolves. `oci.core.Vcn` is the same class either way.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pulumi_kubernetes
import pulumi_oci

SDK_ROOTS = (pulumi_oci, pulumi_kubernetes)
# Where the generated SDKs keep what no resource module of its own name defines.
_SHARED_MODULES = ("_inputs", "outputs", "_enums")
_STAR_IMPORT = re.compile(r"^from \.(\w+) import \*$", re.MULTILINE)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _deferred(name: str, parent: ModuleType) -> ModuleType | None:
    """The package ``name`` (a child of ``parent``), its `__init__` not run; None if it is no package."""
    spec = importlib.machinery.PathFinder.find_spec(name, list(parent.__path__))
    if spec is None or spec.submodule_search_locations is None or spec.origin is None:
        return None
    module = importlib.util.module_from_spec(spec)
    origin = Path(spec.origin)
    modules = set(_STAR_IMPORT.findall(origin.read_text())) | {
        p.stem for p in origin.parent.glob("*.py") if p.stem != "__init__"
    }
    children = {p.name for p in origin.parent.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    state = {"complete": False}

    def complete() -> None:
        # Once: the package's own __init__, in the module already in sys.modules.
        state["complete"] = True
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(module)

    def resolve(attr: str) -> Any:
        if not state["complete"] and not attr.startswith("__"):
            if attr in children:
                return _child(module, attr)
            if attr in modules and attr not in _SHARED_MODULES:
                # A module of the package (its own name is also what it defines, as `Release`, or not).
                found = importlib.import_module(f"{name}.{attr}")
                value = vars(found).get(attr, found)
                setattr(module, attr, value)
                return value
            # A resource's input types live in its module (`ReleaseArgs` in `Release.py`).
            stem = re.sub(r"(InitArgs|Args)(Dict)?$", "", attr)
            for candidate in dict.fromkeys((stem, _snake(stem), _snake(attr))):
                if candidate in modules:
                    found = importlib.import_module(f"{name}.{candidate}")
                    if attr in vars(found):
                        value = vars(found)[attr]
                        setattr(module, attr, value)
                        return value
            if attr in _SHARED_MODULES and attr in modules:
                found = importlib.import_module(f"{name}.{attr}")
                setattr(module, attr, found)
                return found
            for shared in _SHARED_MODULES:
                if shared in modules:
                    found = importlib.import_module(f"{name}.{shared}")
                    if attr in vars(found):
                        value = vars(found)[attr]
                        setattr(module, attr, value)
                        return value
            complete()
            if attr in vars(module):
                return vars(module)[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    # PEP 562: a module's __getattr__ answers the names it does not hold yet.
    vars(module)["__getattr__"] = resolve
    return module


def _child(parent: ModuleType, attr: str) -> ModuleType:
    name = f"{parent.__name__}.{attr}"
    current = sys.modules.get(name)
    if current is not None and type(current).__name__ != "_LazyModule":
        return current
    module = _deferred(name, parent)
    if module is None:
        return importlib.import_module(name)
    sys.modules[name] = module
    setattr(parent, attr, module)
    return module


def defer_sdk_packages() -> None:
    """Make the SDKs' service packages resolve names one module at a time (see the module's doc)."""
    for root in SDK_ROOTS:
        for attr, value in list(vars(root).items()):
            # Only what the root loads lazily and nothing has loaded yet (a LazyLoader module keeps its
            # class until first use; type() does not trigger the load).
            if type(value).__name__ == "_LazyModule":
                _child(root, attr)
