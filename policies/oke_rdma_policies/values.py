"""Plain values from the SDK's property proxies, with unknowns kept as a marker instead of raised.

The SDK hands a policy its properties behind `unknown_checking_proxy`: reading a value that is
unknown during preview raises `UnknownValueError`, and the SDK then skips the *whole* policy with
one advisory line. A stack policy would so let every known-bad claim pass because one subnet CIDR
is computed. The policies here read plain copies instead (:func:`plain`), see :data:`UNKNOWN` where
the engine sent an unknown, and decide per item what could not be checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from pulumi_policy.deserialize import SPECIAL_SIG_KEY, deserialize_properties
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
)
from pulumi_policy.secret import Secret

from .sdk_adapter import deserialize_signed, proxy_target

_UNKNOWN_SENTINELS: Final = frozenset(
    {
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_STRING_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_OBJECT_VALUE,
    }
)


class _Unknown:
    """A value the engine does not know yet (preview: an output of a resource not created)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown>"

    def __str__(self) -> str:
        return "(known after apply)"


UNKNOWN: Final = _Unknown()


class LazyProps(Mapping[str, Any]):
    """A resource's properties as the engine sent them (a protobuf Struct), converted on first use.

    Used as `PolicyResource.props` by the pack's analyzer: reading it as a Mapping gives the SDK's
    unknown-checking proxy (built once), and :func:`plain` converts the Struct directly, without the
    SDK's `MessageToDict` and proxy passes. A resource no policy reads is never converted.
    """

    def __init__(self, struct: Any) -> None:
        self._struct = struct
        self._proxy: Mapping[str, Any] | None = None
        self._plain: dict[str, Any] | None = None

    def _sdk(self) -> Mapping[str, Any]:
        if self._proxy is None:
            from google.protobuf import json_format
            from pulumi_policy.proxy import unknown_checking_proxy

            self._proxy = unknown_checking_proxy(
                deserialize_properties(json_format.MessageToDict(self._struct))
            )
        return self._proxy

    def __getitem__(self, key: str) -> Any:
        return self._sdk()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sdk())

    def __len__(self) -> int:
        return len(self._sdk())

    def __bool__(self) -> bool:
        # Truth-testing needs no conversion: the Struct knows whether it has fields.
        return len(self._struct.fields) > 0

    def plain(self) -> dict[str, Any]:
        if self._plain is None:
            self._plain = {str(k): _from_value(v) for k, v in self._struct.fields.items()}
        return self._plain


def _from_value(value: Any) -> Any:
    """A google.protobuf Value as :func:`plain` returns it (the SDK's deserialize rules for signatures)."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        return UNKNOWN if text in _UNKNOWN_SENTINELS else text
    if kind == "number_value":
        number = value.number_value
        return int(number) if number.is_integer() else number
    if kind == "struct_value":
        fields = value.struct_value.fields
        if SPECIAL_SIG_KEY in fields:  # an asset, archive or secret: the SDK's own rules
            from google.protobuf import json_format

            return plain(deserialize_signed(json_format.MessageToDict(value)))
        return {str(k): _from_value(v) for k, v in fields.items()}
    if kind == "list_value":
        return [_from_value(v) for v in value.list_value.values]
    if kind == "bool_value":
        return value.bool_value
    return None


def plain(value: Any) -> Any:
    """Dicts, lists and scalars without proxies; unknown sentinels become :data:`UNKNOWN`.

    Numbers arrive as protobuf doubles; integral ones become ``int`` (a claim's ``count: 16`` must
    stay an integer for the API rules the claim judge applies).
    """
    if isinstance(value, LazyProps):
        return value.plain()
    value = proxy_target(value)
    if isinstance(value, Secret):
        value = value.value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | Sequence) and not isinstance(value, str | bytes):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return UNKNOWN if value in _UNKNOWN_SENTINELS else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def contains_unknown(value: Any, path: str = "") -> list[str]:
    """Paths (dot-joined, ``[i]`` for list items) under ``value`` that are unknown."""
    if value is UNKNOWN:
        return [path or "."]
    found: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            found += contains_unknown(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += contains_unknown(v, f"{path}[{i}]")
    return found


class PropertyTypeError(ValueError):
    """A property of the wrong type: reported as a violation naming the path, never a traceback."""

    def __init__(self, path: str, expected: str, got: object) -> None:
        self.path = path
        self.expected = expected
        super().__init__(f"{path} must be {expected}, got {describe(got)}")


def describe(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def dig(obj: Any, path: str, base: str = "") -> Any:
    """The value at dot-separated ``path`` under ``obj``; ``None`` when missing.

    Returns :data:`UNKNOWN` when a value on the way is unknown and raises :class:`PropertyTypeError` when
    a value on the way is not an object. ``base`` prefixes the path in error messages.
    """
    current = obj
    walked = base
    for key in path.split("."):
        if current is None:
            return None
        if current is UNKNOWN:
            return UNKNOWN
        if not isinstance(current, Mapping):
            raise PropertyTypeError(walked or ".", "an object", current)
        current = current.get(key)
        walked = f"{walked}.{key}" if walked else key
    return current


def as_map(value: Any, path: str) -> Mapping[str, Any]:
    """``value`` if it is an object, ``{}`` if missing; PropertyTypeError otherwise (unknown: caller checks)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PropertyTypeError(path, "an object", value)
    return value


def as_list(value: Any, path: str) -> list[Any]:
    """``value`` if it is a list, ``[]`` if missing; PropertyTypeError otherwise (unknown: caller checks)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise PropertyTypeError(path, "a list", value)
    return value
