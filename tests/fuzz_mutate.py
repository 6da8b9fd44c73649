"""Input generators of the reader fuzzing: seeded byte-level mutations of valid files.

:func:`mutate` applies one to four random edits to a seed file: bit flips, interesting bytes and numbers
(``0``, ``-1``, ``2**31``, ``1e309``, ``nan``), tokens of the format's grammar (separators, line ends, a
byte order mark), deletions, duplications, truncation and splices with another seed.  For ZIP archives,
:func:`mutate_archive` also rebuilds the archive with one member edited, so the edit gets past the CRC
check and reaches the JSON and ``.npy`` parsers.  Everything is driven by a ``random.Random``, so a run
is reproducible from its seed (and hypothesis can drive it through ``st.randoms()``).
"""
import io
import zipfile

#: Byte strings every format gets inserted: numbers at the edges of the integer and float types, signs,
#: separators, line ends, a UTF-8 byte order mark, invalid UTF-8, NUL.
COMMON_TOKENS = (b"0", b"1", b"-1", b"+1", b"00", b"9" * 10, b"2147483647", b"2147483648", b"4294967296",
                 b"9" * 17, b"9" * 40, b"1e309", b"-1e309", b"nan", b"inf", b"-0", b"0.5", b".", b"1.",
                 b".5", b"1e5", b"1e-50", b" ", b"  ", b"\t", b"\n", b"\r\n", b"\r", b"\n\n", b",", b":",
                 b"::", b"-", b"#", b"\xef\xbb\xbf", b"\xff", b"\xc3", b"\xe2\x82", b"\x00", b"\x85",
                 b"\xe2\x80\xa8", b"\x0b", b"\x0c")


def _positions(data, rnd):
    return rnd.randint(0, len(data)) if data else 0


def _flip(data, rnd, tokens, seeds):
    if not data:
        return data
    i = rnd.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rnd.randrange(8))]) + data[i + 1:]


def _set_byte(data, rnd, tokens, seeds):
    if not data:
        return data
    i = rnd.randrange(len(data))
    return data[:i] + bytes([rnd.choice((0, 9, 10, 13, 32, 44, 45, 46, 58, 127, 128, 255))]) + data[i + 1:]


def _insert_token(data, rnd, tokens, seeds):
    i = _positions(data, rnd)
    return data[:i] + rnd.choice(tokens or COMMON_TOKENS) + data[i:]


def _insert_common(data, rnd, tokens, seeds):
    i = _positions(data, rnd)
    return data[:i] + rnd.choice(COMMON_TOKENS) + data[i:]


def _replace_number(data, rnd, tokens, seeds):
    """Replace a run of digits by an interesting number."""
    digits = [i for i, b in enumerate(data) if 48 <= b <= 57]
    if not digits:
        return _insert_common(data, rnd, tokens, seeds)
    i = rnd.choice(digits)
    j = i
    while j < len(data) and 48 <= data[j] <= 57:
        j += 1
    while i > 0 and 48 <= data[i - 1] <= 57:
        i -= 1
    return data[:i] + rnd.choice(COMMON_TOKENS[:24]) + data[j:]


def _delete(data, rnd, tokens, seeds):
    if not data:
        return data
    i = rnd.randrange(len(data))
    return data[:i] + data[i + rnd.randint(1, min(16, len(data) - i)):]


def _duplicate(data, rnd, tokens, seeds):
    if not data:
        return data
    i = rnd.randrange(len(data))
    j = min(len(data), i + rnd.randint(1, 64))
    k = _positions(data, rnd)
    return data[:k] + data[i:j] * rnd.randint(1, 4) + data[k:]


def _truncate(data, rnd, tokens, seeds):
    return data[:rnd.randint(0, len(data))] if data else data


def _splice(data, rnd, tokens, seeds):
    other = rnd.choice(seeds) if seeds else data
    i, j = _positions(data, rnd), _positions(other, rnd)
    return data[:i] + other[j:]


def _swap_lines(data, rnd, tokens, seeds):
    lines = data.split(b"\n")
    if len(lines) < 2:
        return data
    i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


MUTATIONS = (_flip, _set_byte, _insert_token, _insert_common, _replace_number, _delete, _duplicate, _truncate,
             _splice, _swap_lines)


def mutate(data, rnd, tokens=(), seeds=(), max_edits=4):
    """``data`` with one to ``max_edits`` random edits (see the module docstring)."""
    for _ in range(rnd.randint(1, max_edits)):
        data = rnd.choice(MUTATIONS)(data, rnd, tokens, seeds)
    return data


def generate(rnd, seeds, tokens=()):
    """One fuzz input: a seed as it is (rarely), a mutated seed, or a string of grammar tokens."""
    roll = rnd.random()
    if roll < 0.03:
        return rnd.choice(seeds)
    if roll < 0.13:
        pool = tuple(tokens) + COMMON_TOKENS
        return b"".join(rnd.choice(pool) for _ in range(rnd.randint(0, 40)))
    return mutate(rnd.choice(seeds), rnd, tokens, seeds)


# ---------------------------------------------------------------------------------------------- archives
def rebuild_zip(data, edit):
    """The ZIP ``data`` rewritten with each member's bytes passed through ``edit(name, bytes)``.

    The members keep their names and order; CRCs and sizes are recomputed, so the edit is what a reader
    sees.  ``edit`` may return None to drop a member, or a ``(name, bytes)`` pair to rename it.
    """
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            result = edit(info.filename, src.read(info.filename))
            if result is None:
                continue
            name, body = result if isinstance(result, tuple) else (info.filename, result)
            dst.writestr(name, body)
    return out.getvalue()


def mutate_archive(data, rnd, seeds=()):
    """A mutated ZIP archive: raw byte edits (half the time) or one member edited and the ZIP rebuilt."""
    if rnd.random() < 0.5:
        return mutate(data, rnd, (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"\xff\xff\xff\xff"), seeds)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
    target = rnd.choice(names)
    action = rnd.random()
    json_tokens = (b'"', b"{", b"}", b"[", b"]", b"null", b"true", b"-1", b"1e400", b"NaN", b'"W_in"',
                   b'"../x"', b'"config"', b"0")
    npy_tokens = (b"'<f4'", b"'<f8'", b"'|O'", b"'<i8'", b"'>f4'", b"(100000000000, 100)", b"(3,)", b"()",
                  b"True", b"False", b"\x00\x00\xc0\x7f")

    def edit(name, body):
        if name != target:
            return body
        if action < 0.1:
            return None                                         # a member missing
        if action < 0.2:
            return (rnd.choice(("../" + name, "/abs/" + name, name + "/", name.upper())), body)
        tokens = npy_tokens if name.endswith(".npy") else json_tokens
        return mutate(body, rnd, tokens, ())

    return rebuild_zip(data, edit)
