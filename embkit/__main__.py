"""``python -m embkit``: the command-line interface (see :mod:`embkit.cli`)."""
import sys

from embkit.cli import main

if __name__ == "__main__":
    sys.exit(main())
