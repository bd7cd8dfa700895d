"""What the GPU DRA driver's ComputeDomain parts write, where the e2e control plane runs no driver: the DeviceClasses
its chart creates, the slice its kubelet plugin publishes on a multi-node NVLink node, and the channel
ResourceClaimTemplate its controller writes for each ComputeDomain. Each object is built as the driver builds it,
at the commit the stack's facts come from (oke_gpu_rdma/drivers/nvidia_gpu.py SOURCE_COMMIT):

- DeviceClasses: templates/deviceclass-compute-domain-default-channel.yaml, deviceclass-compute-domain-daemon.yaml;
- the slice: cmd/compute-domain-kubelet-plugin/nvlib.go enumerateComputeDomainChannels (one channel-<n> per IMEX
  channel; the default class takes channel 0, so one is enough here) and enumerateComputeDomainDaemons (daemon-0),
  deviceinfo.go GetDevice (attributes `type` and `id`);
- the template: cmd/compute-domain-controller/resourceclaimtemplate.go l. 393-407 with
  templates/compute-domain-workload-claim-template.tmpl.yaml (request `channel` of the default channel class, an
  opaque ComputeDomainChannelConfig naming the domain's UID; labels resource.nvidia.com/computeDomain: <uid> and
  resource.nvidia.com/computeDomainTarget: Workload).
"""

from __future__ import annotations

from typing import Any

from oke_gpu_rdma.drivers import compute_domains

CHANNEL_CONFIG_KIND = "ComputeDomainChannelConfig"
TARGET_LABEL = "resource.nvidia.com/computeDomainTarget"


def device_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": selector}}]},
        }
        for name, selector in (
            (compute_domains.CHANNEL_DEVICE_CLASS, compute_domains.CHANNEL_CLASS_SELECTOR),
            (compute_domains.DAEMON_DEVICE_CLASS, compute_domains.DAEMON_CLASS_SELECTOR),
        )
    ]


def node_slice(node: str) -> dict[str, Any]:
    """The kubelet plugin's ResourceSlice on ``node``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-compute-domain.nvidia.com"},
        "spec": {
            "driver": compute_domains.DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"{kind}-0", "attributes": {"type": {"string": kind}, "id": {"int": 0}}}
                for kind in ("channel", "daemon")
            ],
        },
    }


def channel_template(domain: dict[str, Any]) -> dict[str, Any]:
    """The controller's channel template for a ComputeDomain as the API server holds it (with its UID)."""
    uid = domain["metadata"]["uid"]
    channel = domain["spec"]["channel"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": channel["resourceClaimTemplate"]["name"],
            "namespace": domain["metadata"]["namespace"],
            "labels": {compute_domains.NODE_LABEL: uid, TARGET_LABEL: "Workload"},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "channel",
                            "exactly": {"deviceClassName": compute_domains.CHANNEL_DEVICE_CLASS},
                        }
                    ],
                    "config": [
                        {
                            "requests": ["channel"],
                            "opaque": {
                                "driver": compute_domains.DRIVER,
                                "parameters": {
                                    "apiVersion": compute_domains.API_VERSION,
                                    "kind": CHANNEL_CONFIG_KIND,
                                    "domainID": uid,
                                    "allocationMode": channel.get("allocationMode", "Single"),
                                },
                            },
                        }
                    ],
                }
            }
        },
    }
