"""Tests of components/drivers."""
