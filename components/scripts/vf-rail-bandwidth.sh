#!/bin/bash
# ib_write_bw on every rail, one rail at a time, between the VFs of two pods that each hold one VF of
# every rail (the SR-IOV acceptance pods vf-rail-bw-server and vf-rail-bw-client). VFs are paired by
# the PCI address of their PF, so the test never crosses rails. Run it where kubectl reaches the cluster:
#   vf-rail-bandwidth.sh [namespace] [server pod] [client pod] [traffic class]
# Expected on BM.GPU.B4.8 (seed 001): 96.86 to 96.88 Gb/s per rail (shared mode, and exclusive mode
# with rdmaQoS); 43 to 59 Gb/s means the VFs send with traffic class 0 (exclusive mode without rdmaQoS).
set -euo pipefail
ns=${1:-default}
server=${2:-vf-rail-bw-server}
client=${3:-vf-rail-bw-client}
tclass=${4:-41}
# "<PF PCI address> <interface> <IPv4 address> <RDMA device>" for each VF interface (net1, net2, ...) of a pod.
vf_map() {
  # shellcheck disable=SC2016
  kubectl -n "$ns" exec "$1" -- bash -c 'for n in /sys/class/net/net*; do i=${n##*/};
    ip=$(ip -4 -o addr show dev "$i" | awk "NR == 1 { split(\$4, a, \"/\"); print a[1] }");
    pf=$(readlink -f "$n/device/physfn"); echo "${pf##*/} $i $ip $(ls "$n/device/infiniband")"; done | sort'
}
server_map=$(vf_map "$server")
client_map=$(vf_map "$client")
port=18515
while read -r pf _ server_ip server_dev; do
  read -r _ client_if _ client_dev < <(awk -v pf="$pf" '$1 == pf' <<<"$client_map")
  if [ -z "${client_dev:-}" ]; then
    echo "$pf: the client pod has no VF on this rail" >&2
    continue
  fi
  kubectl -n "$ns" exec "$server" -- ib_write_bw -d "$server_dev" -x 3 -F --report_gbits -D 5 \
    --tclass="$tclass" -p "$port" >/dev/null 2>&1 &
  sleep 2
  result=$(kubectl -n "$ns" exec "$client" -- ib_write_bw -d "$client_dev" -x 3 -F --report_gbits -D 5 \
    --tclass="$tclass" -p "$port" "$server_ip" 2>&1 | awk '/^ 65536/ {print $4}')
  wait
  echo "$pf $client_if $client_dev -> $server_ip ${result:-failed} Gb/s"
  port=$((port + 1))
done <<<"$server_map"
