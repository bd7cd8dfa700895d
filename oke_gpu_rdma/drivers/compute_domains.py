"""ComputeDomains: multi-node NVLink (MNNVL) through the NVIDIA DRA driver's compute-domain controller and kubelet
plugin, as facts and plain data.

A ComputeDomain is an IMEX domain the driver builds for one workload: its controller makes the channel
ResourceClaimTemplate the ComputeDomain names, each pod claims a channel from it, and on the first claim on a node
the kubelet plugin labels the node so the controller's IMEX daemon DaemonSet lands there. Pods of one domain share
GPU memory over NVLink only within one NVLink partition (the driver's clique): the IMEX daemons of one domain are
grouped per clique (``<domain uid>.<clique id>``), so a job whose pods span two NVLink domains falls back to the
rails for every byte between them.

Sources: kubernetes-sigs/dra-driver-nvidia-gpu at commit 95932046 (the snapshot the chart facts come from,
oke_gpu_rdma/drivers/nvidia_gpu.py):
- api/nvidia.com/resource/v1beta1/computedomain.go: group resource.nvidia.com/v1beta1, kind ComputeDomain,
  spec.numNodes (default 0, deprecated: with IMEXDaemonsWithDNSNames, on by default, pods start without waiting for
  peers), spec.channel.resourceClaimTemplate.name, spec.channel.allocationMode Single (default) or All; spec is
  immutable (CEL ``self == oldSelf``); status.nodes[].status Ready or NotReady per IMEX daemon.
- templates/deviceclass-compute-domain-default-channel.yaml: the channel DeviceClass selects the driver's device
  of type channel and id 0; cmd/compute-domain-kubelet-plugin/nvlib.go enumerateComputeDomainChannels and
  deviceinfo.go publish channel-<n> devices without multi-allocation, so one channel claim per node and domain.
- templates/compute-domain-workload-claim-template.tmpl.yaml: the template the controller writes (request
  ``channel`` of that class, opaque ComputeDomainChannelConfig).
- cmd/compute-domain-controller/computedomain.go l. 50-58: the node label ``resource.nvidia.com/computeDomain``.
- cmd/compute-domain-kubelet-plugin/computedomain.go l. 50: ``nvidia.com/gpu.clique`` (``<cluster uuid>.<clique
  id>``, nvlib.go getCliqueIDLegacy), written when kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled.
- oracle-quickstart/oci-hpc-oke docs/using-dynamic-resource-allocation-for-multi-node-nvlink-imex.md: on OCI the
  MNNVL shapes are BM.GPU.GB200.4, BM.GPU.GB200-v2.4, BM.GPU.GB200-v3.4 and BM.GPU.GB300.4; numNodes 0 needs
  driver v25.8.0 or newer; the pod names the channel template in spec.resourceClaims and its container's
  resources.claims.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from oke_gpu_rdma.drivers import nvidia_gpu

REPOSITORY: Final = nvidia_gpu.REPOSITORY
SOURCE_COMMIT: Final = nvidia_gpu.SOURCE_COMMIT
CRD_PATH: Final = f"{nvidia_gpu.CHART_PATH}/crds/resource.nvidia.com_computedomains.yaml"
API_GROUP: Final = "resource.nvidia.com"
API_VERSION: Final = f"{API_GROUP}/v1beta1"
KIND: Final = "ComputeDomain"
PLURAL: Final = "computedomains"

DRIVER: Final = nvidia_gpu.COMPUTE_DOMAIN_DRIVER
CHANNEL_DEVICE_CLASS: Final = nvidia_gpu.COMPUTE_DOMAIN_CHANNEL_CLASS
DAEMON_DEVICE_CLASS: Final = nvidia_gpu.COMPUTE_DOMAIN_DAEMON_CLASS
CHANNEL_CLASS_SELECTOR: Final = (
    "device.driver == 'compute-domain.nvidia.com' && "
    "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
    "device.attributes['compute-domain.nvidia.com'].id == 0"
)
DAEMON_CLASS_SELECTOR: Final = "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'daemon'"
# One channel device of the default class per node (channel-0), and no device of this driver allows multiple
# allocations: two pods of one domain on a node can never both be allocated.
CHANNELS_PER_NODE: Final = 1
NODE_LABEL: Final = "resource.nvidia.com/computeDomain"

AllocationMode = Literal["Single", "All"]
ALLOCATION_MODES: Final[tuple[AllocationMode, ...]] = ("Single", "All")

# Shapes whose nodes share GPU memory across nodes over NVLink (oci-hpc-oke, above). Their facts live in the shape
# files (oke_gpu_rdma/nodes/shapes/*.yaml, `multiNodeNvlink`); this list is the source those files cite.
CHANNEL_CLAIM_NAME: Final = "compute-domain-channel"


def channel_template_name(domain: str) -> str:
    """The channel ResourceClaimTemplate a ComputeDomain ``domain`` asks its controller for (the naming of the
    oci-hpc-oke manifests: ``<domain>-channel``)."""
    return f"{domain}-channel"


def manifest(
    name: str,
    namespace: str,
    allocation_mode: AllocationMode = "Single",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ComputeDomain for one job: numNodes 0 (the driver's recommended value; pods start as soon as their node's
    IMEX daemon runs, and the job's launcher waits for its peers) and its channel template."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": {
            "numNodes": 0,
            "channel": {
                "resourceClaimTemplate": {"name": channel_template_name(name)},
                "allocationMode": allocation_mode,
            },
        },
    }


def pod_claim(domain: str) -> dict[str, str]:
    """The entry of a pod's spec.resourceClaims that claims the domain's channel."""
    return {"name": CHANNEL_CLAIM_NAME, "resourceClaimTemplateName": channel_template_name(domain)}


def container_claim() -> dict[str, str]:
    """The entry of a container's resources.claims that receives the channel device."""
    return {"name": CHANNEL_CLAIM_NAME}
