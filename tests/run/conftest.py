"""Fixtures of tests/run live in run_support.py, importable by name."""
