#!/bin/bash
# The rail acceptance gate: ib_write_bw on every rail, one rail at a time, between two nodes whose pods
# each hold all rails of their node (the workers of the rail-bandwidth MPIJob; its launcher runs this
# script and reaches them with ssh, as mpirun does):
#   rail-bandwidth.sh MIN_GBPS SERVER CLIENT TOOLS_DIR
# Prints each rail's Gb/s; exits 1 when a rail is below MIN_GBPS (workloads.acceptanceJobs.railGbps),
# gives no result or has no RoCE v2 GID for its address, or when the server holds no rail.
# Expected on BM.GPU.B4.8 (seed 000): 96.87 to 96.88 Gb/s per rail, as with hostNetwork.
set -uo pipefail
min=$1
server=$2
client=$3
tools=$4
on() {
  local host=$1
  shift
  ssh -o StrictHostKeyChecking=no -o ConnectTimeout=10 "$host" "$@"
}
server_map=$(on "$server" "$tools/rail-map.sh")
client_map=$(on "$client" "$tools/rail-map.sh")
port=18515
rails=0
failed=0
while read -r rail server_ip server_dev server_idx; do
  [ -n "$rail" ] || continue
  rails=$((rails + 1))
  read -r _ _ client_dev client_idx < <(awk -v r="$rail" '$1 == r' <<<"$client_map")
  if [ "$server_idx" = none ] || [ "${client_idx:-none}" = none ]; then
    echo "$rail: FAIL: no RoCE v2 GID for the child address; is the rail claimed?"
    failed=1
    continue
  fi
  on "$server" ib_write_bw -d "$server_dev" -x "$server_idx" -F --report_gbits -D 5 --tclass=41 \
    -p "$port" >/dev/null 2>&1 &
  sleep 2
  result=$(on "$client" ib_write_bw -d "$client_dev" -x "$client_idx" -F --report_gbits -D 5 --tclass=41 \
    -p "$port" "$server_ip" 2>&1 | awk '/^ 65536/ {print $4}')
  wait || true
  if [ -z "$result" ]; then
    echo "$rail $client_dev -> $server_ip: FAIL: no result"
    failed=1
  elif awk -v r="$result" -v m="$min" 'BEGIN { exit !(r + 0 < m + 0) }'; then
    echo "$rail $client_dev -> $server_ip $result Gb/s: FAIL: below the threshold $min Gb/s"
    failed=1
  else
    echo "$rail $client_dev -> $server_ip $result Gb/s"
  fi
  port=$((port + 1))
done <<<"$server_map"
if [ "$rails" -eq 0 ]; then
  echo "ib_write_bw per rail: FAIL: $server holds no rail"
  exit 1
fi
if [ "$failed" -ne 0 ]; then
  echo "ib_write_bw per rail: FAIL ($rails rails, threshold $min Gb/s)"
  exit 1
fi
echo "ib_write_bw per rail: PASS ($rails rails, threshold $min Gb/s)"
