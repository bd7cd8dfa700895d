"""Time the policy pack on a stack of 2,000 resources (target: under 1 s).

Run: .venv/bin/python benchmarks/bench_policies.py
The stack: the seed cluster's network, cluster and GPU pool, DRANET and the GPU DRA driver, and
then claim templates (the seed 000 claims under new names), MPIJobs and Pods that use them, and
ConfigMaps, until there are 2,000 resources. The time covers what `pulumi preview` asks of the
pack: GetAnalyzerInfo, Configure, one Analyze per resource and one AnalyzeStack, through the SDK
servicer with protobuf requests (tools.policy_check.analyze_resources).
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "policies")]

from policy_helpers import (  # noqa: E402
    NAMESPACE_YAML,
    aligned_mpijob,
    device_plugin_mpijob,
    dranet_release,
    k8s,
    resource,
    seed_claims,
    seed_plan,
)
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy  # noqa: E402
from pulumi_policy.policy import _PolicyAnalyzerServicer  # noqa: E402

from tools.mock_runtime import RecordedResource  # noqa: E402
from tools.policy_check import analyze_requests, analyze_resources, has_mandatory  # noqa: E402

SIZE = 2000
RUNS = 5


def stack(size: int = SIZE) -> list[RecordedResource]:
    resources = [*seed_plan(), dranet_release(), k8s(NAMESPACE_YAML)]
    names = list(seed_claims.ALL)
    i = 0
    while len(resources) < size:
        base = seed_claims.ALL[names[i % len(names)]]
        claim = copy.deepcopy(base)
        claim["metadata"]["name"] = f"{base['metadata']['name']}-{i}"
        resources.append(k8s(claim))
        job = aligned_mpijob() if i % 2 else device_plugin_mpijob()
        job["metadata"]["name"] = f"job-{i}"
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
        worker["resourceClaims"][0]["resourceClaimTemplateName"] = claim["metadata"]["name"]
        resources.append(k8s(job))
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i}", "namespace": "rdma-dranet"},
            "data": {"a": "b"},
        }
        resources.append(k8s(cm))
        resources.append(
            resource("oci:Core/subnet:Subnet", f"extra-{i}", {"cidrBlock": f"172.16.{i % 256}.0/24"})
        )
        i += 1
    return resources[:size]


def sdk_floor(resources: list[RecordedResource]) -> float:
    """The SDK's own cost: the same requests to 6 stack and 1 resource policy that do nothing.

    The SDK deserializes every resource's properties once per policy (MessageToDict, then the
    unknown-checking proxy) before it calls the policy, so this is the least any 7-policy pack pays.
    """
    policies = [
        StackValidationPolicy(name=f"s{i}", description="no-op", validate=lambda a, r: None) for i in range(6)
    ]
    policies.append(ResourceValidationPolicy(name="r", description="no-op", validate=lambda a, r: None))
    servicer = _PolicyAnalyzerServicer("floor", "0.0.1", policies, EnforcementLevel.MANDATORY)
    single, stack = analyze_requests(resources)
    start = time.perf_counter()
    for request in single:
        servicer.Analyze(request, None)
    servicer.AnalyzeStack(stack, None)
    return time.perf_counter() - start


def main() -> None:
    resources = stack()
    findings = analyze_resources(resources)  # warm up (imports, CEL compile, verdict cache)
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        findings = analyze_resources(resources)
        samples.append(time.perf_counter() - start)
    floor = min(sdk_floor(resources) for _ in range(RUNS))
    kinds = sorted({r.type.rsplit(":", 1)[-1] for r in resources})
    print(f"policy pack on {len(resources)} resources ({', '.join(kinds)})")
    print(f"findings: {len(findings)} (mandatory: {has_mandatory(findings)})")
    print(
        f"analyze (Configure + {len(resources)} x Analyze + AnalyzeStack): mean {statistics.mean(samples):.3f} s, "
        f"min {min(samples):.3f} s over {RUNS} runs (target < 1 s)"
    )
    print(
        f"  of which the SDK's per-policy deserialization (7 no-op policies): {floor:.3f} s; "
        f"the policies' own work: {min(samples) - floor:.3f} s"
    )


if __name__ == "__main__":
    main()
