"""What `pulumi up` would do, from a base rendering to the new one, in Pulumi's own vocabulary.

Each resource record of the new rendering is matched with the base's by URN (or by an alias the
program declares); its inputs are compared path by path, and each changed path is judged by the
provider's own rules (preview/plan/replace_rules.py). Then replacements spread as the engine spreads them:
an input that names a replaced resource's id (`${name.id}`) is unknown before apply, a secret input
of a resource depending on a replaced one may be, and a resource whose provider is replaced is
replaced too. Steps are:

    +  create     ~  update     +- replace     -+ replace, deleting the old one first     -  delete
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from oke_gpu_rdma.scheduling import mpi_operator
from preview.rendering import RESOURCES
from stack_config.model import PROTECT_KEY_OF_COMPONENT
from stack_config.pack_config import FILENAME as PACK_CONFIG_FILE
from stack_config.settings_types import PROJECT

from . import kube_provider, replace_rules
from .replace_rules import PROVIDER_PATH, UNKNOWN, Path, show

SECRET = "[secret]"
# libyaml's parser when PyYAML has it (the wheels do): the pure-Python one made parsing most of the plan.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Op = Literal["same", "create", "update", "replace", "delete"]
SYMBOLS = {"same": " ", "create": "+", "update": "~", "replace": "+-", "delete": "-"}


@dataclass(frozen=True)
class Record:
    """A resource as `rendered/<stack>/resources/` holds it (inputs from its manifest for objects)."""

    urn: str
    type: str
    name: str
    parent: str
    provider: str
    options: Mapping[str, Any]
    depends_on: tuple[str, ...]
    inputs: Mapping[str, Any]
    active_cluster: Mapping[str, Any] | None = None
    """A Kubernetes provider's active cluster (preview/plan/kube_provider.py), what DiffConfig compares."""

    @property
    def label(self) -> str:
        return self.name

    @property
    def protect(self) -> bool:
        return bool(self.options.get("protect"))


@dataclass
class Rendering:
    records: dict[str, Record]
    """By URN, in file order."""
    pack_config: Any = None

    def by_label(self) -> dict[str, Record]:
        counts: dict[str, int] = {}
        for r in self.records.values():
            counts[r.name] = counts.get(r.name, 0) + 1
        return {(r.name if counts[r.name] == 1 else f"{r.type}::{r.name}"): r for r in self.records.values()}


def tree_order(rendering: Rendering) -> list[str]:
    """URNs parents first, siblings by name (the order of the preview's tree)."""
    labels = {label: r.urn for label, r in rendering.by_label().items()}
    children: dict[str, list[Record]] = {}
    for r in rendering.records.values():
        children.setdefault(labels.get(r.parent, ""), []).append(r)
    order: list[str] = []

    def walk(urn: str) -> None:
        for kid in sorted(children.get(urn, []), key=lambda r: (r.name, r.type)):
            order.append(kid.urn)
            walk(kid.urn)

    walk("")
    # Records whose parent is not in the rendering still get a place.
    return order + [u for u in rendering.records if u not in set(order)]


def parse(files: Mapping[str, str], loaded: dict[str, Any] | None = None) -> Rendering:
    """A rendering from its files (paths relative to `rendered/<stack>/`).

    `loaded` (YAML text -> document), shared by the base's and the new rendering's parse, loads a file
    both hold unchanged once: building the documents was most of the plan's cost. Nothing in the plan
    changes a parsed document in place (`_with_input` copies), so the two renderings may share them.
    """
    cache: dict[str, Any] = {} if loaded is None else loaded

    def load(text: str) -> Any:
        if text not in cache:
            cache[text] = yaml.load(text, Loader=_Loader) or {}
        return cache[text]

    records: dict[str, Record] = {}
    for path in sorted(files):
        if not (path.startswith(f"{RESOURCES}/") and path.endswith(".yaml")):
            continue
        document = load(files[path])
        inputs = document.get("inputs") or {}
        if "manifest" in document:
            inputs = load(files.get(document["manifest"], ""))
        records[document["urn"]] = Record(
            urn=document["urn"],
            type=document["type"],
            name=document["name"],
            parent=document.get("parent", ""),
            provider=document.get("provider", ""),
            options=document.get("options") or {},
            depends_on=tuple(document.get("dependsOn") or ()),
            inputs=inputs,
            active_cluster=document.get(kube_provider.ACTIVE_CLUSTER),
        )
    pack = files.get(PACK_CONFIG_FILE)
    return Rendering(records, json.loads(pack) if pack else None)


@dataclass
class Change:
    path: Path
    kind: Literal["+", "-", "~"]
    old: Any
    new: Any
    rule: replace_rules.Rule = field(default_factory=lambda: replace_rules.Rule(False))
    cause: str = ""
    """The replaced resource that changes this value although the program did not (its name)."""
    judged: bool = False
    """Its rule was decided where the change was found (a provider change, a kubeconfig's active cluster)."""

    @property
    def shown(self) -> str:
        return show(self.path)


@dataclass
class Step:
    op: Op
    record: Record
    """The new record (the base's for a delete)."""
    base: Record | None = None
    changes: list[Change] = field(default_factory=list)
    delete_first: bool = False
    notes: list[str] = field(default_factory=list)
    error: str = ""
    """The error `pulumi preview` reports for this step (a protected resource it must not replace or
    delete); `pulumi up` stops there."""
    protect_key: str = ""
    """The key of `oke-gpu-rdma:protect` this resource's protection comes from ("" if none names it)."""

    @property
    def symbol(self) -> str:
        return "-+" if self.op == "replace" and self.delete_first else SYMBOLS[self.op]

    def diff_info(self) -> str:
        return ", ".join(f"{c.kind}{c.shown}" for c in self.changes)

    def line(self) -> str:
        """`+- oci:Core/computeCluster:ComputeCluster gpu-b4-compute-cluster replace [diff: ~availabilityDomain]`."""
        text = f"{self.symbol} {self.record.type} {self.record.name} {self.op}"
        return f"{text} [diff: {self.diff_info()}]" if self.changes else text

    def replacing(self) -> list[Change]:
        return [c for c in self.changes if c.rule.replaces]


@dataclass
class Plan:
    steps: list[Step]
    """Every resource of the new rendering (same ones included), then the deletes."""
    base_description: str
    has_base: bool
    pack_config_changes: list[Change] = field(default_factory=list)

    def changed(self) -> list[Step]:
        return [s for s in self.steps if s.op != "same"]

    def has_changes(self) -> bool:
        """Anything `pulumi up` would do or record: a step, an option change (notes), the pack config."""
        return bool(self.changed() or self.pack_config_changes or any(s.notes for s in self.steps))

    def step(self, name: str) -> Step:
        (found,) = [s for s in self.steps if s.record.name == name]
        return found

    def counts(self) -> dict[str, int]:
        """Steps per op; a step the engine refuses counts as `refused`, not as what it would have done."""
        counts: dict[str, int] = {}
        for s in self.steps:
            key = "refused" if s.error else s.op
            counts[key] = counts.get(key, 0) + 1
        return counts

    def refused(self) -> list[Step]:
        return [s for s in self.steps if s.error]


# --- comparing values --------------------------------------------------------------------------------


def diff_values(old: Any, new: Any, path: Path = ()) -> Iterator[Change]:
    """Changed leaves (or whole added/removed subtrees) between two JSON-like values."""
    if old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            if key not in old:
                yield Change((*path, key), "+", None, new[key])
            elif key not in new:
                yield Change((*path, key), "-", old[key], None)
            else:
                yield from diff_values(old[key], new[key], (*path, key))
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            if i >= len(old):
                yield Change((*path, i), "+", None, new[i])
            elif i >= len(new):
                yield Change((*path, i), "-", old[i], None)
            else:
                yield from diff_values(old[i], new[i], (*path, i))
    else:
        yield Change(path, "~", old, new)


def _leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(value, Mapping):
        for key in value:
            yield from _leaves(value[key], (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, (*path, i))
    else:
        yield path, value


def _set(value: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, list):
        copy = list(value)
        copy[int(head)] = _set(copy[int(head)], rest, new)
        return copy
    return {**value, head: _set(value[head], rest, new)}


# --- the plan ----------------------------------------------------------------------------------------


def _match(base: Rendering, new: Rendering) -> dict[str, str]:
    """New URN -> base URN: the same URN, else one an alias of the new resource names."""
    matched = {urn: urn for urn in new.records if urn in base.records}
    taken = set(matched.values())
    for urn, record in new.records.items():
        if urn in matched:
            continue
        for alias in record.options.get("aliases", []):
            spec = dict(part.split("=", 1) for part in alias.split(", ") if "=" in part)
            head, _, name = urn.rpartition("::")
            if "type" in spec:
                head = head[: -len(record.type)] + spec["type"] if head.endswith(record.type) else head
            candidate = f"{head}::{spec.get('name', name)}"
            if candidate in base.records and candidate not in taken:
                matched[urn] = candidate
                taken.add(candidate)
                break
    return matched


def _judge(step: Step, providers: Mapping[str, Record]) -> None:
    """Set each change's rule, then the step's op from them."""
    record = step.record
    provider = providers.get(record.provider)
    for change in step.changes:
        if change.path == PROVIDER_PATH or change.judged:
            continue  # judged where it was added
        change.rule = replace_rules.rule(
            record.type,
            change.path,
            change.new,
            old_value=change.old,
            replace_on_changes=record.options.get("replaceOnChanges", ()),
            inputs=dict(record.inputs),
            provider_inputs=dict(provider.inputs) if provider else None,
        )
    step.changes.sort(key=lambda c: c.shown)
    replacing = step.replacing()
    step.op = "replace" if replacing else "update" if step.changes else "same"
    step.delete_first = bool(replacing) and (
        bool(record.options.get("deleteBeforeReplace"))
        or replace_rules.provider_deletes_first(
            record.type,
            dict(step.base.inputs) if step.base else {},
            dict(record.inputs),
            [c.rule for c in step.changes],
        )
    )


def build(base: Rendering | None, new: Rendering, base_description: str) -> Plan:
    """The plan from `base` (None: no base, everything is a create) to `new`."""
    if base is None:
        creates = [Step("create", new.records[urn]) for urn in tree_order(new)]
        return Plan(creates, base_description, has_base=False)
    matched = _match(base, new)
    steps: list[Step] = []
    for urn, record in new.records.items():
        if urn not in matched:
            steps.append(Step("create", record))
            continue
        old = base.records[matched[urn]]
        step = Step("same", record, old, list(diff_values(dict(old.inputs), dict(record.inputs))))
        if record.provider != old.provider:
            step.changes.append(
                Change(
                    PROVIDER_PATH,
                    "~",
                    old.provider,
                    record.provider,
                    replace_rules.Rule(True, "provider changed"),
                )
            )
        if old.active_cluster != record.active_cluster and old.active_cluster and record.active_cluster:
            # pulumi-kubernetes DiffConfig: the kubeconfig's active cluster changes (kube_provider.py).
            step.changes.append(
                Change(
                    ("kubeconfig",),
                    "~",
                    old.inputs.get("kubeconfig"),
                    record.inputs.get("kubeconfig"),
                    replace_rules.Rule(
                        True,
                        "pulumi-kubernetes DiffConfig replaces the provider when the kubeconfig's active "
                        f"cluster changes ({_changed_keys(old.active_cluster, record.active_cluster)})",
                        provider_rule=True,
                    ),
                    judged=True,
                )
            )
        if bool(old.options.get("protect")) != bool(record.options.get("protect")):
            step.notes.append(f"protect: {str(old.protect).lower()} => {str(record.protect).lower()}")
        steps.append(step)
    labels = new.by_label()
    providers = {label: r for label, r in labels.items() if r.type.startswith("pulumi:providers:")}
    for step in steps:
        if step.base is not None:
            _judge(step, providers)
    _spread_replacements(steps, providers)
    position = {urn: i for i, urn in enumerate(tree_order(new))}
    steps.sort(key=lambda s: position[s.record.urn])
    survivors = set(matched.values())
    moved = _moved_into_manifests(base, new)
    for urn in tree_order(base):
        if urn in moved and urn not in survivors:
            steps.append(Step("same", base.records[urn], base.records[urn], notes=[moved[urn]]))
        elif urn not in survivors:
            steps.append(Step("delete", base.records[urn], base.records[urn]))
    keys = {**_protect_keys(base), **_protect_keys(new)}
    for step in steps:
        step.protect_key = keys.get(step.record.urn, "")
        step.error = protection_error(step)
    pack_changes = list(diff_values(base.pack_config, new.pack_config))
    return Plan(steps, base_description, has_base=True, pack_config_changes=pack_changes)


def _protect_keys(rendering: Rendering) -> dict[str, str]:
    """URN -> the `protect` key its component takes its flag from (stack_config/model.py)."""
    labels = rendering.by_label()
    keys: dict[str, str] = {}
    for urn, record in rendering.records.items():
        current: Record | None = record
        seen: set[str] = set()
        while current is not None and current.urn not in seen:
            seen.add(current.urn)
            if current.type in PROTECT_KEY_OF_COMPONENT:
                keys[urn] = PROTECT_KEY_OF_COMPONENT[current.type]
                break
            current = labels.get(current.parent)
    return keys


def protect_setting(*steps: Step) -> str:
    """The stack setting that unprotects the resources of `steps`: their kinds alone, or every kind."""
    if not all(s.protect_key for s in steps):
        return f"`{PROJECT}:protect: false`"
    order = list(PROTECT_KEY_OF_COMPONENT.values())
    keys = sorted({s.protect_key for s in steps}, key=order.index)
    return f"`{PROJECT}:protect: {{{', '.join(f'{k}: false' for k in keys)}}}`"


def _label_name(label: str) -> str:
    return label.rpartition("::")[2]


def _moved_into_manifests(base: Rendering, new: Rendering) -> dict[str, str]:
    """Base URN -> why it is no delete: an object the stack declared itself that a child of a new
    ConfigFile (an MPI operator release manifest, applied at apply time) takes over by alias
    (components/health/acceptance_jobs.py `_moved_objects`; the engine matches an alias as the same resource,
    pulumi/pulumi pkg/resource/deploy/step_generator.go). The ConfigFile's children are registered by
    the provider at apply time, so the plan knows them from the release's facts."""
    moved: dict[str, str] = {}
    # A parent is named by its label, which the rendering qualifies with the type only where two
    # resources share a name, so compare the name alone.
    by_identity = {(r.type, _label_name(r.parent), r.name): urn for urn, r in base.records.items()}
    for record in new.records.values():
        release = mpi_operator.release_of_manifest(record.inputs.get("file"))
        if record.type != mpi_operator.CONFIG_FILE_TYPE or release is None:
            continue
        component = _label_name(record.parent)
        for obj in release.objects:
            old = by_identity.get(
                (obj.resource_type, component, mpi_operator.alias_name(component, obj.kind, obj.name))
            )
            if old is not None:
                moved[old] = (
                    f"moves under ConfigFile {record.name} as {obj.config_file_child_name(record.name)} "
                    "(aliased: kept, not deleted); its inputs come from the manifest fetched at apply time"
                )
    return moved


def _changed_keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    return ", ".join(k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k))


def protection_error(step: Step) -> str:
    """The engine's error for a step that `protect` refuses, or "" (pulumi/pulumi pkg/resource/deploy).

    step_generator.go refuses a replacement only when the resource is protected before and after it
    ("we do allow unprotecting and replacing to happen in a single update cycle, we don't look at
    old.Protect here": the check is `new.Protect && old.Protect`); step.go refuses to delete a resource
    protected in the state (`deleteProtectedError`). The first line of each is the engine's; the engine's
    advice ("remove the `protect` flag from the resource in your Pulumi program") is replaced by the stack
    setting that does it here (`oke-gpu-rdma:protect`, per kind).
    """
    if step.base is None:
        return ""
    urn = step.base.urn
    if step.op == "replace" and step.base.protect and step.record.protect:
        return (
            f'unable to replace resource "{urn}"\nas it is currently marked for protection. To replace it, '
            f"set {protect_setting(step)} in the stack file: the same `pulumi up` unprotects and replaces it"
        )
    if step.op == "delete" and step.base.protect:
        return (
            f'resource "{urn}" cannot be deleted\nbecause it is protected. To delete it, first run `pulumi up` '
            f"with {protect_setting(step)} while it is still declared, or use the command:\n"
            f"`pulumi state unprotect '{urn}'`"
        )
    return ""


def _spread_replacements(steps: list[Step], providers: Mapping[str, Record]) -> None:
    """Replacements make ids and secrets unknown downstream, and replace what a replaced provider manages."""
    while True:
        replaced = {s.record.name for s in steps if s.op == "replace"}
        grew = False
        for step in steps:
            if step.base is None or step.op == "replace":
                continue
            added = False
            changed = {c.path for c in step.changes}
            for path, value in _leaves(step.record.inputs):
                if path in changed or not isinstance(value, str):
                    continue
                cause = next((n for n in replaced if f"${{{n}.id}}" in value), None)
                if cause is None and value == SECRET:
                    cause = next((d for d in step.record.depends_on if d in replaced), None)
                if cause is not None:
                    step.changes.append(Change(path, "~", value, UNKNOWN, cause=cause))
                    step.record = _with_input(step.record, path, UNKNOWN)
                    added = True
            if step.record.provider in replaced and not any(c.path == PROVIDER_PATH for c in step.changes):
                step.changes.append(
                    Change(
                        PROVIDER_PATH,
                        "~",
                        step.record.provider,
                        step.record.provider,
                        replace_rules.Rule(True, f"its provider {step.record.provider} is replaced"),
                        cause=step.record.provider,
                    )
                )
                added = True
            if added:
                _judge(step, providers)
                grew = grew or _replaced(step)
        if not grew:
            return


def _replaced(step: Step) -> bool:
    return step.op == "replace"


def _with_input(record: Record, path: Path, value: Any) -> Record:
    return Record(
        record.urn,
        record.type,
        record.name,
        record.parent,
        record.provider,
        record.options,
        record.depends_on,
        _set(dict(record.inputs), path, value),
    )


def root_causes(step: Step, steps: Mapping[str, Step]) -> list[tuple[Step, list[str]]]:
    """The steps whose own inputs make `step` a replacement, with those inputs (following causes)."""
    found: dict[str, tuple[Step, list[str]]] = {}

    def follow(current: Step, seen: frozenset[str]) -> None:
        for change in current.replacing():
            cause = steps.get(change.cause) if change.cause else None
            if cause is not None and cause.record.name not in seen:
                follow(cause, seen | {cause.record.name})
            elif not change.cause:
                found.setdefault(current.record.name, (current, []))[1].append(change.shown)

    follow(step, frozenset({step.record.name}))
    return list(found.values())
