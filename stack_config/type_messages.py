"""What a stack file is told when a value has the wrong type: in the words of YAML, not of pydantic.

YAML decides a scalar's type from how it is written (YAML 1.1, which PyYAML and the Pulumi CLI's reader
follow: an unquoted `1.33` is a float, `yes` a string here but a bool in YAML 1.1 elsewhere), so most
wrong types are a value that needed quotes, or a block written as a single value. pydantic's own text
("Input should be a valid string") names neither; these messages say what the key takes, what the file
gave, and the fix. When quoting a number would still be refused, the key's own rule is added, so a fix
is one edit, not two.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any, Final

import pydantic
from pydantic.fields import FieldInfo

from .model import StackConfig

# pydantic's error types for a value of the wrong type (pydantic_core's ErrorType), and what the key takes.
TAKES: Final = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a block of keys and values",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}


def wrong_type_message(error_type: str, loc: Sequence[int | str], value: Any) -> str | None:
    """The message for pydantic error ``error_type`` at ``loc``, or None when it is no wrong-type error."""
    takes = TAKES.get(error_type)
    if takes is None:
        return None
    given = written_as(value)
    if takes == "true or false":
        if isinstance(value, str):
            return f"takes true or false, not the text {value!r}; write true or false without quotes"
        return f"takes true or false, not {given}"
    message = f"takes {takes}, not {given}"
    if takes == "text" and isinstance(value, int | float) and not isinstance(value, bool):
        # The usual cause: a version or an identifier that YAML read as a number (1.33, 0800).
        message += f"; YAML reads an unquoted {value} as a number: write it in quotes"
        still = _refused_as_text(loc, str(value))
        if still:
            message += f', and even as "{value}" it is refused: {still}'
    elif takes in ("a whole number", "a number") and isinstance(value, str):
        message += "; write the number without quotes"
    return message


# pydantic's error types for a value out of its range, in the words the rest of the messages use.
BOUNDS: Final = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be more than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
    "finite_number": ("", "must be a finite number"),
    "too_short": ("min_length", "must hold at least {}"),
    "too_long": ("max_length", "must hold at most {}"),
}


def bound_message(error_type: str, ctx: dict[str, Any] | None) -> str | None:
    """The message for a value out of its range, or None when ``error_type`` is no range error."""
    found = BOUNDS.get(error_type)
    if found is None:
        return None
    key, text = found
    if not key:
        return text
    bound = (ctx or {}).get(key)
    if isinstance(bound, float) and bound.is_integer():
        bound = int(bound)
    if error_type in ("too_short", "too_long"):
        return text.format(f"{bound} item" + ("" if bound == 1 else "s"))
    return text.format(bound)


def written_as(value: Any) -> str:
    """How the stack file wrote ``value``, as YAML reads it."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a switch)"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a block of keys"
    return type(value).__name__


def _refused_as_text(loc: Sequence[int | str], text: str) -> str | None:
    """Why the key at ``loc`` would refuse ``text`` too (its own validators), None if it takes it."""
    field = field_at(loc)
    if field is None or field.annotation is None:
        return None
    # The field's type with its constraints (Field(pattern=...), AfterValidator), as pydantic rebuilds it.
    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(field.rebuild_annotation())
    try:
        adapter.validate_python(text)
    except pydantic.ValidationError as err:
        first = err.errors(include_url=False)[0]["msg"]
        return str(first).removeprefix("Value error, ")
    return None


def field_at(loc: Sequence[int | str]) -> FieldInfo | None:
    """The model field a pydantic location names (keys and list indexes), None if it names none."""
    model: type[pydantic.BaseModel] | None = StackConfig
    field: FieldInfo | None = None
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None:
            return None
        field = next((f for name, f in model.model_fields.items() if (f.alias or name) == part), None)
        if field is None:
            return None
        model = model_in(field.annotation)
    return field


def model_in(annotation: Any) -> type[pydantic.BaseModel] | None:
    """The model class a field holds (through Optional, list and dict), None for plain values."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_in(arg)
        if found is not None:
            return found
    return None
