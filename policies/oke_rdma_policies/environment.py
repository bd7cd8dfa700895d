"""A container's environment as the kubelet builds it, and what a shell script does to one variable.

The kubelet (kubernetes `pkg/kubelet/kubelet_pods.go`, `makeEnvironmentVariables`) takes `envFrom`
sources in order, a ConfigMap's `data` or a Secret's `data`/`stringData` keys each becoming a variable
named `prefix + key` (the source's `prefix`), and then `env`, which overrides them. A source that is
not in the stack is not known here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from oke_gpu_rdma import resource_types

from .kube import PlainResource
from .stack import StackView
from .values import UNKNOWN, as_list, as_map

_SOURCES: Final = (
    ("configMapRef", "ConfigMap", resource_types.CONFIG_MAP),
    ("secretRef", "Secret", resource_types.SECRET),
)


@dataclass(frozen=True)
class EnvSetting:
    """Where a container's variable comes from, for messages."""

    source: str  # "env[2]", "envFrom[0] ConfigMap nccl (prefix NCCL_)"
    shown: str  # "=3" or " from a Secret"


def _keys(obj: PlainResource) -> dict[str, Any]:
    keys: dict[str, Any] = {}
    for field in ("data", "stringData", "binaryData"):
        value = obj.props.get(field)
        if isinstance(value, Mapping):
            keys.update(value)
    return keys


def settings_of(
    view: StackView,
    workload: PlainResource,
    path: str,
    container: Mapping[str, Any],
    variable: str,
    notes: list[str],
) -> list[EnvSetting]:
    """How the container's environment sets ``variable`` (env, envFrom ConfigMaps and Secrets)."""
    found: list[EnvSetting] = []
    for i, source in enumerate(as_list(container.get("envFrom"), f"{path}.envFrom")):
        if source is UNKNOWN:
            notes.append(f"{path}.envFrom[{i}] unknown until apply")
            continue
        source = as_map(source, f"{path}.envFrom[{i}]")
        prefix = source.get("prefix") or ""
        if prefix is UNKNOWN or not isinstance(prefix, str):
            notes.append(f"{path}.envFrom[{i}].prefix unknown until apply")
            continue
        if not variable.startswith(prefix):
            continue
        key = variable.removeprefix(prefix)
        for ref_key, kind, type_ in _SOURCES:
            ref = source.get(ref_key)
            if not isinstance(ref, Mapping):
                continue
            name = ref.get("name")
            matches = [
                r for r in view.of_type(type_) if r.object_name == name and r.namespace == workload.namespace
            ]
            if not matches:
                notes.append(f"{path}.envFrom[{i}] {kind} {name} is not declared in this stack")
            for obj in matches:
                keys = _keys(obj)
                if key in keys:
                    shown = f"={keys[key]}" if kind == "ConfigMap" else f" from Secret key {key}"
                    where = f"envFrom[{i}] {kind} {name}" + (f" (prefix {prefix})" if prefix else "")
                    found.append(EnvSetting(where, shown))
    for i, env in enumerate(as_list(container.get("env"), f"{path}.env")):
        if isinstance(env, Mapping) and env.get("name") == variable:
            value = env.get("value")
            found.append(
                EnvSetting(f"env[{i}]", f"={value}" if isinstance(value, str) else " from valueFrom")
            )
    return found


def _events(variable: str) -> re.Pattern[str]:
    v = re.escape(variable)
    return re.compile(
        rf"(?P<unset>\bunset\s+(?:-v\s+)?(?:[A-Za-z_]\w*\s+)*?{v}\b)"
        rf"|(?P<set>(?<![\w$]){v}=)"
        rf"|(?P<use>-x\s+{v}\b(?!=)|\$\{{?{v}\b)"
    )


def script_sets(text: str, variable: str) -> bool:
    """Whether a shell script passes ``variable`` on with a value: it assigns it (`VAR=3`, `export VAR=3`,
    `mpirun -x VAR=3`) and does not unset it before it is used or the script ends, or it forwards it
    (`mpirun -x VAR`, `$VAR`) without unsetting it first (the value then comes from the image or the
    environment). `unset VAR` before use leaves it unset (POSIX `unset`)."""
    live = False  # assigned by the script and not unset since
    cleared = False  # unset by the script (and not assigned since)
    for match in _events(variable).finditer(text):
        if match.group("set"):
            live, cleared = True, False
        elif match.group("unset"):
            live, cleared = False, True
        elif match.group("use") and (live or not cleared):
            return True
    return live
