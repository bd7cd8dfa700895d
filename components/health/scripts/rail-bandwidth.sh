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
# shellcheck source=components/scripts/rail-gate.sh
source "$(dirname "${BASH_SOURCE[0]}")/rail-gate.sh"
server_map=$(on "$server" "$tools/rail-map.sh")
client_map=$(on "$client" "$tools/rail-map.sh")
while read -r rail server_ip server_dev server_idx; do
  [ -n "$rail" ] || continue
  rails=$((rails + 1))
  read -r _ _ client_dev client_idx < <(awk -v r="$rail" '$1 == r' <<<"$client_map")
  if [ "$server_idx" = none ] || [ "${client_idx:-none}" = none ]; then
    echo "$rail: FAIL: no RoCE v2 GID for the child address; is the rail claimed?"
    failed=1
    continue
  fi
  rail_bandwidth "$rail $client_dev" "$client" "$server_dev" "$server_idx" "$client_dev" "$client_idx" "$server_ip" 41
done <<<"$server_map"
rails_verdict rail
