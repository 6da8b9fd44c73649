"""Blocks of whole lines from a binary file: the unit the vectorised parsers work on.

A line longer than a block is gathered in pieces and joined once, so reading costs time linear in the
file size whatever its line lengths (a file without any line end is read once, not once per block).
"""

__all__ = ["whole_line_blocks"]


def whole_line_blocks(fh, block_bytes, head=b""):
    """Yield bytes objects of whole lines of the binary file ``fh``, each ending with ``b"\\n"``.

    Parameters
    ----------
    fh : binary file
        Read ``block_bytes`` at a time.
    block_bytes : int
    head : bytes
        Already-read start of the file, put in front of the first block.

    A last line without a line end gets one.  Blocks hold about ``block_bytes`` (more when one line is
    longer).
    """
    pending = [head] if head else []   # pieces of a line not complete yet
    while True:
        data = fh.read(block_bytes)
        if not data:
            break
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            pending.append(data)
            continue
        if pending:
            pending.append(data[:cut])
            block = b"".join(pending)
        else:
            block = data[:cut] if cut < len(data) else data
        pending = [data[cut:]] if cut < len(data) else []
        yield block
    tail = b"".join(pending)
    if tail:
        yield tail if tail.endswith(b"\n") else tail + b"\n"
