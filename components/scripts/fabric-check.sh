#!/bin/bash
# The scheduled fabric check (workloads.acceptanceJobs.schedule): the acceptance gates again, on idle nodes.
# A CronJob runs this controller; it
#   1. finds the nodes of the jobs' pool that no pod with a ResourceClaim holds (Pending, Running or Unknown
#      on the node), and stops at once when a pod with a claim is Pending without a node: a training job is
#      waiting for nodes, and the check must not take them;
#   2. pairs the idle nodes (sorted; an odd one waits for the next run) and runs on each pair the acceptance
#      MPIJobs whose specs are in $SPECS (rail.json: ib_write_bw on every rail; nccl.json: NCCL all_reduce),
#      one after the other, pinned to the pair, one worker on each node (a 4-GPU template's two workers
#      would otherwise fit on one node and test no fabric): the apply-time specs, so the same claim
#      templates and thresholds;
#   3. a job that does not finish within $WAIT_SECONDS is deleted and the pair skipped, with no mark: its
#      workers found no room (a pod took the nodes meanwhile) or could not start;
#   4. marks what it measured. ib_write_bw measures a pair, so a rail below the threshold is marked on both
#      nodes: a node taint $RAIL_KEY=$TAINT_VALUE:NoSchedule where the cluster serves no DeviceTaintRule
#      (TAINT_MODE=node, Kubernetes 1.36), else a resource.k8s.io/v1 DeviceTaintRule on the rail's DRANET
#      device (TAINT_MODE=device); a pair below the NCCL threshold gets $CHECK_LABEL=fail and the node
#      condition $CONDITION=True, a pair above it pass and False. A rail that passes loses the mark this
#      check set (never a mark another writer set: another taint value is left alone).
#   In device mode the jobs claim from the check's own copies of their claim templates ($SPECS/claims.json,
#   named $CLAIM_PREFIX<template>, applied for the run and deleted after it), which tolerate this check's own
#   mark and nothing else: the rail job claims every rail of a node, so a rail the check tainted could
#   otherwise never be allocated again, nor re-measured, nor its mark lifted.
# kube-state-metrics exports the marks (kube_node_spec_taint, kube_node_labels, kube_node_status_condition):
# the check's result as metrics with no Pushgateway and nothing that outlives its pod.
# Settings (environment): POOL_LABEL POOL NAMESPACE TAINT_MODE RAIL_KEY TAINT_VALUE CHECK_LABEL CONDITION
# RAILS_ANNOTATION DRIVER RUN_LABEL RULE_NODE_LABEL CLAIM_PREFIX SPECS WAIT_SECONDS [POLL_SECONDS].
set -uo pipefail
poll=${POLL_SECONDS:-10}
run=$(date -u +%Y%m%d%H%M)
job_label=$RUN_LABEL
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# Jobs a killed run left behind would hold nodes.
kubectl -n "$NAMESPACE" delete mpijobs -l "$job_label" --ignore-not-found >/dev/null

claimed=$(kubectl get pods -A -o json | jq -r '.items[]
  | select((.spec.resourceClaims // []) | length > 0)
  | select(.status.phase == "Pending" or .status.phase == "Running" or .status.phase == "Unknown")
  | [(.spec.nodeName // "-"), .metadata.namespace, .metadata.name] | @tsv')
waiting=$(awk -F'\t' '$1 == "-" {print $2 "/" $3}' <<<"$claimed")
if [ -n "$waiting" ]; then
  echo "skipped: pods with claims wait for nodes ($(tr '\n' ' ' <<<"$waiting")); the check takes none"
  exit 0
fi
if [ "$TAINT_MODE" = device ]; then
  # A killed run's copies may be left, and a template's spec is immutable (ValidateResourceClaimTemplateUpdate):
  # replace them rather than apply over them, so a template the stack changed since is taken up.
  kubectl delete -f "$SPECS/claims.json" --ignore-not-found >/dev/null
  kubectl apply -f "$SPECS/claims.json" >/dev/null || { echo "could not apply the check's claim templates" >&2; exit 1; }
  trap 'kubectl delete -f "$SPECS/claims.json" --ignore-not-found >/dev/null' EXIT
fi
busy=$(awk -F'\t' '$1 != "" {print $1}' <<<"$claimed" | sort -u)
nodes=$(kubectl get nodes -l "$POOL_LABEL=$POOL" -o json | jq -r '.items[]
  | select(.spec.unschedulable != true) | .metadata.name' | sort)
idle=$(comm -23 <(printf '%s\n' $nodes | sed '/^$/d') <(printf '%s\n' $busy | sed '/^$/d'))
echo "pool $POOL: $(wc -w <<<"$nodes") nodes, idle: $(tr '\n' ' ' <<<"$idle")"

# run_job KIND A B: create the MPIJob of $SPECS/KIND.json pinned to nodes A and B, wait for it, print the
# launcher's log; status 0 when it ran to an end (Succeeded or Failed), 1 when skipped.
run_job() {
  local kind=$1 a=$2 b=$3 name="fabric-check-$1-$run"
  jq --arg name "$name" --arg ns "$NAMESPACE" --arg a "$a" --arg b "$b" --arg runlabel "$job_label" --arg run "$run" \
    --arg key "$RAIL_KEY" --arg prefix "$([ "$TAINT_MODE" = device ] && echo "$CLAIM_PREFIX")" '
    .metadata.name = $name | .metadata.namespace = $ns | .metadata.labels[$runlabel] = $run
    | .spec.mpiReplicaSpecs.Worker.replicas = 2
    | .spec.mpiReplicaSpecs.Worker.template.metadata.labels[$runlabel] = $name
    | .spec.mpiReplicaSpecs.Worker.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution
        += [{labelSelector: {matchLabels: {($runlabel): $name}}, topologyKey: "kubernetes.io/hostname"}]
    | .spec.mpiReplicaSpecs.Worker.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
        = {nodeSelectorTerms: [$a, $b | {matchFields: [{key: "metadata.name", operator: "In", values: [.]}]}]}
    | .spec.mpiReplicaSpecs.Worker.template.spec.tolerations += [{key: $key, operator: "Exists", effect: "NoSchedule"}]
    | (.spec.mpiReplicaSpecs.Worker.template.spec.resourceClaims[]? | select(.resourceClaimTemplateName)
        | .resourceClaimTemplateName) |= $prefix + .
    ' "$SPECS/$kind.json" | kubectl create -f - >/dev/null || return 1
  local waited=0 state=""
  while [ "$waited" -lt "$WAIT_SECONDS" ]; do
    state=$(kubectl -n "$NAMESPACE" get mpijob "$name" -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
    case " $state " in *" Succeeded "* | *" Failed "*) break ;; esac
    sleep "$poll"
    waited=$((waited + poll))
  done
  case " $state " in
    *" Succeeded "* | *" Failed "*)
      kubectl -n "$NAMESPACE" logs "job/$name-launcher"
      kubectl -n "$NAMESPACE" delete mpijob "$name" >/dev/null
      return 0
      ;;
  esac
  echo "$kind on $a $b: skipped: not finished within $WAIT_SECONDS s (its workers found no room)" >&2
  kubectl -n "$NAMESPACE" delete mpijob "$name" >/dev/null
  return 1
}

taint_value() {
  kubectl get node "$1" -o jsonpath="{.spec.taints[?(@.key==\"$RAIL_KEY\")].value}"
}

# mark_rails NODE "FAILED RAILS" "PASSED RAILS"
mark_rails() {
  local node=$1 failed=$2 passed=$3 rail device pool rule
  if [ "$TAINT_MODE" = node ]; then
    local current
    current=$(taint_value "$node")
    if [ -n "$current" ] && [ "$current" != "$TAINT_VALUE" ]; then
      echo "$node: keeps $RAIL_KEY=$current (not this check's mark)"
    elif [ -n "$failed" ]; then
      kubectl taint nodes "$node" "$RAIL_KEY=$TAINT_VALUE:NoSchedule" --overwrite >/dev/null
      kubectl annotate node "$node" "$RAILS_ANNOTATION=$failed" --overwrite >/dev/null
      echo "$node: tainted $RAIL_KEY=$TAINT_VALUE:NoSchedule (rails below the threshold: $failed)"
    elif [ "$current" = "$TAINT_VALUE" ]; then
      kubectl taint nodes "$node" "$RAIL_KEY=$TAINT_VALUE:NoSchedule-" >/dev/null
      kubectl annotate node "$node" "$RAILS_ANNOTATION-" >/dev/null
      echo "$node: lifted $RAIL_KEY (every rail passed)"
    fi
    return
  fi
  local slices
  slices=$(kubectl get resourceslices -o json)
  for rail in $failed; do
    read -r pool device < <(jq -r --arg n "$node" --arg r "$rail" --arg d "$DRIVER" '.items[]
      | select(.spec.nodeName == $n and .spec.driver == $d) | .spec.pool.name as $p | .spec.devices[]
      | select(.attributes["dra.net/ifName"].string == $r) | "\($p) \(.name)"' <<<"$slices" | head -1)
    if [ -z "${device:-}" ]; then
      echo "$node: $rail: no $DRIVER device with this ifName; not tainted"
      continue
    fi
    rule="fabric-check-$node-$rail"
    jq -n --arg name "$rule" --arg d "$DRIVER" --arg p "$pool" --arg dev "$device" --arg key "$RAIL_KEY" \
      --arg value "$TAINT_VALUE" --arg node "$node" --arg nodelabel "$RULE_NODE_LABEL" '{apiVersion: "resource.k8s.io/v1", kind: "DeviceTaintRule",
      metadata: {name: $name, labels: {($nodelabel): $node}},
      spec: {deviceSelector: {driver: $d, pool: $p, device: $dev},
        taint: {key: $key, value: $value, effect: "NoSchedule"}}}' | kubectl apply -f - >/dev/null
    echo "$node: tainted device $device ($rail) by DeviceTaintRule $rule"
  done
  for rail in $passed; do
    kubectl delete devicetaintrule "fabric-check-$node-$rail" --ignore-not-found >/dev/null
  done
}

# mark_node NODE pass|fail MESSAGE
mark_node() {
  local node=$1 verdict=$2 message=$3 status=False reason=NcclAboveThreshold
  if [ "$verdict" = fail ]; then
    status=True
    reason=NcclBelowThreshold
  fi
  kubectl label node "$node" "$CHECK_LABEL=$verdict" --overwrite >/dev/null
  local out
  out=$(kubectl patch node "$node" --subresource=status --type=strategic -p "$(jq -cn --arg t "$CONDITION" \
    --arg s "$status" --arg r "$reason" --arg m "$message" --arg now "$(now)" \
    '{status: {conditions: [{type: $t, status: $s, reason: $r, message: $m, lastHeartbeatTime: $now,
      lastTransitionTime: $now}]}}')" 2>&1) || { echo "$node: $CHECK_LABEL=$verdict; condition $CONDITION not set: $out"; return; }
  echo "$node: $CHECK_LABEL=$verdict, condition $CONDITION=$status"
}

set -- $idle
while [ $# -ge 2 ]; do
  a=$1 b=$2
  shift 2
  if [ -f "$SPECS/rail.json" ] && log=$(run_job rail "$a" "$b"); then
    echo "$log"
    # Lines of rail-gate.sh: "rdmaN <device> -> <ip> <Gb/s> Gb/s[: FAIL...]" or "rdmaN: FAIL: ...".
    failed=$(awk '$1 ~ /^rdma[0-9]+:?$/ && /FAIL/ {sub(":", "", $1); print $1}' <<<"$log" | sort -uV | xargs)
    passed=$(awk '$1 ~ /^rdma[0-9]+:?$/ && !/FAIL/ {print $1}' <<<"$log" | sort -uV | xargs)
    if [ -n "$failed$passed" ]; then
      mark_rails "$a" "$failed" "$passed"
      mark_rails "$b" "$failed" "$passed"
    else
      echo "rail on $a $b: no rail result in the log; no mark"
    fi
  fi
  if [ -f "$SPECS/nccl.json" ] && log=$(run_job nccl "$a" "$b"); then
    echo "$log"
    verdict=$(awk '/^NCCL all_reduce: (PASS|FAIL)/ {print ($3 == "PASS" ? "pass" : "fail")}' <<<"$log" | tail -1)
    figure=$(grep '^NCCL all_reduce busbw' <<<"$log" | tail -1)
    if [ -n "$verdict" ]; then
      mark_node "$a" "$verdict" "with $b: ${figure:-no figure}"
      mark_node "$b" "$verdict" "with $a: ${figure:-no figure}"
    else
      echo "nccl on $a $b: no verdict in the log; no mark"
    fi
  fi
done
[ $# -eq 1 ] && echo "$1: idle but unpaired; the next run may pair it"
exit 0
