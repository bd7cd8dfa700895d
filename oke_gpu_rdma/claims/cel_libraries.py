"""The Kubernetes CEL libraries a DRA selector may call, implemented in Python for cel-expr-python.

Kubernetes' environment for DRA selectors (``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go``)
adds its own libraries to CEL's; these are evaluated here: ``semver()``/``isSemver()`` with ``major()``,
``minor()``, ``patch()``, ``compareTo()``, ``isLessThan()``, ``isGreaterThan()`` (``library/semverlib.go``;
version attributes are Semver values, ``getAttributeValue`` in ``compile.go``), and
``quantity()``/``isQuantity()`` with ``compareTo()``, ``isLessThan()``, ``isGreaterThan()``, ``add()``,
``sub()``, ``sign()``, ``isInteger()``, ``asInteger()``, ``asApproximateFloat()`` (``library/quantity.go``;
capacities are Quantity values), and ``ip()``/``isIP()``/``ip.isCanonical()`` with ``family()``,
``isUnspecified()``, ``isLoopback()``, ``isLinkLocalMulticast()``, ``isLinkLocalUnicast()``,
``isGlobalUnicast()``, and ``cidr()``/``isCIDR()`` with ``containsIP()``, ``containsCIDR()``, ``ip()``,
``masked()``, ``prefixLength()`` (``library/ip.go``, ``library/cidr.go``: no zones, no IPv4-mapped IPv6;
selectors on DRANET's ``oke.dra.net/rdmaChildIpv4Cidr`` use them).

:data:`FUNCTIONS` declares them for the environment of :mod:`oke_gpu_rdma.claims.device_cel`. A Python
function that takes a message (a Semver, a Quantity, an IP or a CIDR) costs more than the CEL around it:
cel-expr-python 0.1.3 keeps every such argument (and the tuple of arguments) alive after the call, so a
selector that calls one adds objects the cyclic GC walks from then on. The judge evaluates each selector
once per device for that reason too (:class:`~oke_gpu_rdma.claims.device_cel.CompiledSelector`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from cel_expr_python import cel
from google.protobuf import (  # protobuf comes with cel-expr-python (no stubs: see pyproject)
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)

# -- Kubernetes value types: Semver, Quantity, IP and CIDR as proto messages (cel-expr-python has no opaque
# values)


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


DESCRIPTOR_POOL, SemverMessage, QuantityMessage, IPMessage, CIDRMessage = _message_types()
_SEMVER = cel.Type("kubernetes.Semver")
QUANTITY_TYPE = cel.Type("kubernetes.Quantity")
_IP = cel.Type("kubernetes.IP")
_CIDR = cel.Type("kubernetes.CIDR")


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


# -- the declarations: each function with its overloads and their implementations -------------------------


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


_B, _I, _S, _D = cel.Type.BOOL, cel.Type.INT, cel.Type.STRING, cel.Type.DOUBLE
FUNCTIONS = [
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
        _overload("string_to_quantity", QUANTITY_TYPE, [_S], lambda s: quantity(parse_quantity(s)))
    ]),
    cel.FunctionDecl("isQuantity", [_overload("is_quantity_string", _B, [_S], _is_quantity)]),
    # Semver and Quantity are both messages at runtime, where overloads are told apart by kind only: one
    # implementation per function serves both (the checker still sees two typed overloads).
    cel.FunctionDecl("compareTo", [
        _overload("semver_compareTo", _I, [_SEMVER, _SEMVER], _compare_to, True),
        _overload("quantity_compareTo", _I, [QUANTITY_TYPE, QUANTITY_TYPE], None, True),
    ]),
    cel.FunctionDecl("isGreaterThan", [
        _overload("semver_isGreaterThan", _B, [_SEMVER, _SEMVER], lambda a, b: _compare_to(a, b) > 0, True),
        _overload("quantity_isGreaterThan", _B, [QUANTITY_TYPE, QUANTITY_TYPE], None, True),
    ]),
    cel.FunctionDecl("isLessThan", [
        _overload("semver_isLessThan", _B, [_SEMVER, _SEMVER], lambda a, b: _compare_to(a, b) < 0, True),
        _overload("quantity_isLessThan", _B, [QUANTITY_TYPE, QUANTITY_TYPE], None, True),
    ]),
    cel.FunctionDecl("sign", [
        _overload("quantity_sign", _I, [QUANTITY_TYPE], lambda a: _cmp(_fraction(a), Fraction(0)), True)
    ]),
    cel.FunctionDecl("isInteger", [
        _overload("quantity_isInteger", _B, [QUANTITY_TYPE], lambda a: _fraction(a).denominator == 1, True)
    ]),
    cel.FunctionDecl("asInteger", [_overload("quantity_asInteger", _I, [QUANTITY_TYPE], _as_integer, True)]),
    cel.FunctionDecl("asApproximateFloat", [
        _overload("quantity_asApproximateFloat", _D, [QUANTITY_TYPE], lambda a: float(_fraction(a)), True)
    ]),
    cel.FunctionDecl("add", [
        _overload("quantity_add", QUANTITY_TYPE, [QUANTITY_TYPE, QUANTITY_TYPE], lambda a, b: quantity(_fraction(a) + _fraction(b)), True),
        _overload("quantity_add_int", QUANTITY_TYPE, [QUANTITY_TYPE, _I], lambda a, b: quantity(_fraction(a) + b), True),
    ]),
    cel.FunctionDecl("sub", [
        _overload("quantity_sub", QUANTITY_TYPE, [QUANTITY_TYPE, QUANTITY_TYPE], lambda a, b: quantity(_fraction(a) - _fraction(b)), True),
        _overload("quantity_sub_int", QUANTITY_TYPE, [QUANTITY_TYPE, _I], lambda a, b: quantity(_fraction(a) - b), True),
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
]  # fmt: skip
