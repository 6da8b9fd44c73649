"""What the ``embkit`` subcommands share: usage errors, logging, option groups, output checks."""
import argparse
import contextlib
import difflib
import inspect
import json
import logging
import os
import re
import sys

from embkit.core.base import EmbeddingModel
from embkit.core.checkpoint import as_saved
from embkit.cluster import CLUSTER_PARAMS

PROG = "embkit"


class UsageError(Exception):
    """A mistake in the command line (exit status 2)."""


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show defaults, except the uninformative None and False and those of flags (a flag's help says what
    leaving it out does: ``--no-normalize`` defaults to normalising, not to "True")."""

    def _get_help_string(self, action):
        if action.default in (None, False) or action.nargs == 0 or "default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def help_formatter():
    """The formatter class of every subcommand's help."""
    return _HelpFormatter


def common_options():
    """The options every subcommand takes (-q, -v)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("output control")
    group.add_argument("-q", "--quiet", action="store_true", help="no progress bar (warnings and errors only)")
    group.add_argument("-v", "--verbose", action="count", default=0,
                       help="-v: log what the run does (INFO) and show tracebacks on errors; -vv: debug logging")
    return common


#: the report formats of every subcommand's ``--format``
REPORT_FORMATS = ("table", "json")


def _report_format(text):
    if text not in REPORT_FORMATS:
        hint = " (the saved file's format is --output-format %s)" % text if text.startswith(("word2vec", "embkit")) \
            else ""
        raise argparse.ArgumentTypeError("invalid report format %r: choose from %s%s"
                                         % (text, ", ".join(REPORT_FORMATS), hint))
    return text


def report_format_option(p):
    """Add ``--format``: the report's format (the same in every subcommand)."""
    p.add_argument("--format", type=_report_format, default="table", metavar="{%s}" % ",".join(REPORT_FORMATS),
                   help="report format")


@contextlib.contextmanager
def log_to_stderr(args):
    """Send embkit's log records to stderr for the duration of a command: warnings and errors, with ``-v``
    what the run does as well (INFO), with ``-vv`` everything (and gensim's)."""
    level = (logging.WARNING, logging.INFO)[args.verbose] if args.verbose < 2 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    names = ("embkit", "gensim") if args.verbose >= 2 else ("embkit",)
    saved = []
    for name in names:
        log = logging.getLogger(name)
        saved.append((log, log.level))
        log.addHandler(handler)
        log.setLevel(level)
    try:
        yield
    finally:
        for log, old_level in saved:
            log.removeHandler(handler)
            log.setLevel(old_level)


def unknown_options(parser, extras):
    """The error message for the ``extras`` a subcommand's ``parser`` did not recognise, suggesting the
    nearest valid option of each."""
    options = [o for o in parser._option_string_actions if o.startswith("--")]
    named = []
    for extra in extras:
        near = difflib.get_close_matches(extra.split("=")[0], options, n=1, cutoff=0.6) \
            if extra.startswith("-") else []
        named.append("%s (did you mean %s?)" % (extra, near[0]) if near else extra)
    return "unrecognized arguments: %s" % " ".join(named)


#: ``name=value`` in a message (a keyword argument as Python code writes it)
_KEYWORD = re.compile(r"\b([a-z][a-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^\s,;()]+)")


def in_cli_terms(text, parser):
    """``text`` with every ``name='value'`` that is one of ``parser``'s options written as the command line
    writes it (``--loss sgns``, ``--no-normalize``); other text unchanged."""
    actions = {}
    for action in parser._actions:
        if action.option_strings:
            actions.setdefault(action.dest, []).append(action)

    def option(match):
        dest, value = match.group(1), match.group(2).strip("'\"")
        for action in actions.get(dest, ()):
            long_name = max(action.option_strings, key=len)
            if action.nargs == 0:
                if str(action.const) == value:
                    return long_name
            else:
                return "%s %s" % (long_name, value)
        return match.group(0)
    return _KEYWORD.sub(option, text)


def check_output(args):
    """Refuse an existing output (unless --overwrite) or a missing folder, before any training."""
    if args.output is None:
        return
    path = args.output
    if os.path.isdir(path):
        raise UsageError("--output %s is a directory; give a file name" % path)
    if os.path.exists(path) and not args.overwrite:
        raise UsageError("output file %s already exists; pass --overwrite to replace it" % path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError("output folder %s does not exist" % folder)


def train_logging():
    """Context in which log lines do not break the progress bar."""
    try:
        from tqdm.contrib.logging import logging_redirect_tqdm
    except ImportError:  # old tqdm
        return contextlib.nullcontext()
    return logging_redirect_tqdm(loggers=[logging.getLogger("embkit")])


def _value(text):
    """A ``--param`` value: int, float, bool, None or string."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def key_values(pairs, flag):
    """``{key: value}`` of repeated ``KEY=VALUE`` options (``flag`` names the option in errors)."""
    out = {}
    for item in pairs or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError("%s takes KEY=VALUE, got %r" % (flag, item))
        out[key.replace("-", "_")] = _value(value)
    return out


def model_defaults(model_cls):
    """``{parameter: default}`` of a model class's constructor (the options' defaults come from it)."""
    return {name: p.default for name, p in inspect.signature(model_cls.__init__).parameters.items()
            if p.default is not p.empty}


def objective_options(p, model_cls, loss_help="loss name (embkit.core.registry.LOSSES)"):
    """Add the loss/sampler options with ``model_cls``'s defaults; returns the option group."""
    defaults = model_defaults(model_cls)
    g = p.add_argument_group("loss and sampler (any registered pair)")
    g.add_argument("--loss", default=defaults["loss"], help=loss_help)
    g.add_argument("--sampler", default=None, help="negative sampler (embkit.core.registry.SAMPLERS; default: "
                                                   "%s)" % model_cls.default_sampler)
    g.add_argument("--negative", type=int, default=defaults["negative"], metavar="K",
                   help="negatives per positive")
    g.add_argument("--T", type=float, default=None, metavar="T", help="Boltzmann sampler temperature")
    g.add_argument("--degeneracy", choices=("uniform", "popularity"), default=None,
                   help="Boltzmann sampler degeneracy D")
    param_options(g)
    return g


def param_options(g):
    """Add ``--param`` (sampler parameters) and ``--loss-param`` (loss parameters) to option group ``g``."""
    g.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="extra sampler parameter, repeatable (e.g. --param query=embedding --param K=8)")
    g.add_argument("--loss-param", action="append", metavar="KEY=VALUE", help="extra loss parameter, repeatable")


def sampler_params(args):
    """The sampler parameters of ``--param``, ``--T`` and ``--degeneracy``."""
    params = key_values(args.param, "--param")
    if getattr(args, "T", None) is not None:
        params["T"] = args.T
    if getattr(args, "degeneracy", None) is not None:
        params["degeneracy"] = args.degeneracy
    return params


def train_options(p, model_cls, **overrides):
    """Add the training options with ``model_cls``'s defaults (or ``overrides``); returns the option group."""
    defaults = dict(model_defaults(model_cls), **overrides)
    g = p.add_argument_group("training")
    g.add_argument("--vector-size", type=int, default=defaults["vector_size"], metavar="D",
                   help="embedding dimension")
    g.add_argument("--alpha", type=float, default=defaults["alpha"], help="initial learning rate")
    g.add_argument("--epochs", type=int, default=defaults["epochs"], metavar="N",
                   help="passes over the training data")
    g.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N", help="training threads")
    g.add_argument("--seed", type=int, default=defaults["seed"], metavar="N", help="random seed")
    return g


def output_options(p, what="the trained model"):
    """Add ``--output``, ``--overwrite`` and ``--format`` (the report's)."""
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="save %s here" % what)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    report_format_option(p)


def count(value):
    """``value`` with thousands separators (or as text when it is not a number)."""
    try:
        return "{:,.0f}".format(value)
    except (TypeError, ValueError):
        return str(value)


# ------------------------------------------------------------------------------------------ checkpoints
#: the file in a checkpoint directory that records the command line of its run
COMMAND_FILE = "command.json"
#: options a resumed command may change: where the result goes and how it reports, and the settings a resumed
#: model may change (threads, the cluster: ``scheduler`` is the command line's ``client``)
RESUME_MAY_CHANGE = frozenset({"resume", "quiet", "verbose", "output", "overwrite", "format", "output_format",
                               "no_eval", "scheduler"}) | EmbeddingModel.RESUMABLE_CHANGES | CLUSTER_PARAMS


def checkpoint_options(p):
    """Add ``--checkpoint-dir``, ``--checkpoint-every`` and ``--resume``."""
    g = p.add_argument_group("checkpoints")
    g.add_argument("--checkpoint-dir", metavar="DIR",
                   help="write checkpoints of the run here: every --checkpoint-every, on Ctrl-C and at the end")
    g.add_argument("--checkpoint-every", default="600", metavar="TIME|COUNT",
                   help="seconds between checkpoints (600, '10 min', '1h') or a count of units ('5M words', "
                        "'200k pairs', '50000 examples')")
    g.add_argument("--resume", metavar="DIR",
                   help="continue the run checkpointed in DIR with its own command line (only --workers and the "
                        "output and reporting options may change)")
    p.set_defaults(_parser=p)


def _given(args):
    """The options of ``args`` whose value is not their default (what the command line set)."""
    parser = args._parser
    return {key: value for key, value in vars(args).items()
            if not key.startswith("_") and key not in ("func", "command") and value != parser.get_default(key)}


def record_command(args):
    """Keep the command line of a checkpointed run in its directory, for ``--resume`` (atomic write)."""
    from embkit.core.atomic import atomic_path
    from embkit.core.checkpoint import list_checkpoints

    if args.checkpoint_dir is None:
        return
    if list_checkpoints(args.checkpoint_dir):
        raise UsageError("--checkpoint-dir %s already holds checkpoints of a run: continue it with --resume %s, or "
                         "choose another directory" % (args.checkpoint_dir, args.checkpoint_dir))
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    record = {"command": args.command, "args": {k: v for k, v in vars(args).items()
                                                if not k.startswith("_") and k not in ("func", "command")}}
    with atomic_path(os.path.join(args.checkpoint_dir, COMMAND_FILE)) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1)


def resumed_args(args):
    """For ``--resume DIR``: the checkpointed command's arguments, with the options of this command line that
    a resume may change; the arguments unchanged otherwise.  UsageError for any other option that differs."""
    if args.resume is None:
        return args
    path = os.path.join(args.resume, COMMAND_FILE)
    if not os.path.isfile(path):
        raise UsageError("%s holds no checkpointed embkit run (no %s): was it written with --checkpoint-dir?"
                         % (args.resume, COMMAND_FILE))
    with open(path, encoding="utf-8") as fh:
        record = json.load(fh)
    if record.get("command") != args.command:
        raise UsageError("%s holds a checkpointed 'embkit %s' run; resume it with embkit %s --resume %s"
                         % (args.resume, record.get("command"), record.get("command"), args.resume))
    saved = record["args"]
    given = _given(args)
    differing = ["--%s %s (the run had %s)" % (key.replace("_", "-"), value, saved.get(key))
                 for key, value in sorted(given.items())
                 if key not in RESUME_MAY_CHANGE and as_saved(value) != saved.get(key)]
    if differing:
        raise UsageError("cannot resume with other options: %s" % "; ".join(differing))
    merged = argparse.Namespace(**dict(vars(args), **saved))
    for key in RESUME_MAY_CHANGE & set(given):
        setattr(merged, key, given[key])
    merged.resume, merged.checkpoint_dir = args.resume, args.resume
    return merged


def begin_run(args, out, save=None):
    """The arguments a training command runs with (:func:`resumed_args`), its ``--output`` checked; None when
    ``--resume`` names a finished run (:func:`finished_run` has said where its result is).  ``save(model,
    args)`` writes a model to ``--output`` (default: the model's own ``save``)."""
    args = resumed_args(args)
    save = save or (lambda model, given: model.save(given.output, overwrite=given.overwrite))
    if finished_run(args, lambda model: save(model, args), out):
        return None
    check_output(args)
    return args


def finished_run(args, save, out):
    """For ``--resume DIR`` of a run that had finished: write its model to ``--output`` unless the file is
    there already (``save(model)``; ``--overwrite`` writes it again), say where the result is and return
    True; False (nothing done) for any other command line."""
    from embkit.core import persist
    from embkit.core.checkpoint import finished_checkpoint

    path = finished_checkpoint(args.resume) if args.resume else None
    if path is None:
        return False
    written = args.output is not None and (args.overwrite or not os.path.exists(args.output))
    if written:
        check_output(args)
        save(persist.load(path))
    result = {"finished": True, "checkpoint": path, "output": args.output, "written": written}
    if args.format == "json":
        print(json.dumps(result, indent=1), file=out)
        return True
    where = "its model: %s (it loads as a model)" % path if args.output is None else \
        "saved: %s" % args.output if written else "its result: %s" % args.output
    print("the run checkpointed in %s is finished; nothing left to train\n%s" % (args.resume, where), file=out)
    return True


# ------------------------------------------------------------------------------------------ cluster
def cluster_options(p):
    """Add ``--scheduler``, ``--syncs-per-epoch``, ``--reconcile``, ``--exchange-share``, ``--exchange-bits``,
    ``--staleness`` and ``--no-frequent-rows`` (training on a Dask cluster)."""
    from embkit.cluster import EXCHANGE_BITS, EXCHANGE_SHARE, RECONCILE, ROUND_UNITS, STALENESS
    from embkit.cluster.settings import HOT_PART_UNITS
    from embkit.cluster.reconcile import MODES
    g = p.add_argument_group("cluster (needs the [cluster] extra)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="train on the Dask cluster of this scheduler (tcp://host:8786), or on a local one of N "
                        "worker processes with 'local:N'; the corpus may then be a glob or URL of files that every "
                        "worker can read (each reads its own)")
    g.add_argument("--syncs-per-epoch", type=int, default=None, metavar="N",
                   help="reconciliations of the workers' tables per epoch, evenly spaced (default: for two "
                        "workers rounds that each train a sixteenth of what is left of the run, shrinking to about "
                        "%d words per worker at its end; for more, even rounds of that size)" % ROUND_UNITS)
    g.add_argument("--reconcile", choices=MODES, default=RECONCILE,
                   help="how the workers' steps of a row combine: block momentum over the rounds (momentum), add "
                        "them (sum) or take their mean (average); default: %s" % RECONCILE)
    g.add_argument("--exchange-share", type=float, default=EXCHANGE_SHARE, metavar="S",
                   help="share of each round's squared step a worker sends (the rows that moved farthest; the "
                        "rest is kept for later rounds); default: %g"
                        % EXCHANGE_SHARE)
    g.add_argument("--exchange-bits", type=int, choices=(16, 8), default=EXCHANGE_BITS,
                   help="bits a value of the rows a worker sends: 8 rounds each row to 8 bits a value (half the "
                        "bytes); default: %d (float16)" % EXCHANGE_BITS)
    g.add_argument("--staleness", type=int, choices=(0, 1), default=STALENESS,
                   help="1: each of two workers trains the next round while a round's rows are exchanged, "
                        "adopting them a round late; 0: every round is reconciled before the next (as runs of "
                        "more workers, or with checkpoints, always are); default: %d" % STALENESS)
    g.add_argument("--no-frequent-rows", dest="frequent_rows", action="store_false",
                   help="with 3 workers or more, reconcile the most frequent words' rows only at the end of each "
                        "round, not also after every part of about %d words of it (fewer exchanges, lower quality "
                        "with many workers)" % HOT_PART_UNITS)


@contextlib.contextmanager
def cluster_client(address, threads=1):
    """A ``dask.distributed.Client`` of ``address`` (None: no cluster), closed on exit; ``'local:N'`` starts
    a local cluster of N worker processes with ``threads`` threads each
    (:func:`embkit.cluster.local.local_client`)."""
    if address is None:
        yield None
        return
    try:
        from distributed import Client
    except ImportError:
        raise SystemExit("--scheduler needs dask.distributed: pip install 'embkit[cluster]'") from None
    if address.startswith("local:"):
        try:
            n = int(address[len("local:"):])
        except ValueError:
            n = 0
        if n < 1:
            raise SystemExit("--scheduler local:N takes a number of workers >= 1, got %r" % address)
        from embkit.cluster.local import local_client
        with local_client(n, threads) as client:
            yield client
        return
    try:
        client = Client(address, timeout=30)
    except OSError as exc:
        raise SystemExit("cannot reach the Dask scheduler %s: %s" % (address, exc)) from None
    with client:
        yield client


def cluster_summary(model):
    """The last cluster run of ``model`` as a dict (replicas, reconciliations, share of a round's step sent,
    MB a reconciliation, seconds of the rounds outside the kernels, replicas reopened), or None when it did
    not train on a cluster."""
    stats = getattr(model, "last_cluster_stats", None)
    if stats is None:
        return None
    return {"replicas": stats.replicas, "reconciliations": stats.rounds,
            "frequent_rows_reconciliations": stats.hot_syncs, "exchange_share": model.exchange_share,
            "exchange_bits": model.exchange_bits,
            "mb_per_reconciliation": round(stats.bytes_per_round / 1e6, 3),
            "reconcile_seconds": round(stats.round_seconds - stats.train_seconds, 3),
            "reopened": len(stats.reopened)}


def cluster_line(summary):
    """``cluster_summary`` as a line of a text report."""
    replicas = summary["replicas"]
    frequent = summary.get("frequent_rows_reconciliations")
    return ("cluster:    %d replica%s, %d reconciliations%s of %.1f MB, %.2f s reconciling, %d replicas reopened"
            % (replicas, "" if replicas == 1 else "s", summary["reconciliations"],
               " (and %d of the frequent rows)" % frequent if frequent else "", summary["mb_per_reconciliation"],
               summary["reconcile_seconds"], summary["reopened"]))
