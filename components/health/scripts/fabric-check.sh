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
#   5. lifts the marks of its own that outlived their cause: its DeviceTaintRules for a node that is gone or in no
#      pool (a rule names its node as owner, so the garbage collector removes it with the node; an older rule,
#      or a node that left its pools, is found here), and its node taint on a node in no pool.
# Every kubectl call is bounded (--request-timeout). A failed read takes nothing for granted: a failed pod list
# or node list ends the run before it takes a node; a failed create, mark or lift is said, and fails the run
# (exit 1), so that the CronJob's failed Job shows it. A result is taken only while both nodes of its pair are
# still there: a peer deleted mid-run fails every rail of the pair, which says nothing of the survivor.
# kube-state-metrics exports the marks (kube_node_spec_taint, kube_node_labels, kube_node_status_condition):
# the check's result as metrics with no Pushgateway and nothing that outlives its pod.
# Settings (environment): POOL_LABEL POOL NAMESPACE TAINT_MODE RAIL_KEY TAINT_VALUE CHECK_LABEL CONDITION
# RAILS_ANNOTATION DRIVER RUN_LABEL RULE_NODE_LABEL CLAIM_PREFIX SPECS WAIT_SECONDS [POLL_SECONDS REQUEST_TIMEOUT].
set -uo pipefail
poll=${POLL_SECONDS:-10}
run=$(date -u +%Y%m%d%H%M)
job_label=$RUN_LABEL
request_timeout=${REQUEST_TIMEOUT:-30s}
# Scratch space: the last call's stderr, and a flag that fails the run (set in subshells too: a pair skipped
# for an API error, a mark that could not be written).
scratch=$(mktemp -d)
run_failed() { : >"$scratch/failed"; }
trap 'rm -rf "$scratch"' EXIT
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# kubectl, bounded; its stderr (the reason of a failure) is kept for kube_error and copied to the log.
# kubectl leaves the in-cluster config once --request-timeout is set: its ConfigFlags' default server
# (http://localhost:8080) makes the client config non-default, so client-go never falls back to the pod's service
# account and every call goes to localhost:8080 (kubernetes/kubernetes#93474, open at v1.36). So a pod without a
# KUBECONFIG names its API server, CA and (rotating) token file in one of its own (client-go re-reads tokenFile).
in_cluster_kubeconfig() {  # $1 the file to write
  local sa=${SERVICEACCOUNT_DIR:-/var/run/secrets/kubernetes.io/serviceaccount} host=${KUBERNETES_SERVICE_HOST:-} ns=default
  [ -z "${KUBECONFIG:-}" ] && [ -n "$host" ] && [ -r "$sa/token" ] || return 0
  [[ "$host" == *:* ]] && host="[$host]"
  [ -r "$sa/namespace" ] && IFS= read -r ns <"$sa/namespace"
  printf '%s\n' "apiVersion: v1" "kind: Config" "clusters:" "- name: in-cluster" "  cluster:" \
    "    server: https://$host:${KUBERNETES_SERVICE_PORT:-443}" "    certificate-authority: $sa/ca.crt" \
    "users:" "- name: service-account" "  user:" "    tokenFile: $sa/token" "contexts:" "- name: in-cluster" \
    "  context: {cluster: in-cluster, user: service-account, namespace: $ns}" "current-context: in-cluster" >"$1"
  export KUBECONFIG=$1
}
in_cluster_kubeconfig "$scratch/kubeconfig"

kube() {
  kubectl --request-timeout="$request_timeout" "$@" 2>"$scratch/kubectl.err"
  local rc=$?
  cat "$scratch/kubectl.err" >&2
  return $rc
}
kube_error() { tail -n 1 "$scratch/kubectl.err"; }

# Jobs a killed run left behind would hold nodes.
kube -n "$NAMESPACE" delete mpijobs -l "$job_label" --ignore-not-found >/dev/null

pods=$(kube get pods -A -o json) || {
  echo "skipped: could not list the pods, so no node is known to be idle; the check takes none ($(kube_error))"
  exit 1
}
all_nodes=$(kube get nodes -o json) || {
  echo "skipped: could not list the nodes ($(kube_error)); the check takes none"
  exit 1
}
claimed=$(jq -r '.items[]
  | select((.spec.resourceClaims // []) | length > 0)
  | select(.status.phase == "Pending" or .status.phase == "Running" or .status.phase == "Unknown")
  | [(.spec.nodeName // "-"), .metadata.namespace, .metadata.name] | @tsv' <<<"$pods")
waiting=$(awk -F'\t' '$1 == "-" {print $2 "/" $3}' <<<"$claimed")
if [ -n "$waiting" ]; then
  echo "skipped: pods with claims wait for nodes ($(tr '\n' ' ' <<<"$waiting")); the check takes none"
  exit 0
fi
if [ "$TAINT_MODE" = device ]; then
  # A killed run's copies may be left, and a template's spec is immutable (ValidateResourceClaimTemplateUpdate):
  # replace them rather than apply over them, so a template the stack changed since is taken up.
  kube delete -f "$SPECS/claims.json" --ignore-not-found >/dev/null
  kube apply -f "$SPECS/claims.json" >/dev/null || { echo "could not apply the check's claim templates: $(kube_error)"; exit 1; }
  trap 'kube delete -f "$SPECS/claims.json" --ignore-not-found >/dev/null; rm -rf "$scratch"' EXIT
fi
busy=$(awk -F'\t' '$1 != "" {print $1}' <<<"$claimed" | sort -u)
# ONLY_NODE (set by the remediation controller for a node it repaired, docs/health.md): that node alone is checked,
# paired with one idle schedulable node of its pool; it is cordoned, so its workers tolerate the cordon.
only=${ONLY_NODE:-}
nodes=$(jq -r --arg l "$POOL_LABEL" --arg p "$POOL" --arg only "$only" '.items[]
  | select(.metadata.labels[$l] == $p and (.spec.unschedulable != true or .metadata.name == $only))
  | .metadata.name' <<<"$all_nodes" | sort)
# Nodes in some pool (any value of the pool label): a mark of this check elsewhere has outlived its cause.
pooled=$(jq -r --arg l "$POOL_LABEL" '.items[] | select(.metadata.labels[$l] != null) | .metadata.name' <<<"$all_nodes")
uid_of() { jq -r --arg n "$1" '.items[] | select(.metadata.name == $n) | .metadata.uid' <<<"$all_nodes"; }

sweep() {
  local name node value
  if [ "$TAINT_MODE" = device ]; then
    local rules
    rules=$(kube get devicetaintrules -l "$RULE_NODE_LABEL" -o json) || {
      echo "could not list this check's DeviceTaintRules ($(kube_error)); stale ones stay until the next run"
      run_failed
      return
    }
    while IFS=$'\t' read -r name node; do
      [ -n "$name" ] || continue
      grep -qxF -- "$node" <<<"$pooled" && continue
      if kube delete devicetaintrule "$name" --ignore-not-found >/dev/null; then
        echo "$node: gone or in no pool: lifted DeviceTaintRule $name"
      else
        echo "$node: could not lift DeviceTaintRule $name: $(kube_error)"
        run_failed
      fi
    done < <(jq -r --arg l "$RULE_NODE_LABEL" '.items[] | [.metadata.name, .metadata.labels[$l]] | @tsv' <<<"$rules")
    return
  fi
  while IFS=$'\t' read -r node value; do
    [ -n "$node" ] || continue
    if kube taint nodes "$node" "$RAIL_KEY=$TAINT_VALUE:NoSchedule-" >/dev/null; then
      kube annotate node "$node" "$RAILS_ANNOTATION-" >/dev/null || true
      echo "$node: in no pool: lifted $RAIL_KEY=$TAINT_VALUE"
    else
      echo "$node: in no pool: could not lift $RAIL_KEY=$TAINT_VALUE: $(kube_error)"
      run_failed
    fi
  done < <(jq -r --arg l "$POOL_LABEL" --arg k "$RAIL_KEY" --arg v "$TAINT_VALUE" '.items[]
    | select(.metadata.labels[$l] == null)
    | select(any(.spec.taints[]?; .key == $k and .value == $v and .effect == "NoSchedule"))
    | [.metadata.name, $v] | @tsv' <<<"$all_nodes")
}
sweep
idle=$(comm -23 <(printf '%s\n' $nodes | sed '/^$/d') <(printf '%s\n' $busy | sed '/^$/d'))
echo "pool $POOL: $(wc -w <<<"$nodes") nodes, idle: $(tr '\n' ' ' <<<"$idle")"
# Not checked yet (the node or every peer busy): exit NOT_CHECKED after a pause, which the remediation's check Job
# does not count as a failure (its podFailurePolicy ignores it and runs the pod again, within its deadline).
not_checked() {
  echo "$1; not checked, trying again"
  sleep "${NOT_CHECKED_PAUSE:-60}"
  exit "${NOT_CHECKED_STATUS:-3}"
}
if [ -n "$only" ]; then
  grep -qxF -- "$only" <<<"$idle" || not_checked "$only: not an idle node of pool $POOL"
  peer=$(grep -vxF -- "$only" <<<"$idle" | head -1)
  [ -n "$peer" ] || not_checked "$only: no idle node of pool $POOL to pair it with"
  idle="$only $peer"
fi

# run_job KIND A B: create the MPIJob of $SPECS/KIND.json pinned to nodes A and B, wait for it, print the
# launcher's log; status 0 when it ran to an end (Succeeded or Failed), 1 when skipped for want of room, 2 when
# skipped for an API error.
run_job() {
  local kind=$1 a=$2 b=$3 name="fabric-check-$1-$run"
  jq --arg name "$name" --arg ns "$NAMESPACE" --arg a "$a" --arg b "$b" --arg runlabel "$job_label" --arg run "$run" \
    --arg key "$RAIL_KEY" --arg only "$only" --arg prefix "$([ "$TAINT_MODE" = device ] && echo "$CLAIM_PREFIX")" '
    .metadata.name = $name | .metadata.namespace = $ns | .metadata.labels[$runlabel] = $run
    | .spec.mpiReplicaSpecs.Worker.replicas = 2
    | .spec.mpiReplicaSpecs.Worker.template.metadata.labels[$runlabel] = $name
    | .spec.mpiReplicaSpecs.Worker.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution
        += [{labelSelector: {matchLabels: {($runlabel): $name}}, topologyKey: "kubernetes.io/hostname"}]
    | .spec.mpiReplicaSpecs.Worker.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
        = {nodeSelectorTerms: [$a, $b | {matchFields: [{key: "metadata.name", operator: "In", values: [.]}]}]}
    | .spec.mpiReplicaSpecs.Worker.template.spec.tolerations += [{key: $key, operator: "Exists", effect: "NoSchedule"}]
    | if $only != "" then .spec.mpiReplicaSpecs.Worker.template.spec.tolerations
        += [{key: "node.kubernetes.io/unschedulable", operator: "Exists", effect: "NoSchedule"}] else . end
    | (.spec.mpiReplicaSpecs.Worker.template.spec.resourceClaims[]? | select(.resourceClaimTemplateName)
        | .resourceClaimTemplateName) |= $prefix + .
    ' "$SPECS/$kind.json" | kube create -f - >/dev/null || {
    echo "$kind on $a $b: skipped: could not create its MPIJob: $(kube_error)" >&2
    return 2
  }
  local waited=0 state=""
  while [ "$waited" -lt "$WAIT_SECONDS" ]; do
    # A failed read is tried again at the next poll; the wait bounds them all.
    state=$(kube -n "$NAMESPACE" get mpijob "$name" -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
    case " $state " in *" Succeeded "* | *" Failed "*) break ;; esac
    sleep "$poll"
    waited=$((waited + poll))
  done
  case " $state " in
    *" Succeeded "* | *" Failed "*)
      local log rc=0
      log=$(kube -n "$NAMESPACE" logs "job/$name-launcher") || {
        echo "$kind on $a $b: skipped: could not read the launcher's log: $(kube_error)" >&2
        rc=2
      }
      kube -n "$NAMESPACE" delete mpijob "$name" >/dev/null
      [ "$rc" = 0 ] && echo "$log"
      return $rc
      ;;
  esac
  echo "$kind on $a $b: skipped: not finished within $WAIT_SECONDS s (its workers found no room)" >&2
  kube -n "$NAMESPACE" delete mpijob "$name" >/dev/null
  return 1
}

# both_there A B: both nodes of a pair are still there, read now; else say why no mark is set.
both_there() {
  local kind=$1 a=$2 b=$3 n out
  for n in "$a" "$b"; do
    if ! out=$(kube get node "$n" -o name --ignore-not-found); then
      echo "$kind on $a $b: could not read $n ($(kube_error)); no mark"
      run_failed
      return 1
    fi
    if [ -z "$out" ]; then
      local other=$a
      [ "$n" = "$a" ] && other=$b
      echo "$kind on $a $b: $n is gone; the pair's result says nothing of $other: no mark"
      return 1
    fi
  done
}

taint_value() {
  kube get node "$1" -o jsonpath="{.spec.taints[?(@.key==\"$RAIL_KEY\")].value}"
}

# mark_rails NODE "FAILED RAILS" "PASSED RAILS"
mark_rails() {
  local node=$1 failed=$2 passed=$3 rail device pool rule
  if [ "$TAINT_MODE" = node ]; then
    local current
    current=$(taint_value "$node") || {
      echo "$node: could not read its taints: $(kube_error); no mark"
      run_failed
      return
    }
    if [ -n "$current" ] && [ "$current" != "$TAINT_VALUE" ]; then
      echo "$node: keeps $RAIL_KEY=$current (not this check's mark)"
    elif [ -n "$failed" ]; then
      if ! kube taint nodes "$node" "$RAIL_KEY=$TAINT_VALUE:NoSchedule" --overwrite >/dev/null; then
        echo "$node: could not taint: $(kube_error)"
        run_failed
      elif ! kube annotate node "$node" "$RAILS_ANNOTATION=$failed" --overwrite >/dev/null; then
        echo "$node: tainted $RAIL_KEY=$TAINT_VALUE:NoSchedule; could not annotate the rails ($failed): $(kube_error)"
        run_failed
      else
        echo "$node: tainted $RAIL_KEY=$TAINT_VALUE:NoSchedule (rails below the threshold: $failed)"
      fi
    elif [ "$current" = "$TAINT_VALUE" ]; then
      if kube taint nodes "$node" "$RAIL_KEY=$TAINT_VALUE:NoSchedule-" >/dev/null; then
        kube annotate node "$node" "$RAILS_ANNOTATION-" >/dev/null || run_failed
        echo "$node: lifted $RAIL_KEY (every rail passed)"
      else
        echo "$node: could not lift $RAIL_KEY: $(kube_error)"
        run_failed
      fi
    fi
    return
  fi
  local slices uid
  slices=$(kube get resourceslices -o json) || {
    echo "$node: could not list the ResourceSlices: $(kube_error); no mark"
    run_failed
    return
  }
  uid=$(uid_of "$node")
  for rail in $failed; do
    read -r pool device < <(jq -r --arg n "$node" --arg r "$rail" --arg d "$DRIVER" '.items[]
      | select(.spec.nodeName == $n and .spec.driver == $d) | .spec.pool.name as $p | .spec.devices[]
      | select(.attributes["dra.net/ifName"].string == $r) | "\($p) \(.name)"' <<<"$slices" | head -1)
    if [ -z "${device:-}" ]; then
      echo "$node: $rail: no $DRIVER device with this ifName; not tainted"
      continue
    fi
    rule="fabric-check-$node-$rail"
    # The node owns the rule: the garbage collector deletes it with the node (a cluster-scoped owner of a
    # cluster-scoped object; https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/).
    if jq -n --arg name "$rule" --arg d "$DRIVER" --arg p "$pool" --arg dev "$device" --arg key "$RAIL_KEY" \
      --arg value "$TAINT_VALUE" --arg node "$node" --arg uid "$uid" --arg nodelabel "$RULE_NODE_LABEL" '{apiVersion: "resource.k8s.io/v1", kind: "DeviceTaintRule",
      metadata: {name: $name, labels: {($nodelabel): $node},
        ownerReferences: [{apiVersion: "v1", kind: "Node", name: $node, uid: $uid}]},
      spec: {deviceSelector: {driver: $d, pool: $p, device: $dev},
        taint: {key: $key, value: $value, effect: "NoSchedule"}}}' | kube apply -f - >/dev/null; then
      echo "$node: tainted device $device ($rail) by DeviceTaintRule $rule"
    else
      echo "$node: could not taint device $device ($rail): $(kube_error)"
      run_failed
    fi
  done
  for rail in $passed; do
    kube delete devicetaintrule "fabric-check-$node-$rail" --ignore-not-found >/dev/null || {
      echo "$node: could not lift DeviceTaintRule fabric-check-$node-$rail: $(kube_error)"
      run_failed
    }
  done
}

# mark_node NODE pass|fail MESSAGE
mark_node() {
  local node=$1 verdict=$2 message=$3 status=False reason=NcclAboveThreshold
  if [ "$verdict" = fail ]; then
    status=True
    reason=NcclBelowThreshold
  fi
  kube label node "$node" "$CHECK_LABEL=$verdict" --overwrite >/dev/null || {
    echo "$node: could not label $CHECK_LABEL=$verdict: $(kube_error)"
    run_failed
    return
  }
  local out
  out=$(kube patch node "$node" --subresource=status --type=strategic -p "$(jq -cn --arg t "$CONDITION" \
    --arg s "$status" --arg r "$reason" --arg m "$message" --arg now "$(now)" \
    '{status: {conditions: [{type: $t, status: $s, reason: $r, message: $m, lastHeartbeatTime: $now,
      lastTransitionTime: $now}]}}')") || {
    echo "$node: $CHECK_LABEL=$verdict; condition $CONDITION not set: $(kube_error)"
    run_failed
    return
  }
  echo "$node: $CHECK_LABEL=$verdict, condition $CONDITION=$status"
}

# job KIND A B: run_job, failing the run on an API error; the log on stdout.
job() {
  local out rc
  out=$(run_job "$@")
  rc=$?
  [ "$rc" = 2 ] && run_failed
  [ "$rc" = 0 ] && echo "$out"
  return "$rc"
}

set -- $idle
while [ $# -ge 2 ]; do
  a=$1 b=$2
  shift 2
  if [ -f "$SPECS/rail.json" ] && log=$(job rail "$a" "$b"); then
    echo "$log"
    # Lines of rail-gate.sh: "rdmaN <device> -> <ip> <Gb/s> Gb/s[: FAIL...]" or "rdmaN: FAIL: ...".
    failed=$(awk '$1 ~ /^rdma[0-9]+:?$/ && /FAIL/ {sub(":", "", $1); print $1}' <<<"$log" | sort -uV | xargs)
    passed=$(awk '$1 ~ /^rdma[0-9]+:?$/ && !/FAIL/ {print $1}' <<<"$log" | sort -uV | xargs)
    if [ -z "$failed$passed" ]; then
      echo "rail on $a $b: no rail result in the log; no mark"
    elif both_there rail "$a" "$b"; then
      if [ -n "$failed" ]; then only_verdict=fail; else only_verdict=${only_verdict:-pass}; fi
      mark_rails "$a" "$failed" "$passed"
      mark_rails "$b" "$failed" "$passed"
    else
      continue  # the pair is broken: no NCCL job either
    fi
  fi
  if [ -f "$SPECS/nccl.json" ] && log=$(job nccl "$a" "$b"); then
    echo "$log"
    verdict=$(awk '/^NCCL all_reduce: (PASS|FAIL)/ {print ($3 == "PASS" ? "pass" : "fail")}' <<<"$log" | tail -1)
    figure=$(grep '^NCCL all_reduce busbw' <<<"$log" | tail -1)
    if [ -z "$verdict" ]; then
      echo "nccl on $a $b: no verdict in the log; no mark"
    elif both_there nccl "$a" "$b"; then
      [ "$verdict" = pass ] && [ "${only_verdict:-}" != fail ] && only_verdict=pass
      [ "$verdict" = fail ] && only_verdict=fail
      mark_node "$a" "$verdict" "with $b: ${figure:-no figure}"
      mark_node "$b" "$verdict" "with $a: ${figure:-no figure}"
    fi
  fi
done
[ $# -eq 1 ] && echo "$1: idle but unpaired; the next run may pair it"
[ -e "$scratch/failed" ] && exit 1
# A check of one node succeeds only on a pass of its NCCL job with no rail below the threshold.
if [ -n "$only" ] && [ "${only_verdict:-}" != pass ]; then
  echo "$only: ${only_verdict:-no verdict}"
  exit 1
fi
exit 0
