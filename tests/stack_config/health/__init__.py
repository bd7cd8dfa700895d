"""Tests of stack_config/health."""
