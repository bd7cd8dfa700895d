"""A container's environment as the kubelet builds it, and what a shell script does to one variable.

The kubelet (kubernetes `pkg/kubelet/kubelet_pods.go`, `makeEnvironmentVariables`) takes `envFrom`
sources in order, a ConfigMap's `data` or a Secret's `data`/`stringData` keys each becoming a variable
named `prefix + key` (the source's `prefix`), and then `env`, which overrides them; each `env` value has
its `$(VAR)` references expanded with the variables before it. `command` and `args` are expanded with
the whole environment (`pkg/kubelet/container/helpers.go` `ExpandContainerCommandAndArgs`;
:mod:`oke_gpu_rdma.common.kube_expansion`) before the container starts, so what a script does is read from the
expanded text (:func:`command_texts`). A source that is not in the stack is not known here, nor is a
`valueFrom` value: references to those stay as written.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.kube_expansion import expand, mapping_for

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


def _source_values(obj: PlainResource, kind: str) -> dict[str, str | None]:
    """The variables an envFrom source gives (before the prefix): a ConfigMap's `data`, a Secret's `data`
    (base64, decoded; None when it is not) and `stringData`."""
    found: dict[str, str | None] = {}
    fields = ("data",) if kind == "ConfigMap" else ("data", "stringData")
    for field_name in fields:
        value = obj.props.get(field_name)
        if not isinstance(value, Mapping):
            continue
        for key, item in value.items():
            if not isinstance(item, str):
                found[str(key)] = None
            elif kind == "Secret" and field_name == "data":
                try:
                    found[str(key)] = base64.b64decode(item, validate=True).decode()
                except (binascii.Error, UnicodeDecodeError):
                    found[str(key)] = None
            else:
                found[str(key)] = item
    return found


def container_env(
    view: StackView, workload: PlainResource, path: str, container: Mapping[str, Any]
) -> dict[str, str | None]:
    """The container's environment as the kubelet builds it (module docstring): name -> value, None where
    the value is not known here (`valueFrom`, a value unknown until apply)."""
    env: dict[str, str | None] = {}
    for source in as_list(container.get("envFrom"), f"{path}.envFrom"):
        if not isinstance(source, Mapping):
            continue
        prefix = source.get("prefix") or ""
        if not isinstance(prefix, str):
            continue
        for ref_key, kind, type_ in _SOURCES:
            ref = source.get(ref_key)
            if not isinstance(ref, Mapping):
                continue
            for obj in view.of_type(type_):
                if obj.object_name == ref.get("name") and obj.namespace == workload.namespace:
                    env.update({prefix + k: v for k, v in _source_values(obj, kind).items()})
    for item in as_list(container.get("env"), f"{path}.env"):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            continue
        value = item.get("value")
        if isinstance(value, str):
            known = {k: v for k, v in env.items() if v is not None}
            env[item["name"]] = expand(value, mapping_for(known))
        elif item.get("valueFrom") is not None:
            env[item["name"]] = _value_from(view, workload, item["valueFrom"])
        elif value is UNKNOWN:
            env[item["name"]] = None
        else:
            env[item["name"]] = ""
    return env


def _value_from(view: StackView, workload: PlainResource, source: Any) -> str | None:
    """An `env[].valueFrom` value: a key of a ConfigMap or Secret the stack declares (`configMapKeyRef`,
    `secretKeyRef`, as the kubelet reads them); None for anything else (`fieldRef`, a source not here)."""
    if not isinstance(source, Mapping):
        return None
    for ref_key, kind, type_ in (
        ("configMapKeyRef", "ConfigMap", resource_types.CONFIG_MAP),
        ("secretKeyRef", "Secret", resource_types.SECRET),
    ):
        ref = source.get(ref_key)
        if not isinstance(ref, Mapping):
            continue
        for obj in view.of_type(type_):
            if obj.object_name == ref.get("name") and obj.namespace == workload.namespace:
                return _source_values(obj, kind).get(str(ref.get("key")))
    return None


def command_texts(
    view: StackView, workload: PlainResource, path: str, container: Mapping[str, Any]
) -> dict[str, list[Any]]:
    """`command` and `args` as the container gets them: each string with its `$(VAR)` references expanded
    from :func:`container_env` (kubelet ``ExpandContainerCommandAndArgs``); other items (a value unknown
    until apply) as they are."""
    env = container_env(view, workload, path, container)
    mapping = mapping_for({k: v for k, v in env.items() if v is not None})
    return {
        key: [
            expand(v, mapping) if isinstance(v, str) else v
            for v in as_list(container.get(key), f"{path}.{key}")
        ]
        for key in ("command", "args")
    }


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
