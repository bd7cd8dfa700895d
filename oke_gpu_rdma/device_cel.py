"""CEL device selectors, evaluated like Kubernetes DRA evaluates them (cel-expr-python underneath).

The variable ``device`` has ``driver``, ``attributes[domain][name]`` and ``capacity[domain][name]``.
Attributes published without a domain (the NVIDIA driver's ``type``, ``uuid`` ...) appear under the
driver name. As in ``k8s.io/dynamic-resource-allocation/cel``:

* indexing ``device.attributes`` (or ``capacity``) with an unknown domain gives an empty map, so
  ``has(device.attributes["nope"].x)`` is false and ``"x" in device.attributes["nope"]`` is false;
* selecting a missing key inside a domain (``device.attributes["dra.net"].ifName`` on a device without
  it) is a runtime error;
* a compile or runtime error, or a non-bool result, aborts the allocation: :class:`SelectorError` quotes
  the expression.

cel-expr-python has no lazy default map, so the empty maps are added for every domain the expression
names as a string literal right after ``attributes[`` or ``capacity[`` (the usual form). A domain
computed at runtime (``device.attributes["dra" + ".net"]``) is not covered and behaves as a missing
key. Version attributes are plain strings here (no ``semver()`` functions), capacities are integers (no
``quantity()``), and the CEL cost limit is not enforced; the 10 Ki length limit is checked by
:mod:`oke_gpu_rdma.claim_spec`. Compiled expressions are cached by text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings

from oke_gpu_rdma.errors import SelectorError
from oke_gpu_rdma.inventory import Device, Version

_ENV = cel.NewEnv(
    variables={"device": cel.Type.DYN},
    extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings()],
)
_DOMAIN_INDEX = re.compile(
    r"""\b(attributes|capacity)\s*\[\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\s*\]"""
)


@dataclass(frozen=True)
class CompiledSelector:
    """A compiled selector and the domains it indexes, to add as empty maps."""

    expression: str
    program: Any
    attribute_domains: frozenset[str]
    capacity_domains: frozenset[str]

    def matches(self, device: Device) -> bool:
        """Evaluate against ``device``; :class:`SelectorError` on a runtime error or non-bool result."""
        data = device_variable(device)
        for dom in self.attribute_domains:
            data["attributes"].setdefault(dom, {})
        for dom in self.capacity_domains:
            data["capacity"].setdefault(dom, {})
        where = f"device {device.id} ({device.display})"
        try:
            value = self.program.eval(data={"device": data})
        except Exception as exc:  # cel-expr-python raises RuntimeError for evaluation failures
            raise SelectorError(
                f"CEL runtime error in selector {self.expression!r} on {where}: {exc}; the allocation aborts",
                self.expression,
                str(device.id),
            ) from None
        kind = value.type()
        if kind == cel.Type.ERROR:
            raise SelectorError(
                f"CEL runtime error in selector {self.expression!r} on {where}: {value.value()}; "
                "the allocation aborts (guard optional attributes with has())",
                self.expression,
                str(device.id),
            )
        result = value.value()
        if kind != cel.Type.BOOL or not isinstance(result, bool):
            raise SelectorError(
                f"CEL result of type {kind.name()} could not be converted to bool in selector "
                f"{self.expression!r} on {where}; the allocation aborts",
                self.expression,
                str(device.id),
            )
        return result


_CACHE: dict[str, CompiledSelector | SelectorError] = {}
_CACHE_LIMIT = 4096


def compile_selector(expression: str) -> CompiledSelector:
    """Compile (cached); :class:`SelectorError` quoting the expression on a compile error."""
    hit = _CACHE.get(expression)
    if hit is None:
        hit = _compile(expression)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[expression] = hit
    if isinstance(hit, SelectorError):
        raise SelectorError(str(hit), hit.expression)
    return hit


def cache_size() -> int:
    return len(_CACHE)


def _compile(expression: str) -> CompiledSelector | SelectorError:
    try:
        program = _ENV.compile(expression)
    except Exception as exc:
        detail = " ".join(str(exc).split())
        return SelectorError(f"CEL compile error in selector {expression!r}: {detail}", expression)
    attr_domains: set[str] = set()
    cap_domains: set[str] = set()
    for m in _DOMAIN_INDEX.finditer(expression):
        domain = m.group(2) if m.group(2) is not None else m.group(3)
        (attr_domains if m.group(1) == "attributes" else cap_domains).add(domain)
    return CompiledSelector(expression, program, frozenset(attr_domains), frozenset(cap_domains))


def device_variable(device: Device) -> dict[str, Any]:
    """The ``device`` variable: driver, attributes and capacity grouped by domain."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.attributes.items():
        domain, ident = _split(name, device.driver)
        attributes.setdefault(domain, {})[ident] = value.value if isinstance(value, Version) else value
    capacity: dict[str, dict[str, Any]] = {}
    for name, amount in device.capacity.items():
        domain, ident = _split(name, device.driver)
        capacity.setdefault(domain, {})[ident] = amount
    return {"driver": device.driver, "attributes": attributes, "capacity": capacity}


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def selector_matches(expression: str, device: Device) -> bool:
    """Compile (cached) and evaluate one selector against one device."""
    return compile_selector(expression).matches(device)
