"""The peer libraries of the benchmarks (implicit, napkinXC, fastText), run on embkit's data and metrics."""
