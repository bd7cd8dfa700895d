"""Tests of stack_config/nodes."""
