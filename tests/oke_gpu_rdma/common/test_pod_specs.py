"""find_pod_specs: pod specs by structure in every kind, PodTemplate's top-level template included."""

from __future__ import annotations

from oke_gpu_rdma.common.pod_specs import find_pod_specs

POD = {"containers": [{"name": "c"}]}


def paths(obj):
    return [path for path, _ in find_pod_specs(obj)]


def test_every_kind_where_its_template_is():
    assert paths({"kind": "Pod", "spec": POD}) == ["spec"]
    assert paths({"kind": "PodTemplate", "metadata": {"name": "t"}, "template": {"spec": POD}}) == [
        "template.spec"
    ]
    assert paths({"spec": {"jobTemplate": {"spec": {"template": {"spec": POD}}}}}) == [
        "spec.jobTemplate.spec.template.spec"
    ]
    lws = {"leaderWorkerTemplate": {"leaderTemplate": {"spec": POD}, "workerTemplate": {"spec": POD}}}
    assert paths({"spec": lws}) == [
        "spec.leaderWorkerTemplate.leaderTemplate.spec",
        "spec.leaderWorkerTemplate.workerTemplate.spec",
    ]
    jobset = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": POD}}}}]}
    assert paths({"spec": jobset}) == ["spec.replicatedJobs[0].template.spec.template.spec"]
    assert paths({"items": [{"spec": {"template": {"spec": POD}}}]}) == ["items[0].spec.template.spec"]


def test_metadata_and_status_are_not_searched():
    assert paths({"metadata": {"spec": POD}, "status": {"spec": POD}}) == []
