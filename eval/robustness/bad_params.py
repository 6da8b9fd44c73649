"""Invalid parameters from every source: how many are a ValueError naming the parameter (and the file).

Each case of ``tests/bad_params.py`` is given to the model's constructor, saved into a model archive's
``config.json`` and into a checkpoint's; a parameter that is not saved with a model (callbacks, ...) is
skipped for the files.

Usage::

    python -m eval.robustness.bad_params
"""
import argparse
import collections
import logging
import tempfile

from tests.bad_params import CASES, SOURCES, outcome


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    logging.disable(logging.CRITICAL)
    counts, bad = collections.Counter(), []
    for case in CASES:
        for source in SOURCES:
            with tempfile.TemporaryDirectory() as directory:
                result, message = outcome(*case, directory, source)
            counts[source, result] += 1
            if result not in ("named", "skip"):
                bad.append((source, case, result, message))
    print("| source | cases | named | skipped (not saved) | not named | accepted | other exception |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for source in SOURCES:
        row = [counts[source, r] for r in ("named", "skip", "unnamed", "accepted", "crash")]
        print("| %s | %d | %s |" % (source, len(CASES), " | ".join(map(str, row))))
    for source, case, result, message in bad:
        print("%s %s: %s: %s" % (source, case, result, message[:200]))


if __name__ == "__main__":
    main()
