"""Tests of components/health."""
