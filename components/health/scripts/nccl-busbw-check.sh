#!/bin/bash
# The NCCL acceptance gate: the bus bandwidth all_reduce_perf (nccl-tests) reached at its largest size,
# out of place, against the stack's threshold (workloads.acceptanceJobs.ncclBusbwGBs). The MPIJob
# launchers run it on their own output:  nccl-busbw-check.sh MIN_GBS LOG
# Prints the measured figures; exits 1 below MIN_GBS, with wrong results (-c 1), or without a result row.
# Expected at 8 GiB (seed 000): 190.13 GB/s for 16 GPUs on 2 nodes, 96.29 / 96.34 GB/s per job for two
# 4-GPU jobs sharing the nodes.
set -euo pipefail
min=$1
log=$2
# A result row of nccl-tests: size count type redop root, then out of place (time algbw busbw #wrong) and
# in place (time algbw busbw #wrong); rows go up in size, so the last one is the largest.
awk -v min="$min" '
  $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 13 { rows++; size = $1; busbw = $8; inplace = $12; wrong = $9 + $13 }
  END {
    if (!rows) { print "NCCL all_reduce: FAIL: no result row in the output"; exit 1 }
    printf "NCCL all_reduce busbw at %.0f bytes: %s GB/s out of place, %s GB/s in place (threshold %s GB/s)\n", size, busbw, inplace, min
    if (wrong > 0) { printf "NCCL all_reduce: FAIL: %d wrong results\n", wrong; exit 1 }
    if (busbw + 0 < min + 0) { printf "NCCL all_reduce: FAIL: %s GB/s is below the threshold %s GB/s\n", busbw, min; exit 1 }
    print "NCCL all_reduce: PASS"
  }' "$log"
