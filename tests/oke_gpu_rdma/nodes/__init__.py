"""Tests of oke_gpu_rdma/nodes."""
