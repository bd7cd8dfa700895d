"""Tests of policies/drivers."""
