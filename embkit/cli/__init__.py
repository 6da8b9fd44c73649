"""The ``embkit`` command line: ``embkit train``, ``embkit eval``, ``embkit items`` and ``embkit xc``.

Examples
--------
Train skip-gram on the bundled Wikipedia sample, then print an evaluation::

    embkit train
    embkit train --corpus text8 --output text8.embkit --epochs 5
    embkit train --corpus my.txt.gz --output vectors.txt --output-format word2vec --overwrite

Evaluate saved vectors (an embkit model, a word2vec text/binary file, or a gensim KeyedVectors file, which
is a pickle and is read only with ``--allow-pickle``)::

    embkit eval text8.embkit
    embkit eval vectors.txt --suite ws353 simlex999 --format json
    embkit eval vectors.txt --suite msr --msr-file msr.csv           # MSR analogies (not bundled)
    embkit eval text8.embkit --suite ranking --pairs test-pairs.txt  # next-item ranking (model files only)

Item embeddings (MovieLens/Netflix/text pairs) and extreme classification::

    embkit items --data ml-100k --loss relaxed_softmax --sampler boltzmann --T 3
    embkit xc --data bibtex --root path/to/xc-sets

Exit status: 0 on success, 1 on errors (missing files, invalid parameters, divergence, download
failures), 2 on usage errors (bad options, an existing ``--output`` without ``--overwrite``, unknown
evaluation suites).  Errors are one line ``embkit: error: ...``; ``--verbose`` adds the traceback.
"""
import argparse
import os
import sys
import traceback

from embkit.cli import evaluate, items, train, xc
from embkit.cli.common import PROG, UsageError, common_options, in_cli_terms, log_to_stderr, unknown_options
from embkit.core.interrupts import TrainingInterrupted

__all__ = ["main", "build_parser", "UsageError"]


def build_parser():
    """The argument parser of the ``embkit`` command."""
    from embkit import __version__
    parser = argparse.ArgumentParser(
        prog=PROG, description="Fast word2vec-style embeddings: words, items and extreme classification.")
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    common = common_options()
    for command in (train, evaluate, items, xc):
        command.add_parser(subparsers, common)
    return parser


def _one_line(exc):
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, (OSError, ValueError, FloatingPointError, RuntimeError, UsageError, MemoryError)):
        return text
    return "%s: %s" % (type(exc).__name__, text)


def _detach_stdout():
    """Point stdout at /dev/null so that flushing it at exit does not fail again on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):       # stdout is not a real file (tests, embedding)
        pass


def main(argv=None, out=None):
    """Run the ``embkit`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default ``sys.argv[1:]``).
    out : file, optional
        Where reports go (default ``sys.stdout``); logs and errors go to ``sys.stderr``.

    Returns
    -------
    int
        Exit status: 0 success, 1 error, 2 usage error.
    """
    out = sys.stdout if out is None else out
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
        command = parser._subparsers._group_actions[0].choices[args.command]
        if extras:      # in the subcommand's own usage, with the nearest valid option
            command.error(unknown_options(command, extras))
    except SystemExit as exc:  # --help, --version, or a usage error already printed by argparse
        return exc.code if isinstance(exc.code, int) else 2
    with log_to_stderr(args):
        try:
            return args.func(args, out)
        except UsageError as exc:
            print("%s: error: %s" % (PROG, in_cli_terms(_one_line(exc), command)), file=sys.stderr)
            return 2
        except TrainingInterrupted as exc:
            if exc.checkpoint:
                hint = "checkpoint written; continue with: %s %s --resume %s" % (
                    PROG, args.command, os.path.dirname(exc.checkpoint))
            else:
                hint = "no checkpoint: run with --checkpoint-dir DIR to be able to resume"
            print("%s: %s; %s" % (PROG, exc.where, hint), file=sys.stderr)
            return 130
        except KeyboardInterrupt:
            print("%s: interrupted" % PROG, file=sys.stderr)
            return 130
        except BrokenPipeError:
            # the reader of our output went away (``embkit eval ... | head``): stop quietly, as Unix tools do
            _detach_stdout()
            return 141
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line (traceback with -v)
            if args.verbose:
                traceback.print_exc()
            print("%s: error: %s" % (PROG, in_cli_terms(_one_line(exc), command)), file=sys.stderr)
            return 1
