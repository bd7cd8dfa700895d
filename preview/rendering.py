"""`rendered/<stack>/`: every resource the program declares, as files a pull request shows as plain diffs.

    manifests/<kind>.<namespace>.<name>.yaml    Kubernetes objects as they would be applied (`_cluster`
                                                for cluster-scoped ones): point kubectl or a manifest
                                                validator at this folder alone
    resources/<type>.<logical name>.yaml        one record per declared resource of every provider:
                                                type, name, URN, parent, provider, the options the
                                                engine acts on, depends-on, and the inputs (for a
                                                Kubernetes object, the manifest it points to)
    policy-pack-config.json                     the policy pack config of the stack

Values are what the engine would receive, made readable and stable: OCIDs as the stack gives them;
the OCID of a resource the stack creates as `${<logical name>.id}` (offline it is a placeholder);
secrets as `[secret]`; base64 cloud-init decoded to its text (the record lists what was decoded);
keys sorted, so rendering twice gives the same bytes. preview/plan/change_plan.py reads these files back.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pulumi.runtime import rpc

from oke_gpu_rdma.common import yamltext
from stack_config.pack_config import FILENAME as PACK_CONFIG_FILE

from .mock_runtime import RecordedResource
from .plan import kube_provider

KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"
MANIFESTS = "manifests"
RESOURCES = "resources"
# Kubernetes types that are no API object a cluster stores: the provider itself, Helm releases and
# charts, YAML and kustomize bundles (components the provider expands), server-side-apply patches.
_NOT_MANIFESTS = re.compile(r"^kubernetes:(helm\.sh|yaml|kustomize)/|Patch$")
# Input keys whose value OCI takes as base64 and which hold text a reviewer must read (cloud-init).
_BASE64_TEXT_KEYS = frozenset({"user_data"})
_OCID = "ocid1."


def is_manifest(type_: str) -> bool:
    """Whether resources of this type are Kubernetes objects `kubectl apply` takes."""
    return type_.startswith("kubernetes:") and not _NOT_MANIFESTS.search(type_)


def manifest(r: RecordedResource) -> dict[str, Any]:
    """The object as YAML would show it: apiVersion, kind, metadata first, the rest sorted."""
    group_version, kind = r.type.removeprefix("kubernetes:").split(":", 1)
    group_version = group_version.removeprefix("core/")  # the core group has no name in apiVersion
    inputs = dict(r.inputs)
    head = {
        "apiVersion": inputs.pop("apiVersion", group_version),
        "kind": inputs.pop("kind", kind),
        "metadata": sorted_value(inputs.pop("metadata", {"name": r.name})),
    }
    return {**head, **{k: sorted_value(inputs[k]) for k in sorted(inputs)}}


def manifest_filename(document: Mapping[str, Any], fallback_name: str) -> str:
    meta = document.get("metadata") or {}
    namespace = meta.get("namespace") or "_cluster"
    return f"{document['kind']}.{namespace}.{meta.get('name', fallback_name)}.yaml".lower()


def manifests(resources: Iterable[RecordedResource]) -> dict[str, dict[str, Any]]:
    """File name -> manifest for each Kubernetes object the program declares."""
    out: dict[str, dict[str, Any]] = {}
    for r in resources:
        if is_manifest(r.type):
            document = manifest(r)
            out[manifest_filename(document, r.name)] = document
    return out


def sorted_value(value: Any) -> Any:
    """Mappings with sorted keys and no null values, recursively."""
    if isinstance(value, Mapping):
        return {k: sorted_value(value[k]) for k in sorted(value) if value[k] is not None}
    if isinstance(value, list):
        return [sorted_value(v) for v in value]
    return value


def type_slug(type_: str) -> str:
    """`oci:ContainerEngine/nodePool:NodePool` -> `oci-containerengine-nodepool` (file names)."""
    package, module, cls = [*type_.split(":", 2), "", ""][:3]
    parts = module.split("/")
    # pulumi-oci repeats the class in the module (`ContainerEngine/nodePool`); say it once.
    if len(parts) > 1 and parts[-1].lower() == cls.lower():
        parts = parts[:-1]
    return "-".join(p for p in [package, *parts, cls] if p).lower()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


class _Labels:
    """How records name other resources: the logical name, or `type::name` where a name is shared."""

    def __init__(self, resources: list[RecordedResource]) -> None:
        counts: dict[str, int] = {}
        for r in resources:
            counts[r.name] = counts.get(r.name, 0) + 1
        self._by_urn = {r.urn: (r.name if counts[r.name] == 1 else f"{r.type}::{r.name}") for r in resources}
        # A created resource's id is a placeholder offline; inputs name it by the resource instead.
        self.ids = {
            r.id: f"${{{self._by_urn[r.urn]}.id}}" for r in resources if r.custom and r.id.startswith(_OCID)
        }

    def of(self, urn: str) -> str:
        return self._by_urn.get(urn, urn)

    def reference(self, provider_ref: str) -> str:
        """A provider reference `<urn>::<id>` as the provider's label."""
        return self.of(provider_ref.rsplit("::", 1)[0]) if provider_ref else ""


def _readable(value: Any, labels: _Labels, path: str, decoded: list[str], oci: bool) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():  # in the order given: manifests put apiVersion, kind first
            if item is None:
                continue
            sub = f"{path}.{key}" if path else str(key)
            text = _decoded_text(item) if oci and key in _BASE64_TEXT_KEYS else None
            if text is not None:
                decoded.append(sub)
                out[key] = text
            else:
                out[key] = _readable(item, labels, sub, decoded, oci)
        return out
    if isinstance(value, list):
        return [_readable(v, labels, f"{path}[{i}]", decoded, oci) for i, v in enumerate(value)]
    if isinstance(value, str) and _OCID in value:
        for placeholder, reference in labels.ids.items():
            if placeholder in value:
                value = value.replace(placeholder, reference)
    return value


def _decoded_text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def _aliases(options: Mapping[str, Any]) -> list[str]:
    """Aliases as `name=...`/`type=...` text (the engine's alias specs, without empty fields)."""
    shown = []
    for alias in options.get("aliases", []):
        if isinstance(alias, str):
            shown.append(alias)
            continue
        spec = alias.get("spec", alias)
        shown.append(", ".join(f"{k}={v}" for k, v in sorted(spec.items()) if v not in ("", None, False)))
    return sorted(shown)


def resource_record(r: RecordedResource, labels: _Labels, manifest_file: str | None = None) -> dict[str, Any]:
    """The reviewable record of one resource (see the module docstring)."""
    record: dict[str, Any] = {"type": r.type, "name": r.name, "urn": r.urn}
    if r.parent:
        record["parent"] = labels.of(r.parent)
    if r.provider:
        record["provider"] = labels.reference(r.provider)
    options = {
        k: v for k, v in r.options.items() if k in ("protect", "deleteBeforeReplace", "customTimeouts")
    }
    if r.options.get("replaceOnChanges"):
        options["replaceOnChanges"] = sorted(r.options["replaceOnChanges"])
    if r.options.get("aliases"):
        options["aliases"] = _aliases(r.options)
    if options:
        record["options"] = options
    depends = sorted({labels.of(d) for d in r.dependencies})
    if depends:
        record["dependsOn"] = depends
    if manifest_file is not None:
        record["manifest"] = f"{MANIFESTS}/{manifest_file}"
        return record
    decoded: list[str] = []
    inputs = _readable(sorted_value(r.inputs), labels, "", decoded, r.type.startswith("oci:"))
    if decoded:
        record["decodedFromBase64"] = decoded
    if inputs:
        record["inputs"] = inputs
    if r.type == KUBERNETES_PROVIDER:
        active = _active_cluster(r)
        if active is not None:
            record[kube_provider.ACTIVE_CLUSTER] = active
    return record


def _active_cluster(r: RecordedResource) -> dict[str, Any] | None:
    """The kubeconfig's active cluster, read from the registration itself (the record masks the secret)."""
    inputs = rpc.deserialize_properties(r.struct, keep_unknowns=True) if r.struct else {}
    kubeconfig = inputs.get("kubeconfig")
    if isinstance(kubeconfig, Mapping):  # a secret: {sig: ..., value: ...}
        kubeconfig = kubeconfig.get("value")
    if not isinstance(kubeconfig, str):
        return None
    context, cluster = inputs.get("context"), inputs.get("cluster")
    return kube_provider.active_cluster(
        kubeconfig,
        context if isinstance(context, str) else None,
        cluster if isinstance(cluster, str) else None,
    )


def render_files(
    resources: list[RecordedResource], pack_config: Mapping[str, Any], documents: dict[str, Any] | None = None
) -> dict[str, str]:
    """Relative path -> file text: the whole `rendered/<stack>/` of a run.

    `documents`, when given, gets each YAML file's text -> the document it was dumped from (what loading
    the text gives back), so the change plan need not load what the run already holds.
    """
    labels = _Labels(resources)
    files: dict[str, str] = {}
    dumped: dict[str, Any] = {} if documents is None else documents

    def dump(document: dict[str, Any]) -> str:
        text = yamltext.dump(document)
        dumped[text] = document
        return text

    for r in resources:
        manifest_file = None
        if is_manifest(r.type):
            document = manifest(r)
            # Offline, ids of created OCI resources are placeholders; manifests name them as records do.
            document = _readable(document, labels, "", [], False)
            manifest_file = manifest_filename(document, r.name)
            files[f"{MANIFESTS}/{manifest_file}"] = dump(document)
        path = f"{RESOURCES}/{type_slug(r.type)}.{_safe(r.name)}.yaml"
        if path in files:
            raise ValueError(f"two resources render to {path}: give them distinct logical names")
        files[path] = dump(resource_record(r, labels, manifest_file))
    files[PACK_CONFIG_FILE] = json.dumps(pack_config, indent=2, sort_keys=True) + "\n"
    return dict(sorted(files.items()))


def write_files(files: Mapping[str, str], target: Path) -> None:
    """Replace `target` with exactly these files."""
    if target.exists():
        shutil.rmtree(target)
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
