"""CEL device selectors, compiled and evaluated like Kubernetes DRA does (cel-expr-python underneath).

Upstream: ``staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go`` (the ``device`` variable, the
empty-map default for unknown domains, the bool result) on top of the Kubernetes base environment
``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`` (libraries by version).

The variable ``device`` has ``driver`` (string), ``attributes[domain][name]`` (values of any type) and
``capacity[domain][name]`` (``Quantity``). Attributes published without a domain appear under the driver
name. Type checking: ``device.driver``, ``device.attributes`` and ``device.capacity`` are declared with
those types (as qualified variable names), so an expression that cannot be a bool (``device.driver``) or
that compares a Quantity with an int is a compile error, as in Kubernetes. Evaluation, as in
``compile.go``:

* indexing ``device.attributes`` (or ``capacity``) with a domain the device lacks gives an empty map, so
  ``has(device.attributes["nope"].x)`` is false; ``"nope" in device.attributes`` is false (the default
  applies to lookups only). The index is rewritten to an optional index with the empty map as its
  default for evaluation, so a domain computed at runtime works too;
* selecting a missing key inside a domain is a runtime error;
* a runtime error or a non-bool result aborts the allocation (:class:`SelectorError`).

Kubernetes libraries evaluated here: the string extensions (version 2), ``cel.bind``, optional types, and
Kubernetes' own semver, quantity, IP and CIDR libraries (:mod:`~oke_gpu_rdma.claims.cel_libraries`). Other
Kubernetes libraries (lists, regex, URLs, sets, format, ``string()`` of an IP or CIDR, two-variable
comprehensions) are valid in a claim but not evaluated here: such a selector compiles to :class:`CompiledSelector` with ``unsupported`` set,
and the judge reports the claim as not checked instead of rejecting it. Not modelled: the CEL cost limit,
and ``==`` between a Semver and a string (an error in Kubernetes, false here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from oke_gpu_rdma.claims.cel_libraries import (
    DESCRIPTOR_POOL,
    FUNCTIONS,
    QUANTITY_TYPE,
    CelValueError,
    parse_semver,
    quantity,
)
from oke_gpu_rdma.claims.inventory import Device, Version
from oke_gpu_rdma.common.errors import SelectorError

# The device variable (compile.go): attributes and capacity by domain, then by name.
_INNER_ATTRIBUTES = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
_ATTRIBUTES = cel.Type.Map(cel.Type.STRING, _INNER_ATTRIBUTES)
_INNER_CAPACITY = cel.Type.Map(cel.Type.STRING, QUANTITY_TYPE)
_CAPACITY = cel.Type.Map(cel.Type.STRING, _INNER_CAPACITY)

# Built once per process: every selector of every claim compiles in this one environment.
_ENV = cel.NewEnv(
    descriptor_pool=DESCRIPTOR_POOL,
    variables={
        "device.driver": cel.Type.STRING,
        "device.attributes": _ATTRIBUTES,
        "device.capacity": _CAPACITY,
    },
    extensions=[ext_strings.ExtStrings(version=2), ext_bindings.ExtBindings(), ext_optional.ExtOptional()],
    functions=FUNCTIONS,
)

# Functions of the Kubernetes CEL environment that this model does not evaluate (base.go: URLs, Regex,
# Lists, IP, CIDR, Format, Sets, Image, Authz, TwoVarComprehensions; ext.Strings v2 ``quote``).
KUBERNETES_UNEVALUATED = frozenset(
    {
        "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery",
        "find", "findAll", "isSorted", "sum", "min", "max", "indexOf", "lastIndexOf",
        "sets", "image", "isImage", "containerImage", "authorizer", "quote", "reverse",
        "transformList", "transformMap", "transformMapEntry", "named", "format",
        "string",
    }
)  # fmt: skip
_UNDECLARED = re.compile(r"(?:undeclared reference to|found no matching overload for) '([^']+)'")
_TWO_VAR = re.compile(r"\.\s*(?:all|exists|existsOne|exists_one)\s*\(\s*[A-Za-z_]\w*\s*,\s*[A-Za-z_]\w*\s*,")


@dataclass(frozen=True)
class CompiledSelector:
    """A selector that compiled in the Kubernetes environment.

    ``unsupported`` names a Kubernetes library function this model does not evaluate (the selector is
    valid, but :meth:`matches` cannot be used); ``output`` is the checked result type (BOOL or DYN).
    """

    expression: str
    program: Any
    output: str
    unsupported: str | None = None

    outcomes: dict[int, tuple[Device, bool | str]] = field(default_factory=dict, compare=False, repr=False)
    """Per device (by identity, the device held so the identity stays its own): the result, or the
    message of the error it raised. CEL has no side effects and a device is frozen, so a selector
    evaluates once per device per process (the claims of a policy run share their selectors)."""

    def matches(self, device: Device) -> bool:
        """Evaluate against ``device``; :class:`SelectorError` on a runtime error or non-bool result."""
        hit = self.outcomes.get(id(device))
        if hit is None or hit[0] is not device:
            if len(self.outcomes) >= _OUTCOMES_LIMIT:
                self.outcomes.clear()
            hit = self.outcomes[id(device)] = (device, self._evaluate(device))
        if isinstance(hit[1], str):
            raise SelectorError(hit[1], self.expression, str(device.id))
        return hit[1]

    def _evaluate(self, device: Device) -> bool | str:
        """The result on ``device``, or the message of the :class:`SelectorError` it raises."""
        if self.unsupported is not None:
            return f"selector {self.expression!r} uses {self.unsupported}, which this model does not evaluate"
        try:
            value = self.program.eval(data=device_variable(device))
        except Exception as exc:  # cel-expr-python raises RuntimeError; library functions CelValueError
            return (
                f"CEL runtime error in selector {self.expression!r} on {_where(device)}: {exc}; "
                "the allocation aborts"
            )
        kind = value.type()
        if kind == cel.Type.ERROR:
            return (
                f"CEL runtime error in selector {self.expression!r} on {_where(device)}: {value.value()}; "
                "the allocation aborts (guard optional attributes with has())"
            )
        result = value.value()
        if kind != cel.Type.BOOL or not isinstance(result, bool):
            return (
                f"CEL result of type {kind.name()} could not be converted to bool in selector "
                f"{self.expression!r} on {_where(device)}; the allocation aborts"
            )
        return result


def _where(device: Device) -> str:
    return f"device {device.id} ({device.display})"


_OUTCOMES_LIMIT = 1024


_CACHE: dict[str, CompiledSelector | SelectorError] = {}
_CACHE_LIMIT = 4096


def compile_selector(expression: str) -> CompiledSelector:
    """Compile and type-check (cached); :class:`SelectorError` quoting the expression if Kubernetes would
    reject it at admission (``validateCELExpression`` in pkg/apis/resource/validation/validation.go)."""
    hit = _CACHE.get(expression)
    if hit is None:
        hit = _compile(expression)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[expression] = hit
    if isinstance(hit, SelectorError):
        raise SelectorError(str(hit), hit.expression)
    return hit


def _compile(expression: str) -> CompiledSelector | SelectorError:
    if _TWO_VAR.search(expression):
        return CompiledSelector(expression, None, "DYN", "two-variable comprehensions")
    rewritten = _rewrite_domain_lookups(expression)
    if rewritten != expression:
        # An optional index with the empty map as its default has the type of the plain index, so the
        # rewritten selector type-checks exactly when the original does, to the same type: one compile
        # (the costly step of a selector seen for the first time) serves both. One that fails is compiled
        # as written below, for the message and position the API server would report.
        try:
            program = _ENV.compile(rewritten)
        except Exception:
            program = None
        output = program.return_type().name() if program is not None else None
        if output in ("BOOL", "DYN"):
            return CompiledSelector(expression, program, output)
    try:
        checked = _ENV.compile(expression)
    except Exception as exc:
        detail = " ".join(str(exc).split())
        names = set(_UNDECLARED.findall(detail))
        known = sorted(
            n for n in names if n.split(".")[0] in KUBERNETES_UNEVALUATED or n in KUBERNETES_UNEVALUATED
        )
        if known and len(known) == len(names):
            return CompiledSelector(expression, None, "DYN", f"the Kubernetes CEL function {known[0]}()")
        return SelectorError(f"CEL compile error in selector {expression!r}: {detail}", expression)
    output = checked.return_type().name()
    # compile.go CompileCELExpression: the result type must be bool or the unknown (dyn) type.
    if output not in ("BOOL", "DYN"):
        return SelectorError(
            f"CEL compile error in selector {expression!r}: must evaluate to bool or the unknown type, "
            f"not {output.lower()}",
            expression,
        )
    program = checked if rewritten == expression else _ENV.compile(rewritten)
    return CompiledSelector(expression, program, output)


# -- the empty-map default for unknown domains -------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<str>[rRbB]{0,2}(?:'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))"""
    r"""|(?P<comment>//[^\n]*)|(?P<ident>[A-Za-z_]\w*)|(?P<space>\s+)|(?P<other>.)""",
    re.DOTALL,
)


def _rewrite_domain_lookups(expression: str) -> str:
    """``device.attributes[X]`` -> ``device.attributes[?X].orValue({})`` (likewise capacity).

    compile.go wraps both maps (``mapper``) so that looking up a missing domain returns an empty map, while
    ``in`` and ``size()`` see only the domains the device has; CEL's optional index (the optional types
    library, cel-spec ``optional_type``) does the same inside the CEL runtime. A lookup function written in
    Python did it before, but cel-expr-python 0.1.3 keeps a reference to the arguments of every Python
    function call (measured: a device's attribute maps per call, never freed), so each evaluation grew the
    heap that the cyclic GC walks.
    """
    tokens = [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(expression)]
    code = [i for i, (kind, _) in enumerate(tokens) if kind not in ("space", "comment")]
    out = [text for _, text in tokens]
    changed = False
    for n in range(len(code) - 3):
        i, j, k, b = code[n : n + 4]
        if (
            tokens[i][1] == "device"
            and tokens[j][1] == "."
            and tokens[k][1] in ("attributes", "capacity")
            and tokens[b][1] == "["
            and (n == 0 or tokens[code[n - 1]][1] != ".")
        ):
            depth = 0
            close = None
            for m in code[n + 3 :]:
                t = tokens[m][1]
                if t in "([{":
                    depth += 1
                elif t in ")]}":
                    depth -= 1
                    if depth == 0:
                        close = m
                        break
            if close is None or (n + 4 < len(code) and tokens[code[n + 4]][1] == "?"):
                continue  # unbalanced (cannot compile anyway) or an optional index: left as written
            out[b] = "[?"
            out[close] = "].orValue({})"
            changed = True
    return "".join(out) if changed else expression


def _value(value: Any) -> Any:
    if isinstance(value, Version):
        try:
            return parse_semver(value.value)
        except CelValueError:
            return value.value
    return value


def device_variable(device: Device) -> dict[str, Any]:
    """The activation: ``device.driver``, attributes by domain (versions as Semver) and capacity by
    domain (as Quantity), as ``DeviceMatches`` in compile.go builds them."""
    cached = _VARIABLES.get(id(device))  # by identity: hashing a Device builds its DeviceID
    if cached is not None and cached[0] is device:
        return cached[1]
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.attributes.items():
        domain, ident = _split(name, device.driver)
        attributes.setdefault(domain, {})[ident] = _value(value)
    capacity: dict[str, dict[str, Any]] = {}
    for name, amount in device.capacity.items():
        domain, ident = _split(name, device.driver)
        capacity.setdefault(domain, {})[ident] = quantity(amount)
    data = {"device.driver": device.driver, "device.attributes": attributes, "device.capacity": capacity}
    if len(_VARIABLES) > 1024:
        _VARIABLES.clear()
    _VARIABLES[id(device)] = (device, data)
    return data


_VARIABLES: dict[int, tuple[Device, dict[str, Any]]] = {}


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def selector_matches(expression: str, device: Device) -> bool:
    """Compile (cached) and evaluate one selector against one device."""
    return compile_selector(expression).matches(device)
