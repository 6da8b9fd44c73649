"""Robustness runs: long fuzzing of the readers, processes killed while saving, memory as the corpus grows."""
