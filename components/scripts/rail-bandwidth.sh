#!/bin/bash
# ib_write_bw on every rail, one rail at a time, between two pods that each hold all rails of their
# node (the acceptance pods rail-bw-server and rail-bw-client). Run it where kubectl reaches the
# cluster:  rail-bandwidth.sh [namespace] [server pod] [client pod]
# Expected on BM.GPU.B4.8 (seed 000): 96.87 to 96.88 Gb/s per rail, as with hostNetwork.
set -euo pipefail
ns=${1:-rdma-dranet}
server=${2:-rail-bw-server}
client=${3:-rail-bw-client}
tools=/opt/rdma-dranet
server_map=$(kubectl -n "$ns" exec "$server" -- "$tools/rail-map.sh")
client_map=$(kubectl -n "$ns" exec "$client" -- "$tools/rail-map.sh")
port=18515
while read -r rail server_ip server_dev server_idx; do
  read -r _ _ client_dev client_idx < <(awk -v r="$rail" '$1 == r' <<<"$client_map")
  if [ "$server_idx" = none ] || [ "${client_idx:-none}" = none ]; then
    echo "$rail: no RoCE v2 GID for the child address; is the rail claimed?" >&2
    continue
  fi
  kubectl -n "$ns" exec "$server" -- ib_write_bw -d "$server_dev" -x "$server_idx" -F --report_gbits \
    -D 5 --tclass=41 -p "$port" >/dev/null 2>&1 &
  sleep 2
  result=$(kubectl -n "$ns" exec "$client" -- ib_write_bw -d "$client_dev" -x "$client_idx" -F \
    --report_gbits -D 5 --tclass=41 -p "$port" "$server_ip" 2>&1 | awk '/^ 65536/ {print $4}')
  wait
  echo "$rail $client_dev -> $server_ip ${result:-failed} Gb/s"
  port=$((port + 1))
done <<<"$server_map"
