#!/usr/bin/env bash
# Prints the kubelet flags of a node of a multi-node NVLink shape: those of the command it is given (the topology
# labeller, rdma-topology-labels.sh, with its label keys), then one more
#   --node-labels=<GPU memory fabric key>=<v>
# The kubelet merges a second --node-labels with the first (oke_gpu_rdma/cloud_init.py). Only these shapes' pools
# run this script, so every other pool's cloud-init, and its nodes, stay as they were.
#
# Source: the instance metadata's /opc/v2/host/rdmaTopologyData (or the rdmaTopologyData object of /opc/v2/host/)
# names the host's GPU memory fabric
# (customerGpuMemoryFabric, kubernetes-sigs/dranet pkg/cloudprovider/oke/oke.go imdsHostRDMATopologyData), which
# DRANET publishes as oke.dra.net/gpuMemoryFabricId. The value is derived as the labeller derives its own: the
# first 32 hex digits of the SHA-256 of the OCID's last segment, cut to 60 characters (DRANET's ocidSuffix).
# Without a fabric, the node is its own NVLink domain (its host's identifier, as the labeller's local block
# falls back): a job that needs NVLink across nodes is then never placed across it and another node.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 <gpu-memory-fabric-label> <topology labeller> [<its arguments>...]" >&2
  exit 2
fi
fabric_key=$1
shift
topology_flags=$("$@")
imds=http://169.254.169.254/opc/v2

imds_get() {  # body of IMDS path $1, empty where the service has none
  curl --silent --fail --retry 5 --retry-connrefused --retry-delay 2 --max-time 10 \
    -H "Authorization: Bearer Oracle" "$imds/$1" 2>/dev/null || true
}

field() {  # string value of JSON key $1 in the document on stdin
  tr -d '\n' | sed -n 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p'
}

topology=$(imds_get host/rdmaTopologyData)
identifier=$(field customerGpuMemoryFabric <<<"$topology")
if [ -z "$identifier" ]; then
  # The same document embedded in /opc/v2/host/ (DRANET reads it there: oke.go imdsHostMetadata.RDMATopologyData;
  # oracle-quickstart/oci-hpc-oke's node labeler falls back the same way).
  identifier=$(imds_get host/ | field customerGpuMemoryFabric)
fi
if [ -z "$identifier" ]; then
  echo "gpu-memory-fabric-label: GPU memory fabric unknown: this host is its own NVLink domain" >&2
  identifier=$(field customerHostId <<<"$topology")
fi
if [ -n "$identifier" ]; then
  identifier=${identifier##*.}
  if [ ${#identifier} -gt 60 ]; then identifier=${identifier: -60}; fi
else
  identifier=$(imds_get instance/id)
fi
if [ -z "$identifier" ]; then
  echo "gpu-memory-fabric-label: the instance metadata service gave no fabric, host or instance id" >&2
  exit 1
fi
value=$(printf '%s' "$identifier" | sha256sum | cut -c1-32)
printf -- '%s --node-labels=%s=%s\n' "$topology_flags" "$fabric_key" "$value"
