"""Tests of policies/claims."""
