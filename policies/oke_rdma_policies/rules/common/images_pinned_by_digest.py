"""images-pinned-by-digest (resource): every container image the stack writes names its content by digest.

A tag can be moved to other content by whoever controls the repository; a digest cannot (OCI distribution
spec v1.1.1 spec.md: a `<reference>` is a tag or a digest; the registry answers a digest with the content
that hashes to it). So each image the stack writes must be `repo[:tag]@sha256:<64 hex>`
(:func:`oke_gpu_rdma.common.images.is_pinned`), read from:

- every pod spec of a Kubernetes object, whatever its kind (Pod, Deployment, DaemonSet, StatefulSet,
  ReplicaSet, Job, CronJob, MPIJob, ...: :mod:`oke_gpu_rdma.common.pod_specs`), its containers, init containers
  and ephemeral containers, and the pod specs of the objects a ConfigMap labelled
  `oke-gpu-rdma/pod-templates` holds as JSON (the scheduled fabric check's MPIJobs);
- the values a Helm release or chart sets, for the charts whose image values the project knows
  (:data:`oke_gpu_rdma.common.images.CHART_IMAGES`: such a chart writes `<repository>:<tag>`, so the tag must be
  `<tag>@sha256:...`); a chart's own default image is the chart's, not the stack's, and is not judged;
- a NicClusterPolicy's image specs (`repository`, `image`, `version`: the Network Operator writes
  `repository/image@version` for a `sha256:` version, else `repository/image:version`; Mellanox/network-operator
  pkg/render/render.go `imagePath`).

An image no digest can be had for is refused unless the pack config lists it (`allowUnpinned`, empty by
default, :class:`oke_gpu_rdma.common.images.PinnedImagesSettings`); the project's own example stacks need their
known gaps listed (:data:`oke_gpu_rdma.common.images.KNOWN_GAPS`, docs/pod-security-and-images.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pulumi_policy import ResourceValidationArgs

from oke_gpu_rdma.common import images, resource_types
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.pack_settings import PinnedImagesSettings
from oke_gpu_rdma.common.pod_specs import POD_TEMPLATES_LABEL, find_pod_specs
from oke_rdma_policies import settings
from oke_rdma_policies.helm import helm_values
from oke_rdma_policies.kube import PlainResource, PodSpec, chart_basename, container_name, pod_specs
from oke_rdma_policies.registry import resource_rule
from oke_rdma_policies.report import Reporter, guarded, resource_where
from oke_rdma_policies.stack import from_resource_args
from oke_rdma_policies.values import UNKNOWN, as_list, as_map, dig

CONTAINER_LISTS: Final = ("initContainers", "containers", "ephemeralContainers")
_SHA256_VERSION: Final = re.compile(r"^sha256:[0-9a-f]{64}$")


def _fix(image: str, nic_cluster_policy: bool = False) -> str:
    how = (
        "set its version to sha256:<digest> (the operator then writes repository/image@<digest>)"
        if nic_cluster_policy
        else f"write it as {image.split('@', 1)[0]}@sha256:<digest>"
    )
    return (
        f"Fix: {how}; the registry answers HEAD /v2/<name>/manifests/<tag> with the digest in "
        "Docker-Content-Digest, and tools/refresh_digests.py records it in oke_gpu_rdma/common/image_digests.json. "
        f"Where no digest can be had, list {image!r} in the pack config's "
        f"{PinnedImagesSettings.policy}.allowUnpinned"
    )


def _pod_images(pod: PodSpec, reporter: Reporter, label: str) -> Iterator[tuple[str, str]]:
    """(where, image) of every container of a pod spec."""
    for key in CONTAINER_LISTS:
        value = pod.spec.get(key)
        if value is UNKNOWN:
            reporter.unchecked(f"{label} {pod.where}: {key} unknown until apply")
            continue
        for i, item in enumerate(as_list(value, f"{pod.path}.{key}")):
            path = f"{pod.path}.{key}[{i}]"
            if item is UNKNOWN:
                reporter.unchecked(f"{label} {pod.where}: {path} unknown until apply")
                continue
            container = as_map(item, path)
            image = container.get("image")
            where = f"{pod.where} {key.removesuffix('s')} {container_name(path, container)}"
            if image is UNKNOWN:
                reporter.unchecked(f"{label} {where}: its image is known only at apply")
            elif isinstance(image, str):
                yield where, image


def _workload_images(res: PlainResource, reporter: Reporter) -> Iterator[tuple[str, str, str]]:
    """(resource label, where, image) of a Kubernetes object's pod specs, and of the objects a pod-templates
    ConfigMap holds."""
    for pod in pod_specs(res):
        for where, image in _pod_images(pod, reporter, res.label):
            yield res.label, where, image
    if res.type != resource_types.CONFIG_MAP:
        return
    labels = dig(res.props, "metadata.labels")
    if not isinstance(labels, Mapping) or POD_TEMPLATES_LABEL not in labels:
        return
    data = res.props.get("data")
    if data is UNKNOWN:
        reporter.unchecked(f"{res.label}: its data is known only at apply")
        return
    for key, text in as_map(data, "data").items():
        if not isinstance(text, str):
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            continue  # not an object; the ConfigMap's own reader says so
        if not isinstance(obj, Mapping):
            continue
        kind = obj.get("kind", "object")
        label = f"{res.label} data {key} ({kind})"
        for path, spec in find_pod_specs(obj):
            for where, image in _pod_images(PodSpec(path, None, spec), reporter, label):
                yield label, where, image


def _chart_images(res: PlainResource, reporter: Reporter) -> Iterator[tuple[str, str, str, bool]]:
    """(label, where, image, pinned) for the image values a Helm release or chart sets."""
    facts = registry.release_of_chart(str(res.props.get("chart")))
    name = facts.chart_name if facts is not None else chart_basename(res.props.get("chart"))
    known = images.CHART_IMAGES.get(name or "")
    if known is None:
        return
    values = helm_values(res, reporter)
    if values is None:
        return
    label = f"{res.kind} {res.name} (chart {name})"
    repository = dig(values, known.repository_value)
    tag = dig(values, known.tag_value)
    if repository is UNKNOWN or tag is UNKNOWN:
        reporter.unchecked(f"{label}: its image values are known only at apply")
        return
    if repository is None and tag is None:
        return  # the chart's own image: not what the stack writes
    repo = (
        repository if isinstance(repository, str) else known.default_repository or "<the chart's repository>"
    )
    if not isinstance(tag, str) or not tag:
        reporter.violation(
            f"{label} values {known.repository_value}: sets the image's repository {repo!r} but leaves its tag "
            "to the chart, so the image is not pinned by digest. Fix: set "
            f"{known.tag_value} to <tag>@sha256:<digest> as well",
            res.urn,
        )
        return
    image = f"{repo}:{tag}"
    yield label, f"values {known.tag_value}", image, images.is_pinned(image)


def _image_specs(value: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(value, Mapping):
        if {"image", "repository", "version"} <= value.keys():
            yield path, value
            return
        for key, item in value.items():
            yield from _image_specs(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _image_specs(item, f"{path}[{i}]")


def _nic_cluster_policy_images(
    res: PlainResource, reporter: Reporter
) -> Iterator[tuple[str, str, str, bool]]:
    spec = res.props.get("spec")
    if spec is UNKNOWN:
        reporter.unchecked(f"{res.label}: its spec is known only at apply")
        return
    for path, found in _image_specs(spec, "spec"):
        repository, image, version = (found.get(k) for k in ("repository", "image", "version"))
        if UNKNOWN in (repository, image, version):
            reporter.unchecked(f"{res.label} {path}: its image is known only at apply")
            continue
        if not (isinstance(repository, str) and isinstance(image, str) and isinstance(version, str)):
            continue
        pinned = bool(_SHA256_VERSION.match(version))
        ref = f"{repository}/{image}{'@' if pinned else ':'}{version}"
        yield res.label, path, ref, pinned


def check(args: ResourceValidationArgs, reporter: Reporter) -> None:
    if not args.resource_type.startswith("kubernetes:"):
        return
    conf, problems = settings.read_section(PinnedImagesSettings, args.get_config())
    for problem in problems:
        reporter.violation(f"{problem}; every image was judged as if none were allowed unpinned", args.urn)
    allowed = set(conf.allow_unpinned)
    res = from_resource_args(args)
    found: list[tuple[str, str, str, bool]] = []
    if res.type in resource_types.HELM_TYPES:
        found += _chart_images(res, reporter)
    elif res.type == resource_types.NIC_CLUSTER_POLICY:
        found += _nic_cluster_policy_images(res, reporter)
    else:
        found += [
            (label, where, image, images.is_pinned(image))
            for label, where, image in _workload_images(res, reporter)
        ]
    for label, where, image, pinned in found:
        if pinned or image in allowed:
            continue
        reporter.violation(
            f"{label} {where}: image {image!r} is not pinned by digest, so whoever can move its tag decides "
            f"what runs. {_fix(image, res.type == resource_types.NIC_CLUSTER_POLICY)}",
            args.urn,
        )


RULE = resource_rule(
    name=PinnedImagesSettings.policy,
    level="mandatory",
    description=(
        "Every container image a Kubernetes workload of the stack names (any kind with a pod spec, the fabric "
        "check's job templates), every image value the stack sets on a chart whose image values the project "
        "knows, and a NicClusterPolicy's images are pinned by digest (repo[:tag]@sha256:<64 hex>); pack config "
        "allowUnpinned lists the images allowed by tag alone (none by default)."
    ),
    validate=guarded(check, resource_where),
    settings=PinnedImagesSettings,
)
