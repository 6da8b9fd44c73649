"""Damaged and hostile model archives: every one is refused with a ValueError naming the file, before any
table reaches a kernel; nothing is extracted, and no declared size is allocated before it is checked."""
import io
import json
import struct
import zipfile

import numpy as np
import pytest

from embkit import ExtremeClassifier, ItemEmbedding, Word2Vec
from embkit.core import persist
from fuzz_mutate import rebuild_zip

SENTENCES = [["a", "b", "c", "d"], ["b", "c", "a"], ["d", "a"]] * 5


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Bytes of a saved Word2Vec (negative sampling) and a hierarchical-softmax one."""
    out = {}
    folder = tmp_path_factory.mktemp("archives")
    for name, kwargs in (("sgns", dict(negative=2)), ("hs", dict(hs=1, negative=0))):
        path = folder / ("%s.embkit" % name)
        Word2Vec(SENTENCES, vector_size=4, min_count=1, epochs=1, workers=1, **kwargs).save(str(path))
        out[name] = path.read_bytes()
    return out


def npy(array):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=True)
    return buf.getvalue()


def edited(data, member, body):
    return rebuild_zip(data, lambda name, old: body if name == member else old)


def edited_config(data, change):
    def edit(name, body):
        if name != "config.json":
            return body
        config = json.loads(body)
        change(config)
        return json.dumps(config).encode()
    return rebuild_zip(data, edit)


def refused(tmp_path, data, match, loader=persist.load):
    path = tmp_path / "model.embkit"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=match) as info:
        loader(str(path))
    assert str(path) in str(info.value)
    return info.value


def test_truncated_anywhere(tmp_path, saved):
    data = saved["sgns"]
    for cut in range(0, len(data), max(1, len(data) // 40)):
        refused(tmp_path, data[:cut], "not an embkit model file|damaged|not a valid")


def test_a_bit_flip_anywhere_is_caught_or_harmless(tmp_path, saved):
    """A flipped bit in member data fails the CRC; one in a field the reader ignores (a local header's
    time stamp, say) leaves exactly the original model: never a silently different one."""
    data = saved["sgns"]
    path = tmp_path / "model.embkit"
    path.write_bytes(data)
    original = persist.load_archive(str(path))
    caught = harmless = 0
    for offset in range(0, len(data), 3):
        path.write_bytes(data[:offset] + bytes([data[offset] ^ (1 << offset % 8)]) + data[offset + 1:])
        try:
            config, words, arrays = persist.load_archive(str(path))
        except ValueError as exc:
            assert str(path) in str(exc)
            caught += 1
            continue
        assert config == original[0] and words == original[1]
        assert arrays.keys() == original[2].keys() and all((arrays[k] == original[2][k]).all() for k in arrays)
        harmless += 1
    assert caught > 2 * harmless      # most bytes are data and CRC-checked; ignored header fields are the rest


@pytest.mark.parametrize("name", ["../evil.npy", "/abs/evil.npy", "dir\\evil.npy", "a/../../evil.npy"])
def test_member_names_that_climb_out(tmp_path, saved, name):
    data = rebuild_zip(saved["sgns"], lambda n, body: (name, body) if n == "W_in.npy" else body)
    refused(tmp_path, data, "not a plain file name")


def test_array_names_that_climb_out(tmp_path, saved):
    data = edited_config(saved["sgns"], lambda c: c["arrays"].append("../../etc/passwd"))
    refused(tmp_path, data, "not a list of plain names")


def _central_entry(data, member):
    """Offset of the central directory entry of ``member`` in the ZIP ``data``."""
    at = data.index(b"PK\x01\x02")
    while True:
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + name_len] == member.encode():
            return at
        at = data.index(b"PK\x01\x02", at + 4)


def test_huge_declared_member_size(tmp_path, saved):
    """A stored member whose central directory entry declares 4 GB: refused before anything is read."""
    data = bytearray(saved["sgns"])
    struct.pack_into("<I", data, _central_entry(saved["sgns"], "W_in.npy") + 24, 0xFFFFFFF0)  # uncompressed size
    refused(tmp_path, bytes(data), "declares .* bytes")


def test_member_past_the_end_of_the_file(tmp_path, saved):
    data = bytearray(saved["sgns"])
    struct.pack_into("<I", data, _central_entry(saved["sgns"], "W_in.npy") + 20, 0x7FFFFFF0)  # compressed size
    refused(tmp_path, bytes(data), "past the end|damaged|not a valid|not an embkit")


def test_npy_header_declaring_a_huge_shape(tmp_path, saved):
    body = npy(np.zeros((4, 4), np.float32)).replace(b"(4, 4)", b"(10000000000, 4000)")
    refused(tmp_path, edited(saved["sgns"], "W_in.npy", body), "header declares shape")


@pytest.mark.parametrize("array, match", [
    (np.array([{"a": 1}, None], dtype=object), "not plain numbers"),
    (np.zeros(4, dtype=[("x", "<f4"), ("y", "<i4")]), "not plain numbers"),
    (np.array(["abc", "de"]), "not plain numbers"),
    (np.zeros((2, 2, 2), np.float32), "at most 2 dimensions"),
], ids=["object", "structured", "strings", "3-d"])
def test_arrays_that_are_not_plain_numbers(tmp_path, saved, array, match):
    refused(tmp_path, edited(saved["sgns"], "W_in.npy", npy(array)), match)


def test_bad_npy_headers(tmp_path, saved):
    body = npy(np.zeros((4, 4), np.float32))
    for bad in (b"NOTNUMPY" + body[8:], body.replace(b"'descr'", b"'dexcr'"), body.replace(b"}", b" ", 1),
                body[:40]):
        refused(tmp_path, edited(saved["sgns"], "W_in.npy", bad), "not a .npy array|holds|cut short")


@pytest.mark.parametrize("table, match", [
    (np.full((4, 4), np.nan, np.float32), "non-finite"),
    (np.ones((4, 4), np.int32), "not a 2-d float table"),
    (np.ones(16, np.float32), "not a 2-d float table"),
    (np.ones((3, 4), np.float32), "4 words but W_in has 3 rows"),
    (np.ones((4, 5), np.float32), "W_in has 5 columns but W_out 4"),
    (np.full((4, 4), 1e300), "overflows float32"),
], ids=["nan", "int", "1-d", "rows", "columns", "float64-overflow"])
def test_tables_of_the_wrong_kind(tmp_path, saved, table, match):
    refused(tmp_path, edited(saved["sgns"], "W_in.npy", npy(table)), match)


def test_float64_and_big_endian_tables_load_as_float32(tmp_path, saved):
    table = np.arange(16, dtype=">f8").reshape(4, 4) / 16
    path = tmp_path / "model.embkit"
    path.write_bytes(edited(saved["sgns"], "W_in.npy", npy(table)))
    model = Word2Vec.load(str(path))
    assert model.wv.vectors.dtype == np.float32 and np.allclose(model.wv.vectors, table)


def test_tables_that_do_not_fit_the_parameters(tmp_path, saved):
    refused(tmp_path, edited_config(saved["sgns"], lambda c: c["params"].update(vector_size=7)),
            "vector_size is 7 but")
    refused(tmp_path, edited(saved["hs"], "W_out.npy", npy(np.ones((1, 4), np.float32))),
            "W_out has 1 rows, but the hs loss trains 4")
    refused(tmp_path, edited_config(saved["sgns"], lambda c: c["params"].update(alpha=-1)),
            "bad Word2Vec parameters: alpha must be")
    refused(tmp_path, edited_config(saved["sgns"], lambda c: c.update(state=[1, 2])), "state must be a mapping")
    refused(tmp_path, edited(saved["sgns"], "counts.npy", npy(np.array([1, -2, 3, 4]))), "non-negative integers")


@pytest.mark.parametrize("body, match", [
    (b"[" * 100000 + b"]" * 100000, "not valid JSON"),
    (b'{"format": "embkit-model", "arrays": "W_in"', "not valid JSON"),
    (b'["a list"]', "not an embkit model file"),
    (b'{"format": "embkit-model", "format_version": "1", "arrays": []}', "format_version"),
], ids=["deep-nesting", "cut", "list", "version-text"])
def test_bad_configurations(tmp_path, saved, body, match):
    refused(tmp_path, edited(saved["sgns"], "config.json", body), match)


def test_vocabulary_that_is_not_words(tmp_path, saved):
    refused(tmp_path, edited(saved["sgns"], "vocab.json", b'["a", 1, null, "d"]'), "not a list of words")


def test_model_files_of_every_kind_still_load(tmp_path):
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    X = sp.random(12, 6, density=0.5, format="csr", random_state=0, dtype=np.float32)
    Y = sp.csr_matrix((np.ones(12), (np.arange(12), rng.integers(0, 4, 12))), shape=(12, 4))
    models = [ItemEmbedding(vector_size=4, epochs=1, workers=1, negative=2, progress=False).fit(
                  sp.csr_matrix(rng.integers(0, 3, (5, 5)).astype(float))),
              ExtremeClassifier(vector_size=4, epochs=1, workers=1, negative=2, progress=False).fit(X, Y),
              ExtremeClassifier(vector_size=4, epochs=1, workers=1, loss="hs", progress=False).fit(X, Y)]
    for k, model in enumerate(models):
        path = str(tmp_path / ("m%d.embkit" % k))
        model.save(path)
        loaded = persist.load(path)
        assert (loaded.W_in == model.W_in).all() and (loaded.W_out == model.W_out).all()


@pytest.mark.parametrize("field, value, match", [
    ("raw_words", "many", r"state.raw_words must be an integer"),
    ("corpus_count", -3, r"state.corpus_count must be an integer"),
    ("min_alpha_yet_reached", float("nan"), r"state.min_alpha_yet_reached must be a finite number"),
])
def test_state_fields_are_checked(tmp_path, saved, field, value, match):
    refused(tmp_path, edited_config(saved["sgns"], lambda c: c["state"].update({field: value})), match)


@pytest.mark.parametrize("words, match", [
    (["a", "b", "\ud800", "d"], r"word 2 .* lone surrogate"),        # loaded, then failed when saved
    (["a", "b", "a", "d"], r"word 2 \('a'\) repeats word 0"),         # two rows under one key
])
def test_vocabulary_that_cannot_be_used(tmp_path, saved, words, match):
    body = json.dumps(words).encode()
    refused(tmp_path, edited(saved["sgns"], "vocab.json", body), match)


@pytest.mark.parametrize("edit, match", [
    (lambda s: s["position"].update(epoch=0.333), r"checkpoint.position.epoch must be an integer"),  # was TypeError
    (lambda s: s.pop("run"), r"checkpoint has no field 'run'"),                                      # was KeyError
    (lambda s: s["run"].update(alpha="fast"), r"checkpoint.run.alpha must be a finite number"),
    (lambda s: s["position"].update(epoch=99), r"position.epoch is 99, but the run has 1 epochs"),
    (lambda s: s.update(loss_history=[1, None]), r"checkpoint.loss_history must be a list"),
    (lambda s: s["run"]["args"].update(total_word=3), r"checkpoint.run.args has fields no Word2Vec run writes: "
                                                      r"total_word \(did you mean total_words\?\)"),  # was TypeError
    (lambda s: s["run"]["args"].update(total_words="many"), r"checkpoint.run.args.total_words must be an integer"),
])
def test_checkpoint_fields_are_checked(tmp_path, edit, match):
    from embkit.core.checkpoint import CheckpointError, list_checkpoints
    folder = tmp_path / "run"
    Word2Vec(SENTENCES, vector_size=4, min_count=1, epochs=1, workers=1, checkpoint_dir=str(folder))
    for path in list_checkpoints(str(folder)):
        with open(path, "rb") as fh:
            data = edited_config(fh.read(), lambda c: edit(c["checkpoint"]))
        with open(path, "wb") as fh:
            fh.write(data)
    with pytest.raises(CheckpointError, match=match) as info:
        Word2Vec.resume(str(folder), SENTENCES)
    assert "checkpoint-0000" in str(info.value)


def test_a_vocabulary_that_cannot_draw_negatives_is_refused_at_load(tmp_path, saved):
    # found by the fuzzer: these loaded, then training failed with an error that named no file
    refused(tmp_path, edited(saved["sgns"], "counts.npy", npy(np.zeros(4, np.int64))),
            r"cannot train: unigram: every class count is zero")
    refused(tmp_path, edited_config(saved["sgns"], lambda c: c["params"].update(ns_exponent=1e6)),
            r"cannot train: unigram: ns_exponent=1000000.0 raises the largest count \(\d+\) beyond a float")
    with pytest.raises(ValueError, match=r"ns_exponent=1000000.0 raises the largest count"):
        Word2Vec(SENTENCES, vector_size=4, min_count=1, epochs=1, workers=1, ns_exponent=1e6)


def _deflated(data, member, body):
    """``data`` with ``member`` replaced by ``body``, deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            if info.filename != member:
                dst.writestr(info.filename, src.read(info.filename))
        dst.writestr(zipfile.ZipInfo(member), body, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


@pytest.mark.parametrize("member", ["W_in.npy", "vocab.json"])
def test_a_decompression_bomb_is_refused_before_it_is_inflated(tmp_path, saved, member):
    import tracemalloc
    rows = (64 << 20) // 16                                   # 64 MiB of zeros, about 64 KB deflated
    body = npy(np.zeros((rows, 4), np.float32)) if member.endswith(".npy") else b'["a"' + b',"a"' * rows + b"]"
    data = _deflated(saved["sgns"], member, body)
    del body
    assert len(data) < 1 << 20
    tracemalloc.start()
    try:
        refused(tmp_path, data, "inflate .* more than 100 times")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_the_declared_shape_is_checked_before_the_data_is_read(tmp_path, saved, monkeypatch):
    from embkit.core import safe_zip
    monkeypatch.setattr(safe_zip, "MAX_RATIO", 10 ** 9)
    monkeypatch.setattr(safe_zip, "read_npy", lambda *a: pytest.fail("an array was read"))
    data = _deflated(saved["sgns"], "W_in.npy", npy(np.zeros(((16 << 20) // 16, 4), np.float32)))
    refused(tmp_path, data, "4 words but W_in has 1048576 rows")


def test_an_archive_compressed_again_still_loads(tmp_path, saved):
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(saved["sgns"])) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    path = tmp_path / "zipped.embkit"
    path.write_bytes(out.getvalue())
    original = tmp_path / "original.embkit"
    original.write_bytes(saved["sgns"])
    assert np.array_equal(Word2Vec.load(str(path)).wv.vectors, Word2Vec.load(str(original)).wv.vectors)


def test_a_stored_member_that_declares_another_size(tmp_path, saved):
    data = bytearray(saved["sgns"])
    with zipfile.ZipFile(io.BytesIO(saved["sgns"])) as zf:
        info = zf.getinfo("counts.npy")
    central = bytes(data).rindex(b"PK\x01\x02", 0, bytes(data).rindex(b"counts.npy"))
    struct.pack_into("<I", data, central + 24, info.file_size + 8)       # the central directory's size field
    refused(tmp_path, bytes(data), "counts.npy")


def test_an_empty_vocabulary_with_rows_is_refused(tmp_path, saved):
    # loaded as a model with no words and four rows, which could not train (found by the fuzzer)
    refused(tmp_path, edited(saved["sgns"], "vocab.json", b"[]"), "0 words but W_in has 4 rows")
