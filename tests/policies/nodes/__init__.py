"""Tests of policies/nodes."""
