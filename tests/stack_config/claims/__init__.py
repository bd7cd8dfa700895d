"""Tests of stack_config/claims."""
