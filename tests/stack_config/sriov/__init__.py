"""Tests of stack_config/sriov."""
