"""Tests of stack_config/drivers."""
