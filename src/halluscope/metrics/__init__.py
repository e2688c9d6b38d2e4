"""Metrics: pure functions over scored records; per-category numbers come from grouping, not copies."""
