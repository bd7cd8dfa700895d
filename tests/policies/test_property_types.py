"""Issue 11 item 10, as a property: a wrong-typed value at any property path the pack reads never lets an
exception leave a policy, and never reaches the catch-all either: every read goes through the typed
guards, so the finding names the path (or the value is one the policy has no reason to read).

The stack holds every kind the pack reads; hypothesis picks a resource, one of its property paths and a
value of another type, and sends the stack through the analyzer as the engine would.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preview.mock_runtime import RecordedResource
from tests.fixtures import seed000
from tests.policies.policy_helpers import (
    GPU_CHART,
    K8S_PROVIDER,
    NAMESPACE_YAML,
    aligned_mpijob,
    analyze,
    dranet_release,
    k8s,
    resource,
    seed_plan,
)

CRASHED = "this policy failed while checking it"

DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "rails"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
}
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "nccl", "namespace": "rdma-dranet"},
    "stringData": {"NCCL_IB_TC": "41"},
}
DAEMONSET = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "dranet-raw", "namespace": "kube-system"},
    "spec": {
        "template": {
            "spec": {
                "nodeSelector": {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "nvidia.com/gpu.present", "operator": "Exists"}
                                    ]
                                }
                            ]
                        }
                    }
                },
                "containers": [
                    {
                        "name": "dranet",
                        "image": "registry.k8s.io/networking/dranet:v1.5.0",
                        "args": [
                            "--cloud-provider-hint=OKE",
                            "--cloud-provider-options=oke.rdma-child-ipv4-cidr=10.192.0.0/14",
                        ],
                    }
                ],
            }
        }
    },
}


def _stack() -> list[dict[str, Any]]:
    """(type, name, props) of a stack with every kind the pack reads."""
    job = aligned_mpijob()
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"prefix": "X_", "secretRef": {"name": "nccl"}},
        {"configMapRef": {"name": "nccl"}},
    ]
    gpu_release = resource(
        "kubernetes:helm.sh/v3:Release",
        "gpu-dra",
        {
            "chart": GPU_CHART,
            "values": {"kubeletPlugin": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}},
        },
        provider=K8S_PROVIDER,
    )
    records: list[RecordedResource] = [
        *seed_plan(),
        dranet_release(child="10.192.0.0/14"),
        gpu_release,
        k8s(NAMESPACE_YAML),
        k8s(DEVICE_CLASS),
        k8s(SECRET),
        k8s(DAEMONSET),
        k8s(seed000("aligned-4gpu-8rails-a")),
        k8s(seed000("shape-any")),
        k8s(seed000("pair-check")),
        k8s(job),
        k8s(seed000("nccl-dranet-a-device-plugin")),
    ]
    config = seed000("all-rails")
    config["spec"]["spec"]["devices"]["config"] = [
        {"requests": ["rails"], "opaque": {"driver": "dra.net", "parameters": {"interface": {"mtu": 9000}}}}
    ]
    records.append(k8s(config))
    return [{"type": r.type, "name": r.name, "props": r.inputs, "record": r} for r in records]


STACK = _stack()


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*path, i))
    return found


TARGETS = [(i, p) for i, entry in enumerate(STACK) for p in _paths(entry["props"])]

WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**31), max_value=2**31),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=8),
    st.sampled_from(["0.0.0.0/0", "10.0.0.0/2", "::/0", "GCE", "oke", "\n"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _with(props: Any, path: tuple[Any, ...], value: Any) -> Any:
    props = copy.deepcopy(props)
    node = props
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return props


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TARGETS), WRONG)
def test_a_wrong_typed_value_anywhere_never_crashes_a_policy(target, value):
    index, path = target
    stack = []
    for i, entry in enumerate(STACK):
        record = entry["record"]
        if i == index:
            record = resource(
                entry["type"],
                entry["name"],
                _with(entry["props"], path, value),
                parent=record.parent,
                provider=record.provider,
                dependencies=record.dependencies,
            )
        stack.append(record)
    findings = analyze(stack)  # raises if an exception left the analyzer
    crashed = [f for f in findings if CRASHED in f.message]
    assert crashed == [], (
        f"{STACK[index]['name']} {'.'.join(map(str, path))} = {value!r}: {crashed[0].message}"
    )
