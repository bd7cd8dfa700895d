#!/bin/bash
# The SR-IOV rail acceptance gate: ib_write_bw on every rail, one rail at a time, between the VFs of two
# pods that each hold one VF of every rail (the workers of the vf-rail-bandwidth MPIJob; its launcher
# runs this script and reaches them with ssh). VFs are paired by the PCI address of their PF, so the
# test never crosses rails:
#   vf-rail-bandwidth.sh MIN_GBPS SERVER CLIENT [TRAFFIC_CLASS]
# Prints each rail's Gb/s; exits 1 when a rail is below MIN_GBPS (workloads.acceptanceJobs.railGbps),
# gives no result or has no VF in the client, or when the server holds no VF.
# Expected on BM.GPU.B4.8 (seed 001): 96.86 to 96.88 Gb/s per rail (shared mode, and exclusive mode
# with rdmaQoS); 43 to 59 Gb/s means the VFs send with traffic class 0 (exclusive mode without rdmaQoS).
set -uo pipefail
min=$1
server=$2
client=$3
tclass=${4:-41}
# shellcheck source=components/scripts/rail-gate.sh
source "$(dirname "${BASH_SOURCE[0]}")/rail-gate.sh"
# "<PF PCI address> <interface> <IPv4 address> <RDMA device>" for each VF interface (net1, net2, ...).
# shellcheck disable=SC2016
vf_map='for n in /sys/class/net/net*; do i=${n##*/};
  ip=$(ip -4 -o addr show dev "$i" | awk "NR == 1 { split(\$4, a, \"/\"); print a[1] }");
  pf=$(readlink -f "$n/device/physfn"); echo "${pf##*/} $i $ip $(ls "$n/device/infiniband")"; done | sort'
server_map=$(on "$server" "$vf_map")
client_map=$(on "$client" "$vf_map")
while read -r pf _ server_ip server_dev; do
  [ -n "$pf" ] || continue
  rails=$((rails + 1))
  read -r _ client_if _ client_dev < <(awk -v pf="$pf" '$1 == pf' <<<"$client_map")
  if [ -z "${client_dev:-}" ]; then
    echo "$pf: FAIL: the client pod has no VF on this rail"
    failed=1
    continue
  fi
  rail_bandwidth "$pf $client_if $client_dev" "$client" "$server_dev" 3 "$client_dev" 3 "$server_ip" "$tclass"
done <<<"$server_map"
rails_verdict VF
