"""What every embkit model shares: the trainer base, the loss/sampler registry, the epoch loop, parameter
checks, model archives, atomic writes and verified downloads.  Nothing here imports a model."""
