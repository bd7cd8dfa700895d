"""rdma-workloads-baseline (stack, advisory): RDMA pods need no privileges with DRANET.

DRANET gives a pod IPvlan children of its claimed rails through NRI; the nodes set unlimited
memlock, so the seed's pods ran unprivileged, without added capabilities, under the Baseline Pod
Security level (seed 000). Namespaces that hold DRANET rail claims should enforce it, and pods that
use the rails should not be privileged, use hostNetwork or add IPC_LOCK.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Final

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.nodes.labels import POD_SECURITY_ENFORCE_LABEL, POD_SECURITY_ENFORCING
from oke_rdma_policies.kube import PlainResource, container_name, containers, pod_specs
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView, labels_of
from oke_rdma_policies.values import UNKNOWN, as_list, as_map

ENFORCE: Final = POD_SECURITY_ENFORCE_LABEL


def _check_workload(
    view: StackView, workload: PlainResource, reporter: Reporter, rdma_namespaces: dict[str, list[str]]
) -> None:
    for pod in pod_specs(workload):
        rails, _ = view.rail_claims(workload, pod)
        if not rails:
            continue
        ns = workload.namespace
        if isinstance(ns, str):
            rdma_namespaces.setdefault(ns, []).append(workload.label)
        where = f"{workload.label} {pod.where}"
        found = []
        if pod.spec.get("hostNetwork") is True:
            found.append(
                "hostNetwork: true (the pod then sees the node's rails directly instead of its IPvlan children)"
            )
        for path, container in containers(pod):
            name = container_name(path, container)
            context = container.get("securityContext")
            if context is UNKNOWN or context is None:
                continue
            context = as_map(context, f"{path}.securityContext")
            if context.get("privileged") is True:
                found.append(f"container {name} is privileged")
            caps = context.get("capabilities")
            if isinstance(caps, Mapping):
                added = as_list(caps.get("add"), f"{path}.securityContext.capabilities.add")
                if any(isinstance(c, str) and c.upper().removeprefix("CAP_") == "IPC_LOCK" for c in added):
                    found.append(
                        f"container {name} adds IPC_LOCK (the GPU nodes set unlimited memlock, so RDMA needs "
                        "no IPC_LOCK; IPC_LOCK needs the Privileged Pod Security level)"
                    )
        for item in found:
            reporter.violation(
                f"{where} uses DRANET rails ({rails[0][1].label}) and {item}. DRANET needs none of this: the "
                "seed's RDMA pods ran unprivileged under Pod Security baseline. Fix: remove it",
                workload.urn,
            )


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    view = StackView.of(args)
    rdma_namespaces: dict[str, list[str]] = {}
    for claim in view.claims:
        if view.rails_of(claim) and isinstance(claim.namespace, str):
            rdma_namespaces.setdefault(claim.namespace, []).append(claim.label)
    for workload in view.workloads:
        reporter.guard(
            workload.label, workload.urn, partial(_check_workload, view, workload, reporter, rdma_namespaces)
        )
    for ns in view.of_type(resource_types.NAMESPACE):
        name = ns.object_name
        if not isinstance(name, str) or name not in rdma_namespaces:
            continue
        labels = labels_of(ns)
        if labels is UNKNOWN:
            reporter.unchecked(f"Namespace {name}: labels unknown until apply")
            continue
        level = labels.get(ENFORCE)
        if level is UNKNOWN:
            reporter.unchecked(f"Namespace {name}: label {ENFORCE} unknown until apply")
            continue
        if level in POD_SECURITY_ENFORCING:
            continue
        holders = ", ".join(dict.fromkeys(rdma_namespaces[name]))
        shown = "is not set" if level is None else f"is {level!r}"
        reporter.violation(
            f"Namespace {name} holds DRANET rail claims ({holders}) but its label {ENFORCE} {shown}: RDMA pods "
            "with DRANET need no privileges (seed 000: Baseline admitted every test pod), so enforcing "
            f"baseline keeps privileged pods off the rails. Fix: set the label {ENFORCE}: baseline",
            ns.urn,
        )


RULE = stack_rule(
    name="rdma-workloads-baseline",
    level="advisory",
    description=(
        "Namespaces with DRANET rail claims enforce Pod Security baseline; pods using DRANET rails are not "
        "privileged, use no hostNetwork and add no IPC_LOCK."
    ),
    validate=guarded(check, stack_where),
)
