"""Tests of components/nodes."""
