"""The ``embkit`` command's entry point: Ctrl-C at any moment, even while the command line's modules are
still being imported, ends it with one line and exit status 130 (not a traceback)."""
import sys

__all__ = ["main"]


def main(argv=None):
    """Run :func:`embkit.cli.main` and exit with its status; Ctrl-C before it handles one exits 130."""
    try:
        from embkit.cli import main as cli_main
        status = cli_main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("embkit: interrupted\n")
        status = 130
    sys.exit(status)
