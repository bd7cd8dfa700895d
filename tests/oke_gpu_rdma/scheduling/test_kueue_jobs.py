"""How Kueue reads jobs, queues and flavors (oke_gpu_rdma/scheduling/kueue_jobs.py)."""

from __future__ import annotations

from typing import Any

import pytest

from oke_gpu_rdma.common.pod_specs import find_pod_specs
from oke_gpu_rdma.scheduling import kueue_jobs

UNKNOWN = object()
POD = {"containers": [{"name": "c", "image": "i"}]}


def template(**meta: Any) -> dict[str, Any]:
    return {"metadata": meta, "spec": POD} if meta else {"spec": POD}


def counts(obj: dict[str, Any]) -> dict[str, int]:
    return {path: kueue_jobs.pods_at_once(obj, path, UNKNOWN) for path, _ in find_pod_specs(obj)}


def test_an_mpijob_runs_its_workers_replicas_and_one_launcher() -> None:
    job = {
        "kind": "MPIJob",
        "spec": {
            "slotsPerWorker": 4,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template()},
                "Worker": {"replicas": 4, "template": template()},
            },
        },
    }
    assert counts(job) == {
        "spec.mpiReplicaSpecs.Launcher.template.spec": 1,
        "spec.mpiReplicaSpecs.Worker.template.spec": 4,
    }


def test_a_jobset_multiplies_its_replicated_jobs_by_their_parallelism() -> None:
    job = {
        "kind": "JobSet",
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {"spec": {"parallelism": 4, "template": template()}},
                },
                {"name": "driver", "template": {"spec": {"template": template()}}},
            ]
        },
    }
    assert counts(job) == {
        "spec.replicatedJobs[0].template.spec.template.spec": 8,
        "spec.replicatedJobs[1].template.spec.template.spec": 1,
    }


def test_an_indexed_job_runs_parallelism_pods_at_once_not_its_completions() -> None:
    job = {
        "kind": "Job",
        "spec": {"completionMode": "Indexed", "completions": 8, "parallelism": 2, "template": template()},
    }
    assert counts(job) == {"spec.template.spec": 2}
    del job["spec"]["parallelism"]
    assert counts(job) == {"spec.template.spec": 1}


def test_a_deployment_and_a_pytorchjob() -> None:
    assert counts({"kind": "Deployment", "spec": {"replicas": 3, "template": template()}}) == {
        "spec.template.spec": 3
    }
    job = {
        "kind": "PyTorchJob",
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template()},
                "Worker": {"replicas": 3, "template": template()},
            }
        },
    }
    assert sum(counts(job).values()) == 4


def test_a_leader_worker_set_runs_its_groups_workers() -> None:
    lws = {
        "kind": "LeaderWorkerSet",
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {"size": 4, "leaderTemplate": template(), "workerTemplate": template()},
        },
    }
    assert counts(lws) == {
        "spec.leaderWorkerTemplate.leaderTemplate.spec": 2,
        "spec.leaderWorkerTemplate.workerTemplate.spec": 6,
    }
    del lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    assert counts(lws) == {"spec.leaderWorkerTemplate.workerTemplate.spec": 8}


def test_an_unknown_replica_count_is_said_so() -> None:
    with pytest.raises(kueue_jobs.Unknown, match="replicas"):
        counts({"kind": "Deployment", "spec": {"replicas": UNKNOWN, "template": template()}})


def test_the_topology_request_is_read_from_the_pod_templates_annotations() -> None:
    annotations = {kueue_jobs.PREFERRED_TOPOLOGY: "oke-gpu-rdma/rdma-local-block", "other": "x"}
    job = {"spec": {"mpiReplicaSpecs": {"Worker": {"template": template(annotations=annotations)}}}}
    meta = kueue_jobs.template_metadata(job, "spec.mpiReplicaSpecs.Worker.template.spec")
    assert kueue_jobs.requested_levels(meta["annotations"]) == [
        ("kueue.x-k8s.io/podset-preferred-topology", "oke-gpu-rdma/rdma-local-block")
    ]
    jobset = {
        "spec": {"replicatedJobs": [{"template": {"spec": {"template": template(annotations={"a": "b"})}}}]}
    }
    path = "spec.replicatedJobs[0].template.spec.template.spec"
    assert kueue_jobs.template_metadata(jobset, path) == {"annotations": {"a": "b"}}
    assert kueue_jobs.template_metadata({"spec": {"template": template()}}, "spec.template.spec") == {}


def test_the_queue_is_the_label_or_the_namespaces_default_queue() -> None:
    assert kueue_jobs.queue_of({kueue_jobs.QUEUE_LABEL: "gpu"}, True) == "gpu"
    assert kueue_jobs.queue_of({}, True) == "default"
    assert kueue_jobs.queue_of({kueue_jobs.QUEUE_LABEL: ""}, False) is None


def test_topology_levels_in_order() -> None:
    spec = {"levels": [{"nodeLabel": "a/island"}, {"nodeLabel": "kubernetes.io/hostname"}, {"other": 1}]}
    assert kueue_jobs.topology_levels(spec) == ("a/island", "kubernetes.io/hostname")
    assert kueue_jobs.topology_levels({}) == ()


def test_a_flavor_selects_nodes_with_all_its_labels_and_admits_pods_agreeing_on_its_keys() -> None:
    flavor = {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}
    assert kueue_jobs.flavor_selects(flavor, {"node.kubernetes.io/instance-type": "BM.GPU.B4.8", "x": "y"})
    assert not kueue_jobs.flavor_selects(flavor, {"x": "y"})
    assert kueue_jobs.flavor_selects({}, {"x": "y"})
    # flavorSelector: the pod's nodeSelector and required affinity count only on the keys the flavor sets.
    b4, h100 = (
        {"nodeSelector": {**flavor, "other": "z"}},
        {"nodeSelector": {"node.kubernetes.io/instance-type": "H"}},
    )
    assert kueue_jobs.flavor_admits(flavor, b4)
    assert kueue_jobs.flavor_admits(flavor, {"nodeSelector": {"other": "z"}})
    assert not kueue_jobs.flavor_admits(flavor, h100)


def affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": [{"matchExpressions": exprs} for exprs in terms]}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}


def test_a_flavor_is_admitted_by_required_affinity_on_its_own_keys_only() -> None:
    flavor = {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}
    shape_in = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["BM.GPU.H100.8"]}
    other = {"key": "team", "operator": "In", "values": ["a"]}
    assert not kueue_jobs.flavor_admits(flavor, affinity([shape_in, other]))
    # A term left without the flavor's keys matches any flavor.
    assert kueue_jobs.flavor_admits(flavor, affinity([shape_in], [other]))
    assert kueue_jobs.flavor_admits(flavor, affinity([{**shape_in, "operator": "NotIn"}]))
    assert kueue_jobs.flavor_admits(flavor, {})


def test_pools_of_a_flavor_and_the_problems() -> None:
    pools = {
        "a": ("BM.GPU.B4.8", {"p": "a", "gpu": "true"}),
        "b": ("BM.GPU.H100.8", {"p": "b", "gpu": "true"}),
    }
    one = kueue_jobs.pools_of_flavor({"p": "a"}, pools)
    assert one == kueue_jobs.FlavorPools(("a",), ("BM.GPU.B4.8",))
    assert one.problem("f", {"p": "a"}, {"a": "BM.GPU.B4.8"}) is None
    both = kueue_jobs.pools_of_flavor({"gpu": "true"}, pools)
    assert both.shapes == ("BM.GPU.B4.8", "BM.GPU.H100.8")
    assert "select node pools of 2 shapes (BM.GPU.B4.8: a; BM.GPU.H100.8: b)" in str(
        both.problem("f", {"gpu": "true"}, {"a": "BM.GPU.B4.8", "b": "BM.GPU.H100.8"})
    )
    none = kueue_jobs.pools_of_flavor({"p": "c"}, pools)
    assert "select no node pool of the stack" in str(none.problem("f", {"p": "c"}, {}))
