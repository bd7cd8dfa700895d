"""Tests of components/claims."""
