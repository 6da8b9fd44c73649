"""Reference parsers of the fuzzing oracle: each format read again from its grammar, small and slow, written
without embkit's code.  Each returns what a valid file holds, or None when the file is not valid; the fuzz
targets (:mod:`fuzz_targets`) compare every load of embkit's readers with it.
"""
import re

import numpy as np

_BLANK = b" \t"
_CONTROL = set(range(32)) | {127}


def _decimal(token):
    """Whether ``token`` is a decimal number: sign, digits with an optional point, optional exponent."""
    if token[:1] in (b"+", b"-"):
        token = token[1:]
    mantissa, _, exponent = token.lower().partition(b"e")
    if b"e" in token.lower():
        if exponent[:1] in (b"+", b"-"):
            exponent = exponent[1:]
        if not (exponent.isdigit() and exponent.isascii()):
            return False
    whole, dot, fraction = mantissa.partition(b".")
    digits = whole + fraction
    return bool(digits) and digits.isdigit() and digits.isascii() and (whole or not dot or fraction)


def _float32(token):
    with np.errstate(over="ignore"):
        return np.float32(float(token))


# ---------------------------------------------------------------------------------------------- word2vec
def word2vec(data):
    """``(words, float32 vectors)`` of a word2vec text or binary file (format decided as documented in
    embkit.text.word2vec_format: the first row is text if it is a valid text row or a text-looking line),
    or None when the file is not valid (a repeated word included)."""
    end = data.find(b"\n")
    header, rest = (data, b"") if end < 0 else (data[:end], data[end + 1:])
    header = header[:-1] if header.endswith(b"\r") else header
    fields = [f for f in header.replace(b"\t", b" ").split(b" ") if f]
    if len(header) > 255 or len(fields) != 2 or not all(f.isdigit() and f.isascii() and len(f) <= 19 for f in fields):
        return None
    count, dim = int(fields[0]), int(fields[1])
    if dim < 1 or count * (2 + 2 * dim) > len(data):
        return None
    if count == 0:
        return ([], np.zeros((0, dim), np.float32)) if not rest.strip(b" \t\r\n") else None
    first_line = rest.split(b"\n", 1)[0]
    if _text_row(first_line, dim) is not None or _text_like(first_line):
        rows = _text_rows(rest, count, dim)
    else:
        rows = _binary_rows(rest, count, dim)
    if rows is None:
        return None
    words = [w for w, _ in rows]
    if len(set(words)) != len(words):
        return None
    return words, np.array([v for _, v in rows], dtype=np.float32).reshape(len(rows), dim)


def _word(raw):
    if not raw or any(b in _CONTROL for b in raw):
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _text_row(line, dim):
    if line.endswith(b"\r"):
        line = line[:-1]
    if line[:1] in (b" ", b"\t"):
        return None
    tokens = [t for t in re.split(rb"[ \t]+", line) if t]
    if len(tokens) != dim + 1 or not all(_decimal(t) and len(t) <= 64 for t in tokens[1:]):
        return None
    word = _word(tokens[0])
    values = np.array([_float32(t) for t in tokens[1:]], dtype=np.float32)
    if word is None or not np.isfinite(values).all():
        return None
    return word, values


def _text_like(line):
    body = line.rstrip(b"\r\n").replace(b"\t", b" ")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(body.split()) >= 2 and not any(b in _CONTROL for b in body)


def _text_rows(rest, count, dim):
    lines = rest.split(b"\n")
    if len(lines) < count:
        return None
    rows = [_text_row(line, dim) for line in lines[:count]]
    if any(r is None for r in rows) or b"".join(lines[count:]).strip(b" \t\r"):
        return None
    return rows


def _binary_rows(rest, count, dim):
    rows, at = [], 0
    for k in range(count):
        if k and rest[at:at + 1] == b"\n":
            at += 1
        space = rest.find(b" ", at)
        if space < 0:
            return None
        word, raw = _word(rest[at:space]), rest[space + 1:space + 1 + 4 * dim]
        if word is None or len(raw) != 4 * dim:
            return None
        values = np.frombuffer(raw, dtype="<f4")
        if not np.isfinite(values).all():
            return None
        rows.append((word, values))
        at = space + 1 + 4 * dim
    return rows if not rest[at:].strip(b" \t\r\n") else None


# ---------------------------------------------------------------------------------------------- XC files
_MAX_ID = 2 ** 31 - 1


def xc(data, header="auto", base=0):
    """``(X, Y)`` as dicts ``{(row, id): value}`` and the shapes ``(rows, features, labels)`` of an XC or
    svmlight multi-label file (``header="matrix"``: one matrix of the newer layout, whose labels are none), or
    None when it is not valid."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data:
        return None
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if header == "matrix":                      # the newer layout: "rows columns", then features only
        m = re.fullmatch(rb"[ \t]*([0-9]+)[ \t]+([0-9]+)[ \t]*", lines[0][:-1] if lines[0].endswith(b"\r")
                         else lines[0])
        declared = (int(m.group(1)), int(m.group(2)), 0) if m and len(m.group(1) + m.group(2)) < 30 else None
    else:
        declared = _xc_header(lines[0]) if header != False else None  # noqa: E712 - "auto" is truthy
    if header in (True, "matrix") and declared is None:
        return None
    if declared is not None:
        lines = lines[1:]
        if max(declared[1:]) > _MAX_ID + 1:
            return None
    n_features, n_labels = (declared[1], declared[2]) if declared else (None, None)
    X, Y, filled = {}, {}, []
    for row, line in enumerate(lines):
        point = _xc_line(line, base, n_features, n_labels)
        if point is None:
            return None
        labels, features = point
        Y.update({(row, label): 1.0 for label in labels})
        X.update({(row, f): v for f, v in features})
        filled.append(bool(labels or features))
    last = max([i + 1 for i, f in enumerate(filled) if f], default=0)
    if declared and declared[0] is not None:
        if last > declared[0] or len(lines) < declared[0]:
            return None
        rows = declared[0]
    else:
        rows = last
    if n_features is None:
        n_features = max([f for _, f in X], default=-1) + 1
        n_labels = max([label for _, label in Y], default=-1) + 1
    return X, Y, (rows, n_features, n_labels)


def _xc_header(line):
    line = line[:-1] if line.endswith(b"\r") else line
    m = re.fullmatch(rb"[ \t]*([0-9]+)[ \t]+([0-9]+)[ \t]+([0-9]+)[ \t]*", line)
    if m:
        return tuple(int(g) for g in m.groups())
    m = re.fullmatch(rb"#[ \t]*num_feature[ \t]*=[ \t]*([0-9]+)[ \t]+num_label[ \t]*=[ \t]*([0-9]+)[ \t]*", line)
    return (None, int(m.group(1)), int(m.group(2))) if m else None


def _xc_id(text, base, limit):
    if not (text.isdigit() and text.isascii()) or int(text) > _MAX_ID or int(text) < base:
        return None
    value = int(text) - base
    return value if limit is None or value < limit else None


def _xc_line(line, base, n_features, n_labels):
    if line.endswith(b"\r"):
        line = line[:-1]
    if b"\r" in line:
        return None
    tokens = [t for t in re.split(rb"[ \t]+", line) if t]
    labels = []
    if tokens and line[:1] not in (b" ", b"\t") and b":" not in tokens[0]:
        field = tokens.pop(0)
        while field.endswith(b",") and tokens and b":" not in tokens[0]:
            field += tokens.pop(0)
        labels = [_xc_id(part, base, n_labels) for part in field.split(b",")]
    features = []
    for token in tokens:
        if token.count(b":") != 1:
            return None
        fid, value = token.split(b":")
        if not _decimal(value) or not np.isfinite(_float32(value)):
            return None
        features.append((_xc_id(fid, base, n_features), _float32(value)))
    ids = [f for f, _ in features]
    if None in labels or None in ids or len(set(labels)) != len(labels) or len(set(ids)) != len(ids):
        return None
    return labels, features


# ---------------------------------------------------------------------------------------------- archives
def archive(data):
    """``(config, words, arrays)`` of a model archive read with ``zipfile``, ``json`` and ``numpy.load``
    (no pickles), or None when those cannot read it."""
    import io
    import json
    import zipfile
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            config = json.loads(zf.read("config.json"))
            words = json.loads(zf.read("vocab.json"))
            arrays = {name: np.load(io.BytesIO(zf.read(name + ".npy")), allow_pickle=False)
                      for name in config["arrays"]}
    except Exception:  # noqa: BLE001 - anything these libraries refuse
        return None
    return config, words, arrays


def same_tables(model, reference):
    """Why the loaded ``model`` differs from what the archive holds (None when it does not): its words,
    counts and tables (a hierarchical-softmax table saved before the extra row may have gained a zero row)."""
    _, words, arrays = reference
    if list(model._words()) != list(words):
        return "words differ: %r vs %r" % (list(model._words())[:5], list(words)[:5])
    for name, table in (("W_in", model.W_in), ("W_out", model.W_out)):
        want = np.asarray(arrays[name], dtype=np.float32)
        if name == "W_out" and table.shape[0] == want.shape[0] + 1 and not table[-1].any():
            table = table[:-1]
        if table.shape != want.shape or not np.array_equal(table, want):
            return "%s differs from the archive's" % name
    for name, value in model._arrays().items():
        if name in arrays and not np.array_equal(np.asarray(value), arrays[name]):
            return "%s differs from the archive's" % name
    return None
