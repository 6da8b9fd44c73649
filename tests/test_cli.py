"""Tests of the ``embkit`` command line (``embkit.cli``) and of the corpus registry (``embkit.core.downloads``).

Everything runs offline: downloads are replaced by a fake opener or refused with ``EMBKIT_OFFLINE``, and the
cache is a ``tmp_path`` folder given by ``EMBKIT_CACHE``.
"""
import dataclasses
import hashlib
import io
import json
import os
import subprocess
import sys
import urllib.error
import zipfile

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from embkit import cli  # noqa: E402
from embkit.core import downloads
from embkit.text import corpora
from embkit.text.word2vec import Word2Vec  # noqa: E402

from _eval import run_eval  # noqa: E402

FAST = ["--epochs", "1", "--workers", "1", "--min-count", "2", "--vector-size", "16", "-q"]


def _sentences(n_sentences=400, seed=0):
    """Sentences over a small English-like vocabulary (with words of the evaluation sets)."""
    rng = np.random.default_rng(seed)
    topics = [["king", "queen", "man", "woman", "prince", "royal", "crown"],
              ["city", "town", "street", "river", "bridge", "village", "road"],
              ["music", "song", "piano", "guitar", "band", "concert", "dance"],
              ["money", "bank", "cash", "price", "market", "stock", "trade"]]
    common = ["the", "a", "of", "and", "in", "is"]
    lines = []
    for _ in range(n_sentences):
        topic = topics[rng.integers(len(topics))]
        words = [topic[i] if rng.random() < 0.7 else common[i % len(common)]
                 for i in rng.integers(0, len(topic), 12)]
        lines.append(" ".join(words))
    return "\n".join(lines) + "\n"


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(_sentences(), encoding="utf-8")
    return str(path)


def run(argv):
    """``embkit argv`` in this process: (exit status, stdout)."""
    out = io.StringIO()
    status = cli.main(argv, out=out)
    return status, out.getvalue()


def embkit_process(*args, env=None):
    """``python -m embkit args`` in a child process."""
    full_env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "embkit", *args], capture_output=True, text=True,
                          env=full_env, cwd=REPO_ROOT, timeout=120)


def one_error_line(stderr):
    lines = [line for line in stderr.splitlines() if line.startswith("embkit: error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


# ------------------------------------------------------------------------------------------ train
def test_train_saves_model_and_prints_summary_and_evaluation(tmp_path, corpus, capsys):
    output = tmp_path / "model.embkit"
    status, out = run(["train", "--corpus", corpus, "--output", str(output), *FAST])
    assert status == 0, capsys.readouterr().err
    model = Word2Vec.load(str(output))
    assert "king" in model.wv.key_to_index and model.vector_size == 16
    assert "training:" in out and "words/s" in out and "final loss" in out
    assert "word similarity" in out and "questions-words analogies" in out
    assert "nearest neighbours" in out and "king" in out
    assert "saved: %s" % output in out


def test_existing_output_is_refused_before_training(tmp_path, capsys):
    output = tmp_path / "model.embkit"
    output.write_bytes(b"original")
    # the corpus does not even exist: the refusal must come first (exit 2, not the corpus error)
    status, _ = run(["train", "--corpus", str(tmp_path / "missing.txt"), "--output", str(output), *FAST])
    assert status == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(output) in line and "--overwrite" in line
    assert output.read_bytes() == b"original"


def test_overwrite_replaces_the_output(tmp_path, corpus, capsys):
    output = tmp_path / "model.embkit"
    output.write_bytes(b"original")
    status, _ = run(["train", "--corpus", corpus, "--output", str(output), "--overwrite", "--no-eval", *FAST])
    assert status == 0, capsys.readouterr().err
    assert zipfile.is_zipfile(output)
    assert len(Word2Vec.load(str(output)).wv) > 10


@pytest.mark.parametrize("flag, value, name", [
    ("--window", "0", "window"),
    ("--alpha", "-0.1", "alpha"),
    ("--negative", "-1", "negative"),
    ("--loss", "nope", "loss"),
])
def test_bad_parameter_is_one_error_line(corpus, capsys, flag, value, name):
    status, _ = run(["train", "--corpus", corpus, flag, value, "--no-eval", *FAST])
    assert status == 1
    line = one_error_line(capsys.readouterr().err)
    assert name in line and value.lstrip("-") in line


def test_verbose_shows_the_traceback(corpus, capsys):
    status, _ = run(["train", "--corpus", corpus, "--window", "0", "--no-eval", *FAST, "--verbose"])
    assert status == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "embkit: error: window" in err


def test_missing_corpus_names_the_path(tmp_path, capsys):
    missing = tmp_path / "no-such-corpus.txt"
    status, _ = run(["train", "--corpus", str(missing), "--no-eval", *FAST])
    assert status == 1
    assert str(missing) in one_error_line(capsys.readouterr().err)


def test_missing_output_folder_fails_before_training(tmp_path, capsys):
    status, _ = run(["train", "--corpus", str(tmp_path / "missing.txt"), "--output",
                     str(tmp_path / "nowhere" / "m.embkit"), *FAST])
    assert status == 1
    assert "nowhere" in one_error_line(capsys.readouterr().err)


def test_divergence_is_one_error_line(corpus, capsys):
    status, _ = run(["train", "--corpus", corpus, "--alpha", "1e9", "--no-eval", *FAST])
    assert status == 1
    assert "diverged" in one_error_line(capsys.readouterr().err)


def test_usage_error_exits_2(capsys):
    assert run(["train", "--sg", "3"])[0] == 2
    assert "--sg" in capsys.readouterr().err
    assert run([])[0] == 2


def test_default_corpus_is_the_bundled_sample(capsys):
    status, out = run(["train", "--epochs", "1", "--workers", "1", "--vector-size", "8", "--no-eval", "-q"])
    assert status == 0, capsys.readouterr().err
    assert "enwiki-sample.txt.gz" in out


# ------------------------------------------------------------------------------------------ eval
@pytest.fixture
def saved(tmp_path, corpus):
    """A trained model saved in embkit format and exported in word2vec text format."""
    model = Word2Vec(corpus_file=corpus, vector_size=16, min_count=2, epochs=1, workers=1, sg=1)
    paths = {"embkit": str(tmp_path / "m.embkit"), "word2vec": str(tmp_path / "m.txt")}
    model.save(paths["embkit"])
    model.save_word2vec_format(paths["word2vec"])
    return paths


@pytest.mark.parametrize("kind", ["embkit", "word2vec"])
def test_eval_table(saved, kind, capsys):
    status, out = run(["eval", saved[kind]])
    assert status == 0, capsys.readouterr().err
    assert saved[kind] in out
    assert "ws353" in out and "simlex999" in out and "questions-words analogies" in out


@pytest.mark.parametrize("kind", ["embkit", "word2vec"])
def test_eval_json(saved, kind, capsys):
    status, out = run(["eval", saved[kind], "--format", "json", "--suite", "ws353", "questions-words",
                       "--restrict-vocab", "1000"])
    assert status == 0, capsys.readouterr().err
    data = json.loads(out)
    assert data["vector_size"] == 16 and data["restrict_vocab"] == 1000
    assert [r["name"] for r in data["similarity"]] == ["ws353"]
    assert data["similarity"][0]["n_found"] > 0
    assert data["analogy"]["name"] == "questions-words"


def test_eval_same_numbers_for_model_and_export(saved):
    a = json.loads(run(["eval", saved["embkit"], "--format", "json", "--suite", "ws353"])[1])
    b = json.loads(run(["eval", saved["word2vec"], "--format", "json", "--suite", "ws353"])[1])
    assert a["similarity"][0]["spearman"] == pytest.approx(b["similarity"][0]["spearman"], abs=1e-4)


def test_eval_unknown_suite_lists_valid_ones(saved, capsys):
    status, _ = run(["eval", saved["embkit"], "--suite", "ws353", "wordsim-9000"])
    assert status == 2
    line = one_error_line(capsys.readouterr().err)
    assert "wordsim-9000" in line and "simlex999" in line and "questions-words" in line


def test_eval_missing_file(tmp_path, capsys):
    status, _ = run(["eval", str(tmp_path / "nothing.txt")])
    assert status == 1
    assert "nothing.txt" in one_error_line(capsys.readouterr().err)


# ------------------------------------------------------------------------------------------ corpora
def test_resolve_corpus_names_and_paths(tmp_path, cache):
    bundled = corpora.resolve_corpus(None)
    assert bundled.endswith("enwiki-sample.txt.gz") and os.path.isfile(bundled)
    assert corpora.resolve_corpus("enwiki-sample") == bundled
    assert corpora.resolve_corpus("some/corpus.txt") == "some/corpus.txt"
    assert corpora.resolve_corpus("https://example.org/c.txt.gz") == "https://example.org/c.txt.gz"
    local = tmp_path / "text8"  # an existing path wins over the registry name
    local.write_text("a b c\n")
    assert corpora.resolve_corpus(str(local)) == str(local)


def test_text8_offline_error_says_how_to_get_it(cache, capsys):
    status, _ = run(["train", "--corpus", "text8", "--no-eval", *FAST])
    assert status == 1
    line = one_error_line(capsys.readouterr().err)
    assert "http://mattmahoney.net/dc/text8.zip" in line
    assert str(cache / "text8.zip") in line and "--corpus" in line
    assert not cache.exists()  # nothing half-written


def test_http_error_is_reported_as_such(cache, monkeypatch):
    def not_found(url, timeout):
        raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)

    monkeypatch.setattr(downloads, "_urlopen", not_found)
    with pytest.raises(downloads.DownloadError, match="HTTP 404 Not Found.*--corpus PATH"):
        corpora.fetch_corpus("text8", progress=False)


def test_text8_offline_mode_in_a_subprocess(tmp_path):
    proc = embkit_process("train", "--corpus", "text8", "-q",
                          env={"EMBKIT_CACHE": str(tmp_path), "EMBKIT_OFFLINE": "1"})
    assert proc.returncode == 1
    line = one_error_line(proc.stderr)
    assert "EMBKIT_OFFLINE" in line and "http://mattmahoney.net/dc/text8.zip" in line


def test_version_in_a_subprocess():
    proc = embkit_process("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("embkit ")


def _fake_text8(folder, text):
    """A zip holding ``text8``, and the registry spec pinned to it."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "text8.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("text8", text)
    data = text.encode()
    spec = dataclasses.replace(corpora.CORPORA["text8"], size=archive.stat().st_size,
                               sha256=hashlib.sha256(archive.read_bytes()).hexdigest(),
                               member_size=len(data), member_sha256=hashlib.sha256(data).hexdigest())
    return archive, spec


def test_text8_cache_hit_extracts_and_trains(cache, monkeypatch, capsys):
    text = " ".join(_sentences().split())  # one single line, as text8
    archive, spec = _fake_text8(cache, text)
    monkeypatch.setitem(corpora.CORPORA, "text8", spec)
    path = corpora.resolve_corpus("text8")
    assert path == str(cache / "text8")
    assert open(path).read() == text
    assert not [p for p in os.listdir(cache) if p.startswith(".tmp-")]
    archive.unlink()  # the extracted file alone is a cache hit now
    assert corpora.resolve_corpus("text8") == path
    status, out = run(["train", "--corpus", "text8", "--no-eval", *FAST])
    assert status == 0, capsys.readouterr().err
    assert path in out


def test_text8_cache_checksum_mismatch(cache, monkeypatch, capsys):
    _, spec = _fake_text8(cache, "a b c")
    monkeypatch.setitem(corpora.CORPORA, "text8", dataclasses.replace(spec, sha256="0" * 64))
    with pytest.raises(downloads.ChecksumError, match="SHA-256"):
        corpora.fetch_corpus("text8")
    assert run(["train", "--corpus", "text8", *FAST])[0] == 1
    assert "SHA-256" in one_error_line(capsys.readouterr().err)
    assert not (cache / "text8").exists()


class _FakeResponse(io.BytesIO):
    def __init__(self, data):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}


def test_download_is_verified_and_atomic(tmp_path, cache, monkeypatch):
    _, spec = _fake_text8(tmp_path / "server", "one two three four")
    payload = (tmp_path / "server" / "text8.zip").read_bytes()
    monkeypatch.setattr(downloads, "_urlopen", lambda url, timeout: _FakeResponse(payload))
    assert open(downloads.fetch(spec, progress=False)).read() == "one two three four"
    assert (cache / "text8.zip").read_bytes() == payload

    # a corrupted transfer is rejected and leaves nothing behind
    other = tmp_path / "cache2"
    monkeypatch.setenv("EMBKIT_CACHE", str(other))
    monkeypatch.setattr(downloads, "_urlopen", lambda url, timeout: _FakeResponse(payload[:-10] + b"x" * 10))
    with pytest.raises(downloads.ChecksumError):
        downloads.fetch(spec, progress=False)
    assert os.listdir(other) == []


def test_download_without_pinned_checksum_records_it(tmp_path, cache, monkeypatch, caplog):
    _, spec = _fake_text8(tmp_path / "server", "alpha beta")
    payload = (tmp_path / "server" / "text8.zip").read_bytes()
    spec = dataclasses.replace(spec, sha256=None, member_sha256=None)
    monkeypatch.setattr(downloads, "_urlopen", lambda url, timeout: _FakeResponse(payload))
    with caplog.at_level("WARNING", logger="embkit.core.downloads"):
        downloads.fetch(spec, progress=False)
    digest = hashlib.sha256(payload).hexdigest()
    assert (cache / "text8.zip.sha256").read_text().split()[0] == digest
    assert digest in caplog.text and str(cache / "text8.zip.sha256") in caplog.text
    # later runs enforce the recorded digest
    (cache / "text8").unlink()
    (cache / "text8.zip").write_bytes(payload[:-1] + b"!")
    with pytest.raises(downloads.ChecksumError):
        downloads.fetch(spec, progress=False)


# ------------------------------------------------------------------------------------------ benchmark helpers
def test_bench_helpers(tmp_path, corpus):
    """``eval.bench.word2vec``: the table, ratios and scaling line of a saved run, and its ``--embkit-args``."""
    results = [
        {"trainer": "embkit", "label": "embkit", "workers": 2, "wall_s": 2.0, "train_s": 1.0,
         "raw_words_per_s": 2e6, "peak_mb": 100.0, "analogy": 0.5, "ws353": 0.6, "simlex999": None},
        {"trainer": "gensim", "label": "gensim", "workers": 2, "wall_s": 4.0, "train_s": 2.0,
         "raw_words_per_s": 1e6, "peak_mb": 200.0, "analogy": 0.25, "ws353": 0.6, "simlex999": 0.3},
        {"trainer": "embkit", "label": "embkit (workers=1)", "workers": 1, "wall_s": 3.0, "train_s": 1.9,
         "raw_words_per_s": 1.05e6, "peak_mb": 100.0, "analogy": 0.5, "ws353": 0.6, "simlex999": 0.3},
    ]
    saved = tmp_path / "bench.json"
    saved.write_text(json.dumps({"results": results}))
    shown = run_eval("bench.word2vec", "--from-json", saved)
    assert shown.returncode == 0, shown.stderr
    assert "| embkit / gensim |  | 0.50x | 0.50x | 2.00x | 0.50x | 2.00x | 1.00x | n/a |" in shown.stdout
    assert "2,000,000" in shown.stdout
    assert "x1.90" in shown.stdout
    # --embkit-args: KEY=VALUE items, comma-separated or not, values read as Python literals
    child = run_eval("bench.word2vec", "--child", "embkit", "--corpus", corpus, "--epochs", "1", "--workers", "1",
                     "--min-count", "2", "--vector-size", "16", "--embkit-args", "shared_negatives=True",
                     "chunk_tokens=1024,sampler=uniform")
    assert child.returncode == 0, child.stderr
    params = json.loads(child.stdout.splitlines()[-1])["params"]
    assert (params["shared_negatives"], params["chunk_tokens"], params["sampler"]) == (True, 1024, "uniform")
    refused = run_eval("bench.word2vec", "--embkit-args", "shared_negatives")
    assert refused.returncode == 2 and "--embkit-args wants KEY=VALUE items" in refused.stderr


# ------------------------------------------------------------------------------------------ gensim-style polish
def test_train_takes_sampler_and_loss_parameters(tmp_path, corpus, capsys):
    output = tmp_path / "model.embkit"
    status, _ = run(["train", "--corpus", corpus, "--output", str(output), "--no-eval", "--param",
                     "ns_exponent=0.5", *FAST])
    assert status == 0, capsys.readouterr().err
    assert Word2Vec.load(str(output)).sampler_params == {"ns_exponent": 0.5}
    status, _ = run(["train", "--corpus", corpus, "--output", str(tmp_path / "b.embkit"), "--no-eval",
                     "--loss-param", "bogus=1", *FAST])
    assert status == 1 and "sgns got unknown parameters: bogus; it takes no parameters" \
        in one_error_line(capsys.readouterr().err)
    status, _ = run(["train", "--corpus", corpus, "--output", str(tmp_path / "c.embkit"), "--no-eval",
                     "--param", "ns_exponnt=0.5", *FAST])
    assert status == 1 and "unigram got unknown parameters: ns_exponnt (did you mean ns_exponent?); its " \
        "parameters: ns_exponent" in one_error_line(capsys.readouterr().err)


def test_eval_suite_aliases(tmp_path, corpus, capsys):
    output = tmp_path / "model.embkit"
    assert run(["train", "--corpus", corpus, "--output", str(output), "--no-eval", *FAST])[0] == 0
    status, out = run(["eval", str(output), "--suite", "similarity", "analogy", "--format", "json"])
    assert status == 0, capsys.readouterr().err
    names = json.dumps(json.loads(out))
    for suite in ("ws353", "simlex999", "men", "rw", "simverb3500", "questions-words"):
        assert suite in names


def test_eval_into_a_closed_pipe_exits_quietly(tmp_path, corpus):
    output = tmp_path / "model.embkit"
    assert run(["train", "--corpus", corpus, "--output", str(output), "--no-eval", *FAST])[0] == 0
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-m", "embkit", "eval", str(output), "--suite", "similarity"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO_ROOT)
    child.stdout.close()                         # the reader goes away before anything is written
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141
    assert stderr.strip() == "" and "Broken pipe" not in stderr


def test_ctrl_c_while_the_command_line_imports_is_one_line_and_status_130():
    # a real SIGINT, delivered while embkit.cli imports its modules (it was a 59-line traceback)
    child = (
        "import builtins, os, signal\n"
        "real = builtins.__import__\n"
        "def importing(name, *args, **kwargs):\n"
        "    if name == 'embkit.core.interrupts':\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = importing\n"
        "from embkit.console import main\n"
        "main(['eval', 'vectors.txt'])\n")
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, cwd=REPO_ROOT)
    assert out.returncode == 130, out.stderr
    assert out.stderr.strip() == "embkit: interrupted"
