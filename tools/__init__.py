"""Developer tools: benchmarks and scripts run from a checkout (``python -m tools.NAME``), not installed."""
