"""One command-line vocabulary: the same flag means the same in every subcommand, unknown options get the
subcommand's usage and the nearest valid one, errors speak in options, logs stay quiet unless asked, and a
resumed run that had finished says so."""
import argparse
import io
import json
import os

import pytest

from embkit import cli
from embkit.cli.common import in_cli_terms
from embkit.text.word2vec import Word2Vec

SUBCOMMANDS = ("train", "eval", "items", "xc")


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    words = ["w%d" % i for i in range(60)]
    path.write_text("".join(" ".join(words[(i * 7 + j) % 60] for j in range(10)) + "\n" for i in range(300)))
    return str(path)


def run(argv):
    out = io.StringIO()
    return cli.main(argv, out=out), out.getvalue()


def _train(corpus, *more):
    return ["train", "--corpus", corpus, "--epochs", "1", "--workers", "1", "--min-count", "1",
            "--vector-size", "8", "--no-eval", *more]


def _subparsers():
    parser = cli.build_parser()
    return parser._subparsers._group_actions[0].choices


def test_an_unknown_option_gets_the_subcommands_usage_and_the_nearest_name(capsys):
    assert run(["train", "--vectorsize", "50"])[0] == 2
    err = capsys.readouterr().err
    assert "usage: embkit train" in err
    assert "--vectorsize (did you mean --vector-size?)" in err
    assert run(["xc", "--no-normalise"])[0] == 2
    assert "did you mean --no-normalize?" in capsys.readouterr().err


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_format_is_the_reports_format_in_every_subcommand(command):
    parser = _subparsers()[command]
    action = parser._option_string_actions["--format"]
    assert action.default == "table" and action.type("json") == "json"
    with pytest.raises(argparse.ArgumentTypeError, match="table, json"):
        action.type("word2vec")


def test_train_names_the_saved_files_format_apart(corpus, tmp_path, capsys):
    assert run(_train(corpus, "--format", "word2vec"))[0] == 2
    assert "--output-format word2vec" in capsys.readouterr().err
    output = tmp_path / "vectors.txt"
    status, out = run(_train(corpus, "-q", "-o", str(output), "--output-format", "word2vec", "--format", "json"))
    assert status == 0
    report = json.loads(out)
    assert report["saved"] == {"path": str(output), "format": "word2vec"}
    assert report["training"]["epochs"] == 1 and report["vocab_size"] == 60
    assert output.read_text().split("\n", 1)[0] == "60 8"


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_flags_do_not_show_a_default_of_true_or_false(command):
    text = _subparsers()[command].format_help().replace("\n", " ")
    assert "(default: True)" not in text and "(default: False)" not in text


def test_errors_name_options_as_the_command_line_writes_them(capsys):
    assert run(["xc", "--train", "missing.txt", "--test", "missing.txt", "--sampler", "lsh"])[0] == 1
    err = capsys.readouterr().err
    assert "--solver one_vs_all" in err and "--loss sgns" in err
    assert "solver=" not in err and "loss=" not in err


def test_in_cli_terms_maps_only_the_parsers_options():
    parser = argparse.ArgumentParser()
    parser.add_argument("--min-count", type=int)
    parser.add_argument("--no-normalize", dest="normalize", action="store_false")
    assert in_cli_terms("min_count=0 with normalize=False", parser) == "--min-count 0 with --no-normalize"
    assert in_cli_terms("query=embedding, normalize=True", parser) == "query=embedding, normalize=True"


def test_logs_are_quiet_unless_asked(corpus, capsys):
    assert run(_train(corpus, "-q"))[0] == 0
    assert "INFO" not in capsys.readouterr().err
    assert run(_train(corpus, "-q", "-v"))[0] == 0
    err = capsys.readouterr().err
    assert "INFO embkit" in err and "DEBUG" not in err


def test_resuming_a_finished_run_says_where_its_result_is(corpus, tmp_path):
    ckpt, output = tmp_path / "ckpt", tmp_path / "model.embkit"
    assert run(_train(corpus, "-q", "--checkpoint-dir", str(ckpt), "-o", str(output)))[0] == 0
    written = os.stat(output).st_mtime_ns
    status, out = run(["train", "--resume", str(ckpt), "-q"])
    assert status == 0
    assert "is finished" in out and "its result: %s" % output in out and "words/s" not in out
    assert os.stat(output).st_mtime_ns == written
    other = tmp_path / "again.txt"
    status, out = run(["train", "--resume", str(ckpt), "-q", "-o", str(other), "--output-format", "word2vec"])
    assert status == 0 and "saved: %s" % other in out
    model = Word2Vec.load(str(output))
    assert other.read_text().split("\n", 1)[0] == "%d 8" % len(model.wv)
