"""Tests of oke_gpu_rdma/sriov."""
