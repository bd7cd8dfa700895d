#!/bin/bash
# The rail health agent (components/rail_health.py runs it as a DaemonSet on every DRANET pool, host network).
# Every INTERVAL_SECONDS it checks each rail of RAILS ("rdma0=0000:0c:00.0 rdma1=..." : interface and PCI
# function, from the shape's topology) and marks a bad rail with the taint TAINT_KEY=TAINT_VALUE:NoSchedule:
#   MARK_MODE=device: a DeviceTaintRule (resource.k8s.io/v1) on that rail's DRANET device alone;
#   MARK_MODE=node:   a taint on the whole node (the cluster serves no v1 DeviceTaintRule).
# A rail is bad when its PCI function is gone or has no driver, its link is not up or has no carrier, its link flapped since the
# last check (carrier_changes grew), it has no RDMA device or the RDMA port is not ACTIVE/LinkUp, a watched
# error counter grew by more than ERROR_THRESHOLD, or it has no IPv4 address (the one Oracle Cloud Agent
# assigns), read from the RoCE v2 GID table. Files and formats: the kernel's sysfs ABI,
# Documentation/ABI/testing/sysfs-class-net (operstate, carrier, carrier_changes, device) and
# Documentation/ABI/stable/sysfs-class-infiniband (ports/<n>/state "4: ACTIVE", phys_state "5: LinkUp",
# counters/, hw_counters/, gids/<i>, gid_attrs/ndevs/<i>, gid_attrs/types/<i> "RoCE v2").
# Hysteresis: a marked rail is lifted only after RECOVERY_CHECKS good checks in a row AND RECOVERY_SECONDS since
# its last bad check, so a flapping link stays marked. Effect NoSchedule only: a pod already using the rail is
# never evicted, and the agent never touches pods. It lifts only marks it wrote (value TAINT_VALUE): another
# checker's mark under the same key stays.
# RAILS_LABEL (device mode): a node label the agent keeps at "true" while it marks none of the node's rails and
# "false" while it marks any. Kueue's topology-aware scheduling does not see device taints, only node taints and
# labels, and the Kueue flavors select "true" (oke_gpu_rdma/labels.py RAILS_UNMARKED_LABEL).
# Every kubectl call is bounded by REQUEST_TIMEOUT (kubectl's global --request-timeout), and each round starts by
# touching $STATE_DIR/heartbeat, which the pod's liveness probe reads: a round that hangs anyway restarts the pod.
# POOLS (with POOL_LABEL): the node pools the agent's DaemonSet runs on. The DaemonSet controller deletes the agent's
# pod once its node no longer matches the DaemonSet's placement ("delete Pods from newly not-matching nodes",
# https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/); on that SIGTERM, an agent whose node left
# POOLS lifts every mark it wrote, which nothing else would. A pod deleted for any other reason (a rollout, a
# drain) leaves its marks for the next pod to adopt.
# Needs bash 4.3 or later (namerefs, printf's %()T). A round forks only for kubectl: benchmarks/bench_rail_agent.py.
# SYSFS points at another sysfs root, NOW fixes the clock, ONCE=1 runs one round, KUBECTL names the client
# (the tests use recorded /sys trees and a fake kubectl).
set -u
sysfs=${SYSFS:-/sys}
state=${STATE_DIR:-/run/rail-health}
kubectl=${KUBECTL:-kubectl}
node=${NODE_NAME:?NODE_NAME is the node this pod runs on (downward API spec.nodeName)}
mode=${MARK_MODE:?MARK_MODE is device or node}
key=${TAINT_KEY:?TAINT_KEY is the taint key of a bad rail}
value=${TAINT_VALUE:-rail-agent}
driver=${DRIVER:-dra.net}
interval=${INTERVAL_SECONDS:-30}
recovery_checks=${RECOVERY_CHECKS:-5}
recovery_seconds=${RECOVERY_SECONDS:-600}
threshold=${ERROR_THRESHOLD:-0}
counters=${ERROR_COUNTERS:-counters/link_downed counters/symbol_error counters/port_rcv_errors}
rails_label=${RAILS_LABEL:-}
request_timeout=${REQUEST_TIMEOUT:-10s}
pools=${POOLS:-}
pool_label=${POOL_LABEL:-}
effect=NoSchedule
mkdir -p "$state"

log() { echo "rail-health $node: $*"; }

# Every call to the API server is bounded (without --request-timeout a connection that stops answering stalls
# every check), and its stderr is kept apart from its answer: kubectl prints warnings and discovery errors there
# even on success (client-go's memcache.go "couldn't get current server API group list"), which are no answer.
# kube_error prints the last line the last call wrote there.
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
in_cluster_kubeconfig "$state/kubeconfig"

kube() { "$kubectl" --request-timeout="$request_timeout" "$@" 2>"$state/kubectl.err"; }
kube_error() { tail -n 1 "$state/kubectl.err" 2>/dev/null; }

# A round reads some hundred small files (sysfs and its own state): each read is a builtin into a variable, never a
# command substitution, which forks (with 16 rails, forks cost the round 0.8 s of CPU against its 10m request).
readf() {  # $1 variable, $2 file, $3 its value when the file cannot be read: the file's first line; 1 when unread
  local -n readf_into=$1
  local readf_line=""
  readf_into=${3-}
  [ -r "$2" ] || return 1
  IFS= read -r readf_line <"$2" 2>/dev/null || [ -n "$readf_line" ] || return 1
  readf_into=$readf_line
}
get() { readf "$1" "$state/$2" "${3-}" || :; }  # $1 variable, $2 state name, $3 default
put() { echo "$2" >"$state/$1"; }

# DRANET names a PCI network function's device after its normalised address (pci-0000-0c-00-0).
device_name() { local d=${1//:/-}; echo "pci-${d//./-}"; }
rule_name() { echo "rail-health.$node.$(device_name "$1")"; }

has_ipv4() {  # $1 interface, $2 RDMA device: 0 when it has a RoCE v2 IPv4 GID (an IPv4-mapped one, ::ffff:a.b.c.d)
  local port=$sysfs/class/infiniband/$2/ports/1 file idx reading
  for file in "$port"/gid_attrs/ndevs/*; do
    readf reading "$file" && [ "$reading" = "$1" ] || continue
    idx=${file##*/}
    readf reading "$port/gid_attrs/types/$idx" && [ "$reading" = "RoCE v2" ] || continue
    readf reading "$port/gids/$idx" || continue
    case "$reading" in 0000:0000:0000:0000:0000:ffff:*) return 0 ;; esac
  done
  return 1
}

grew() {  # $1 state name, $2 new value: sets growth to the growth since the last check ("" the first time)
  local before
  get before "$1"
  put "$1" "$2"
  growth=""
  [ -n "$before" ] && growth=$(($2 - before))
  return 0
}

# Sets verdict: "" for a good rail, "skip" for one this namespace cannot see, or why it is bad.
check_rail() {
  local ifname=$1 pci=$2 function=$sysfs/bus/pci/devices/$2 why=() dev="" entry current=""
  verdict=""
  if [ ! -e "$function" ]; then
    verdict="PCI function $pci is gone"
    return
  fi
  # The function's interface as this (the host's) namespace names it: sysfs lists a net device only in the
  # namespace it is in (net/core/net-sysfs.c), so a rail renamed on the host is still found, and checked, here.
  for entry in "$function"/net/*; do
    [ -e "$entry" ] && current=${entry##*/} && break
  done
  if [ -z "$current" ]; then
    if [ ! -e "$function/driver" ]; then
      verdict="PCI function $pci has no driver bound (no interface)"
      return
    fi
    # Its function is bound but its interface is in another network namespace: DRANET gave it to a pod.
    verdict=skip
    return
  fi
  local net=$sysfs/class/net/$current
  [ "$current" = "$ifname" ] || ifname=$current
  local operstate carrier changes growth
  readf operstate "$net/operstate" unknown
  [ "$operstate" = up ] || why+=("operstate $operstate")
  readf carrier "$net/carrier" 0
  [ "$carrier" = 1 ] || why+=("no carrier")
  readf changes "$net/carrier_changes" 0
  grew "$1.carrier_changes" "$changes"
  [ -n "$growth" ] && [ "$growth" -gt 0 ] && why+=("link flapped ($growth carrier changes)")
  for entry in "$net"/device/infiniband/*; do
    [ -e "$entry" ] && dev=${entry##*/} && break
  done
  if [ -z "$dev" ]; then
    why+=("no RDMA device")
  else
    local port=$sysfs/class/infiniband/$dev/ports/1 name reading
    readf reading "$port/state" missing
    [ "$reading" = "4: ACTIVE" ] || why+=("$dev port state $reading")
    readf reading "$port/phys_state" missing
    [ "$reading" = "5: LinkUp" ] || why+=("$dev phys_state $reading")
    for name in $counters; do
      readf reading "$port/$name" || continue
      [[ "$reading" =~ ^[0-9]+$ ]] || continue
      grew "$1.${name//\//.}" "$reading"
      [ -n "$growth" ] && [ "$growth" -gt "$threshold" ] && why+=("$dev $name +$growth")
    done
    has_ipv4 "$ifname" "$dev" || why+=("no IPv4 address on $ifname")
  fi
  [ ${#why[@]} -gt 0 ] && [ "$ifname" != "$1" ] && why+=("now named $ifname")
  local IFS=';'
  verdict="${why[*]}"
}

# kubectl's JSONPath over the node's taints: a line each, key, effect and value (empty without one) by tabs.
taints_jsonpath='jsonpath={range .spec.taints[*]}{.key}{"\t"}{.effect}{"\t"}{.value}{"\n"}{end}'
# The node's mark is its NoSchedule taint under our key (a node has at most one taint per key and effect,
# core/v1 validation): its value ("" for one without), or <none>; fails when the read does. A taint of another
# effect under the key (an admin's PreferNoSchedule) is not it.
node_mark() {
  local listing k e v found="<none>"
  listing=$(kube get node "$node" -o "$taints_jsonpath") || return 1
  while IFS=$'\t' read -r k e v; do
    [ "$k" = "$key" ] && [ "$e" = "$effect" ] && found=$v
  done <<<"$listing"
  echo "$found"
}

# The node's uid, read once: the node owns the agent's DeviceTaintRules, so that the garbage collector deletes them
# with the node (https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/).
node_uid() {
  local uid
  get uid node.uid
  if [ -z "$uid" ]; then
    uid=$(kube get node "$node" -o 'jsonpath={.metadata.uid}') && [ -n "$uid" ] || return 1
    put node.uid "$uid"
  fi
  echo "$uid"
}

mark_rail() {  # $1 interface, $2 PCI function
  [ "$mode" = device ] || return 0
  local rule out uid
  rule=$(rule_name "$2")
  uid=$(node_uid) || {
    log "$1: could not read the node's uid (the owner of its DeviceTaintRule): $(kube_error)"
    return 1
  }
  out=$(printf '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"%s","labels":{"oke-gpu-rdma/rail-health-node":"%s"},"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"%s","uid":"%s"}]},"spec":{"deviceSelector":{"driver":"%s","pool":"%s","device":"%s"},"taint":{"key":"%s","value":"%s","effect":"%s"}}}' \
    "$rule" "$node" "$node" "$uid" "$driver" "$node" "$(device_name "$2")" "$key" "$value" "$effect" |
    kube create -f -) || [[ "$(kube_error)" == *AlreadyExists* ]] || {
    log "$1: could not create DeviceTaintRule $rule: $(kube_error)"
    return 1
  }
}

lift_rail() {  # $1 interface, $2 PCI function
  [ "$mode" = device ] || return 0
  kube delete devicetaintrule "$(rule_name "$2")" --ignore-not-found >/dev/null || {
    log "$1: could not delete DeviceTaintRule $(rule_name "$2"): $(kube_error)"
    return 1
  }
}

label_node() {  # $1 true or false: the node's RAILS_LABEL, written only when it differs (read back each round)
  [ -n "$rails_label" ] || return 0
  local current
  # An unanswered read is not "no label": write nothing this round.
  current=$(kube get node "$node" -o "jsonpath={.metadata.labels.${rails_label//./\\.}}") || {
    log "could not read node label $rails_label"
    return 1
  }
  [ "$current" = "$1" ] && return 0
  if kube label node "$node" --overwrite "$rails_label=$1" >/dev/null; then
    log "node labelled $rails_label=$1"
  else
    log "could not label the node $rails_label=$1: $(kube_error)"
  fi
}

# What the agent holds and what the cluster has are apart: <name>.held says the agent takes the rail (or, adopted in
# node mode, the node) for bad, with the hysteresis below; <rail>.written says its DeviceTaintRule exists. Each
# round writes what differs, so a mark or a lift that failed is tried again every round until it lands, and the
# reason a rail went bad (a flap seen once) is not lost with the failed write.
hold() {  # $1 the name of a mark (a rail, or "node"), $2 now: held bad, its recovery starting again
  put "$1.held" 1
  put "$1.good" 0
  put "$1.last_bad" "$2"
}

# A restarted agent adopts the marks it wrote before: they stay until the rail has recovered again. In node mode the
# node's mark names no rail, so it is held as one mark of its own ("node"), lifted once every rail the agent can see
# has recovered; no rail is taken for bad.
adopt() {
  local now=$1 rail ifname pci current found
  if [ "$mode" = node ]; then
    # An unanswered read is not "no mark": try again next round rather than forget it.
    current=$(node_mark) || {
      log "could not read the node's mark: $(kube_error); trying again next check"
      return 1
    }
    if [ "$current" = "$value" ]; then
      hold node "$now"
      log "node marked before this agent started; kept until its rails recover"
    fi
    put started "$now"
    return 0
  fi
  for rail in $RAILS; do
    ifname=${rail%%=*} pci=${rail#*=}
    # An unanswered read is not "no mark": try again next round rather than forget a rule. Only stdout is the
    # answer (kube).
    found=$(kube get devicetaintrule "$(rule_name "$pci")" -o name --ignore-not-found) || {
      log "could not read DeviceTaintRule $(rule_name "$pci"): $(kube_error)"
      return 1
    }
    if [ -n "$found" ]; then
      hold "$ifname" "$now"
      put "$ifname.written" 1
      log "$ifname: marked before this agent started; kept until it recovers"
    fi
  done
  put started "$now"
}

recover() {  # $1 the name of a held mark, $2 now: 0 once it has had its good checks and its time
  local good last_bad
  get good "$1.good" 0
  good=$((good + 1))
  put "$1.good" "$good"
  get last_bad "$1.last_bad" 0
  [ "$good" -ge "$recovery_checks" ] && [ $(($2 - last_bad)) -ge "$recovery_seconds" ]
}

round() {
  local now=${NOW:-} rail ifname pci verdict held written why any=0 bad=0
  [ -n "$now" ] || printf -v now '%(%s)T' -1
  touch "$state/heartbeat"
  [ -e "$state/started" ] || adopt "$now" || return 0
  for rail in $RAILS; do
    ifname=${rail%%=*} pci=${rail#*=}
    check_rail "$ifname" "$pci"
    get held "$ifname.held" 0
    get written "$ifname.written" 0
    if [ "$verdict" = skip ]; then
      # A rail held by a pod is neither checked nor allocatable: its DeviceTaintRule stays until it is back and
      # has recovered, and it keeps the node label false; in node mode it does not hold the node's mark (a
      # pod's lifetime), which comes back at the first bad check once the rail is back on the host.
      [ "$mode" = device ] && [ "$held$written" != 00 ] && any=1
      continue
    fi
    if [ -n "$verdict" ]; then
      hold "$ifname" "$now"
      put "$ifname.why" "$verdict"
      held=1 bad=1
    elif [ "$held" = 1 ] && recover "$ifname" "$now"; then
      put "$ifname.held" 0
      held=0
    fi
    if [ "$held" = 1 ]; then
      any=1
      [ "$written" = 1 ] && continue
      get why "$ifname.why"
      mark_rail "$ifname" "$pci" && put "$ifname.written" 1 && log "$ifname: bad ($why): marked"
    elif [ "$written" = 1 ]; then
      if lift_rail "$ifname" "$pci"; then
        put "$ifname.written" 0
        log "$ifname: recovered: mark lifted"
      else
        any=1  # the rule is still there
      fi
    fi
  done
  get held node.held 0
  if [ "$held" = 1 ]; then  # the adopted node mark (node mode)
    if [ "$bad" = 1 ]; then
      hold node "$now"
      any=1
    elif recover node "$now"; then
      put node.held 0
    else
      any=1
    fi
  fi
  if [ "$any" = 1 ]; then label_node false; else label_node true; fi
  [ "$mode" = node ] || return 0
  # The node's taint follows its rails each round (read back, so a mark removed by hand returns while a rail
  # is bad, and another checker's mark under the key is neither duplicated nor lifted).
  local current
  current=$(node_mark) || {
    log "could not read the node's mark: $(kube_error); trying again next check"
    return 0
  }
  if [ "$any" = 1 ] && [ "$current" = "<none>" ]; then
    if kube taint node "$node" "$key=$value:$effect" >/dev/null; then
      log "node marked ($key=$value:$effect)"
    else
      log "could not mark the node: $(kube_error); trying again next check"
    fi
  elif [ "$any" = 0 ] && [ "$current" = "$value" ]; then
    if kube taint node "$node" "$key:$effect-" >/dev/null; then
      log "node mark lifted"
    else
      log "could not lift the node's mark: $(kube_error); trying again next check"
    fi
  fi
}

# On SIGTERM: lift every mark when the node left the agent's pools (POOLS), else keep them for the next pod.
leave() {
  local pool rail pci current
  [ -n "$pools" ] && [ -n "$pool_label" ] || exit 0
  pool=$(kube get node "$node" -o "jsonpath={.metadata.labels.${pool_label//./\\.}}") || {
    log "stopping; could not read the node's pool ($(kube_error)): its marks stay"
    exit 0
  }
  case " $pools " in *" $pool "*) [ -n "$pool" ] && exit 0 ;; esac
  if [ "$mode" = device ]; then
    for rail in $RAILS; do
      pci=${rail#*=}
      lift_rail "${rail%%=*}" "$pci" || exit 0
    done
  elif current=$(node_mark) && [ "$current" = "$value" ]; then
    kube taint node "$node" "$key:$effect-" >/dev/null || {
      log "could not lift the node's mark: $(kube_error)"
      exit 0
    }
  fi
  log "the node left the pools $pools (now ${pool:-none}): every mark of this agent lifted"
  exit 0
}

if [ "${ONCE:-0}" = 1 ]; then
  round
  exit
fi
trap leave TERM
while true; do
  round
  # In the background, so that a SIGTERM is handled at once rather than after the sleep.
  sleep "$interval" &
  wait $!
done
