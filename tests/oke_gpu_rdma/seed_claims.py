"""The claims of seed 000 (seeds/000_0d106515cd75c528.txt), copied verbatim from its manifests.

Each constant is the YAML a reader can find in the seed; each fixture name says which one. Outcomes the
seed measured: pair-check got GPUs 2, 3 and rdma4-rdma7 on pci0000:3e; shape-root stayed Pending
("cannot allocate all claims"); shape-any started with GPUs on 3 roots; all-rails got the 16 rails;
two workers with rails-8-a and 4 device-plugin GPUs got rdma0-7 / rdma8-15 and, in run 1 on
10.140.86.84, GPUs 4,5,6,7 / 0,1,2,3.
"""

from __future__ import annotations

from typing import Any

import yaml

ALL_RAILS_YAML = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: all-rails
  namespace: rdma-dranet
spec:
  spec:
    devices:
      requests:
        - name: rails
          exactly:
            deviceClassName: dra.net
            count: 16
            selectors:
              - cel:
                  expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma"""

RAILS_8_A_YAML = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: rails-8-a
  namespace: rdma-dranet
spec:
  spec:
    devices:
      requests:
        - name: rails
          exactly:
            deviceClassName: dra.net
            count: 8
            selectors:
              - cel:
                  expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma"""

PAIR_CHECK_YAML = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: pair-check
  namespace: rdma-dranet
spec:
  devices:
    requests:
      - name: gpus
        exactly:
          deviceClassName: gpu.nvidia.com
          count: 2
      - name: rails
        exactly:
          deviceClassName: dra.net
          count: 4
          selectors:
            - cel:
                expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma
    constraints:
      - requests: ["gpus", "rails"]
        matchAttribute: resource.kubernetes.io/pcieRoot"""

ALIGNED_8GPU_16RAILS_YAML = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: aligned-8gpu-16rails
  namespace: rdma-dranet
spec:
  spec:
    devices:
      requests:
        - name: gpus-1
          exactly:
            deviceClassName: gpu.nvidia.com
            count: 2
        - name: rails-1
          exactly:
            deviceClassName: dra.net
            count: 4
            selectors:
              - cel:
                  expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma
        - name: gpus-2
          exactly:
            deviceClassName: gpu.nvidia.com
            count: 2
        - name: rails-2
          exactly:
            deviceClassName: dra.net
            count: 4
            selectors:
              - cel:
                  expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma
        - name: gpus-3
          exactly:
            deviceClassName: gpu.nvidia.com
            count: 2
        - name: rails-3
          exactly:
            deviceClassName: dra.net
            count: 4
            selectors:
              - cel:
                  expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma
        - name: gpus-4
          exactly:
            deviceClassName: gpu.nvidia.com
            count: 2
        - name: rails-4
          exactly:
            deviceClassName: dra.net
            count: 4
            selectors:
              - cel:
                  expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma
      # Each pair of GPU and rail requests must be on one PCIe root.
      constraints:
        - requests: ["gpus-1", "rails-1"]
          matchAttribute: resource.kubernetes.io/pcieRoot
        - requests: ["gpus-2", "rails-2"]
          matchAttribute: resource.kubernetes.io/pcieRoot
        - requests: ["gpus-3", "rails-3"]
          matchAttribute: resource.kubernetes.io/pcieRoot
        - requests: ["gpus-4", "rails-4"]
          matchAttribute: resource.kubernetes.io/pcieRoot"""

ALIGNED_4GPU_8RAILS_A_YAML = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: aligned-4gpu-8rails-a
  namespace: rdma-dranet
spec:
  spec:
    devices:
      requests:
        - name: gpus-1
          exactly:
            deviceClassName: gpu.nvidia.com
            count: 2
        - name: rails-1
          exactly:
            deviceClassName: dra.net
            count: 4
            selectors:
              - cel:
                  expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma
        - name: gpus-2
          exactly:
            deviceClassName: gpu.nvidia.com
            count: 2
        - name: rails-2
          exactly:
            deviceClassName: dra.net
            count: 4
            selectors:
              - cel:
                  expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma
      # Each pair of GPU and rail requests must be on one PCIe root.
      constraints:
        - requests: ["gpus-1", "rails-1"]
          matchAttribute: resource.kubernetes.io/pcieRoot
        - requests: ["gpus-2", "rails-2"]
          matchAttribute: resource.kubernetes.io/pcieRoot"""

SHAPE_ROOT_YAML = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: shape-root
  namespace: rdma-dranet
spec:
  devices:
    requests:
      - name: gpus
        exactly:
          deviceClassName: gpu.nvidia.com
          count: 4
      - name: rails
        exactly:
          deviceClassName: dra.net
          count: 16
          selectors:
            - cel:
                expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma
    constraints:
      - requests: ["gpus", "rails"]
        matchAttribute: resource.kubernetes.io/pcieRoot"""

SHAPE_ANY_YAML = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: shape-any
  namespace: rdma-dranet
spec:
  devices:
    requests:
      - name: gpus
        exactly:
          deviceClassName: gpu.nvidia.com
          count: 4
      - name: rails
        exactly:
          deviceClassName: dra.net
          count: 16
          selectors:
            - cel:
                expression: has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma") && device.attributes["dra.net"].rdma"""


def load(text: str) -> dict[str, Any]:
    value = yaml.safe_load(text)
    assert isinstance(value, dict)
    return value


all_rails = load(ALL_RAILS_YAML)
rails_8_a = load(RAILS_8_A_YAML)
pair_check = load(PAIR_CHECK_YAML)
aligned_8gpu_16rails = load(ALIGNED_8GPU_16RAILS_YAML)
aligned_4gpu_8rails_a = load(ALIGNED_4GPU_8RAILS_A_YAML)
shape_root = load(SHAPE_ROOT_YAML)
shape_any = load(SHAPE_ANY_YAML)

ALL: dict[str, dict[str, Any]] = {
    "all-rails": all_rails,
    "rails-8-a": rails_8_a,
    "pair-check": pair_check,
    "aligned-8gpu-16rails": aligned_8gpu_16rails,
    "aligned-4gpu-8rails-a": aligned_4gpu_8rails_a,
    "shape-root": shape_root,
    "shape-any": shape_any,
}
