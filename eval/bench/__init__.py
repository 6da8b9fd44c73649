"""Benchmarks: embkit against its peers, and the speed and quality of its parts."""
