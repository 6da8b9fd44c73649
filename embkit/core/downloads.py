"""Verified downloads into the embkit cache: text corpora and rating datasets use the same machinery.

Files are downloaded once into the cache folder (``$EMBKIT_CACHE``, default ``~/.cache/embkit``),
verified, unzipped there, and reused afterwards without touching the network.

Every download goes to a temporary file in the cache folder that is renamed into place only once it is
complete and verified, and extraction works the same way, so an interrupted run never leaves a truncated
file behind under the final name.

A file registered without a SHA-256 is verified by size only, and the digest of the first download is
recorded next to it (``<file>.sha256``, announced by a log line) and enforced on every later use ("trust
on first use").

Set ``EMBKIT_OFFLINE=1`` to forbid any download: a file missing from the cache then fails at once with
instructions to fetch it by hand.
"""
import hashlib
import logging
import os
import shutil
import zipfile
from dataclasses import dataclass
from typing import Optional

from embkit.core.atomic import atomic_path

logger = logging.getLogger(__name__)

__all__ = ["RemoteCorpus", "DownloadError", "ChecksumError", "cache_dir", "fetch", "sha256_file"]

#: Seconds to wait for the server before giving up.
TIMEOUT = 30
_BLOCK = 1 << 20


@dataclass(frozen=True)
class RemoteCorpus:
    """A corpus file to download, verify and (optionally) unzip.

    Attributes
    ----------
    name : str
        Registry name (``--corpus NAME``).
    url : str
        Where to download it from.
    filename : str
        Name of the downloaded file in the cache.
    size : int or None
        Expected size of the download in bytes.
    sha256 : str or None
        Expected SHA-256 of the download; None records the digest of the first download instead.
    member : str or None
        Member of the zip archive to extract; None uses the download as is.
    member_size, member_sha256 : int or str or None
        Expected size and SHA-256 of the extracted member.
    description : str
        One line for help texts.
    manual_hint : str
        How to use a file fetched by hand, ending the message of a failed download.
    """

    name: str
    url: str
    filename: str
    size: Optional[int] = None
    sha256: Optional[str] = None
    member: Optional[str] = None
    member_size: Optional[int] = None
    member_sha256: Optional[str] = None
    description: str = ""
    manual_hint: str = "CLI: --corpus PATH"


class DownloadError(OSError):
    """A corpus could not be downloaded (offline, server error, ...); the message says what to do."""


class ChecksumError(ValueError):
    """A downloaded or cached file does not match its expected size or SHA-256."""


def cache_dir():
    """Folder of downloaded corpora: ``$EMBKIT_CACHE`` or ``~/.cache/embkit`` (not created here)."""
    return os.path.abspath(os.path.expanduser(os.environ.get("EMBKIT_CACHE") or "~/.cache/embkit"))


def sha256_file(path):
    """SHA-256 hex digest of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------- checks
def _check_file(path, size, sha256, what):
    """Raise :class:`ChecksumError` unless ``path`` has the given size and digest (None: not checked)."""
    actual = os.path.getsize(path)
    if size is not None and actual != size:
        raise ChecksumError("%s %s has %d bytes, expected %d (truncated or wrong file): delete it and retry"
                            % (what, path, actual, size))
    if sha256 is not None:
        digest = sha256_file(path)
        if digest != sha256.lower():
            raise ChecksumError("%s %s has SHA-256 %s, expected %s: delete it and retry"
                                % (what, path, digest, sha256))


def _recorded_digest_path(path):
    return path + ".sha256"


def _verify_download(spec, path):
    """Check a downloaded file against its pinned digest, or the digest recorded at its first use."""
    sha256 = spec.sha256
    record = _recorded_digest_path(path)
    if sha256 is None and os.path.exists(record):
        with open(record) as fh:
            sha256 = fh.read().split()[0]
    _check_file(path, spec.size, sha256, spec.name)


def _record_digest(spec, path, how):
    """Trust on first use: store the SHA-256 of a download that has no pinned digest (announced in the log)."""
    record = _recorded_digest_path(path)
    if spec.sha256 is not None or os.path.exists(record):
        return
    digest = sha256_file(path)
    with atomic_path(record) as tmp, open(tmp, "w") as fh:
        fh.write("%s  %s\n" % (digest, os.path.basename(path)))
    logger.warning("%s: no pinned checksum; recorded SHA-256 %s of the %s file in %s (enforced from now on)",
                   spec.name, digest, how, record)


# ---------------------------------------------------------------------------------------------- download
def _urlopen(url, timeout):
    """Open ``url`` (a seam for tests)."""
    import urllib.request
    request = urllib.request.Request(url, headers={"User-Agent": "embkit"})
    return urllib.request.urlopen(request, timeout=timeout)


def _manual_help(spec):
    where = os.path.join(cache_dir(), spec.filename)
    text = "download %s by hand and put it at %s" % (spec.url, where)
    if spec.member:
        text += " (it is verified and unzipped on the next run), or unzip it anywhere"
    else:
        text += ", or save it anywhere"
    return text + " and pass that path instead (%s)" % spec.manual_hint


def _network_errors():
    import http.client
    import urllib.error
    return (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError, OSError)


def _offline_error(spec, exc):
    if getattr(exc, "code", None) is not None:  # an HTTP error status: the server is reachable
        return DownloadError("cannot download %s from %s (HTTP %s %s): %s"
                             % (spec.name, spec.url, exc.code, getattr(exc, "reason", ""), _manual_help(spec)))
    reason = getattr(exc, "reason", None) or exc
    return DownloadError("cannot download %s from %s (%s); are you offline? %s"
                         % (spec.name, spec.url, reason, _manual_help(spec)))


def _blocks(spec, response):
    """Blocks of the response body; network errors become :class:`DownloadError`."""
    errors = _network_errors()
    while True:
        try:
            block = response.read(_BLOCK)
        except errors as exc:
            raise _offline_error(spec, exc) from exc
        if not block:
            return
        yield block


def _download(spec, path, progress):
    """Download ``spec.url`` to ``path`` through a temporary file in the same folder."""
    if os.environ.get("EMBKIT_OFFLINE", "").strip() not in ("", "0"):
        raise DownloadError("%s is not in the cache %s and downloads are disabled (EMBKIT_OFFLINE is set): %s"
                            % (spec.name, cache_dir(), _manual_help(spec)))
    logger.info("downloading %s from %s to %s", spec.name, spec.url, path)
    try:
        response = _urlopen(spec.url, TIMEOUT)
    except _network_errors() as exc:
        raise _offline_error(spec, exc) from exc
    with response:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _save_response(spec, response, path, progress)
    _record_digest(spec, path, "downloaded")


def _save_response(spec, response, path, progress):
    """Write the body of ``response`` to ``path`` atomically, with a progress bar, and verify it."""
    from tqdm.auto import tqdm

    with atomic_path(path) as tmp:     # a killed download leaves a temporary file that the next one removes
        with open(tmp, "wb") as out:
            length = response.headers.get("Content-Length") if getattr(response, "headers", None) else None
            with tqdm(total=int(length) if length else spec.size, desc=spec.filename, unit="B",
                      unit_scale=True, unit_divisor=1024, disable=not progress) as bar:
                for block in _blocks(spec, response):
                    out.write(block)
                    bar.update(len(block))
        _verify_download(spec, tmp)


def _extract(spec, archive, target):
    """Unzip ``spec.member`` of ``archive`` to ``target`` atomically and verify it."""
    logger.info("unzipping %s to %s", spec.member, target)
    os.makedirs(os.path.dirname(target), exist_ok=True)  # a member may sit in a folder of the archive
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as out, zipfile.ZipFile(archive) as zf:
            try:
                member = zf.open(spec.member)
            except KeyError:
                raise ChecksumError("%s has no member %r (members: %s)"
                                    % (archive, spec.member, ", ".join(zf.namelist()))) from None
            with member:
                shutil.copyfileobj(member, out, _BLOCK)
        _check_file(tmp, spec.member_size, spec.member_sha256, "extracted " + spec.member)
    return target


def fetch(name_or_spec, progress=True):
    """Local path of a remote file, downloading and unzipping it into the cache on first use.

    Parameters
    ----------
    name_or_spec : RemoteCorpus
        What to fetch (e.g. an entry of :data:`embkit.text.corpora.CORPORA`).
    progress : bool
        Show a progress bar while downloading.

    Returns
    -------
    str
        Path of the (extracted) corpus file in :func:`cache_dir`.

    Raises
    ------
    DownloadError
        The file is not cached and cannot be downloaded; the message says how to get it by hand.
    ChecksumError
        The download (or a cached file) does not match its expected size or SHA-256.
    """
    spec = name_or_spec
    root = cache_dir()
    archive = os.path.join(root, spec.filename)
    target = os.path.join(root, spec.member) if spec.member else archive
    if spec.member and os.path.exists(target):
        _check_file(target, spec.member_size, spec.member_sha256, "cached " + spec.name)
        logger.info("%s: using cached %s", spec.name, target)
        return target
    if os.path.exists(archive):
        _verify_download(spec, archive)
        _record_digest(spec, archive, "cached")
        logger.info("%s: using cached %s", spec.name, archive)
    else:
        _download(spec, archive, progress)
    if spec.member:
        _extract(spec, archive, target)
    return target
