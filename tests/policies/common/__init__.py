"""Tests of policies/common."""
