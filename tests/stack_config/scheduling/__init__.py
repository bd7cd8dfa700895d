"""Tests of stack_config/scheduling."""
