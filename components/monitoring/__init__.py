"""Metrics, dashboards and alerts."""
