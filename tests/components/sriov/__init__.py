"""Tests of components/sriov."""
