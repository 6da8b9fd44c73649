"""Opening a local, compressed or remote file for binary reading (the readers of every domain)."""

__all__ = ["COMPRESSED_SUFFIXES", "open_binary"]

#: Name endings of the compressed files smart-open decompresses on the fly.
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


def open_binary(path):
    """Open a local, compressed (.gz, .bz2, ...) or remote file for binary reading.

    Plain local files bypass smart-open, which is only needed for decompression and URLs.
    """
    path = str(path)
    if "://" not in path and not path.endswith(COMPRESSED_SUFFIXES):
        return open(path, "rb")
    from smart_open import open as sopen
    return sopen(path, "rb")
