# cython: cdivision=True
"""Words of text without the GIL: tokens as ``str.split()`` makes them, distinct words in first-seen order,
and the token stream cut into chunks of sentences, so that reading a corpus runs on many threads.

:func:`tokenize` splits one block of text (whole lines, or a piece of a very long line) on the characters
``str.isspace()`` calls white space and lists the block's distinct words in the order they first appear,
with their counts; threads tokenize blocks side by side.  A :class:`WordTable` then takes the blocks in
corpus order: it gives each new word the next id (so ids follow the corpus's first-seen order, as a dict
filled token by token would), adds the counts, and can prune its rarest words (word2vec's bounded
counting) or look words up without adding them; open to readers, it lets other threads look blocks up and
count the words it holds while it grows, so that it adds only the others.  A :class:`ChunkBuilder` turns the blocks' tokens, mapped
to those ids, into sentences (lines cut into pieces of at most ``max_sentence_length`` tokens) and chunks
of about ``chunk_tokens`` tokens, dropping the tokens mapped to -1.  The rules are those of
:mod:`embkit.text.corpus` and :mod:`embkit.text.vocab`, so both paths give the same words, counts, ids and
chunks.

Words are UTF-8 bytes inside; they come back as ``str``.
"""
import numpy as np

from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memcmp, memmove, memset

from embkit._kernels.common cimport zeroed


# ----------------------------------------------------------------------------------------- white space
cdef uint8_t ASCII_SPACE[128]
memset(ASCII_SPACE, 0, sizeof(ASCII_SPACE))
for _c in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20):
    ASCII_SPACE[_c] = 1

# what a byte can be: part of a word, an ASCII blank, a line break, or the first byte of a multi-byte
# character that may be white space (U+0085, U+00A0, U+1680, U+2000-U+205F, U+3000)
cdef enum:
    WORD_BYTE = 0
    BLANK = 1
    NEWLINE = 2
    MAYBE_BLANK = 3

cdef uint8_t BYTE_CLASS[256]
memset(BYTE_CLASS, WORD_BYTE, sizeof(BYTE_CLASS))
for _c in range(128):
    if ASCII_SPACE[_c]:
        BYTE_CLASS[_c] = BLANK
BYTE_CLASS[0x0A] = NEWLINE
for _c in (0xC2, 0xE1, 0xE2, 0xE3):
    BYTE_CLASS[_c] = MAYBE_BLANK


cdef inline int space_bytes(const uint8_t *t, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Bytes of the white-space character at ``t[i]`` in valid UTF-8 (0: not white space).

    The characters are those of ``str.isspace()``: ASCII 9-13 and 28-32, U+0085, U+00A0, U+1680,
    U+2000-U+200A, U+2028, U+2029, U+202F, U+205F and U+3000.
    """
    cdef uint8_t c = t[i], b1, b2
    if c < 0x80:
        return ASCII_SPACE[c]
    if c == 0xC2:
        if i + 1 < n and (t[i + 1] == 0x85 or t[i + 1] == 0xA0):
            return 2
        return 0
    if c < 0xE1 or c > 0xE3 or i + 2 >= n:
        return 0
    b1 = t[i + 1]
    b2 = t[i + 2]
    if c == 0xE1:
        return 3 if b1 == 0x9A and b2 == 0x80 else 0
    if c == 0xE3:
        return 3 if b1 == 0x80 and b2 == 0x80 else 0
    if b1 == 0x80:
        return 3 if (0x80 <= b2 <= 0x8A) or b2 == 0xA8 or b2 == 0xA9 or b2 == 0xAF else 0
    return 3 if b1 == 0x81 and b2 == 0x9F else 0


def whitespace():
    """The characters :func:`tokenize` splits on, as a str (for tests against ``str.isspace``)."""
    out = []
    for c in range(0x110000):
        if 0xD800 <= c < 0xE000:
            continue
        b = chr(c).encode("utf-8")
        if space_bytes(b, 0, len(b)) == len(b):
            out.append(chr(c))
    return "".join(out)


# ----------------------------------------------------------------------------------------- word sets
cdef struct Entry:
    uint64_t hash           # never 0
    int64_t start           # where the word's bytes start in the arena
    int64_t count
    int32_t length


cdef struct Cell:
    uint32_t tag            # the high 32 bits of the word's hash
    int32_t word1           # its id + 1; 0: the cell is empty


cdef enum:
    ARENA_PAD = 8           # bytes an arena holds past its capacity


cdef struct WordSet:
    Cell *cell              # open addressing, linear probing: 8 bytes a cell, so the probes stay in cache
    int64_t n_cells         # a power of two, at least twice the words
    Entry *entry            # per word id: its hash, bytes and count
    int32_t n               # words, with ids 0 .. n-1 in insertion order
    int32_t cap             # words ``entry`` holds
    char *arena             # arena_cap bytes and ARENA_PAD more: a word's bytes may be read 8 at a time
    int64_t used
    int64_t arena_cap


cdef extern from *:
    """
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    #define EMB_LITTLE_ENDIAN 0
    #else
    #define EMB_LITTLE_ENDIAN 1
    #endif
    """
    bint EMB_LITTLE_ENDIAN


cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static int emb_ctz64(unsigned long long m) { unsigned long i; _BitScanForward64(&i, m); return (int)i; }
    #else
    #define emb_ctz64(m) __builtin_ctzll(m)
    #endif
    """
    int emb_ctz64(uint64_t m) nogil      # the index of the lowest bit set (m != 0)


cdef inline uint64_t word_hash(const char *p, Py_ssize_t n) noexcept nogil:
    """64-bit hash of ``n`` bytes (never 0)."""
    return bytes_hash(p, n, False)


cdef inline uint64_t bytes_hash(const char *p, Py_ssize_t n, bint padded) noexcept nogil:
    """:func:`word_hash` of ``p[0:n]``; ``padded``: the 8 bytes from the last whole 8 on may be read (the
    bytes past the word are masked off), which spares a tail copied byte by byte."""
    cdef uint64_t h = <uint64_t>0x9E3779B97F4A7C15 ^ <uint64_t>n, w
    while n >= 8:
        memcpy(&w, p, 8)
        h = (h ^ w) * <uint64_t>0xBF58476D1CE4E5B9
        h ^= h >> 31
        p += 8
        n -= 8
    if padded and EMB_LITTLE_ENDIAN:
        memcpy(&w, p, 8)
        w &= (<uint64_t>1 << (8 * n)) - 1      # little-endian: the word's bytes are the low ones
    else:
        w = 0
        memcpy(&w, p, n)
    h = (h ^ w) * <uint64_t>0x94D049BB133111EB
    h ^= h >> 29
    h *= <uint64_t>0xBF58476D1CE4E5B9
    h ^= h >> 32
    return h if h != 0 else 1


cdef inline int32_t same_whole_words(const char *a, const char *b, int32_t n) noexcept nogil:
    """Where the last 0-7 bytes of ``a[0:n]`` and ``b[0:n]`` start when their whole 8 bytes are the same (8
    at a time), else -1."""
    cdef uint64_t x, y
    cdef int32_t k = 0
    while n - k >= 8:
        memcpy(&x, a + k, 8)
        memcpy(&y, b + k, 8)
        if x != y:
            return -1
        k += 8
    return k


cdef inline bint same_bytes(const char *a, const char *b, int32_t n) noexcept nogil:
    """Whether ``a[0:n]`` and ``b[0:n]`` hold the same bytes."""
    cdef int32_t k = same_whole_words(a, b, n)
    if k < 0:
        return False
    while k < n:
        if a[k] != b[k]:
            return False
        k += 1
    return True


cdef inline bint same_padded_bytes(const char *a, const char *b, int32_t n) noexcept nogil:
    """:func:`same_bytes` of two strings whose bytes may be read 8 at a time past their ends."""
    cdef int32_t k = same_whole_words(a, b, n)
    cdef uint64_t x, y
    if k < 0 or not EMB_LITTLE_ENDIAN:
        return k >= 0 and same_bytes(a + k, b + k, n - k)
    memcpy(&x, a + k, 8)
    memcpy(&y, b + k, 8)
    return ((x ^ y) & ((<uint64_t>1 << (8 * (n - k))) - 1)) == 0


cdef int ws_init(WordSet *s, int32_t words) noexcept nogil:
    """An empty set with room for ``words`` words; -1 when out of memory."""
    memset(s, 0, sizeof(WordSet))
    if words < 16:
        words = 16
    s.n_cells = 32
    while s.n_cells < 2 * <int64_t>words:
        s.n_cells *= 2
    s.cap = words
    s.arena_cap = 8 * <int64_t>words
    s.cell = <Cell *> zeroed(s.n_cells, sizeof(Cell))     # probes read a cell first: see zeroed
    s.entry = <Entry *> malloc(s.cap * sizeof(Entry))
    s.arena = <char *> malloc(s.arena_cap + ARENA_PAD)
    if s.cell == NULL or s.entry == NULL or s.arena == NULL:
        ws_free(s)
        return -1
    return 0


cdef void ws_free(WordSet *s) noexcept nogil:
    free(s.cell); free(s.entry); free(s.arena)
    memset(s, 0, sizeof(WordSet))


cdef int ws_rehash(WordSet *s, int64_t cells) noexcept nogil:
    """Put the words into ``cells`` new cells (by their stored hashes); -1 when out of memory."""
    cdef Cell *table = <Cell *> zeroed(cells, sizeof(Cell))
    if table == NULL:
        return -1
    cdef int64_t i
    cdef int32_t w
    cdef uint64_t h
    for w in range(s.n):
        h = s.entry[w].hash
        i = <int64_t>(h & <uint64_t>(cells - 1))
        while table[i].word1 != 0:
            i = (i + 1) & (cells - 1)
        table[i].tag = <uint32_t>(h >> 32)
        table[i].word1 = w + 1
    free(s.cell)
    s.cell = table
    s.n_cells = cells
    return 0


cdef int ws_reserve(WordSet *s, int32_t words, int64_t nbytes) noexcept nogil:
    """Room for ``words`` more words of ``nbytes`` more bytes; -1 when out of memory."""
    cdef int64_t cap = s.cap
    cdef void *p
    if s.n + <int64_t>words > cap:
        while s.n + <int64_t>words > cap:
            cap *= 2
        if cap > 0x7FFFFFFF:
            cap = 0x7FFFFFFF
        p = realloc(s.entry, cap * sizeof(Entry))
        if p == NULL:
            return -1
        s.entry = <Entry *> p
        s.cap = <int32_t>cap
    cdef int64_t need = s.used + nbytes, acap = s.arena_cap
    if need > acap:
        while need > acap:
            acap *= 2
        p = realloc(s.arena, acap + ARENA_PAD)
        if p == NULL:
            return -1
        s.arena = <char *> p
        s.arena_cap = acap
    if 2 * (<int64_t>s.n + words) > s.n_cells:
        acap = s.n_cells
        while 2 * (<int64_t>s.n + words) > acap:
            acap *= 2
        return ws_rehash(s, acap)
    return 0


cdef inline int64_t ws_find(const WordSet *s, const char *p, int32_t n, uint64_t h, bint padded) noexcept nogil:
    """The cell of the word ``p[0:n]`` with hash ``h``, or the empty cell where it would go (its ``word1 - 1``
    is the word's id, or -1); ``padded``: ``p``'s bytes may be read 8 at a time past its end (as an arena's,
    or a block's text before its last 8 bytes)."""
    cdef int64_t i = <int64_t>(h & <uint64_t>(s.n_cells - 1))
    cdef uint32_t tag = <uint32_t>(h >> 32)
    cdef const Cell *c
    cdef const Entry *e
    while True:
        c = &s.cell[i]
        if c.word1 == 0:
            return i
        if c.tag == tag:
            e = &s.entry[c.word1 - 1]
            if e.hash == h and e.length == n and (same_padded_bytes(s.arena + e.start, p, n) if padded
                                                  else same_bytes(s.arena + e.start, p, n)):
                return i
        i = (i + 1) & (s.n_cells - 1)


cdef inline int32_t ws_add(WordSet *s, const char *p, int32_t n, uint64_t h, int64_t count,
                           bint padded) noexcept nogil:
    """The id of the word ``p[0:n]``, added (with count 0) when new; its count grows by ``count``
    (``padded``: as :func:`ws_find`).  -1 when out of memory."""
    cdef int64_t i = ws_find(s, p, n, h, padded)
    cdef int32_t w = s.cell[i].word1 - 1
    cdef Entry *e
    if w < 0:
        if s.n >= s.cap or s.used + n > s.arena_cap or 2 * (<int64_t>s.n + 1) > s.n_cells:
            if ws_reserve(s, 1, n) != 0:
                return -1
            i = ws_find(s, p, n, h, padded)
        w = s.n
        e = &s.entry[w]
        memcpy(s.arena + s.used, p, n)
        e.hash = h
        e.start = s.used
        e.length = n
        e.count = 0
        s.cell[i].tag = <uint32_t>(h >> 32)
        s.cell[i].word1 = w + 1
        s.n += 1
        s.used += n
    s.entry[w].count += count
    return w


cdef enum:
    PREFETCH_AHEAD = 8      # words ahead whose first cell a merge starts loading


cdef extern from *:
    """
    #define emb_prefetch_line(p) __builtin_prefetch((const void *)(p), 0, 1)
    """
    void emb_prefetch_line(const void *p) nogil


cdef inline Entry *ws_entry(const WordSet *s, int32_t w) noexcept nogil:
    return &s.entry[w]


cdef int grow(void **array, int64_t *cap, size_t item) noexcept nogil:
    """Double the capacity of the ``item``-byte elements at ``array[0]``; -1 when out of memory (unchanged)."""
    cdef void *p = realloc(array[0], 2 * cap[0] * item)
    if p == NULL:
        return -1
    array[0] = p
    cap[0] *= 2
    return 0


cdef int grow_keys(int64_t **keys, int64_t *cap) noexcept nogil:
    """Double (or start at 1024) the ``int64`` keys at ``keys[0]``; -1 when out of memory (unchanged)."""
    cdef int64_t n = 2 * cap[0] if cap[0] else 1024
    cdef void *p = realloc(keys[0], n * sizeof(int64_t))
    if p == NULL:
        return -1
    keys[0] = <int64_t *> p
    cap[0] = n
    return 0


cdef inline int part_of(uint64_t h, int parts) noexcept nogil:
    """The part of ``parts`` a word of hash ``h`` falls in: by the hash's high 32 bits (the cells use the low
    ones), spread evenly."""
    return <int>(((h >> 32) * <uint64_t>parts) >> 32)


cdef str ws_word(const WordSet *s, int32_t w):
    cdef Entry *e = ws_entry(s, w)
    return (s.arena + e.start)[:e.length].decode("utf-8", "surrogatepass")


cdef object ws_counts(const WordSet *s):
    """The words' counts by id (int64 array)."""
    out = np.empty(s.n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int32_t w
    for w in range(s.n):
        o[w] = ws_entry(s, w).count
    return out


# ----------------------------------------------------------------------------------------- blocks
cdef class BlockWords:
    """The tokens of one block of text (:func:`tokenize`): the block's distinct words in first-seen order
    with their counts, each token as the id of its word in that list, and where the lines end.

    Attributes
    ----------
    n_tokens : int
        Tokens of the block.
    newlines : int
        Line breaks in the block.
    """
    cdef WordSet words
    cdef int32_t *ids            # per token: its word in ``words``
    cdef readonly int64_t n_tokens
    cdef int64_t tok_cap
    cdef int64_t *breaks         # per line break: the tokens before it
    cdef readonly int64_t newlines
    cdef int64_t break_cap
    cdef int32_t *mapped         # per word of the block: its id in a WordTable, or -1 (set by the table)
    cdef int parts               # the parts open_parts listed the words by (0: none)
    cdef int32_t *by_part        # the words of part p: by_part[part_start[p]:part_start[p + 1]]
    cdef int32_t *part_start

    def __dealloc__(self):
        ws_free(&self.words)
        free(self.ids)
        free(self.breaks)
        free(self.mapped)
        free(self.by_part)
        free(self.part_start)

    def open_parts(self, int parts):
        """Make the block ready for :meth:`WordTable.add_part` of each of ``parts`` parts (on any threads,
        each part once): its words unmapped until their part adds them, and listed by part."""
        if not 1 <= parts <= 1 << 16:
            raise ValueError("%d parts" % parts)
        cdef int32_t n = self.words.n, w
        cdef int p
        free(self.mapped)
        free(self.by_part)
        free(self.part_start)
        self.parts = 0
        self.mapped = <int32_t *> malloc((n + 1) * sizeof(int32_t))
        self.by_part = <int32_t *> malloc((n + 1) * sizeof(int32_t))
        self.part_start = <int32_t *> calloc(parts + 1, sizeof(int32_t))
        if self.mapped == NULL or self.by_part == NULL or self.part_start == NULL:
            raise MemoryError()
        with nogil:
            for w in range(n):          # the words of each part, in their order (a counting sort)
                self.mapped[w] = part_of(ws_entry(&self.words, w).hash, parts)
                self.part_start[self.mapped[w] + 1] += 1
            for p in range(parts):
                self.part_start[p + 1] += self.part_start[p]
            for w in range(n):
                p = self.mapped[w]
                self.by_part[self.part_start[p]] = w
                self.part_start[p] += 1
            for p in range(parts, 0, -1):
                self.part_start[p] = self.part_start[p - 1]
            self.part_start[0] = 0
            for w in range(n):
                self.mapped[w] = -1
        self.parts = parts

    def words_and_counts(self):
        """``(words, counts)``: the block's distinct words (str, first-seen order) and their counts."""
        cdef int32_t w
        return [ws_word(&self.words, w) for w in range(self.words.n)], ws_counts(&self.words)

    cdef int split(self, const uint8_t *t, Py_ssize_t n) noexcept nogil:
        """Tokenize ``t[0:n]`` (valid UTF-8); -1 when out of memory."""
        # room for a distinct word every 24 bytes (English text has one every 20-25 in a block of 128 KiB),
        # so that a block's set is rarely rehashed as it fills
        if ws_init(&self.words, <int32_t>(n // 24 if n < (<Py_ssize_t>1 << 36) else (1 << 30))) != 0:
            return -1
        self.tok_cap = n // 4 + 16
        self.break_cap = n // 64 + 16
        self.ids = <int32_t *> malloc(self.tok_cap * sizeof(int32_t))
        self.breaks = <int64_t *> malloc(self.break_cap * sizeof(int64_t))
        if self.ids == NULL or self.breaks == NULL:
            return -1
        cdef Py_ssize_t pos = 0, begin
        cdef bint padded
        cdef uint64_t x, m
        cdef int k
        cdef uint8_t c
        cdef int32_t w
        cdef void *p
        while True:
            # the blanks before a word
            while pos < n:
                c = BYTE_CLASS[t[pos]]
                if c == WORD_BYTE:
                    break
                if c == BLANK:
                    pos += 1
                elif c == NEWLINE:
                    if self.newlines == self.break_cap and grow(<void **> &self.breaks, &self.break_cap,
                                                                 sizeof(int64_t)) != 0:
                        return -1
                    self.breaks[self.newlines] = self.n_tokens
                    self.newlines += 1
                    pos += 1
                else:
                    k = space_bytes(t, pos, n)
                    if k == 0:
                        break
                    pos += k
            if pos >= n:
                return 0
            # the word: up to the next blank
            begin = pos
            while pos < n:
                # 8 bytes at a time up to the first that may end the word: an ASCII byte up to the space,
                # or any byte past ASCII (the first byte flagged is exact: a borrow only goes up)
                while EMB_LITTLE_ENDIAN and pos + 8 <= n:
                    memcpy(&x, t + pos, 8)
                    m = ((x - <uint64_t>0x2121212121212121) | x) & <uint64_t>0x8080808080808080
                    if m != 0:
                        pos += emb_ctz64(m) >> 3
                        break
                    pos += 8
                if pos >= n:
                    break
                c = BYTE_CLASS[t[pos]]
                if c == WORD_BYTE or (c == MAYBE_BLANK and space_bytes(t, pos, n) == 0):
                    pos += 1
                else:
                    break
            if pos - begin > 0x7FFFFFFF:
                return -1
            padded = begin + ((pos - begin) & ~7) + 8 <= n
            w = ws_add(&self.words, <const char *> t + begin, <int32_t>(pos - begin),
                       bytes_hash(<const char *> t + begin, pos - begin, padded), 1, padded)
            if w < 0 or (self.n_tokens == self.tok_cap and grow(<void **> &self.ids, &self.tok_cap,
                                                            sizeof(int32_t)) != 0):
                return -1
            self.ids[self.n_tokens] = w
            self.n_tokens += 1


def tokenize(str text not None):
    """The :class:`BlockWords` of ``text``, split as ``text.split()`` splits it (the GIL is released)."""
    cdef Py_ssize_t n
    cdef const char *data = PyUnicode_AsUTF8AndSize(text, &n)
    cdef BlockWords block = BlockWords.__new__(BlockWords)
    cdef int status
    with nogil:
        status = block.split(<const uint8_t *> data, n)
    if status != 0:
        raise MemoryError("out of memory while splitting a block of %d characters into words" % len(text))
    return block


def _unpacked_table(bytes blob not None, lengths, counts):
    """The :class:`WordTable` of :meth:`WordTable.__reduce__`'s words (``blob``, cut by ``lengths``) and counts."""
    cdef const int32_t[::1] n = np.ascontiguousarray(lengths, dtype=np.int32)
    cdef const int64_t[::1] c = np.ascontiguousarray(counts, dtype=np.int64)
    if n.shape[0] != c.shape[0] or (n.shape[0] and (np.min(lengths) < 0 or int(np.sum(lengths, dtype=np.int64))
                                                    != len(blob))):
        raise ValueError("a packed word table's lengths do not cut its %d bytes" % len(blob))
    cdef WordTable out = WordTable.__new__(WordTable)
    cdef const char *p = blob
    cdef Py_ssize_t k
    cdef int64_t at = 0
    cdef int status = ws_reserve(&out.words, <int32_t>n.shape[0], len(blob))
    cdef int32_t before
    with nogil:
        for k in range(n.shape[0]):
            if status != 0:
                break
            before = out.words.n
            if ws_add(&out.words, p + at, n[k], word_hash(p + at, n[k]), c[k], False) < 0:
                status = -1
            elif out.words.n == before:
                status = -2
            at += n[k]
    if status == -2:
        raise ValueError("a packed word table holds a word twice")
    if status != 0:
        raise MemoryError()
    return out


# ----------------------------------------------------------------------------------------- the table
cdef object checked_ids(ids, Py_ssize_t n):
    """``ids`` as an ``int64`` array; IndexError naming the first one outside ``[0, n)``."""
    at = np.ascontiguousarray(ids, dtype=np.int64)
    bad = (at < 0) | (at >= n)
    if bad.any():
        raise IndexError("word id %d out of range [0, %d)" % (at[bad.argmax()], n))
    return at


cdef object permutation(order, Py_ssize_t n):
    """``order`` as an ``int64`` array; ValueError unless it is a permutation of ``0 .. n-1``."""
    ids = np.ascontiguousarray(order, dtype=np.int64)
    if ids.shape[0] != n or (n and not np.array_equal(np.bincount(ids, minlength=n), np.ones(n, np.int64))):
        raise ValueError("order must be a permutation of the %d word ids" % n)
    return ids


cdef class WordTable:
    """Distinct words of a corpus with their counts; ids in the order words were first added.

    Parameters
    ----------
    words : iterable of str, optional
        Words to start with (ids 0, 1, ...; count 0), e.g. a vocabulary to :meth:`look_up` in.
    """
    cdef WordSet words
    cdef int64_t *first         # per word added by add_part: where it was first seen (add_part's order, word)
    cdef int64_t first_cap      # words ``first`` holds
    cdef int32_t keyed          # the first words that have their place in ``first`` (all, or add_part is refused)

    def __cinit__(self):
        if ws_init(&self.words, 1 << 14) != 0:
            raise MemoryError()

    def __init__(self, words=()):
        cdef bytes b
        cdef int32_t w, n
        for word in words:
            b = word.encode("utf-8", "surrogatepass")
            if len(b) > 0x7FFFFFFF:
                raise ValueError("a word of %d bytes" % len(b))
            n = self.words.n
            w = ws_add(&self.words, b, <int32_t>len(b), word_hash(b, len(b)), 0, False)
            if w < 0:
                raise MemoryError()
            if self.words.n == n:
                raise ValueError("the word %r is given twice" % (word,))

    def __dealloc__(self):
        ws_free(&self.words)
        free(self.first)

    def __len__(self):
        return self.words.n

    def __getitem__(self, Py_ssize_t w):
        if not 0 <= w < self.words.n:
            raise IndexError("word id %d out of range [0, %d)" % (w, self.words.n))
        return ws_word(&self.words, <int32_t>w)

    def add(self, BlockWords block not None):
        """Add ``block``'s words in its first-seen order (a new word takes the next id) and their counts; the
        block's tokens map to these ids afterwards (for :meth:`ChunkBuilder.add`)."""
        cdef int status
        with nogil:
            status = self._merge(block, True)
        if status != 0:
            raise MemoryError("out of memory while counting words")

    def add_part(self, BlockWords block not None, int part, int parts, int64_t order):
        """Add the words of ``block`` that fall in ``part`` of ``parts`` (by their hash) as :meth:`add` adds a
        block's words, their ids mapped to ``id * parts + part``, and keep for a new word where it was first
        seen: ``order`` (its block's place, below ``2**31``) in the high 32 bits, its place among the block's
        words in the low ones (:meth:`first_seen`).

        Each part of a block goes to a table of its own, on any thread, after
        :meth:`BlockWords.open_parts`; each table takes the blocks in their order.  The GIL is released."""
        if not 0 <= part < parts or parts > 1 << 16:
            raise ValueError("part %d of %d" % (part, parts))
        if not 0 <= order < (<int64_t>1 << 31):
            raise ValueError("a block's order %d outside [0, 2**31)" % order)
        if block.parts != parts:
            raise ValueError("the block's words are not listed by %d parts (BlockWords.open_parts)" % parts)
        if self.keyed != self.words.n:
            raise ValueError("a table that add_part fills takes no words in another way")
        cdef int status
        with nogil:
            status = self._merge_part(block, part, parts, order)
        if status == -2:
            raise ValueError("a part of %d words: its ids spread over %d parts outgrow 32 bits"
                             % (self.words.n, parts))
        if status != 0:
            raise MemoryError("out of memory while counting words")

    cdef int _merge_part(self, BlockWords block, int part, int parts, int64_t order) noexcept nogil:
        """:meth:`add_part`'s merge; -1 when out of memory, -2 when an id would not fit."""
        cdef WordSet *local = &block.words
        cdef int32_t w, k, g, before
        cdef int32_t start = block.part_start[part], stop = block.part_start[part + 1]
        cdef Entry *e
        for k in range(start, stop):
            w = block.by_part[k]
            e = ws_entry(local, w)
            if k + PREFETCH_AHEAD < stop:
                # the cell a later word probes first starts loading now: the lookups are random reads
                emb_prefetch_line(&self.words.cell[ws_entry(local, block.by_part[k + PREFETCH_AHEAD]).hash
                                                   & <uint64_t>(self.words.n_cells - 1)])
            before = self.words.n
            g = ws_add(&self.words, local.arena + e.start, e.length, e.hash, e.count, True)
            if g < 0:
                return -1
            if self.words.n != before:
                if (<int64_t>g + 1) * parts > 0x7FFFFFFF:
                    return -2
                if g >= self.first_cap and grow_keys(&self.first, &self.first_cap) != 0:
                    return -1
                self.first[g] = (order << 32) | w
                self.keyed = g + 1
            block.mapped[w] = g * parts + part
        return 0

    def first_seen(self):
        """Where each word was first seen (``int64``, by id; see :meth:`add_part`), for a table filled by
        :meth:`add_part` alone."""
        if self.keyed != self.words.n:
            raise ValueError("the table's words were not all added by add_part")
        out = np.empty(self.words.n, dtype=np.int64)
        cdef int64_t[::1] o = out
        cdef int32_t w
        for w in range(self.words.n):
            o[w] = self.first[w]
        return out

    def look_up(self, BlockWords block not None):
        """Map ``block``'s tokens to the ids of their words here, -1 for words not here (nothing is added
        and no count changes; safe on several threads at once)."""
        cdef int status
        with nogil:
            status = self._merge(block, False)
        if status != 0:
            raise MemoryError()

    def absorb(self, WordTable other not None):
        """Add ``other``'s words in its order (a new word takes the next id) and their counts, as :meth:`add`
        adds a block's; returns each of ``other``'s words' id here (``int32``)."""
        out = np.empty(other.words.n + 1, dtype=np.int32)
        cdef int32_t[::1] o = out
        cdef int status
        with nogil:
            status = self._merge_words(&other.words, &o[0], True)
        if status != 0:
            raise MemoryError("out of memory while merging word counts")
        return out[:other.words.n]

    def reordered(self, order):
        """A new table of this one's words (with their counts) in ``order`` (a permutation of the ids)."""
        cdef WordSet *mine = &self.words
        cdef const int64_t[::1] ids = permutation(order, mine.n)
        cdef WordTable out = WordTable.__new__(WordTable)
        cdef int64_t k
        cdef Entry *e
        cdef int status = ws_reserve(&out.words, mine.n, mine.used)
        with nogil:
            for k in range(ids.shape[0]):
                if status != 0:
                    break
                e = ws_entry(mine, <int32_t>ids[k])
                if ws_add(&out.words, mine.arena + e.start, e.length, e.hash, e.count, True) < 0:
                    status = -1
        if status != 0:
            raise MemoryError()
        return out

    cdef tuple _parts(self):
        """``(bytes, lengths, counts)``: the words' bytes in id order (the arena holds them so), their lengths
        (``int32``) and counts (``int64``)."""
        cdef WordSet *s = &self.words
        lengths = np.empty(s.n, dtype=np.int32)
        cdef int32_t[::1] n = lengths
        cdef int32_t w
        cdef int64_t used = 0
        for w in range(s.n):
            n[w] = ws_entry(s, w).length
            if ws_entry(s, w).start != used:
                raise AssertionError("a word table's bytes are not in id order")
            used += n[w]
        return s.arena[:s.used], lengths, ws_counts(s)

    def __reduce__(self):
        # a few memory copies where a list of str pickles word by word; unpickled, the words are hashed again
        return _unpacked_table, self._parts()

    def packed(self, order=None):
        """The words and counts as :class:`PackedWords` (no hash table: what a reader of the words and counts
        alone needs, and cheap to pickle and unpickle), in id order or in ``order`` (a permutation of the ids:
        what :meth:`reordered` would number them, without hashing them again)."""
        if order is None:
            return PackedWords(*self._parts())
        cdef WordSet *s = &self.words
        cdef const int64_t[::1] ids = permutation(order, s.n)
        blob = bytearray(s.used)
        lengths = np.empty(s.n, dtype=np.int32)
        counts = np.empty(s.n, dtype=np.int64)
        cdef char *out = blob
        cdef int32_t[::1] n = lengths
        cdef int64_t[::1] c = counts
        cdef int64_t k, at = 0
        cdef Entry *e
        with nogil:
            for k in range(s.n):
                e = ws_entry(s, <int32_t>ids[k])
                memcpy(out + at, s.arena + e.start, e.length)
                at += e.length
                n[k] = e.length
                c[k] = e.count
        return PackedWords(bytes(blob), lengths, counts)

    cdef int _merge(self, BlockWords block, bint adding) noexcept nogil:
        free(block.mapped)
        block.mapped = <int32_t *> malloc((block.words.n + 1) * sizeof(int32_t))
        if block.mapped == NULL:
            return -1
        return self._merge_words(&block.words, block.mapped, adding)

    cdef int _merge_words(self, WordSet *local, int32_t *mapped, bint adding) noexcept nogil:
        """Map the words of ``local`` (in its order) to their ids here in ``mapped``, adding the new ones and
        the counts with ``adding`` (else -1 for a word not here); -1 when out of memory."""
        cdef int32_t w, g
        cdef int64_t i
        cdef Entry *e
        if adding and ws_reserve(&self.words, local.n, local.used) != 0:
            return -1
        cdef int64_t mask = self.words.n_cells - 1
        for w in range(local.n):
            e = ws_entry(local, w)
            if w + PREFETCH_AHEAD < local.n:
                # the cell a later word probes first starts loading now: the lookups are random reads
                emb_prefetch_line(&self.words.cell[ws_entry(local, w + PREFETCH_AHEAD).hash & mask])
            if adding:
                g = ws_add(&self.words, local.arena + e.start, e.length, e.hash, e.count, True)
                if g < 0:
                    return -1
            else:
                i = ws_find(&self.words, local.arena + e.start, e.length, e.hash, True)
                g = self.words.cell[i].word1 - 1
            mapped[w] = g
        return 0

    def prune(self, int64_t min_count, keep=None):
        """Drop the words seen fewer than ``min_count`` times, unless ``keep[id]`` (a bool array) is true;
        the survivors keep their order and get ids 0, 1, ... again."""
        cdef const uint8_t[::1] kept
        cdef bint protect = keep is not None
        if protect:
            kept = np.ascontiguousarray(keep, dtype=np.bool_).view(np.uint8)
            if kept.shape[0] != self.words.n:
                raise ValueError("keep has %d entries for %d words" % (kept.shape[0], self.words.n))
        free(self.first)            # where the words were first seen is not kept through a renumbering
        self.first, self.first_cap, self.keyed = NULL, 0, 0
        cdef WordSet *s = &self.words
        cdef int32_t w, m = 0
        cdef int64_t used = 0
        cdef Entry *e
        cdef int status
        with nogil:
            for w in range(s.n):
                e = ws_entry(s, w)
                if e.count >= min_count or (protect and kept[w]):
                    memmove(s.arena + used, s.arena + e.start, e.length)
                    e.start = used
                    used += e.length
                    s.entry[m] = e[0]
                    m += 1
            s.n = m
            s.used = used
            status = ws_rehash(s, s.n_cells)    # the cells of the survivors alone: probe chains are rebuilt
        if status != 0:
            raise MemoryError()

    def counts(self):
        """The words' counts (int64, by id)."""
        return ws_counts(&self.words)

    def ids_in(self, WordTable other not None):
        """``int32`` array: each word's id in ``other``, -1 for a word not there (in C, without the GIL: a
        scan's table of every distinct word mapped to a vocabulary)."""
        out = np.empty(self.words.n, dtype=np.int32)
        cdef int32_t[::1] o = out
        cdef int32_t w
        cdef int64_t i
        cdef Entry *e
        cdef WordSet *mine = &self.words
        cdef WordSet *theirs = &other.words
        with nogil:
            for w in range(mine.n):
                e = ws_entry(mine, w)
                i = ws_find(theirs, mine.arena + e.start, e.length, e.hash, True)
                o[w] = theirs.cell[i].word1 - 1
        return out

    def words_list(self, ids=None):
        """The words (str) by id, or those of ``ids``."""
        cdef int32_t w
        if ids is None:
            return [ws_word(&self.words, w) for w in range(self.words.n)]
        cdef const int64_t[::1] at = checked_ids(ids, self.words.n)
        cdef Py_ssize_t k
        return [ws_word(&self.words, <int32_t>at[k]) for k in range(at.shape[0])]


cdef class PackedWords:
    """Words (``str`` by id) and their counts kept as their UTF-8 bytes end to end: what
    :meth:`WordTable.packed` gives, for a reader of the words and counts that looks none up (a vocabulary's
    choice), and what pickles and unpickles as a few arrays.

    Parameters
    ----------
    blob : bytes
        The words' bytes, in id order.
    lengths : int32 array
        Each word's bytes.
    counts : int64 array
        Each word's count.
    """
    cdef bytes blob
    cdef int64_t[::1] starts        # n + 1 offsets into ``blob``
    cdef object _counts

    def __init__(self, bytes blob not None, lengths, counts):
        lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        counts = np.ascontiguousarray(counts, dtype=np.int64)
        if lengths.ndim != 1 or counts.shape != lengths.shape or (lengths.size and lengths.min() < 0):
            raise ValueError("packed words need one non-negative length and one count a word")
        starts = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        cdef int64_t total = starts[lengths.size]
        if total != len(blob):
            raise ValueError("the packed words' lengths cut %d bytes, not the %d given" % (total, len(blob)))
        self.blob, self.starts, self._counts = blob, starts, counts

    def __reduce__(self):
        return PackedWords, (self.blob, np.diff(self.starts).astype(np.int32), self._counts)

    def __len__(self):
        return self.starts.shape[0] - 1

    cdef str _word(self, Py_ssize_t w):
        cdef const char *p = self.blob
        return (p + self.starts[w])[:self.starts[w + 1] - self.starts[w]].decode("utf-8", "surrogatepass")

    def __getitem__(self, Py_ssize_t w):
        if not 0 <= w < len(self):
            raise IndexError("word id %d out of range [0, %d)" % (w, len(self)))
        return self._word(w)

    def words_list(self, ids=None):
        """The words (str) by id, or those of ``ids``."""
        cdef Py_ssize_t k, n = len(self)
        if ids is None:
            return [self._word(k) for k in range(n)]
        cdef const int64_t[::1] at = checked_ids(ids, n)
        return [self._word(at[k]) for k in range(at.shape[0])]

    def counts(self):
        """The words' counts (int64, by id)."""
        return self._counts


# ----------------------------------------------------------------------------------------- chunks
cdef class ChunkBuilder:
    """Sentences and chunks from blocks of tokens taken in corpus order (:mod:`embkit.text.corpus` and
    :func:`embkit.text.vocab.encode_chunks`'s rules).

    Each line is a sentence, cut into pieces of ``max_sentence_length`` tokens; a token mapped to -1 is
    dropped (it still counts as a raw word and in the piece's length), and a sentence left empty has no
    end.  A chunk is handed out after the sentence that brings its kept tokens to ``chunk_tokens`` or more.

    Parameters
    ----------
    chunk_tokens, max_sentence_length : int
    """
    cdef int32_t *buf
    cdef int64_t length
    cdef int64_t cap
    cdef int32_t *ends
    cdef int64_t n_ends
    cdef int64_t ends_cap
    cdef int64_t raw
    cdef int64_t line_tokens     # raw tokens of the open line so far
    cdef int64_t chunk_tokens
    cdef int64_t limit
    cdef readonly int64_t sentences

    def __cinit__(self, int64_t chunk_tokens, int64_t max_sentence_length):
        if chunk_tokens < 1 or max_sentence_length < 1:
            raise ValueError("chunk_tokens and max_sentence_length must be >= 1")
        self.chunk_tokens = chunk_tokens
        self.limit = max_sentence_length
        self.cap = min(chunk_tokens, 1 << 24) + 1024
        self.ends_cap = 1024
        self.buf = <int32_t *> malloc(self.cap * sizeof(int32_t))
        self.ends = <int32_t *> malloc(self.ends_cap * sizeof(int32_t))
        if self.buf == NULL or self.ends == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.buf)
        free(self.ends)

    def add(self, BlockWords block not None, bint complete):
        """Append ``block``'s tokens (mapped by :meth:`WordTable.add` or :meth:`WordTable.look_up`); its last
        line ends with it when ``complete``, else it goes on in the next block.  Returns the chunks finished,
        as a list of ``(tokens, ends, raw_words)``."""
        if block.mapped == NULL and block.n_tokens:
            raise ValueError("the block's words are not mapped: add it to a WordTable first")
        done = []
        cdef int64_t ti = 0, b = 0, seg_end
        cdef int status = 0
        # the segments between line breaks; the last one ends its line only when the block is complete
        while b <= block.newlines:
            seg_end = block.breaks[b] if b < block.newlines else block.n_tokens
            with nogil:
                status = self._append(block, &ti, seg_end)
            if status < 0:
                raise MemoryError("out of memory while cutting the corpus into chunks")
            if status == 1:                 # a piece filled the chunk: hand it out, go on with the segment
                done.append(self._take())
                continue
            if b < block.newlines or complete:
                self.line_tokens = 0
                status = self._end_sentence()
                if status < 0:
                    raise MemoryError()
                if status == 1:
                    done.append(self._take())
            b += 1
        return done

    cdef int _append(self, BlockWords block, int64_t *ti, int64_t seg_end) noexcept nogil:
        """Append the block's tokens up to ``seg_end`` (from ``ti[0]``, advanced), ending a sentence at every
        ``max_sentence_length`` tokens of the line; 1 when such an end fills the chunk (then ``ti[0]`` is
        where to go on), 0 at ``seg_end``, -1 when out of memory."""
        cdef int64_t take, j, i = ti[0]
        cdef int32_t g
        cdef int status
        while i < seg_end:
            take = self.limit - self.line_tokens % self.limit
            if seg_end - i < take:
                take = seg_end - i
            if self.length + take > self.cap and self._grow(self.length + take) != 0:
                return -1
            for j in range(i, i + take):
                g = block.mapped[block.ids[j]]
                if g >= 0:
                    self.buf[self.length] = g
                    self.length += 1
            self.raw += take
            self.line_tokens += take
            i += take
            if self.line_tokens % self.limit == 0:
                status = self._end_sentence()
                if status != 0:
                    ti[0] = i
                    return status
        ti[0] = i
        return 0

    cdef int _grow(self, int64_t need) noexcept nogil:
        cdef int64_t cap = self.cap
        while cap < need:
            cap *= 2
        cdef void *p = realloc(self.buf, cap * sizeof(int32_t))
        if p == NULL:
            return -1
        self.buf = <int32_t *> p
        self.cap = cap
        return 0

    cdef int _end_sentence(self) noexcept nogil:
        """End the open sentence (if it kept a token): 1 when the chunk is then full, 0 if not, -1 when out of
        memory."""
        cdef int64_t last = self.ends[self.n_ends - 1] if self.n_ends else 0
        cdef void *p
        if self.length > last:
            if self.n_ends == self.ends_cap:
                p = realloc(self.ends, 2 * self.ends_cap * sizeof(int32_t))
                if p == NULL:
                    return -1
                self.ends = <int32_t *> p
                self.ends_cap *= 2
            self.ends[self.n_ends] = <int32_t>self.length
            self.n_ends += 1
            self.sentences += 1
        return 1 if self.length >= self.chunk_tokens else 0

    cdef tuple _take(self):
        tokens = np.array(<int32_t[:self.length]> self.buf if self.length else [], dtype=np.int32)
        ends = np.array(<int32_t[:self.n_ends]> self.ends if self.n_ends else [], dtype=np.int32)
        chunk = (tokens, ends, self.raw)
        self.length = 0
        self.n_ends = 0
        self.raw = 0
        return chunk

    def finish(self):
        """The last chunk, or None when nothing is left (a line still open ends here)."""
        self.line_tokens = 0
        if self._end_sentence() < 0:
            raise MemoryError()
        if self.length == 0 and self.raw == 0:
            return None
        return self._take()


def remap_chunk(const int32_t[::1] tokens not None, const int32_t[::1] ends not None,
                const int32_t[::1] remap not None):
    """``(tokens, ends)`` with every id ``i`` replaced by ``remap[i]``, the ids mapped to -1 dropped and the
    sentences left empty removed (the GIL is released; views of arrays of the input's sizes: what is dropped
    is rarely worth a copy)."""
    cdef Py_ssize_t n = tokens.shape[0], m = ends.shape[0], i, s, start = 0, kept = 0, n_ends = 0
    out = np.empty(n, dtype=np.int32)
    out_ends = np.empty(m, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef int32_t[::1] oe = out_ends
    cdef int32_t g, size = remap.shape[0]
    cdef bint bad = False
    with nogil:
        for s in range(m):
            for i in range(start, ends[s]):
                if tokens[i] < 0 or tokens[i] >= size:
                    bad = True
                    break
                g = remap[tokens[i]]
                if g >= 0:
                    o[kept] = g
                    kept += 1
            if bad:
                break
            start = ends[s]
            if kept > (oe[n_ends - 1] if n_ends else 0):
                oe[n_ends] = <int32_t>kept
                n_ends += 1
    if bad:
        raise IndexError("a token id outside the remap table of %d entries" % size)
    return out[:kept], out_ends[:n_ends]
