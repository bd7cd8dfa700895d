"""Tests of oke_gpu_rdma/drivers."""
