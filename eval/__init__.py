"""embkit's benchmarks, paper reproductions and robustness runs (not part of the installed package)."""
