"""The objects of seed 001 (the SR-IOV part of the series), copied verbatim from its manifests.

Each constant is the YAML a reader finds in the seed under the file name in its comment; the
functions below parse them, and build the seed's bad variants from them. What the seed measured:
1 VF per PF: 96.86-96.88 Gb/s per rail, 190.55 GB/s NCCL busbw; `sriov-network-node-policy-2vf.yaml`
(one resource over 32 VFs): pods got both VFs on some rails and none on others; per-rail policies
and networks with 2 VFs: two 4-GPU jobs at 96.28 and 96.35 GB/s; `sriov-network-exclusive.yaml`
(exclusive mode, no rdmaQoS): 43.20-59.45 Gb/s per rail; `sriov-network-exclusive-qos.yaml`:
96.78-96.88 Gb/s. The seed also tried rdmaQoS under args.cni, as the RDMA CNI's README showed it:
the pods still got traffic class 0.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

# values.yaml
VALUES_YAML = """\
nfd:
  # The cluster already runs Node Feature Discovery.
  enabled: false

sriovNetworkOperator:
  enabled: true

sriov-network-operator:
  sriovOperatorConfig:
    deploy: true
    disableDrain: false
    configurationMode: daemon
    # The OCI image already sets the NIC firmware for SR-IOV.
    disablePlugins:
      - mellanox

operator:
  resources:
    requests:
      cpu: 5m
      memory: 256Mi
    limits:
      cpu: 500m
      memory: 512Mi
"""

# nic-cluster-policy.yaml
NIC_CLUSTER_POLICY_YAML = """\
apiVersion: mellanox.com/v1alpha1
kind: NicClusterPolicy
metadata:
  name: nic-cluster-policy
spec:
  # The OCI image supplies the DOCA-OFED driver, so no ofedDriver section.
  nvIpam:
    image: nvidia-k8s-ipam
    repository: nvcr.io/nvidia/mellanox
    version: network-operator-v26.7.1
    enableWebhook: false
  secondaryNetwork:
    cniPlugins:
      image: plugins
      repository: nvcr.io/nvidia/mellanox
      version: network-operator-v26.7.1
    multus:
      image: multus-cni
      repository: nvcr.io/nvidia/mellanox
      version: network-operator-v26.7.1
"""

# ip-pool.yaml
IP_POOL_YAML = """\
apiVersion: nv-ipam.nvidia.com/v1alpha1
kind: IPPool
metadata:
  name: sriov-pool
  namespace: nvidia-network-operator
spec:
  subnet: 192.168.0.0/16
  perNodeBlockSize: 100
  gateway: 192.168.0.1
"""

# sriov-network-pool-config.yaml
POOL_CONFIG_YAML = """\
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkPoolConfig
metadata:
  name: rdma-vf
  namespace: nvidia-network-operator
spec:
  # Configure one GPU node at a time.
  maxUnavailable: 1
  nodeSelector:
    matchExpressions:
      - key: node.kubernetes.io/instance-type
        operator: In
        values:
          - BM.GPU.B4.8
"""

# sriov-network-shared.yaml
NETWORK_SHARED_YAML = """\
# Shared RDMA mode: no RDMA CNI. It refuses to run unless the mode is exclusive.
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
"""

# sriov-network-node-policy.yaml
NODE_POLICY_1VF_YAML = """\
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: bm-gpu-b4-8
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:0c:00.0"
      - "0000:0c:00.1"
      - "0000:16:00.0"
      - "0000:16:00.1"
      - "0000:47:00.0"
      - "0000:47:00.1"
      - "0000:4b:00.0"
      - "0000:4b:00.1"
      - "0000:89:00.0"
      - "0000:89:00.1"
      - "0000:93:00.0"
      - "0000:93:00.1"
      - "0000:c3:00.0"
      - "0000:c3:00.1"
      - "0000:d1:00.0"
      - "0000:d1:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 1
  priority: 90
  resourceName: rdma-vf
  # The operator creates the VFs. Nothing else may write sriov_numvfs.
  externallyManaged: false
"""

# sriov-network-node-policy-2vf.yaml
NODE_POLICY_2VF_YAML = """\
# Same as sriov-network-node-policy.yaml, with 2 VFs per PF.
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: bm-gpu-b4-8
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:0c:00.0"
      - "0000:0c:00.1"
      - "0000:16:00.0"
      - "0000:16:00.1"
      - "0000:47:00.0"
      - "0000:47:00.1"
      - "0000:4b:00.0"
      - "0000:4b:00.1"
      - "0000:89:00.0"
      - "0000:89:00.1"
      - "0000:93:00.0"
      - "0000:93:00.1"
      - "0000:c3:00.0"
      - "0000:c3:00.1"
      - "0000:d1:00.0"
      - "0000:d1:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf
  # The operator creates the VFs. Nothing else may write sriov_numvfs.
  externallyManaged: false
"""

# sriov-node-policies-per-rail.yaml
NODE_POLICIES_PER_RAIL_YAML = """\
# One policy per rail PF (rdma0 to rdma15), each with 2 VFs and its own resource.
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-0
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:0c:00.0"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-0
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-1
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:0c:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-1
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-2
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:16:00.0"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-2
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-3
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:16:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-3
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-4
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:47:00.0"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-4
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-5
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:47:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-5
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-6
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:4b:00.0"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-6
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-7
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:4b:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-7
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-8
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:89:00.0"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-8
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-9
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:89:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-9
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-10
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:93:00.0"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-10
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-11
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:93:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-11
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-12
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:c3:00.0"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-12
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-13
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:c3:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-13
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-14
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:d1:00.0"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-14
  externallyManaged: false
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rdma-vf-15
  namespace: nvidia-network-operator
spec:
  deviceType: netdevice
  mtu: 4220
  nicSelector:
    vendor: "15b3"
    rootDevices:
      - "0000:d1:00.1"
  nodeSelector:
    node.kubernetes.io/instance-type: BM.GPU.B4.8
  isRdma: true
  numVfs: 2
  priority: 90
  resourceName: rdma-vf-15
  externallyManaged: false
"""

# sriov-networks-per-rail.yaml
NETWORKS_PER_RAIL_YAML = """\
# One network per rail, for the resource of that rail.
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-0
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-0
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-1
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-1
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-2
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-2
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-3
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-3
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-4
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-4
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-5
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-5
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-6
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-6
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-7
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-7
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-8
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-8
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-9
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-9
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-10
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-10
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-11
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-11
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-12
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-12
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-13
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-13
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-14
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-14
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf-15
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf-15
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
"""

# nccl-vf-a-per-rail.yaml
NCCL_VF_A_PER_RAIL_YAML = r"""# Job a with 4 GPUs and one VF on every rail per node. Two such jobs run at the same time.
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: nccl-vf-a
spec:
  slotsPerWorker: 4
  runPolicy:
    cleanPodPolicy: Running
  sshAuthMountPath: /root/.ssh
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
            - name: mpi-launcher
              image: iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0
              command: ["bash", "-c"]
              args:
                - |
                  set -e -o pipefail
                  NUM_GPUS=4
                  NUM_HOSTS=$(sed -n '$=' /etc/mpi/hostfile)
                  NP=$((NUM_HOSTS * NUM_GPUS))
                  # shellcheck disable=SC2013
                  until (for host in $(awk '{print $1}' /etc/mpi/hostfile); do ssh -o ConnectTimeout=5 -o StrictHostKeyChecking=no "$host" exit 2>/dev/null || exit 1; done); do
                    echo "Waiting for workers to be ready..."
                    sleep 5
                  done
                  # Each rank uses only the RDMA devices of the VFs in its own pod (net1 to net16).
                  # The 40 GB GPUs cannot hold 16 GiB buffers with validation (-c 1), so the test stops at 8 GiB.
                  # shellcheck disable=SC2016
                  mpirun --allow-run-as-root --hostfile /etc/mpi/hostfile \
                    -mca coll ^hcoll \
                    -np "$NP" -npernode "$NUM_GPUS" --bind-to numa \
                    -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET \
                    -x NCCL_IB_SPLIT_DATA_ON_QPS=0 \
                    -x NCCL_IB_QPS_PER_CONNECTION=4 \
                    -x NCCL_IB_GID_INDEX=3 \
                    -x NCCL_IB_TC=41 \
                    -x NCCL_IB_SL=0 \
                    -x NCCL_IB_TIMEOUT=22 \
                    -x UCX_TLS=tcp \
                    -x UCX_NET_DEVICES=eth0 \
                    bash -c 'export NCCL_IB_HCA="=$(basename -a /sys/class/net/net*/device/infiniband/* | paste -sd, -)"; exec /workspace/nccl-tests/build/all_reduce_perf -b 8G -e 8G -n 300 -g 1 -c 1'
    Worker:
      replicas: 2
      template:
        metadata:
          annotations:
            k8s.v1.cni.cncf.io/networks: rdma-vf-0,rdma-vf-1,rdma-vf-2,rdma-vf-3,rdma-vf-4,rdma-vf-5,rdma-vf-6,rdma-vf-7,rdma-vf-8,rdma-vf-9,rdma-vf-10,rdma-vf-11,rdma-vf-12,rdma-vf-13,rdma-vf-14,rdma-vf-15
        spec:
          nodeSelector:
            node.kubernetes.io/instance-type: BM.GPU.B4.8
          tolerations:
            - key: nvidia.com/gpu
              operator: Exists
              effect: NoSchedule
          volumes:
            - name: shm
              emptyDir:
                medium: Memory
                sizeLimit: 32Gi
          containers:
            - name: mpi-worker
              image: iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0
              command: ["/bin/bash", "-c", "mkdir -p /var/run/sshd; /usr/sbin/sshd -D"]
              securityContext:
                capabilities:
                  add: ["IPC_LOCK"]
              volumeMounts:
                - name: shm
                  mountPath: /dev/shm
              resources:
                limits:
                  nvidia.com/gpu: 4
                  nvidia.com/rdma-vf-0: 1
                  nvidia.com/rdma-vf-1: 1
                  nvidia.com/rdma-vf-2: 1
                  nvidia.com/rdma-vf-3: 1
                  nvidia.com/rdma-vf-4: 1
                  nvidia.com/rdma-vf-5: 1
                  nvidia.com/rdma-vf-6: 1
                  nvidia.com/rdma-vf-7: 1
                  nvidia.com/rdma-vf-8: 1
                  nvidia.com/rdma-vf-9: 1
                  nvidia.com/rdma-vf-10: 1
                  nvidia.com/rdma-vf-11: 1
                  nvidia.com/rdma-vf-12: 1
                  nvidia.com/rdma-vf-13: 1
                  nvidia.com/rdma-vf-14: 1
                  nvidia.com/rdma-vf-15: 1
"""

# sriov-network-exclusive.yaml
NETWORK_EXCLUSIVE_YAML = """\
# Exclusive RDMA mode: the RDMA CNI moves the VF RDMA device into the pod.
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "rdma"
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
"""

# sriov-network-exclusive-qos.yaml
NETWORK_EXCLUSIVE_QOS_YAML = """\
# Exclusive RDMA mode: the RDMA CNI moves the VF RDMA device into the pod.
# rdmaQoS sets the traffic class that the RDMA CNI writes for the device.
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: rdma-vf
  namespace: nvidia-network-operator
spec:
  resourceName: rdma-vf
  networkNamespace: default
  ipam: |
    {
      "type": "nv-ipam",
      "poolName": "sriov-pool"
    }
  metaPlugins: |
    {
      "type": "tuning",
      "sysctl": {
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.IFNAME.arp_announce": "2",
        "net.ipv4.conf.IFNAME.arp_filter": "1",
        "net.ipv4.conf.IFNAME.arp_ignore": "1",
        "net.ipv4.conf.IFNAME.rp_filter": "0",
        "net.ipv4.conf.IFNAME.accept_local": "1"
      }
    },
    {
      "type": "rdma",
      "rdmaQoS": {
        "tc": 41
      }
    },
    {
      "type": "sbr",
      "addSourceHints": true
    }
"""

# vf-pods.yaml
VF_PODS_YAML = """\
# Two pods with 16 VFs each, one per GPU node, for the per-rail ib_write_bw test.
---
apiVersion: v1
kind: Pod
metadata:
  name: vf-n1
  namespace: default
  annotations:
    k8s.v1.cni.cncf.io/networks: rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf
spec:
  nodeSelector:
    kubernetes.io/hostname: "10.140.66.66"
  tolerations:
    - { key: nvidia.com/gpu, operator: Exists, effect: NoSchedule }
  containers:
    - name: rdma
      image: iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0
      command: ["sleep", "infinity"]
      securityContext:
        capabilities:
          add: ["IPC_LOCK"]
      resources:
        limits:
          nvidia.com/rdma-vf: 16
---
apiVersion: v1
kind: Pod
metadata:
  name: vf-n2
  namespace: default
  annotations:
    k8s.v1.cni.cncf.io/networks: rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf,rdma-vf
spec:
  nodeSelector:
    kubernetes.io/hostname: "10.140.82.106"
  tolerations:
    - { key: nvidia.com/gpu, operator: Exists, effect: NoSchedule }
  containers:
    - name: rdma
      image: iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0
      command: ["sleep", "infinity"]
      securityContext:
        capabilities:
          add: ["IPC_LOCK"]
      resources:
        limits:
          nvidia.com/rdma-vf: 16
"""


def load(text: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def load_all(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


values = load(VALUES_YAML)
nic_cluster_policy = load(NIC_CLUSTER_POLICY_YAML)
ip_pool = load(IP_POOL_YAML)
pool_config = load(POOL_CONFIG_YAML)
network_shared = load(NETWORK_SHARED_YAML)
node_policy_1vf = load(NODE_POLICY_1VF_YAML)
node_policy_2vf = load(NODE_POLICY_2VF_YAML)
node_policies_per_rail = load_all(NODE_POLICIES_PER_RAIL_YAML)
networks_per_rail = load_all(NETWORKS_PER_RAIL_YAML)
nccl_vf_a = load(NCCL_VF_A_PER_RAIL_YAML)
network_exclusive = load(NETWORK_EXCLUSIVE_YAML)
network_exclusive_qos = load(NETWORK_EXCLUSIVE_QOS_YAML)
vf_pods = load_all(VF_PODS_YAML)


def meta_plugins(network: dict[str, Any]) -> list[Any]:
    """The plugin list the operator renders from a network's metaPlugins text."""
    plugins: list[Any] = json.loads("[" + network["spec"]["metaPlugins"] + "]")
    return plugins


def exclusive_qos_under_args_cni() -> dict[str, Any]:
    """sriov-network-exclusive-qos.yaml with rdmaQoS moved under args.cni (the README's form the seed tried)."""
    network = copy.deepcopy(network_exclusive_qos)
    plugins = meta_plugins(network)
    rdma = next(p for p in plugins if p["type"] == "rdma")
    rdma["args"] = {"cni": {"rdmaQoS": rdma.pop("rdmaQoS")}}
    network["spec"]["metaPlugins"] = ",\n".join(json.dumps(p, indent=2) for p in plugins) + "\n"
    return network


def misspelt_network(rail: int = 3, resource: str = "rdma-vf3") -> dict[str, Any]:
    """The per-rail network of ``rail`` with a resource name no node policy provides."""
    network = copy.deepcopy(networks_per_rail[rail])
    network["spec"]["resourceName"] = resource
    return network
