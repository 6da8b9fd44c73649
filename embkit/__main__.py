"""``python -m embkit``: the command-line interface (see :mod:`embkit.cli`)."""
from embkit.console import main

if __name__ == "__main__":
    main()
