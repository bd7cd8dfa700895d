"""Tests of policies/scheduling."""
