"""Tests of policies/sriov."""
