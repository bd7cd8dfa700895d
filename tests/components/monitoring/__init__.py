"""Tests of components/monitoring."""
