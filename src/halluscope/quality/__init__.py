"""Measuring the instrument: known-truth perturbations and judge validation (HQM-style quality checks)."""
