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
  applies to lookups only). The index is rewritten to a call of a lookup function for evaluation, so a
  domain computed at runtime works too;
* selecting a missing key inside a domain is a runtime error;
* a runtime error or a non-bool result aborts the allocation (:class:`SelectorError`).

Kubernetes libraries evaluated here: the string extensions (version 2), ``cel.bind``, optional types,
``semver()``/``isSemver()`` with ``major()``, ``minor()``, ``patch()``, ``compareTo()``, ``isLessThan()``,
``isGreaterThan()`` (``library/semverlib.go``; version attributes are Semver values, ``getAttributeValue``
in ``compile.go``), and ``quantity()``/``isQuantity()`` with ``compareTo()``, ``isLessThan()``,
``isGreaterThan()``, ``add()``, ``sub()``, ``sign()``, ``isInteger()``, ``asInteger()``,
``asApproximateFloat()`` (``library/quantity.go``; capacities are Quantity values), and ``ip()``/``isIP()``/
``ip.isCanonical()`` with ``family()``, ``isUnspecified()``, ``isLoopback()``, ``isLinkLocalMulticast()``,
``isLinkLocalUnicast()``, ``isGlobalUnicast()``, and ``cidr()``/``isCIDR()`` with ``containsIP()``,
``containsCIDR()``, ``ip()``, ``masked()``, ``prefixLength()`` (``library/ip.go``, ``library/cidr.go``: no
zones, no IPv4-mapped IPv6; selectors on DRANET's ``oke.dra.net/rdmaChildIpv4Cidr`` use them). Other
Kubernetes libraries (lists, regex, URLs, sets, format, ``string()`` of an IP or CIDR, two-variable
comprehensions) are valid in a claim
but not evaluated here: such a selector compiles to :class:`CompiledSelector` with ``unsupported`` set,
and the judge reports the claim as not checked instead of rejecting it. Not modelled: the CEL cost limit,
and ``==`` between a Semver and a string (an error in Kubernetes, false here).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from google.protobuf import (  # protobuf comes with cel-expr-python (no stubs: see pyproject)
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)

from oke_gpu_rdma.claims.inventory import Device, Version
from oke_gpu_rdma.errors import SelectorError

# -- Kubernetes value types: Semver and Quantity as proto messages (cel-expr-python has no opaque values)


def _message_types() -> tuple[Any, Any, Any, Any, Any]:
    fdp = descriptor_pb2.FileDescriptorProto(name="oke_gpu_rdma_k8s_cel.proto", package="kubernetes")
    fdp.syntax = "proto3"
    field = descriptor_pb2.FieldDescriptorProto
    semver = fdp.message_type.add(name="Semver")
    for number, (name, kind) in enumerate(
        (("major", field.TYPE_INT64), ("minor", field.TYPE_INT64), ("patch", field.TYPE_INT64)), start=1
    ):
        semver.field.add(name=name, number=number, type=kind, label=field.LABEL_OPTIONAL)
    semver.field.add(name="pre", number=4, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    for name in ("Quantity", "IP", "CIDR"):
        message = fdp.message_type.add(name=name)
        message.field.add(name="value", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    classes = [
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"kubernetes.{name}"))
        for name in ("Semver", "Quantity", "IP", "CIDR")
    ]
    return pool, classes[0], classes[1], classes[2], classes[3]


_POOL, SemverMessage, QuantityMessage, IPMessage, CIDRMessage = _message_types()
_SEMVER = cel.Type("kubernetes.Semver")
_QUANTITY = cel.Type("kubernetes.Quantity")
_IP = cel.Type("kubernetes.IP")
_CIDR = cel.Type("kubernetes.CIDR")
_INNER_ATTRIBUTES = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
_ATTRIBUTES = cel.Type.Map(cel.Type.STRING, _INNER_ATTRIBUTES)
_INNER_CAPACITY = cel.Type.Map(cel.Type.STRING, _QUANTITY)
_CAPACITY = cel.Type.Map(cel.Type.STRING, _INNER_CAPACITY)


class CelValueError(ValueError):
    """A Kubernetes library function failed (e.g. ``semver("x")``): a CEL runtime error."""


# -- semver (k8s.io/apiserver/pkg/cel/library/semverlib.go, github.com/blang/semver/v4) --------------

_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


def parse_semver(text: str, normalize: bool = False) -> Any:
    """A Semver message; :class:`CelValueError` if ``text`` is not a semantic version."""
    if normalize:
        text = _normalize_semver(text)
    m = _SEMVER_RE.match(text)
    if not m:
        raise CelValueError(f"could not parse {text!r} as semver")
    return SemverMessage(major=int(m[1]), minor=int(m[2]), patch=int(m[3]), pre=m[4] or "")


def _normalize_semver(text: str) -> str:
    # semverlib.go normalizeAndParse: strip a leading "v", fill minor/patch with 0, drop leading zeros.
    text = text.removeprefix("v")
    split = len(text) - len(text.lstrip("0123456789."))
    core, rest = text[:split], text[split:]
    parts = core.split(".") if core else []
    if 0 < len(parts) < 3:
        parts += ["0"] * (3 - len(parts))
    parts = [(p.lstrip("0") or "0") if p.isdigit() else p for p in parts]
    return ".".join(parts) + rest


def _pre_key(pre: str) -> tuple[int, tuple[tuple[int, int, str], ...]]:
    if not pre:
        return (1, ())
    return (0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))


def _semver_cmp(a: Any, b: Any) -> int:
    ka = (a.major, a.minor, a.patch, _pre_key(a.pre))
    kb = (b.major, b.minor, b.patch, _pre_key(b.pre))
    return (ka > kb) - (ka < kb)


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize)
    except CelValueError:
        return False
    return True


# -- quantity (k8s.io/apiserver/pkg/cel/library/quantity.go, k8s.io/apimachinery/pkg/api/resource) ---

_QUANTITY_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(text: str) -> Fraction:
    """The exact value of a Kubernetes quantity string; :class:`CelValueError` if malformed."""
    m = _QUANTITY_RE.match(text)
    if not m:
        raise CelValueError(f"quantities must match the regular expression '{_QUANTITY_RE.pattern}'")
    try:
        number = Fraction(Decimal(m[1]))
    except (InvalidOperation, ValueError):
        raise CelValueError(f"cannot parse quantity {text!r}") from None
    suffix = m[2] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    if suffix:
        return number * Fraction(10) ** int(suffix[1:])
    return number


def quantity(value: Fraction | int) -> Any:
    return QuantityMessage(value=str(Fraction(value)))


def _fraction(message: Any) -> Fraction:
    """The exact value a quantity message holds."""
    return Fraction(message.value)


def _cmp(a: Fraction, b: Fraction) -> int:
    return (a > b) - (a < b)


def _as_integer(message: Any) -> int:
    value = _fraction(message)
    if value.denominator != 1 or not -(2**63) <= value <= 2**63 - 1:
        raise CelValueError("cannot convert value to integer")
    return int(value)


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except CelValueError:
        return False
    return True


# -- IP and CIDR (k8s.io/apiserver/pkg/cel/library/ip.go and cidr.go, Go's net/netip underneath) -------


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """netip.ParseAddr plus the library's refusals: no zone, no IPv4-mapped IPv6 address."""
    if "%" in text:
        raise CelValueError("IP address with zone value is not allowed")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise CelValueError(f"IP Address {text!r} parse error during conversion from string") from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise CelValueError("IPv4-mapped IPv6 address is not allowed")
    return address


def _prefix(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """netip.ParsePrefix (the address need not be masked) plus the same refusals."""
    address, sep, bits = text.partition("/")
    if not sep or not bits.isdigit() or (len(bits) > 1 and bits.startswith("0")):
        raise CelValueError(f"network address {text!r} parse error during conversion from string")
    parsed = _address(address)
    if int(bits) > parsed.max_prefixlen:
        raise CelValueError(f"network address {text!r} parse error during conversion from string")
    return parsed, int(bits)


def _ip(text: str) -> Any:
    return IPMessage(value=str(_address(text)))


def _cidr(text: str) -> Any:
    address, bits = _prefix(text)
    return CIDRMessage(value=f"{address}/{bits}")


def _valid(parse: Callable[[str], Any], text: str) -> bool:
    try:
        parse(text)
    except CelValueError:
        return False
    return True


def _is_canonical(text: str) -> bool:
    return str(_address(text)) == text


def _network(message: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(message.value, strict=False)


def _global_unicast(message: Any) -> bool:
    """netip.Addr.IsGlobalUnicast: not unspecified, loopback, multicast, link-local, nor the IPv4 broadcast."""
    a = ipaddress.ip_address(message.value)
    if isinstance(a, ipaddress.IPv4Address) and a == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)


def _contains_ip(cidr: Any, other: Any) -> bool:
    address = _address(other) if isinstance(other, str) else ipaddress.ip_address(other.value)
    network = _network(cidr)
    return address.version == network.version and address in network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    inner = _network(_cidr(other) if isinstance(other, str) else other)
    outer = _network(cidr)
    return (
        inner.version == outer.version
        and inner.network_address in outer
        and outer.prefixlen <= inner.prefixlen
    )


def _link_local_multicast(message: Any) -> bool:
    a = ipaddress.ip_address(message.value)
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("224.0.0.0/24")
    return a.is_multicast and (a.packed[1] & 0x0F) == 0x02


# -- the environment ---------------------------------------------------------------------------------


def _overload(
    id_: str, result: Any, params: list[Any], impl: Callable[..., Any] | None, member: bool = False
) -> Any:
    if impl is None:
        return cel.Overload(id_, result, params, is_member=member)
    return cel.Overload(id_, result, params, is_member=member, impl=impl)


def _compare_to(a: Any, b: Any) -> int:
    if isinstance(a, SemverMessage) and isinstance(b, SemverMessage):
        return _semver_cmp(a, b)
    if isinstance(a, QuantityMessage) and isinstance(b, QuantityMessage):
        return _cmp(_fraction(a), _fraction(b))
    raise CelValueError("no such overload")


def _domain(values: Mapping[str, Any], domain: str) -> Any:
    return values.get(domain, {})


_B, _I, _S, _D = cel.Type.BOOL, cel.Type.INT, cel.Type.STRING, cel.Type.DOUBLE
_FUNCTIONS = [
    cel.FunctionDecl("semver", [
        _overload("string_to_semver", _SEMVER, [_S], parse_semver),
        _overload("string_bool_to_semver", _SEMVER, [_S, _B], parse_semver),
    ]),
    cel.FunctionDecl("isSemver", [
        _overload("is_semver_string", _B, [_S], _is_semver),
        _overload("is_semver_string_bool", _B, [_S, _B], _is_semver),
    ]),
    cel.FunctionDecl("major", [_overload("semver_major", _I, [_SEMVER], lambda v: v.major, True)]),
    cel.FunctionDecl("minor", [_overload("semver_minor", _I, [_SEMVER], lambda v: v.minor, True)]),
    cel.FunctionDecl("patch", [_overload("semver_patch", _I, [_SEMVER], lambda v: v.patch, True)]),
    cel.FunctionDecl("quantity", [
        _overload("string_to_quantity", _QUANTITY, [_S], lambda s: quantity(parse_quantity(s)))
    ]),
    cel.FunctionDecl("isQuantity", [_overload("is_quantity_string", _B, [_S], _is_quantity)]),
    # Semver and Quantity are both messages at runtime, where overloads are told apart by kind only: one
    # implementation per function serves both (the checker still sees two typed overloads).
    cel.FunctionDecl("compareTo", [
        _overload("semver_compareTo", _I, [_SEMVER, _SEMVER], _compare_to, True),
        _overload("quantity_compareTo", _I, [_QUANTITY, _QUANTITY], None, True),
    ]),
    cel.FunctionDecl("isGreaterThan", [
        _overload("semver_isGreaterThan", _B, [_SEMVER, _SEMVER], lambda a, b: _compare_to(a, b) > 0, True),
        _overload("quantity_isGreaterThan", _B, [_QUANTITY, _QUANTITY], None, True),
    ]),
    cel.FunctionDecl("isLessThan", [
        _overload("semver_isLessThan", _B, [_SEMVER, _SEMVER], lambda a, b: _compare_to(a, b) < 0, True),
        _overload("quantity_isLessThan", _B, [_QUANTITY, _QUANTITY], None, True),
    ]),
    cel.FunctionDecl("sign", [
        _overload("quantity_sign", _I, [_QUANTITY], lambda a: _cmp(_fraction(a), Fraction(0)), True)
    ]),
    cel.FunctionDecl("isInteger", [
        _overload("quantity_isInteger", _B, [_QUANTITY], lambda a: _fraction(a).denominator == 1, True)
    ]),
    cel.FunctionDecl("asInteger", [_overload("quantity_asInteger", _I, [_QUANTITY], _as_integer, True)]),
    cel.FunctionDecl("asApproximateFloat", [
        _overload("quantity_asApproximateFloat", _D, [_QUANTITY], lambda a: float(_fraction(a)), True)
    ]),
    cel.FunctionDecl("add", [
        _overload("quantity_add", _QUANTITY, [_QUANTITY, _QUANTITY], lambda a, b: quantity(_fraction(a) + _fraction(b)), True),
        _overload("quantity_add_int", _QUANTITY, [_QUANTITY, _I], lambda a, b: quantity(_fraction(a) + b), True),
    ]),
    cel.FunctionDecl("sub", [
        _overload("quantity_sub", _QUANTITY, [_QUANTITY, _QUANTITY], lambda a, b: quantity(_fraction(a) - _fraction(b)), True),
        _overload("quantity_sub_int", _QUANTITY, [_QUANTITY, _I], lambda a, b: quantity(_fraction(a) - b), True),
    ]),
    cel.FunctionDecl("ip", [
        _overload("string_to_ip", _IP, [_S], _ip),
        _overload("cidr_ip", _IP, [_CIDR], lambda c: IPMessage(value=c.value.split("/")[0]), True),
    ]),
    cel.FunctionDecl("isIP", [_overload("is_ip", _B, [_S], lambda s: _valid(_address, s))]),
    cel.FunctionDecl("ip.isCanonical", [_overload("ip_is_canonical", _B, [_S], _is_canonical)]),
    cel.FunctionDecl("family", [
        _overload("ip_family", _I, [_IP], lambda a: ipaddress.ip_address(a.value).version, True)
    ]),
    cel.FunctionDecl("isUnspecified", [
        _overload("ip_is_unspecified", _B, [_IP], lambda a: ipaddress.ip_address(a.value).is_unspecified, True)
    ]),
    cel.FunctionDecl("isLoopback", [
        _overload("ip_is_loopback", _B, [_IP], lambda a: ipaddress.ip_address(a.value).is_loopback, True)
    ]),
    cel.FunctionDecl("isLinkLocalMulticast", [
        _overload("ip_is_link_local_multicast", _B, [_IP], _link_local_multicast, True)
    ]),
    cel.FunctionDecl("isLinkLocalUnicast", [
        _overload(
            "ip_is_link_local_unicast", _B, [_IP],
            lambda a: ipaddress.ip_address(a.value).is_link_local and not ipaddress.ip_address(a.value).is_multicast,
            True,
        )
    ]),
    cel.FunctionDecl("isGlobalUnicast", [_overload("ip_is_global_unicast", _B, [_IP], _global_unicast, True)]),
    cel.FunctionDecl("cidr", [_overload("string_to_cidr", _CIDR, [_S], _cidr)]),
    cel.FunctionDecl("isCIDR", [_overload("is_cidr", _B, [_S], lambda s: _valid(_prefix, s))]),
    # A string or a message argument: one implementation serves both overloads.
    cel.FunctionDecl("containsIP", [
        _overload("cidr_contains_ip_string", _B, [_CIDR, _S], _contains_ip, True),
        _overload("cidr_contains_ip_ip", _B, [_CIDR, _IP], _contains_ip, True),
    ]),
    cel.FunctionDecl("containsCIDR", [
        _overload("cidr_contains_cidr_string", _B, [_CIDR, _S], _contains_cidr, True),
        _overload("cidr_contains_cidr", _B, [_CIDR, _CIDR], _contains_cidr, True),
    ]),
    cel.FunctionDecl("masked", [
        _overload("cidr_masked", _CIDR, [_CIDR], lambda c: CIDRMessage(value=str(_network(c))), True)
    ]),
    cel.FunctionDecl("prefixLength", [
        _overload("cidr_prefix_length", _I, [_CIDR], lambda c: _network(c).prefixlen, True)
    ]),
    cel.FunctionDecl("__dra_attributes", [
        _overload("dra_attributes_domain", _INNER_ATTRIBUTES, [_ATTRIBUTES, _S], _domain)
    ]),
    cel.FunctionDecl("__dra_capacity", [
        _overload("dra_capacity_domain", _INNER_CAPACITY, [_CAPACITY, _S], _domain)
    ]),
]  # fmt: skip

_ENV = cel.NewEnv(
    descriptor_pool=_POOL,
    variables={
        "device.driver": cel.Type.STRING,
        "device.attributes": _ATTRIBUTES,
        "device.capacity": _CAPACITY,
    },
    extensions=[ext_strings.ExtStrings(version=2), ext_bindings.ExtBindings(), ext_optional.ExtOptional()],
    functions=_FUNCTIONS,
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

    def matches(self, device: Device) -> bool:
        """Evaluate against ``device``; :class:`SelectorError` on a runtime error or non-bool result."""
        if self.unsupported is not None:
            raise SelectorError(
                f"selector {self.expression!r} uses {self.unsupported}, which this model does not evaluate",
                self.expression,
                str(device.id),
            )
        where = f"device {device.id} ({device.display})"
        try:
            value = self.program.eval(data=device_variable(device))
        except Exception as exc:  # cel-expr-python raises RuntimeError; library functions CelValueError
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
    rewritten = _rewrite_domain_lookups(expression)
    program = checked if rewritten == expression else _ENV.compile(rewritten)
    return CompiledSelector(expression, program, output)


# -- the empty-map default for unknown domains -------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<str>[rRbB]{0,2}(?:'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))"""
    r"""|(?P<comment>//[^\n]*)|(?P<ident>[A-Za-z_]\w*)|(?P<space>\s+)|(?P<other>.)""",
    re.DOTALL,
)


def _rewrite_domain_lookups(expression: str) -> str:
    """``device.attributes[X]`` -> ``__dra_attributes(device.attributes, X)`` (likewise capacity).

    compile.go wraps both maps so that looking up a missing domain returns an empty map, while ``in``
    and ``size()`` see only the domains the device has; a lookup function does the same.
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
            func = "__dra_attributes" if tokens[k][1] == "attributes" else "__dra_capacity"
            out[i] = f"{func}(device.{tokens[k][1]}, "
            for m in range(i + 1, b + 1):
                out[m] = ""
            out[close] = ")"
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
    cached = _VARIABLES.get(device)
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
    _VARIABLES[device] = (device, data)
    return data


_VARIABLES: dict[Device, tuple[Device, dict[str, Any]]] = {}


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def selector_matches(expression: str, device: Device) -> bool:
    """Compile (cached) and evaluate one selector against one device."""
    return compile_selector(expression).matches(device)
