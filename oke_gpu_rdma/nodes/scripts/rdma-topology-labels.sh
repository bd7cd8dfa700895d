#!/usr/bin/env bash
# Prints the kubelet flag that registers this node with its place on the RDMA fabric:
#   --node-labels=<island key>=<v>,<network block key>=<v>,<local block key>=<v>
# The three label keys are the arguments (oke_gpu_rdma/labels.py, passed by the cloud-init).
#
# Source: the instance metadata service (IMDS). /opc/v2/host/rdmaTopologyData carries the customer OCIDs
# of the host's HPC island, network block and local block where the tenancy has RDMA topology data (a
# capacity topology; oracle-quickstart/oci-hpc-oke docs/using-rdma-network-locality-when-running-workloads-
# on-oke.md). Elsewhere /opc/v2/host/ knows only networkBlockId and rackId (kubernetes-sigs/dranet v1.4.0
# pkg/cloudprovider/oke/oke.go GetInstance, which falls back the same way).
#
# Values: the first 32 hex digits of the SHA-256 of what DRANET publishes for the same level as the
# device attribute oke.dra.net/<level>Id (the OCID's last segment, cut to 60 characters, ocidSuffix in
# oke.go; the raw value for /host's networkBlockId). Fixed length, within the 63-character label limit,
# the same on every node, and computable from a ResourceSlice's attribute.
#
# A missing level takes the value of the nearest finer level this node knows, the host last: a finer
# domain lies inside exactly one domain of each coarser level, so the node shares the coarser domain only
# with nodes that share its finer one (a domain may be split, unrelated nodes are never merged). Without
# topology data: island = the network block, local block = this host (OCI does not say that a rack lies
# inside one local block, so rackId is not used as one).
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 <hpc-island-label> <network-block-label> <local-block-label>" >&2
  exit 2
fi
island_key=$1 block_key=$2 local_key=$3
imds=http://169.254.169.254/opc/v2

imds_get() {  # body of IMDS path $1, empty where the service has none (404 for rdmaTopologyData)
  curl --silent --fail --retry 5 --retry-connrefused --retry-delay 2 --max-time 10 \
    -H "Authorization: Bearer Oracle" "$imds/$1" 2>/dev/null || true
}

field() {  # string value of JSON key $1 in the document on stdin (IMDS documents are flat strings here)
  tr -d '\n' | sed -n 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p'
}

ocid_suffix() {  # the OCID's last segment, at most its last 60 characters (DRANET's ocidSuffix)
  local suffix=${1##*.}
  if [ ${#suffix} -gt 60 ]; then suffix=${suffix: -60}; fi
  printf '%s' "$suffix"
}

value_of() {  # the label value of an identifier: 32 hex digits of its SHA-256
  printf '%s' "$1" | sha256sum | cut -c1-32
}

topology=$(imds_get host/rdmaTopologyData)
island=$(field customerHPCIslandId <<<"$topology")
block=$(field customerNetworkBlock <<<"$topology")
local_block=$(field customerLocalBlock <<<"$topology")
host=$(field customerHostId <<<"$topology")
for name in island block local_block host; do
  if [ -n "${!name}" ]; then printf -v "$name" '%s' "$(ocid_suffix "${!name}")"; fi
done

if [ -z "$island$block$local_block" ]; then
  echo "rdma-topology-labels: no rdmaTopologyData; network block from /opc/v2/host/, local block per host" >&2
  block=$(field networkBlockId <<<"$(imds_get host/)")
fi
# The host's own identifier, where rdmaTopologyData gave none: the instance's OCID, read alone from its own path
# (one bare-metal instance per host). Not the "id" of /opc/v2/host/: `field` takes the last match of a key anywhere
# in a document, and an "id" of a nested object would do.
if [ -z "$host" ]; then host=$(imds_get instance/id); fi
if [ -z "$host" ]; then
  echo "rdma-topology-labels: the instance metadata service gave no host or instance id" >&2
  exit 1
fi

# Finest first, so each missing level takes the finer level's value.
if [ -z "$local_block" ]; then echo "rdma-topology-labels: local block unknown: this host is its own" >&2; fi
local_value=$(value_of "${local_block:-$host}")
block_value=${block:+$(value_of "$block")}
block_value=${block_value:-$local_value}
island_value=${island:+$(value_of "$island")}
island_value=${island_value:-$block_value}

printf -- '--node-labels=%s=%s,%s=%s,%s=%s\n' \
  "$island_key" "$island_value" "$block_key" "$block_value" "$local_key" "$local_value"
