"""The Kubeflow MPI operator, installed from its pinned release manifest at apply time (a ConfigFile),
its cluster-wide ClusterRole narrowed to namespaced Roles of the namespaces its jobs run in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.common import access_control
from oke_gpu_rdma.common import images, pod_security, resource_types
from oke_gpu_rdma.scheduling import mpi_operator as mpi_operator_facts
from stack_config.health.acceptance_settings import AcceptanceJobsConfig


def moved_objects(component: pulumi.Resource, component_name: str) -> pulumi.ResourceTransform:
    """A transform that gives each object of the manifest the alias of the name it had when this
    component declared the objects itself, so that a stack moving to the ConfigFile keeps them (the CRD
    above all: deleting it deletes every MPIJob). Transforms reach the children a packaged component's
    provider registers (pulumi docs, Resource option: transforms), which the ConfigFile's are."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        metadata = args.props.get("metadata")
        kind = args.props.get("kind")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not args.custom or not isinstance(kind, str) or not isinstance(name, str):
            return None
        alias = pulumi.Alias(name=mpi_operator_facts.alias_name(component_name, kind, name), parent=component)
        return pulumi.ResourceTransformResult(
            args.props, pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(aliases=[alias]))
        )

    return transform


# The operator Deployment's security context: Pod Security restricted (oke_gpu_rdma/common/pod_security.py). Upstream's
# image is distroless with a static Go binary that needs no privilege and no particular user; 65532 is
# distroless' nonroot user.
OPERATOR_POD_SECURITY: Final = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "seccompProfile": {"type": "RuntimeDefault"},
}
OPERATOR_CONTAINER_SECURITY: Final = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def narrowed_object(
    props: dict[str, Any], release: mpi_operator_facts.Release, namespace: str
) -> dict[str, Any] | None:
    """The manifest object ``props`` as the stack applies it (None: as upstream wrote it): the operator's
    ClusterRole keeps only its cluster-wide reads, its Deployment watches ``namespace`` alone and passes Pod
    Security restricted, and its Namespace enforces restricted (oke_gpu_rdma/scheduling/mpi_operator.py says why)."""
    kind = props.get("kind")
    found = props.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    name = metadata.get("name")
    if kind == "ClusterRole" and name == mpi_operator_facts.OPERATOR_ROLE:
        return {**props, "rules": release.cluster_rules()}
    if kind == "Namespace" and name == release.deployment["namespace"]:
        labels = {
            **(metadata.get("labels") or {}),
            **pod_security.namespace_labels(pod_security.MPI_OPERATOR_LEVEL),
        }
        return {**props, "metadata": {**metadata, "labels": labels}}
    if kind == "Deployment" and name == release.deployment["name"]:
        spec = dict(props.get("spec") or {})
        template = dict(spec.get("template") or {})
        pod = dict(template.get("spec") or {})
        containers = [dict(c) for c in pod.get("containers") or ()]
        containers[0] = {
            **containers[0],
            "args": release.args_for(namespace),
            "securityContext": dict(OPERATOR_CONTAINER_SECURITY),
        }
        containers[0]["image"] = images.pinned(str(containers[0].get("image")))
        pod = {**pod, "containers": containers, "securityContext": dict(OPERATOR_POD_SECURITY)}
        return {**props, "spec": {**spec, "template": {**template, "spec": pod}}}
    return None


def narrowed_summary(release: mpi_operator_facts.Release, namespace: str) -> dict[str, Any]:
    """What :func:`narrowed_object` changes, by object: what the stack applies instead of upstream's."""
    deployment = f"Deployment {release.deployment['namespace']}/{release.deployment['name']}"
    return {
        "narrowed": {
            f"ClusterRole {mpi_operator_facts.OPERATOR_ROLE}": {"rules": release.cluster_rules()},
            deployment: {
                "args": release.args_for(namespace),
                "podSecurityContext": dict(OPERATOR_POD_SECURITY),
                "securityContext": dict(OPERATOR_CONTAINER_SECURITY),
            },
            f"Namespace {release.deployment['namespace']}": {
                "labels": pod_security.namespace_labels(pod_security.MPI_OPERATOR_LEVEL)
            },
        }
    }


def _narrowed(release: mpi_operator_facts.Release, namespace: str) -> pulumi.ResourceTransform:
    """A transform that applies :func:`narrowed_object` to the ConfigFile's objects."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if not args.custom:
            return None
        props = narrowed_object(dict(args.props), release, namespace)
        return None if props is None else pulumi.ResourceTransformResult(props, args.opts)

    return transform


def operator_roles(
    name: str, release: mpi_operator_facts.Release, namespace: str, opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """The operator's namespaced Roles and their bindings to its ServiceAccount: in the jobs' namespace, and
    in its lock namespace (the Lease)."""
    sa_namespace, sa_name = release.service_account
    subject = k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=sa_name, namespace=sa_namespace)
    declared: list[pulumi.Resource] = []
    for role, where, rules in (
        ("jobs", namespace, release.job_rules()),
        ("lock", release.lock_namespace, release.lock_rules()),
    ):
        declared += access_control.role_with_binding(
            f"{name}-{role}-role", mpi_operator_facts.OPERATOR_ROLE, where, rules, [subject], opts
        )
    return declared


class MpiOperator(pulumi.ComponentResource):
    """The Kubeflow MPI operator, which both rail paths' NCCL jobs need: its release manifest
    (kubeflow/mpi-operator deploy/v2beta1/mpi-operator.yaml at the release's commit) applied by
    pulumi-kubernetes' yaml/v2 ConfigFile, which fetches it at apply time. What the preview needs of
    it (its objects, where its Deployment runs) are facts in oke_gpu_rdma/scheduling/mpi_operator.py."""

    manifest: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        config: AcceptanceJobsConfig,
        namespace: str,
        needs: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions,
    ) -> None:
        release = mpi_operator_facts.release(config.mpi_operator_version)
        # The component's inputs say what the transforms change in upstream's manifest, so the rendering
        # and the plan show it (the ConfigFile's objects are fetched at apply time, unseen offline).
        super().__init__(
            resource_types.MPI_OPERATOR_COMPONENT, name, narrowed_summary(release, namespace), opts
        )
        # On an apply, the manifest is fetched and its sha256 checked against the recorded one first
        # (ManifestDigestError names both; issue 36 item 9): a moved or altered release file stops the update
        # before anything of it is applied. The provider then fetches the same URL itself.
        if not pulumi.runtime.is_dry_run():
            try:
                mpi_operator_facts.fetch_manifest(release)
            except mpi_operator_facts.ManifestDigestError as err:
                raise pulumi.RunError(str(err)) from None  # the engine prints the message, not a traceback
        # yaml/v2 applies the Namespace and the CRD before the objects that need them; every object
        # waits for `needs` (the Deployment runs on the system pool), and the jobs wait for the
        # ConfigFile, whose registration ends after its last child's.
        self.config_file = k8s.yaml.v2.ConfigFile(
            f"{name}-manifest",
            file=release.manifest_url,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(needs),
                transforms=[moved_objects(self, name), _narrowed(release, namespace)],
            ),
        )
        # The lock namespace comes with the manifest, the jobs' namespace with `needs`.
        self.roles = operator_roles(
            name, release, namespace, pulumi.ResourceOptions(parent=self, depends_on=[self.config_file])
        )
        self.manifest = pulumi.Output.from_input(release.manifest_url)
        self.register_outputs({"manifest": self.manifest})


def mpi_operator(
    name: str,
    config: AcceptanceJobsConfig,
    namespace: str,
    needs: Sequence[pulumi.Resource],
    opts: pulumi.ResourceOptions,
) -> MpiOperator:
    """The Kubeflow MPI operator (its release manifest, applied at apply time) for the MPIJobs of ``namespace``,
    which both rail paths' NCCL jobs need."""
    return MpiOperator(f"{name}-mpi-operator", config, namespace, needs, opts)
