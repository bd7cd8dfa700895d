"""Metrics, dashboards and alerts of the GPUs and rails: the rules, the dashboard, the exporters' metric names,
the chart's pods."""
