"""What several components take, and how a component checks the plain values it is given.

A component's Args are a ``TypedDict`` of ``pulumi.Input``s, read by the SDK's schema inference
(pulumi.provider.experimental.analyzer: field annotations and the docstring under each field), so the
same component serves this program and, through provider/, any Pulumi program. The values are checked
with the stack config's own models (stack_config/model.py) and reported as one error naming each
input (its schema name, camelCase), the value and the fix, never a traceback alone.

An input that is an Output (another resource's attribute) is known only at apply time; where a model
needs a value to check the others, it gets a well-formed stand-in of the right kind
(:func:`stand_in_ocid`), and the resource gets the Output itself.
"""

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict, TypeVar

import pulumi
import pydantic

from stack_config.loading import problems_from_pydantic
from stack_config.nodes.pool_settings import Taint
from stack_config.problems import ConfigProblem

M = TypeVar("M", bound=pydantic.BaseModel)


def stand_in_ocid(kind: str) -> str:
    """What the models check in place of an OCID of ``kind`` (image, computecluster: regional resource
    types) that is an Output: a well-formed one of that kind with a region (OCI checks the real one)."""
    return f"ocid1.{kind}.oc1.standin.knownafterapply"


class PoolTaint(TypedDict):
    """A taint a node pool's kubelet registers its nodes with (`key=value:Effect`)."""

    key: str
    """Taint key, a Kubernetes label key (e.g. the GPU resource name OKE GPU nodes are tainted with)."""
    value: NotRequired[str]
    """Taint value, a Kubernetes label value (default empty)."""
    effect: NotRequired[str]
    """NoSchedule (default), PreferNoSchedule or NoExecute."""


class ComponentInputError(pulumi.RunError):
    """A component's inputs are invalid: one line per input, naming it, the value found and the fix.

    A RunError, so a program that passes bad values ends with this message and nothing half-created.
    """

    def __init__(self, component: str, name: str, problems: Sequence[ConfigProblem]) -> None:
        self.problems = list(problems)
        lines = [f"input {p.render()}" for p in self.problems]
        super().__init__(f"{component} {name!r}: invalid inputs:\n  " + "\n  ".join(lines))


def from_wire(value: Any) -> Any:
    """``value`` with whole-number floats as ints, deeply.

    Numbers cross the gRPC wire as doubles; the SDK's component host means to turn the integer inputs
    back into ints but then stores the float it received (pulumi/provider/experimental/component.py
    map_input_properties: ``int(input_val)`` is overwritten by ``input_val``), so a `count: 2` from a
    YAML program arrives as 2.0, which the strict models refuse.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: from_wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_wire(v) for v in value]
    return value


def schema_name(name: str) -> str:
    """The schema's (camelCase) name of a Python input name, as the SDK's schema inference spells it."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def is_known(value: object) -> bool:
    """Whether ``value`` is a plain value here, not an Output or awaitable resolved at apply time."""
    return not isinstance(value, pulumi.Output | Awaitable)


def known_or(value: Any, stand_in: Any) -> Any:
    """``value`` when plain, else ``stand_in`` (what a model checks in place of an Output)."""
    return value if is_known(value) else stand_in


def validated(model: type[M], data: Mapping[str, Any], component: str, name: str) -> M:
    """``model`` from ``data`` (keys: the model's camelCase aliases, which are the inputs' schema names),
    or :class:`ComponentInputError` naming each bad input."""
    try:
        return model.model_validate({k: v for k, v in data.items() if v is not None})
    except pydantic.ValidationError as err:
        raise ComponentInputError(component, name, problems_from_pydantic(err)) from None


def value_problems(key: str, value: Any, annotation: Any) -> list[ConfigProblem]:
    """What is wrong with ``value`` as a value of ``annotation`` (one of the stack config's checked types,
    e.g. ``KubernetesVersion``), reported at input ``key``."""
    try:
        pydantic.TypeAdapter(annotation).validate_python(value)
    except pydantic.ValidationError as err:
        return [ConfigProblem(key, value, p.message) for p in problems_from_pydantic(err)]
    return []


def taints(given: Sequence[PoolTaint], component: str, name: str, key: str = "taints") -> list[Taint]:
    """The validated taints of ``given`` (input ``key``)."""
    problems: list[ConfigProblem] = []
    out: list[Taint] = []
    for i, taint in enumerate(given):
        try:
            out.append(Taint.model_validate(dict(taint)))
        except pydantic.ValidationError as err:
            problems += [
                ConfigProblem(
                    f"{key}[{i}]" + (f".{p.path}" if p.path != "(stack)" else ""), p.value, p.message
                )
                for p in problems_from_pydantic(err)
            ]
    if problems:
        raise ComponentInputError(component, name, problems)
    return out


def taint_inputs(given: Sequence[Taint]) -> list[PoolTaint]:
    """The input form of validated taints (what the program passes on from its stack config)."""
    return [PoolTaint(key=t.key, value=t.value, effect=t.effect) for t in given]
