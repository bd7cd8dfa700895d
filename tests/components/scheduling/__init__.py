"""Tests of components/scheduling."""
