"""Timing one call at a few thread counts, in interleaved repetitions, with the same result every time."""
import statistics
import time


def interleaved_runs(call, workers, repeats, differs):
    """``{threads: [seconds, ...]}`` of ``call(threads)`` for every count of ``workers`` in turn, ``repeats``
    times; each run's seconds printed as it ends.  ``differs(result, first)`` says how a result differs from
    the first one (SystemExit naming it), or returns a false value."""
    times, first = {}, None
    for rep in range(repeats):
        for w in workers:
            start = time.perf_counter()
            result = call(w)
            seconds = time.perf_counter() - start
            if first is None:
                first = result
            else:
                why = differs(result, first)
                if why:
                    raise SystemExit("workers=%d against workers=%d: %s" % (w, workers[0], why))
            times.setdefault(w, []).append(seconds)
            print("repeat %d, %d thread%s: %.2f s" % (rep, w, "" if w == 1 else "s", seconds), flush=True)
    return times


def speedup_table(times):
    """Markdown lines: each thread count's median seconds (and range) and its speedup against the first."""
    counts = list(times)
    base = statistics.median(times[counts[0]])
    lines = ["| threads | seconds (median, range) | speedup |", "|---:|---:|---:|"]
    for w in counts:
        median = statistics.median(times[w])
        lines.append("| %d | %.2f (%.2f-%.2f) | %.2fx |" % (w, median, min(times[w]), max(times[w]), base / median))
    return lines
