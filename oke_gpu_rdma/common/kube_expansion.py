"""`$(VAR)` references in a container's env values, command and args, expanded as the kubelet does.

The kubelet expands `command` and `args` with the container's environment before it starts the container
(kubernetes `pkg/kubelet/container/helpers.go` ``ExpandContainerCommandAndArgs``: ``expansion.Expand``
with ``expansion.MappingFuncFor(EnvVarsToMap(envs))``), and each `env` value with the variables defined
before it (`pkg/kubelet/kubelet_pods.go` ``makeEnvironmentVariables``). The syntax is
`third_party/forked/golang/expansion/expand.go` (tag v1.36.0):

* `$(NAME)` is replaced by NAME's value; a NAME the mapping does not know stays `$(NAME)` as written
  (``MappingFuncFor`` returns ``syntaxWrap(input)``);
* `$$` is an escaped `$`: it becomes `$` and what follows is not a reference (`$$(X)` -> `$(X)`);
* a `$` before any other character, a `$(` without `)` and a `$` at the end stay as written.

So `sh -c "mpirun -x NCCL_IB_GID_INDEX=$(GID)"` with `GID=3` in `env` runs with the value 3, and the
policy pack reads the text the container really gets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

OPERATOR: Final = "$"
OPENER: Final = "("
CLOSER: Final = ")"


def expand(text: str, mapping: Callable[[str], str]) -> str:
    """``text`` with every `$(NAME)` replaced by ``mapping(NAME)`` (expand.go ``Expand``)."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == OPERATOR and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            read, is_var, advance = _read_variable_name(text[cursor + 1 :])
            out.append(mapping(read) if is_var else read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def _read_variable_name(rest: str) -> tuple[str, bool, int]:
    """expand.go ``tryReadVariableName``: (text read, whether it is a variable name, bytes consumed)."""
    if rest[0] == OPERATOR:
        return OPERATOR, False, 1  # `$$`: an escaped operator
    if rest[0] == OPENER:
        end = rest.find(CLOSER, 1)
        if end != -1:
            return rest[1:end], True, end + 1
        return OPERATOR + OPENER, False, 1  # an incomplete reference stays as written
    return OPERATOR + rest[0], False, 1


def mapping_for(*contexts: Mapping[str, str]) -> Callable[[str], str]:
    """expand.go ``MappingFuncFor``: the first context that defines a name gives its value; an unknown name
    stays `$(NAME)`."""

    def lookup(name: str) -> str:
        for context in contexts:
            if name in context:
                return context[name]
        return f"{OPERATOR}{OPENER}{name}{CLOSER}"

    return lookup
