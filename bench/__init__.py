"""Schooner's benchmark suite: `python -m bench` (or `make bench`). See docs/benchmarks.md."""
