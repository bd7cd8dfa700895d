"""The plan's first lines: what a change does to the GPU nodes, one line per pool.

Bare-metal GPU capacity may not come back once released, so a reviewer must see at once when an
apply replaces, cycles, removes or drains GPU nodes:

- a replaced or deleted node pool (or one whose compute cluster is replaced) replaces or deletes
  every node it has; a replacement says its order (`nodePools[].replaceOrder`, the record's
  `deleteBeforeReplace`) and what that order costs: the pool's downtime when the old pool is deleted
  first, the pool's bare-metal hosts twice over in the availability domain when the new one is created
  first;
- with node cycling on, a node pool update that changes what a node is built from cycles every node
  (cordon, drain, terminate, launch; `maximumSurge`/`maximumUnavailable` at a time). Which properties
  those are: Oracle's terraform-oci-oke "Workers: Node Cycle" (kubernetes_version, node_labels, shape
  and shape config, boot_volume_size, image_id, node_metadata / cloud_init, ssh_public_key, nsg_ids,
  volume_kms_key_id, pv_transit_encryption), mapped to pulumi-oci's NodePool inputs below, plus the
  placement (a cycle "will attempt to bring all nodes in the NodePool in sync with the NodePool
  specification": OCI API reference, CycleMode). With cycling off, OKE applies them only to nodes
  launched later, and the provider sends `nodePoolCyclingDetails` with every update, so the first
  update with cycling on cycles the nodes left behind; `cycleModes` decide how (boot-volume replacement
  keeps the hosts but changes only some properties), and instance replacement of bare metal is where
  Oracle's documents disagree;
- a `size` change adds or removes nodes;
- a DRANET child-range change needs the nodes drained (seed 003);
- a remediated pool (health.remediation) is rolled by the remediation controller one local block at a time
  (oke_gpu_rdma/health/remediation/rollout.py says the order and how long);
- a Kubernetes upgrade to the release that serves DeviceTaintRule in v1 switches the rail marks, and leaves
  the node taints written before behind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.stack_keys import NODE_POOL_REPLACE_ORDER
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.health import health_marks as health
from oke_gpu_rdma.health.remediation import rollout
from oke_gpu_rdma.nodes.cidr_rules import DEFAULT_CHILD_RANGE
from oke_gpu_rdma.nodes.labels import POOL_LABEL, RAIL_UNHEALTHY_TAINT_KEY
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from stack_config.nodes.pool_settings import BOOT_VOLUME_REPLACE, CREATE_FIRST, DELETE_FIRST, INSTANCE_REPLACE

from .change_plan import Plan, Step, protect_setting, root_causes
from .replace_rules import UNKNOWN

# NodePool input paths whose change OKE brings to existing nodes only by cycling them, and the words
# a reviewer knows them by (the longest matching path wins).
CYCLED_BY = {
    ("kubernetesVersion",): "Kubernetes version",
    ("initialNodeLabels",): "node labels",
    ("nodeShape",): "shape",
    ("nodeShapeConfig",): "shape config",
    ("nodeSourceDetails",): "node image",
    ("nodeSourceDetails", "bootVolumeSizeInGbs"): "boot volume size",
    ("nodeMetadata",): "node metadata",
    ("nodeMetadata", "user_data"): "cloud-init",
    ("sshPublicKey",): "SSH key",
    ("nodeConfigDetails", "nsgIds"): "NSGs",
    ("nodeConfigDetails", "kmsKeyId"): "boot volume KMS key",
    ("nodeConfigDetails", "isPvEncryptionInTransitEnabled"): "in-transit encryption",
    # Where a node runs is part of the pool's spec too (CycleMode: a cycle brings every node in sync
    # with the pool's spec): instance replacement launches the new nodes in the new placement; boot-volume
    # replacement keeps each instance where it is. A new AD replaces the pool (its compute cluster's AD).
    ("nodeConfigDetails", "placementConfigs"): "placement",
}

# NodePoolCyclingDetails.cycleModes (stack_config/model.py CycleMode): BOOT_VOLUME_REPLACE swaps the boot
# volume on the same instance (the node keeps its host, OCID and address) and can change only these
# NodePool inputs ("Updating Worker Nodes in an Existing Node Pool by Replacing Boot Volumes":
# BootVolumeSizeInGBs, ImageId, KmsKeyId, KubernetesVersion, NodeMetadata, SshPublicKey); a node that
# needs any other change fails its cycle and must be cycled again with INSTANCE_REPLACE, which
# terminates the node and launches a new one with every change applied (OCI API reference, CycleMode).
BOOT_VOLUME_REPLACEABLE = (
    ("kubernetesVersion",),
    ("nodeSourceDetails", "imageId"),
    ("nodeSourceDetails", "bootVolumeSizeInGbs"),
    ("nodeMetadata",),
    ("sshPublicKey",),
    ("nodeConfigDetails", "kmsKeyId"),
)
# Oracle's documents disagree on cycling bare metal: "Performing an In-Place Worker Node Update by
# Cycling Nodes in an Existing Node Pool" says "You cannot cycle nodes with bare metal shapes", while
# the API (NodePoolCyclingDetails), terraform-provider-oci and pulumi-oci take cycling details for any
# shape, and the boot-volume guide says "You can cycle nodes with both virtual machine shapes and bare
# metal shapes". The plan says so rather than guess which one OKE does.
BARE_METAL_DISAGREEMENT = (
    "Oracle's documents disagree whether bare-metal nodes cycle by instance replacement (the cycling guide: "
    '"You cannot cycle nodes with bare metal shapes"; the API takes it), the nodes may keep the old spec; '
    f"{BOOT_VOLUME_REPLACE} is documented for bare metal"
)
_SIZE = ("nodeConfigDetails", "size")
# The Pulumi name of the remediation controller's ConfigMap (components/health/node_remediation.py: "<name>-program").
REMEDIATION_PROGRAM = "node-remediation-program"
# The Pulumi names of the rail health agent's objects start so (__main__.py RailHealthAgent "rail-health").
RAIL_AGENT_PREFIX = "rail-health"
_AD = ("nodeConfigDetails", "placementConfigs", 0, "availabilityDomain")


def _get(value: Any, *path: str | int) -> Any:
    for key in path:
        if isinstance(value, Mapping):
            value = value.get(key)
        elif isinstance(value, list) and isinstance(key, int) and key < len(value):
            value = value[key]
        else:
            return None
    return value


def _cycled_by(path: tuple[str | int, ...]) -> str | None:
    keys = tuple(p for p in path if isinstance(p, str))
    best = max((k for k in CYCLED_BY if keys[: len(k)] == k), key=len, default=None)
    return CYCLED_BY[best] if best else None


def _nodes(count: Any, shape: Any) -> str:
    return f"{count} {shape} node{'' if count == 1 else 's'}"


_WHAT = {resource_types.COMPUTE_CLUSTER: "its compute cluster", resource_types.CLUSTER: "the OKE cluster"}


def _what(root: Step, pool: Step) -> str:
    if root is pool:
        return "the node pool"
    return f"{_WHAT.get(root.record.type, root.record.type)} {root.record.name}"


def _cluster_order(root: Step) -> str:
    """A replaced compute cluster's own order: it holds no hosts, so only its pool's order costs any."""
    if root.record.type != resource_types.COMPUTE_CLUSTER:
        return ""
    return " and deleted first" if root.delete_first else " and created first (it holds no hosts)"


def _order(step: Step) -> str:
    """Which order the engine replaces the pool in, and what that needs."""
    old, new = (step.base or step.record).inputs, step.record.inputs
    old_size, new_size = _get(old, *_SIZE), _get(new, *_SIZE)
    shape = new.get("nodeShape", "?")
    setting = NODE_POOL_REPLACE_ORDER.rsplit(".", 1)[-1]
    if step.delete_first:
        return (
            f"deleted first ({setting}: {DELETE_FIRST}): no {shape} node of the pool runs from the delete until "
            f"the {new_size} new ones join"
        )
    old_ad, new_ad = _get(old, *_AD), _get(new, *_AD)
    where = new_ad if isinstance(new_ad, str) and new_ad != UNKNOWN else "its availability domain"
    if old_ad == new_ad and isinstance(old_size, int) and isinstance(new_size, int):
        need = f"{old_size + new_size} free {shape} hosts in {where} (twice the pool) while both pools run"
    else:
        need = f"{new_size} free {shape} hosts in {where} while the old {old_size} still run"
    return f"created first ({setting}: {CREATE_FIRST}): needs {need}"


def _bare_metal(shape: Any) -> bool:
    # OCI's shape names: "BM." bare metal, "VM." virtual machine.
    return str(shape).startswith("BM.")


def _cycling(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    return inputs.get("nodePoolCyclingDetails") or {}


def _replaceable_in_place(path: tuple[str | int, ...]) -> bool:
    keys = tuple(p for p in path if isinstance(p, str))
    return any(keys[: len(k)] == k for k in BOOT_VOLUME_REPLACEABLE)


# A caveat is said once, after the pool lines, naming the pools it concerns: caveat text -> pools.
Caveats = dict[str, list[str]]


def _cycled_line(step: Step, cycled: Mapping[str, list[str]], unmovable: list[str], caveats: Caveats) -> str:
    """What cycling does with the changed node properties, by cycleModes (the first mode OKE performs)."""
    inputs = step.record.inputs
    pool, shape, size = (
        inputs.get("name", step.record.name),
        inputs.get("nodeShape", "?"),
        _get(inputs, *_SIZE),
    )
    cycling = _cycling(inputs)
    what = ", ".join(f"{w} ({', '.join(paths)})" for w, paths in cycled.items())
    pace = f"surge {cycling.get('maximumSurge', 1)}, unavailable {cycling.get('maximumUnavailable', 0)}"
    modes = list(cycling.get("cycleModes") or [])
    if modes[:1] == [BOOT_VOLUME_REPLACE]:
        line = f"{pool}: {_nodes(size, shape)} cycled by boot-volume replacement, same hosts ({pace}): {what}"
        if unmovable:
            fallback = (
                f"then {INSTANCE_REPLACE}"
                if INSTANCE_REPLACE in modes
                else f"add {INSTANCE_REPLACE} to cycleModes"
            )
            line += (
                f"; {BOOT_VOLUME_REPLACE} cannot change {', '.join(unmovable)}: each node's boot-volume cycle "
                f"fails ({fallback})"
            )
        return line
    mode = "" if modes else f", cycleModes unset: {INSTANCE_REPLACE}"
    line = f"{pool}: {_nodes(size, shape)} cycled ({pace}{mode}): {what}"
    if _bare_metal(shape):
        caveats.setdefault(BARE_METAL_DISAGREEMENT, []).append(str(pool))
    return line


CYCLING_OFF = (
    "node cycling is off: only nodes launched later get the change, until an update with cycling on "
    "cycles them, whatever it changes"
)
CYCLING_TURNED_ON = (
    "node cycling was off in the base and is on now: this update cycles every node still built from an "
    "older spec of the pool (changes applied while cycling was off; the renderings cannot show which nodes)"
)


def remediation_config(plan: Plan) -> dict[str, Any] | None:
    """The remediation controller's config.json as this apply writes it (components/health/node_remediation.py), if any."""
    for step in plan.steps:
        record = step.record
        if (
            record.type == resource_types.CONFIG_MAP
            and record.name == REMEDIATION_PROGRAM
            and step.op != "delete"
        ):
            text = (record.inputs.get("data") or {}).get("config.json")
            try:
                return dict(json.loads(text)) if isinstance(text, str) else None
            except ValueError:  # known only after the apply (it names a node pool being replaced)
                return None
    return None


def _pool_line(
    step: Step,
    steps_by_name: Mapping[str, Step],
    caveats: Caveats,
    remediation: Mapping[str, Any] | None = None,
) -> list[str]:
    record, base = step.record, step.base
    inputs = (base or record).inputs
    pool, shape = inputs.get("name", record.name), inputs.get("nodeShape", "?")
    size = _get(inputs, *_SIZE)
    if step.op == "delete":
        if step.error:
            return [
                f"{pool}: {_nodes(size, shape)} would be deleted (the pool is no longer declared), but the "
                f"apply stops here: the node pool is protected ({protect_setting(step)} lifts it)"
            ]
        return [f"{pool}: {_nodes(size, shape)} deleted: the pool is no longer declared"]
    if step.op == "replace":
        roots = root_causes(step, steps_by_name)
        stopped = [root for root, _ in roots if root.error] + ([step] if step.error else [])
        why = "; ".join(
            f"{_what(root, step)} is replaced ({', '.join(paths)}){'' if stopped else _cluster_order(root)}"
            for root, paths in roots
        )
        if stopped:
            names = list(dict.fromkeys(_what(root, step) for root in stopped))
            verb = "are" if len(names) > 1 else "is"
            return [
                f"{pool}: {_nodes(size, shape)} would be replaced ({why}), but the apply stops here: "
                f"{' and '.join(names)} {verb} protected ({protect_setting(*stopped)} lifts it)"
            ]
        return [f"{pool}: {_nodes(size, shape)} replaced: {why}; {_order(step)}"]
    if step.op != "update":
        return []
    lines = []
    cycled: dict[str, list[str]] = {}
    unmovable: list[str] = []
    for change in step.changes:
        words = _cycled_by(change.path)
        if words:
            cycled.setdefault(words, []).append(change.shown)
            if not _replaceable_in_place(change.path) and words not in unmovable:
                unmovable.append(words)
    cycling_on = bool(_cycling(record.inputs).get("isNodeCyclingEnabled"))
    if cycled:
        what = ", ".join(f"{w} ({', '.join(paths)})" for w, paths in cycled.items())
        if cycling_on:
            lines.append(_cycled_line(step, cycled, unmovable, caveats))
        else:
            # terraform-provider-oci containerengine_node_pool_resource.go Update() sends
            # node_pool_cycling_details on every update (GetOkExists, no HasChange), and OKE's cycle
            # brings every node in line with the pool's spec: the first update with cycling on cycles them.
            if remediation is not None and pool in remediation["pools"] and isinstance(size, int):
                # The controller rolls the pool's nodes, whose spec digest this apply changes (config rollouts).
                lines.append(rollout.rollout_line(str(pool), size, str(shape), what, remediation))
            else:
                lines.append(f"{pool}: {_nodes(size, shape)} keep the old {what}")
                caveats.setdefault(CYCLING_OFF, []).append(str(pool))
    if cycling_on and base is not None and not _cycling(base.inputs).get("isNodeCyclingEnabled"):
        # What the plan can know: the base ran with cycling off, so any node-property change applied then
        # (in the base's apply or earlier) may have left nodes on the old spec; which ones, the
        # renderings cannot show.
        caveats.setdefault(CYCLING_TURNED_ON, []).append(str(pool))
    new_size = _get(record.inputs, *_SIZE)
    if isinstance(size, int) and isinstance(new_size, int) and new_size != size:
        delta = new_size - size
        lines.append(
            f"{pool}: {size} => {new_size} {shape} nodes: {abs(delta)} {'added' if delta > 0 else 'removed'}"
        )
    return lines


def _child_range(release: Mapping[str, Any] | None) -> str | None:
    if release is None:
        return None
    values = release.get("values") or {}
    configured = _get(values, *dranet.CHILD_RANGE_VALUE.split("."))
    if configured is None:
        # The chart passes no option unless set: DRANET's OKE provider then uses its default.
        # (components/drivers/dra_drivers.py sets the value only when it differs from the default.)
        configured = str(DEFAULT_CHILD_RANGE)
    return str(configured)


def _dranet_lines(step: Step, plan: Plan) -> list[str]:
    if step.base is None or step.op not in ("update", "replace"):
        return []
    old, new = _child_range(step.base.inputs), _child_range(step.record.inputs)
    if old == new:
        return []
    selected = _get(
        step.record.inputs,
        "values",
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    )
    pools: list[str] = []
    for term in _get(selected, "nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") == POOL_LABEL:
                pools += expression.get("values") or []
    node_pools = [
        s.record.inputs
        for s in plan.steps
        if s.record.type == resource_types.NODE_POOL
        and s.record.inputs.get("nodeShape") in CATALOG.names
        and s.op != "delete"
        and (not pools or s.record.inputs.get("name") in pools)
    ]
    count = sum(_get(p, *_SIZE) or 0 for p in node_pools)
    shapes = sorted({str(p.get("nodeShape")) for p in node_pools}) or ["GPU"]
    names = ", ".join(str(p.get("name")) for p in node_pools)
    return [
        f"dranet: child range {old} => {new} on {_nodes(count, '/'.join(shapes))} ({names}): "
        "the nodes must be drained (seed 003)"
    ]


def _minor(version: Any) -> tuple[int, int] | None:
    parts = str(version or "").lstrip("v").split(".")
    return (
        (int(parts[0]), int(parts[1]))
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit()
        else None
    )


def upgrade_lines(plan: Plan) -> list[str]:
    """A Kubernetes upgrade across the release that serves DeviceTaintRule in v1 (oke_gpu_rdma/health/health_marks.py): what
    changes for the rail marks, in the order the apply makes it, and the mark the switch leaves behind."""
    for step in plan.steps:
        if step.record.type != resource_types.CLUSTER or step.op != "update" or step.base is None:
            continue
        old, new = step.base.inputs.get("kubernetesVersion"), step.record.inputs.get("kubernetesVersion")
        before, after = _minor(old), _minor(new)
        since = health.DEVICE_TAINT_RULE_V1_SINCE
        if before is None or after is None or not before < since <= after:
            continue
        if not any(s.record.name.startswith(RAIL_AGENT_PREFIX) for s in plan.steps):
            return [
                f"Kubernetes {old} => {new}: OKE upgrades the control plane first, then the pools' nodes follow"
            ]
        # The order: the cluster first (every pool depends on it); the rail agent's DaemonSets wait for the GPU
        # pools (components/health/rail_health.py node_pools), so its marks switch once their specs are updated; the
        # fabric check switches at its next run; the nodes roll afterwards (the lines above), the remediation
        # controller's over hours.
        return [
            f"Kubernetes {old} => {new}, in the order the apply makes it: OKE upgrades the control plane; the "
            "pools' node specs follow; then the rail agent's DaemonSets, which wait for the pools, mark rails "
            "with DeviceTaintRules instead of node taints (their RBAC and admission policies change with them), "
            "as does the fabric check from its next run; the nodes roll onto the new version as said above",
            f"a rail mark written as a node taint on {before[0]}.{before[1]} is lifted by no agent after the "
            "switch: the nodes replaced start without one; on a node kept, lift it with "
            f"`kubectl taint nodes <node> {RAIL_UNHEALTHY_TAINT_KEY}-`",
        ]
    return []


def gpu_node_lines(plan: Plan) -> list[str]:
    """One line per pool an apply would replace, cycle, resize or remove; each caveat once, with the pools
    it concerns; then DRANET range changes."""
    steps_by_name = {s.record.name: s for s in plan.steps}
    lines: list[str] = []
    caveats: Caveats = {}
    remediation = remediation_config(plan)
    for step in sorted(plan.steps, key=lambda s: str(s.record.inputs.get("name", s.record.name))):
        # GPU shapes only: the system pool's VMs come back in minutes (components/nodes/system_pool.py).
        inputs = (step.base or step.record).inputs
        if step.record.type == resource_types.NODE_POOL and inputs.get("nodeShape") in CATALOG.names:
            lines += _pool_line(step, steps_by_name, caveats, remediation)
    lines += [f"{', '.join(dict.fromkeys(pools))}: {caveat}" for caveat, pools in caveats.items()]
    for step in plan.steps:
        if (
            step.record.type == resource_types.HELM_RELEASE
            and step.record.inputs.get("chart") == dranet.CHART
        ):
            lines += _dranet_lines(step, plan)
    return lines + upgrade_lines(plan)
