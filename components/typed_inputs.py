"""Build pulumi-kubernetes' typed input classes from Kubernetes JSON, refusing unknown fields.

The domain library speaks Kubernetes JSON (plain dicts, camelCase), which is what it judges. Going
through the typed classes (`ResourceClaimTemplateSpecArgs`, `PodSpecArgs`, ...) checks every field
name against the provider's schema, so a misspelt field fails a preview and a test, not a deploy.
"""

from __future__ import annotations

import collections.abc
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pulumi import _types

T = TypeVar("T")


class TypedInputError(ValueError):
    """A field that the Kubernetes API type does not have, or a value of the wrong shape."""


def to_input_type(cls: type[T], data: Mapping[str, Any], path: str = "") -> T:
    """`cls(**fields)` from `data`, recursively, with `path` naming fields in errors."""
    if not isinstance(data, Mapping):
        raise TypedInputError(f"{path or cls.__name__}: expected an object, got {type(data).__name__}")
    py_names = {pulumi: py for py, pulumi in _types.input_type_py_to_pulumi_names(cls).items()}
    types = _types.input_type_types(cls)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in py_names:
            known = ", ".join(sorted(py_names))
            raise TypedInputError(
                f"{path}.{key}".lstrip(".") + f" is not a field of {_api_name(cls)} (fields: {known})"
            )
        kwargs[py_names[key]] = _convert(types[key], value, f"{path}.{key}".lstrip("."))
    return cls(**kwargs)


def _api_name(cls: type) -> str:
    return cls.__name__.removesuffix("Args")


def _convert(typ: Any, value: Any, path: str) -> Any:
    """Convert `value` to what an input of declared type `typ` takes."""
    if value is None:
        return None
    element = _element_type(typ)
    origin = typing.get_origin(typ)
    if origin in (collections.abc.Sequence, list):
        if not isinstance(value, list):
            raise TypedInputError(f"{path}: expected a list, got {type(value).__name__}")
        return [_convert(element, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin in (collections.abc.Mapping, dict):
        if not isinstance(value, Mapping):
            raise TypedInputError(f"{path}: expected an object, got {type(value).__name__}")
        return {k: _convert(element, v, f"{path}.{k}") for k, v in value.items()}
    target = _plain_type(typ)
    if isinstance(target, type) and _types.is_input_type(target):
        return to_input_type(target, value, path)
    return value


def _plain_type(typ: Any) -> Any:
    """The class in `Union[X, Awaitable[X], Output[None]]` and the like."""
    if typing.get_origin(typ) is typing.Union:
        for arg in typing.get_args(typ):
            if isinstance(arg, type) and _types.is_input_type(arg):
                return arg
        args = [a for a in typing.get_args(typ) if typing.get_origin(a) is None and a is not type(None)]
        return args[0] if args else typ
    return typ


def _element_type(typ: Any) -> Any:
    args = typing.get_args(typ)
    if not args:
        return Any
    return _plain_type(args[-1])
