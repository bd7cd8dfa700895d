"""Build pulumi-kubernetes' typed input classes from Kubernetes JSON, refusing unknown fields.

The domain library speaks Kubernetes JSON (plain dicts, camelCase), which is what it judges. Going
through the typed classes (`ResourceClaimTemplateSpecArgs`, `PodSpecArgs`, ...) checks every field
name against the provider's schema, so a misspelt field fails a preview and a test, not a deploy.

Only public surface is read: each class's constructor signature. Its parameters are the fields in
Python spelling; their annotations, as the SDK generates them, are
`Union[<plain type>, Awaitable[...], Output[T]]`, where the plain type is a forward reference to a
nested `...Args` class, or a `Sequence`/`Mapping` of one.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import re
import sys
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

import pulumi_kubernetes

T = TypeVar("T")

_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class TypedInputError(ValueError):
    """A field that the Kubernetes API type does not have, or a value of the wrong shape."""


def python_name(field: str) -> str:
    """The SDK's Python spelling of a Kubernetes field: `hostIPC` -> `host_ipc`, `podIPs` -> `pod_ips`."""
    return _WORD_BOUNDARY.sub("_", field).lower()


@functools.cache
def _fields(cls: type) -> dict[str, Any]:
    """Python field name -> the plain type of its annotation, for an input class."""
    namespace = vars(sys.modules[cls.__module__])
    out: dict[str, Any] = {}
    for name, param in inspect.signature(cls).parameters.items():
        if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        out[name] = _plain(param.annotation, namespace)
    return out


def _plain(annotation: Any, namespace: Mapping[str, Any]) -> Any:
    """The first member of the SDK's Union (the plain type), with forward references resolved."""
    if typing.get_origin(annotation) is typing.Union:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if origin in (collections.abc.Sequence, list):
        return list[_plain(typing.get_args(annotation)[0], namespace)]  # type: ignore[misc]
    if origin in (collections.abc.Mapping, dict):
        return dict[str, _plain(typing.get_args(annotation)[-1], namespace)]  # type: ignore[misc]
    if isinstance(annotation, typing.ForwardRef):
        head, *rest = annotation.__forward_arg__.split(".")
        found: Any = namespace.get(head)
        for part in rest:
            found = getattr(found, part, None)
        return found if isinstance(found, type) else Any
    return annotation


def _is_input_class(value: Any) -> bool:
    """A pulumi-kubernetes input class (the only kind this module builds)."""
    return isinstance(value, type) and value.__module__.startswith(pulumi_kubernetes.__name__ + ".")


def to_input_type(cls: type[T], data: Mapping[str, Any], path: str = "") -> T:
    """`cls(**fields)` from `data`, recursively, with `path` naming fields in errors."""
    if not isinstance(data, Mapping):
        raise TypedInputError(f"{path or cls.__name__}: expected an object, got {type(data).__name__}")
    fields = _fields(typing.cast(type, cls))
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = python_name(key)
        if name not in fields and f"{name}_" in fields:
            # A name the SDK's generator suffixes as it shadows a Python builtin (`exec` -> `exec_`, ProbeArgs).
            name = f"{name}_"
        where = f"{path}.{key}".lstrip(".")
        if name not in fields:
            known = ", ".join(sorted(fields))
            raise TypedInputError(f"{where} is not a field of {_api_name(cls)} (fields: {known})")
        kwargs[name] = _convert(fields[name], value, where)
    return cls(**kwargs)


def _api_name(cls: type) -> str:
    return cls.__name__.removesuffix("Args")


def _convert(typ: Any, value: Any, path: str) -> Any:
    """Convert `value` to what an input of plain type `typ` takes."""
    if value is None:
        return None
    origin = typing.get_origin(typ)
    if origin is list:
        if not isinstance(value, list):
            raise TypedInputError(f"{path}: expected a list, got {type(value).__name__}")
        (element,) = typing.get_args(typ)
        return [_convert(element, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise TypedInputError(f"{path}: expected an object, got {type(value).__name__}")
        element = typing.get_args(typ)[-1]
        return {k: _convert(element, v, f"{path}.{k}") for k, v in value.items()}
    if _is_input_class(typ):
        return to_input_type(typ, value, path)
    return value
