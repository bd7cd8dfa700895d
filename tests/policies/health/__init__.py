"""Tests of policies/health."""
