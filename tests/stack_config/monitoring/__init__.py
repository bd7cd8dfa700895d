"""Tests of stack_config/monitoring."""
