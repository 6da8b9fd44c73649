"""Timing a few calls (one function at several thread counts, a peer's) in interleaved repetitions, with the
same result every time."""
import statistics
import time


def interleaved_runs(calls, repeats, differs):
    """``{label: [seconds, ...]}`` of every call of ``calls`` (``{label: function of no argument}``) in turn,
    ``repeats`` times; each run's seconds printed as it ends.  ``differs(result, first)`` says how a result
    differs from the first call's (SystemExit naming both), or returns a false value."""
    times, first = {}, None
    labels = list(calls)
    for rep in range(repeats):
        for label in labels:
            start = time.perf_counter()
            result = calls[label]()
            seconds = time.perf_counter() - start
            if first is None:
                first = result
            else:
                why = differs(result, first)
                if why:
                    raise SystemExit("%s against %s: %s" % (label, labels[0], why))
            times.setdefault(label, []).append(seconds)
            print("repeat %d, %s: %.2f s" % (rep, label, seconds), flush=True)
    return times


def speedup_table(times):
    """Markdown lines: each call's median seconds (and range) and its speedup against the first."""
    labels = list(times)
    base = statistics.median(times[labels[0]])
    lines = ["| run | seconds (median, range) | speedup |", "|---|---:|---:|"]
    for label in labels:
        median = statistics.median(times[label])
        lines.append("| %s | %.2f (%.2f-%.2f) | %.2fx |" % (label, median, min(times[label]), max(times[label]),
                                                           base / median))
    return lines


def thread_label(name, threads):
    """``"name, 1 thread"``, ``"name, 2 threads"``."""
    return "%s, %d thread%s" % (name, threads, "" if threads == 1 else "s")
