"""The optional acceptance jobs (components/health/acceptance_jobs.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from components.claims.rdma_workloads import SCRIPTS
from components.health.mpijob_specs import EXPECTED_NCCL, EXPECTED_RAILS
from components.scheduling.mpi_operator_install import moved_objects as _moved_objects
from components.scheduling.mpi_operator_install import narrowed_object
from oke_gpu_rdma.common import pod_security
from oke_gpu_rdma.drivers.nccl import NCCL_FORBIDDEN_WITH_DRANET, NCCL_SETTINGS
from oke_gpu_rdma.scheduling import mpi_operator
from stack_config.health.acceptance_settings import AcceptanceJobsConfig
from tests.support import Run, raw_config, without_remediation

MPIJOB = "kubernetes:kubeflow.org/v2beta1:MPIJob"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"


def with_jobs(**jobs: object) -> dict:
    raw = raw_config("dev")
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, **jobs}}
    return raw


def test_off_by_default(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    assert run.of_type(MPIJOB) == [] and run.of_type("kubernetes:core/v1:Pod") == []


def test_mpijob_uses_the_aligned_template(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev", with_jobs())
    job = run.one(MPIJOB)
    assert job.inputs["metadata"]["annotations"]["oke-gpu-rdma/expected"] == EXPECTED_NCCL
    spec = job.inputs["spec"]
    assert spec["slotsPerWorker"] == 8
    worker = spec["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    pod = worker["template"]["spec"]
    assert pod["resourceClaims"] == [
        {"name": "gpus-rails", "resourceClaimTemplateName": "aligned-8gpu-16rails"}
    ]
    # GPUs come from the claim, never from the device plugin.
    assert "limits" not in pod["containers"][0].get("resources", {})
    script = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][0]
    for key, value in NCCL_SETTINGS.items():
        assert f"-x {key}={value}" in script
    assert not any(name in script for name in NCCL_FORBIDDEN_WITH_DRANET)
    # The job waits for the operator's manifest: the ConfigFile's registration ends after its children's.
    manifest = run.one(mpi_operator.CONFIG_FILE_TYPE)
    assert manifest.urn in job.dependencies


def test_rail_test_is_an_mpijob_whose_workers_hold_all_rails_one_per_node(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("dev", with_jobs(nccl=False, railBandwidth=True))
    assert run.of_type("kubernetes:core/v1:Pod") == []
    job = run.one(MPIJOB)
    assert job.name == "acceptance-rail-bandwidth"
    assert job.inputs["metadata"]["name"] == "rail-bandwidth"
    assert job.inputs["metadata"]["annotations"]["oke-gpu-rdma/expected"] == EXPECTED_RAILS
    spec = job.inputs["spec"]
    assert spec["slotsPerWorker"] == 1
    worker = spec["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    assert worker["template"]["metadata"] == {"labels": {"oke-gpu-rdma/rail-test": "true"}}
    pod = worker["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "rails", "resourceClaimTemplateName": "all-rails"}]
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "tools", "mountPath": "/opt/rdma-dranet", "readOnly": True}
    ]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti == {
        "labelSelector": {"matchLabels": {"oke-gpu-rdma/rail-test": "true"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    # The launcher runs components/health/scripts/rail-bandwidth.sh itself, first worker to second, seed 000's
    # lowest rail as the threshold.
    script = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][0]
    # It writes the functions the gate sources first, beside it.
    assert (
        f"cat > /tmp/rail-gate.sh <<'SCRIPT'\n{(SCRIPTS / 'rail-gate.sh').read_text()}SCRIPT\n"
        f"cat > /tmp/rail-bandwidth.sh <<'SCRIPT'\n{(SCRIPTS / 'rail-bandwidth.sh').read_text()}SCRIPT\n"
        in script
    )
    assert script.endswith('bash /tmp/rail-bandwidth.sh 96.87 "$SERVER" "$CLIENT" /opt/rdma-dranet\n')
    assert "SERVER=$(awk 'NR == 1 {print $1}' /etc/mpi/hostfile)" in script
    assert "CLIENT=$(awk 'NR == 2 {print $1}' /etc/mpi/hostfile)" in script
    # Both jobs need the MPI operator now.
    assert run.one(mpi_operator.CONFIG_FILE_TYPE).urn in job.dependencies


def test_4_gpu_template_sets_4_slots(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev", with_jobs(claimTemplate="aligned-4gpu-8rails"))
    assert run.one(MPIJOB).inputs["spec"]["slotsPerWorker"] == 4


def test_unknown_template_is_a_clear_error(run_stack: Callable[..., Run]) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("dev", with_jobs(claimTemplate="nope"))
    assert str(caught.value).splitlines()[1:] == [
        "  stacks/Pulumi.dev.yaml: workloads.acceptanceJobs.claimTemplate = 'nope': no such template in "
        "workloads.claimTemplates (aligned-8gpu-16rails, aligned-4gpu-8rails)"
    ]


def test_nccl_job_and_rail_pods_are_not_deployed_together(run_stack: Callable[..., Run]) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("dev", with_jobs(railBandwidth=True))
    assert "nccl and railBandwidth both hold every rail of their nodes" in str(caught.value)
    assert [j.name for j in run_stack("dev", with_jobs()).of_type(MPIJOB)] == ["acceptance-nccl-all-reduce"]


def test_rail_pods_need_the_rails_only_template(run_stack: Callable[..., Run]) -> None:
    raw = with_jobs(nccl=False, railBandwidth=True)
    raw["workloads"]["railsOnlyTemplate"] = None
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("dev", raw)
    assert "workloads.acceptanceJobs.railBandwidth = true: needs the rails-only template" in str(caught.value)


# --- the gate: pulumi up awaits each job's success (pulumi-kubernetes' waitFor), thresholds as settings ---

SUCCEEDED = 'jsonpath={.status.conditions[?(@.type=="Succeeded")].status}=True'


def launcher_of(job: object) -> str:
    return job.inputs["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][0]  # type: ignore[attr-defined]


def test_pulumi_up_awaits_the_nccl_job_and_its_threshold(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev", with_jobs())
    job = run.one(MPIJOB)
    assert job.inputs["metadata"]["annotations"] == {
        "oke-gpu-rdma/expected": EXPECTED_NCCL,
        "oke-gpu-rdma/threshold": "NCCL all_reduce busbw at 8 GiB (out of place) >= 190.13 GB/s",
        "oke-gpu-rdma/results": "kubectl -n rdma-dranet logs job/nccl-all-reduce-launcher",
        "pulumi.com/waitFor": SUCCEEDED,
        "pulumi.com/timeoutSeconds": "1800",
    }
    # A finished MPIJob never runs again: a changed spec replaces it, the old one first (same name).
    assert job.options == {"deleteBeforeReplace": True, "replaceOnChanges": ["spec"]}
    assert job.inputs["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 0}
    script = launcher_of(job)
    assert (
        "/workspace/nccl-tests/build/all_reduce_perf -b 4G -e 8G -f 2 -g 1 -c 1 | tee /tmp/all_reduce.log\n"
        in script
    )
    check = (SCRIPTS / "nccl-busbw-check.sh").read_text()
    assert f"cat > /tmp/nccl-busbw-check.sh <<'SCRIPT'\n{check}SCRIPT\n" in script
    assert script.endswith("bash /tmp/nccl-busbw-check.sh 190.13 /tmp/all_reduce.log\n")
    assert run.run.outputs["acceptanceJobs"] == {
        "nccl-all-reduce": {
            "namespace": "rdma-dranet",
            "threshold": "NCCL all_reduce busbw at 8 GiB (out of place) >= 190.13 GB/s",
            "results": "kubectl -n rdma-dranet logs job/nccl-all-reduce-launcher",
        }
    }


def test_the_4_gpu_job_is_held_to_the_shared_figure(run_stack: Callable[..., Run]) -> None:
    job = run_stack("dev", with_jobs(claimTemplate="aligned-4gpu-8rails")).one(MPIJOB)
    assert launcher_of(job).endswith("bash /tmp/nccl-busbw-check.sh 96.29 /tmp/all_reduce.log\n")


def test_thresholds_and_timeout_are_stack_settings(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev", with_jobs(ncclBusbwGBs=185.5, timeoutMinutes=45))
    job = run.one(MPIJOB)
    assert launcher_of(job).endswith("bash /tmp/nccl-busbw-check.sh 185.5 /tmp/all_reduce.log\n")
    assert job.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == "2700"
    rails = run_stack("dev", with_jobs(nccl=False, railBandwidth=True, railGbps=96.5)).one(MPIJOB)
    assert launcher_of(rails).endswith(
        'bash /tmp/rail-bandwidth.sh 96.5 "$SERVER" "$CLIENT" /opt/rdma-dranet\n'
    )
    assert rails.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == SUCCEEDED
    assert rails.options == {"deleteBeforeReplace": True, "replaceOnChanges": ["spec"]}
    assert run_stack("dev", with_jobs(nccl=False, railBandwidth=True)).run.outputs["acceptanceJobs"] == {
        "rail-bandwidth": {
            "namespace": "rdma-dranet",
            "threshold": "ib_write_bw >= 96.87 Gb/s on every rail",
            "results": "kubectl -n rdma-dranet logs job/rail-bandwidth-launcher",
        }
    }


def test_a_job_shape_the_seed_never_measured_needs_a_threshold(run_stack: Callable[..., Run]) -> None:
    raw = with_jobs(claimTemplate="aligned-2gpu")
    raw["workloads"]["claimTemplates"] = [{"name": "aligned-2gpu", "gpusPerWorker": 2}]
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("dev", raw)
    assert str(caught.value).splitlines()[1:] == [
        "  stacks/Pulumi.dev.yaml: workloads.acceptanceJobs.ncclBusbwGBs: the seed measured NCCL jobs "
        "with 8 and 4 GPUs per worker, not 2 (aligned-2gpu); set the minimum busbw in GB/s the job must reach"
    ]
    raw["workloads"]["acceptanceJobs"]["ncclBusbwGBs"] = 48
    job = run_stack("dev", raw).one(MPIJOB)
    assert launcher_of(job).endswith("bash /tmp/nccl-busbw-check.sh 48.0 /tmp/all_reduce.log\n")


@pytest.mark.parametrize(("key", "value"), [("railGbps", 0), ("ncclBusbwGBs", -1), ("timeoutMinutes", 0)])
def test_a_threshold_must_be_positive(run_stack: Callable[..., Run], key: str, value: int) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("dev", with_jobs(**{key: value}))
    (line,) = str(caught.value).splitlines()[1:]
    assert line.startswith(f"  stacks/Pulumi.dev.yaml: workloads.acceptanceJobs.{key} = {value}: ")


def test_jobs_on_a_pool_of_a_second_shape_use_that_shapes_templates(run_stack: Callable[..., Run]) -> None:
    """Issue 19 item 1: a stack of two shapes emits templates per shape, and the jobs' pool gets its own."""
    raw = with_jobs(nodePool="gpu-h100", railBandwidth=False)
    raw["nodePools"].append({**raw["nodePools"][0], "name": "gpu-h100", "shape": "BM.GPU.H100.8"})
    roots = [
        {
            "name": f"pci0000:{i:02x}",
            "numaNode": i // 2,
            "gpus": [f"0000:{16 + 2 * i + g:02x}:00.0" for g in range(2)],
            "rails": [
                {"name": f"rdma{2 * i + r}", "pciAddress": f"0000:{64 + 2 * i + r:02x}:00.0"}
                for r in range(2)
            ],
        }
        for i in range(4)
    ]
    raw["shapeTopologies"] = {"BM.GPU.H100.8": {"roots": roots}}
    run = run_stack("dev", raw)
    templates = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["spec"]
        for r in run.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
    }
    # The one-shape name stays with the first pool's shape, pinned to it (stable_names).
    assert templates["aligned-8gpu-16rails"] == templates["aligned-8gpu-16rails-bm-gpu-b4-8"]
    # 4 roots of 2 GPUs and 2 rails: the H100's whole-node default is 8 GPUs with 8 rails, named so.
    h100 = templates["aligned-8gpu-8rails-bm-gpu-h100-8"]
    assert [r["exactly"]["count"] for r in h100["devices"]["requests"]] == [2, 2] * 4
    assert [
        r["exactly"]["count"] for r in templates["aligned-8gpu-16rails-bm-gpu-b4-8"]["devices"]["requests"]
    ] == [
        2,
        4,
    ] * 4
    pod = run.one(MPIJOB).inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert pod["nodeSelector"] == {"oke-gpu-rdma/node-pool": "gpu-h100"}
    assert pod["resourceClaims"] == [
        {"name": "gpus-rails", "resourceClaimTemplateName": "aligned-8gpu-8rails-bm-gpu-h100-8"}
    ]


def test_the_mpi_operator_is_its_release_manifest_applied_at_apply_time(
    run_stack: Callable[..., Run],
) -> None:
    """The repository holds no copy of kubeflow/mpi-operator's manifest: a yaml/v2 ConfigFile fetches it
    from the release's commit, after what the operator's Deployment needs (the system pool)."""
    run = run_stack("dev", with_jobs())
    operator = run.one("oke-gpu-rdma:index:MpiOperator")
    manifest = run.one(mpi_operator.CONFIG_FILE_TYPE)
    assert manifest.parent == operator.urn and manifest.name == "acceptance-mpi-operator-manifest"
    assert manifest.inputs == {
        "file": "https://raw.githubusercontent.com/kubeflow/mpi-operator/"
        "c983759cfa87fd32ed5711804021ea47eb8d712c/deploy/v2beta1/mpi-operator.yaml"
    }
    assert manifest.options["transforms"] == 2  # the aliases, and the narrowing to least privilege
    # Nothing of the manifest is declared object by object any more; the stack adds the operator's Roles.
    assert sorted(r.type for r in run.resources if r.parent == operator.urn) == [
        "kubernetes:rbac.authorization.k8s.io/v1:Role",
        "kubernetes:rbac.authorization.k8s.io/v1:Role",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        mpi_operator.CONFIG_FILE_TYPE,
    ]


# --- the MPI operator at least privilege (issue 28 item 3) ---------------------------------------------------

RELEASE = mpi_operator.release("v0.6.0")


def _manifest_object(kind: str) -> dict[str, Any]:
    """The object of kind ``kind`` as the transform receives it: what the release's facts record of it."""
    (obj,) = [o for o in RELEASE.objects if o.kind == kind and o.name == "mpi-operator"]
    props: dict[str, Any] = {"apiVersion": obj.api_version, "kind": kind, "metadata": {"name": obj.name}}
    if kind == "ClusterRole":
        props["rules"] = list(RELEASE.operator_rules)
    if kind == "Deployment":
        props["metadata"]["namespace"] = obj.namespace
        container = {"name": "mpi-operator", "image": RELEASE.deployment["images"][0], "args": RELEASE.args()}
        props["spec"] = {
            "template": {"spec": {"containers": [container], "serviceAccountName": "mpi-operator"}}
        }
    return props


def _writes(rules: list[dict[str, Any]], resource: str) -> bool:
    read = {"get", "list", "watch"}
    return any(resource in r["resources"] and set(r["verbs"]) - read for r in rules)


def test_the_operators_cluster_role_keeps_no_write_and_no_pods_exec() -> None:
    """Upstream's ClusterRole writes Secrets and Pods and creates pods/exec everywhere; what stays
    cluster-wide is read-only and cluster-scoped (PriorityClasses), so no Secret anywhere else is reachable."""
    narrowed = narrowed_object(_manifest_object("ClusterRole"), RELEASE, "rdma-dranet")
    assert narrowed is not None
    assert narrowed["rules"] == [
        {
            "apiGroups": ["scheduling.k8s.io"],
            "resources": ["priorityclasses"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert _writes(list(RELEASE.operator_rules), "secrets")  # what upstream grants, for contrast
    assert any("pods/exec" in r["resources"] for r in RELEASE.operator_rules)


def test_the_operator_watches_the_jobs_namespace_only_and_passes_restricted() -> None:
    narrowed = narrowed_object(_manifest_object("Deployment"), RELEASE, "rdma-dranet")
    assert narrowed is not None
    pod = narrowed["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == [
        "-alsologtostderr",
        "--lock-namespace=mpi-operator",
        "--namespace=rdma-dranet",
    ]
    assert pod_security.violations(pod, "restricted") == []
    assert pod_security.violations(_manifest_object("Deployment")["spec"]["template"]["spec"], "restricted")
    namespace = narrowed_object(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mpi-operator"}}, RELEASE, "x"
    )
    assert namespace is not None
    assert namespace["metadata"]["labels"] == pod_security.namespace_labels("restricted")
    # Objects the stack leaves as upstream wrote them.
    assert (
        narrowed_object(
            {"kind": "CustomResourceDefinition", "metadata": {"name": "mpijobs.kubeflow.org"}}, RELEASE, "x"
        )
        is None
    )


def test_the_operators_roles_are_namespaced_in_the_jobs_and_the_lock_namespace(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("dev", with_jobs())
    roles = {r.inputs["metadata"]["namespace"]: r.inputs for r in run.of_type(ROLE)}
    assert set(roles) == {"rdma-dranet", "mpi-operator"}
    jobs = roles["rdma-dranet"]["rules"]
    assert _writes(jobs, "secrets") and _writes(jobs, "pods")  # in the jobs' namespace only
    assert not any("pods/exec" in r["resources"] for rs in roles.values() for r in rs["rules"])
    assert [r["resources"] for r in roles["mpi-operator"]["rules"]] == [["events"], ["leases"]]
    for binding in run.of_type(ROLE_BINDING):
        assert binding.inputs["subjects"] == [
            {"kind": "ServiceAccount", "name": "mpi-operator", "namespace": "mpi-operator"}
        ]
        assert binding.inputs["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "mpi-operator",
        }
    # The rendering says what the transforms change in upstream's manifest.
    operator = run.one("oke-gpu-rdma:index:MpiOperator")
    narrowed = operator.inputs["narrowed"]
    assert narrowed["ClusterRole mpi-operator"]["rules"] == RELEASE.cluster_rules()
    assert narrowed["Deployment mpi-operator/mpi-operator"]["args"][-1] == "--namespace=rdma-dranet"
    # The jobs wait for the roles: an operator that cannot write the jobs' Secrets never starts them.
    job = run.one(MPIJOB)
    assert {r.urn for r in run.of_type(ROLE)} <= set(job.dependencies)


def test_each_object_of_the_manifest_keeps_the_name_it_had_when_declared_one_by_one(
    declare: Callable[[Callable[[], object]], Run],
) -> None:
    """The transform aliases every child the ConfigFile's provider registers to the resource the
    component declared for that object before, so the CRD (and with it every MPIJob) is kept."""
    results: list[pulumi.ResourceTransformResult | None] = []

    def body() -> None:
        component = pulumi.ComponentResource("oke-gpu-rdma:index:MpiOperator", "acceptance-mpi-operator")
        transform = _moved_objects(component, "acceptance-mpi-operator")
        for obj in mpi_operator.release("v0.6.0").objects:
            props = {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": {"name": obj.name}}
            args = pulumi.ResourceTransformArgs(
                True, obj.resource_type, obj.config_file_child_name("x"), props, pulumi.ResourceOptions()
            )
            results.append(transform(args))
        # Not a Kubernetes object (no kind): left alone.
        results.append(
            transform(pulumi.ResourceTransformArgs(False, "t:index:C", "c", {}, pulumi.ResourceOptions()))
        )

    declare(body)
    *moved, other = results
    assert other is None
    names = []
    for result in moved:
        assert result is not None and result.opts is not None and result.opts.aliases
        (alias,) = result.opts.aliases
        assert isinstance(alias, pulumi.Alias)
        names.append(alias.name)
    assert "acceptance-mpi-operator-customresourcedefinition-mpijobs.kubeflow.org" in names
    assert "acceptance-mpi-operator-deployment-mpi-operator" in names
    assert len(names) == len(set(names)) == 9


def test_an_mpi_operator_release_without_facts_is_refused() -> None:
    with pytest.raises(ValueError) as refused:
        AcceptanceJobsConfig.model_validate({"enabled": True, "mpiOperatorVersion": "v0.7.0"})
    assert (
        "MPI operator v0.7.0 has no facts in oke_gpu_rdma/scheduling/mpi_operator_releases.json (known: v0.6.0); use "
        "one of those, or add it with `python -m tools.mpi_operator_facts <its "
        "deploy/v2beta1/mpi-operator.yaml> --version v0.7.0 --commit <the tag's commit>`"
    ) in str(refused.value)


def test_in_a_stack_with_scheduling_the_nccl_job_goes_through_the_queue(
    run_stack: Callable[..., Run],
) -> None:
    # The full example turns scheduling and the acceptance jobs on (examples/Pulumi.full.yaml).
    run = run_stack("full")
    job = run.one(MPIJOB)
    metadata = job.inputs["metadata"]
    assert metadata["labels"] == {"kueue.x-k8s.io/queue-name": "rdma-gpus"}
    # The gate is the same: Pulumi awaits the job's Succeeded condition against the seed's figure.
    assert metadata["annotations"]["pulumi.com/waitFor"] == SUCCEEDED
    assert metadata["annotations"]["oke-gpu-rdma/threshold"].endswith(">= 190.13 GB/s")
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert worker["metadata"] == {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "oke-gpu-rdma/rdma-network-block"}
    }
    # Its claim is the aligned whole-node template, and its CPU request more than half of a BM.GPU.B4.8's 128
    # CPUs: TAS, which counts requests and not claims, never puts two workers on one node (docs/tas-and-dra-claims.md).
    pod = worker["spec"]
    assert pod["resourceClaims"] == [
        {"name": "gpus-rails", "resourceClaimTemplateName": "aligned-8gpu-16rails"}
    ]
    assert pod["containers"][0]["resources"] == {
        "claims": [{"name": "gpus-rails"}],
        "requests": {"cpu": "65"},
    }
    # The launcher has no topology request: Kueue gives it the system flavor. It requests a little (a TAS pod set
    # that requests nothing fits no node and is never admitted), and names the system flavor's node labels
    # itself (the MPI operator v0.6.0 creates the launcher Job before Kueue admits the MPIJob).
    launcher = job.inputs["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    assert "metadata" not in launcher
    assert launcher["spec"]["nodeSelector"] == {"oke-gpu-rdma/node-pool": "system"}
    assert launcher["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"}}
    # It is created once the queue exists (before, Kueue would not manage it).
    queue = run.one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")
    component = run.one("oke-gpu-rdma:index:Kueue")
    assert component.urn in job.dependencies or queue.urn in job.dependencies


def test_the_rail_test_goes_through_the_queue_too(run_stack: Callable[..., Run]) -> None:
    raw = without_remediation(raw_config("full"))
    raw["workloads"]["acceptanceJobs"] = {"enabled": True, "nccl": False, "railBandwidth": True}
    raw["workloads"]["scheduling"]["acceptanceLevel"] = "oke-gpu-rdma/rdma-local-block"
    job = run_stack("full", raw).one(MPIJOB)
    assert job.inputs["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "rdma-gpus"}
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert worker["metadata"] == {
        "labels": {"oke-gpu-rdma/rail-test": "true"},
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "oke-gpu-rdma/rdma-local-block"},
    }
    assert worker["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "65"}
    launcher = job.inputs["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    assert launcher["spec"]["nodeSelector"] == {"oke-gpu-rdma/node-pool": "system"}


def test_without_scheduling_the_job_is_unchanged(run_stack: Callable[..., Run]) -> None:
    job = run_stack("dev", with_jobs()).one(MPIJOB)
    assert "labels" not in job.inputs["metadata"]
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert "metadata" not in worker
    assert worker["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpus-rails"}]}
    # No queue, no system flavor to pin: the launcher goes wherever it tolerates, with its small request.
    launcher = job.inputs["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    assert "nodeSelector" not in launcher["spec"]
    assert launcher["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"}}
