"""Resolve a dataset's files: local paths, mirrors and HTTP downloads with retries, checksums and provenance."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import logging
import os
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from pathlib import Path

from glfs_workflow.errors import DataError

from .files import _atomic_path

log = logging.getLogger(__name__)


class FetchError(RuntimeError):
    """A file could not be resolved, downloaded or verified."""


def is_url(s: str) -> bool:
    """True for http://, https:// and file:// locations."""
    return urllib.parse.urlparse(str(s)).scheme in ("http", "https", "file")


def sha256_file(path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


_RETRY_HTTP = {408, 425, 429, 500, 502, 503, 504}

_GB = 2**30

#: The workflow's defaults (workflow/schemas/config.schema.yaml, section fetch), repeated for
#: callers of :func:`fetch_dataset_files` that give no fetch config.
DEFAULT_MAX_DOWNLOAD_GB = 10.0
DEFAULT_MAX_EXPANDED_GB = 10.0
DEFAULT_MAX_TIME = 7200.0


def download(
    url: str,
    dest,
    *,
    sha256: str | None = None,
    retries: int = 4,
    timeout: float = 60.0,
    backoff: float = 2.0,
    progress_every: float = 5.0,
    max_bytes: int | None = None,
    max_time: float | None = None,
) -> dict:
    """Download ``url`` (http, https or file) to ``dest`` atomically.

    The body is streamed into a temporary file in ``dest``'s directory, its
    length checked against Content-Length, its sha256 checked against
    ``sha256`` when given, then fsynced and renamed onto ``dest``.  Network
    errors, timeouts, short bodies and HTTP 408/429/5xx are retried
    ``retries`` times with exponential backoff (``backoff``, ``2*backoff``,
    ...); other HTTP errors (e.g. 404) and a checksum mismatch fail at once.
    On failure nothing is left at ``dest`` (an existing ``dest`` is untouched)
    and :class:`FetchError` names the URL.

    ``max_bytes`` caps the body (a Content-Length above it is refused before
    the body is read; a body without one is stopped when it passes the cap);
    ``max_time`` (seconds) caps the whole download, retries and their waits
    included.  Both are final (not retried) and name the URL and the limit.

    Returns a dict with ``url``, ``path``, ``sha256``, ``size``, ``attempts``
    and ``time``.
    """
    dest = Path(dest)
    if urllib.parse.urlparse(url).scheme == "file":  # a FIFO or device would block the read past every limit
        kind = not_regular(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
        if kind:
            msg = f"download of {url} refused: it is {kind}, not a regular file (a file:// URL must name one)"
            raise FetchError(msg)
    last = None
    deadline = None if max_time is None else time.monotonic() + float(max_time)
    received = [0]  # bytes of the current attempt, for the time-limit message
    for attempt in range(retries + 1):
        if deadline is not None and time.monotonic() >= deadline:
            raise FetchError(_time_up(url, max_time, received[0], last))
        if attempt:
            wait = backoff * 2 ** (attempt - 1)
            if deadline is not None and time.monotonic() + wait >= deadline:
                raise FetchError(_time_up(url, max_time, received[0], last))
            log.warning("retrying %s in %.2f s (attempt %d of %d) after: %s", url, wait, attempt + 1, retries + 1, last)
            time.sleep(wait)
        # a read never waits past the deadline by more than a moment
        t_read = timeout if deadline is None else max(0.05, min(timeout, deadline - time.monotonic()))
        received[0] = 0
        try:
            with _atomic_path(dest) as tmp:
                digest, size = _stream(
                    url,
                    tmp,
                    timeout=t_read,
                    progress_every=progress_every,
                    max_bytes=max_bytes,
                    deadline=deadline,
                    max_time=max_time,
                    received=received,
                )
                if sha256 is not None and digest != sha256.lower():
                    msg = f"checksum mismatch for {url}: expected sha256 {sha256.lower()}, got {digest} ({size} bytes); the file was not kept"
                    raise _Fatal(msg)
            log.info("downloaded %s -> %s (%d bytes, sha256 %s)", url, dest, size, digest)
            return {
                "url": url,
                "path": str(dest),
                "sha256": digest,
                "size": size,
                "attempts": attempt + 1,
                "time": _now(),
            }
        except _Fatal as exc:
            raise FetchError(str(exc)) from None
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code} {exc.reason}"
            if exc.code not in _RETRY_HTTP:
                msg = f"download of {url} failed: HTTP {exc.code} {exc.reason} (not retried)"
                raise FetchError(msg) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError, _Short) as exc:
            reason = getattr(exc, "reason", None) or exc
            last = f"{type(exc).__name__}: {reason}"
            if isinstance(exc, urllib.error.URLError) and urllib.parse.urlparse(url).scheme == "file":
                msg = f"download of {url} failed: {reason}"
                raise FetchError(msg) from None
    msg = f"download of {url} failed after {retries + 1} attempts; last error: {last}"
    raise FetchError(msg)


class _Fatal(Exception):
    pass


class _Short(Exception):
    pass


def _size_limit(max_bytes: int) -> str:
    return f"the size limit of {max_bytes} bytes (fetch.max_download_gb = {max_bytes / _GB:.3g})"


def _time_up(url: str, max_time: float, received: int, last) -> str:
    tail = f"; last error: {last}" if last else ""
    return (
        f"download of {url} stopped: not complete after {max_time:g} s (fetch.max_time), {received} bytes "
        f"received; the partial file was removed (not retried){tail}. On a slow connection raise fetch.max_time"
    )


def _stream(
    url: str,
    tmp: Path,
    *,
    timeout: float,
    progress_every: float,
    max_bytes: int | None = None,
    deadline: float | None = None,
    max_time: float | None = None,
    received=None,
):
    h = hashlib.sha256()
    size = 0
    req = urllib.request.Request(url, headers={"User-Agent": "glfs-workflow/0.1"})
    with urllib.request.urlopen(req, timeout=timeout) as resp, open(tmp, "wb") as out:
        length = resp.headers.get("Content-Length") if hasattr(resp, "headers") else None
        length = int(length) if length and str(length).isdigit() else None
        if max_bytes is not None and length is not None and length > max_bytes:
            msg = (
                f"download of {url} refused: Content-Length is {length} bytes, above {_size_limit(max_bytes)}; "
                "nothing was written (not retried). If the file really is this large, raise fetch.max_download_gb"
            )
            raise _Fatal(msg)
        # read1: returns what has arrived, so the limits are checked while a slow body trickles in
        read = getattr(resp, "read1", resp.read)
        t_last = time.monotonic()
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                raise _Fatal(_time_up(url, max_time, size, None))
            try:
                block = read(1 << 16)
            except http.client.IncompleteRead as exc:
                msg = f"body cut short: {len(exc.partial)} more bytes then end of stream"
                raise _Short(msg) from None
            except TimeoutError:
                msg = f"read timed out after {timeout} s with {size} bytes received"
                raise TimeoutError(msg) from None
            if not block:
                break
            if max_bytes is not None and size + len(block) > max_bytes:
                msg = (
                    f"download of {url} stopped: more than {max_bytes} bytes received, {_size_limit(max_bytes)}; "
                    "the partial file was removed (not retried). If the file really is this large, raise fetch.max_download_gb"
                )
                raise _Fatal(msg)
            out.write(block)
            h.update(block)
            size += len(block)
            if received is not None:
                received[0] = size
            if time.monotonic() - t_last >= progress_every:
                t_last = time.monotonic()
                total = f" of {length}" if length else ""
                log.info("  %s: %d%s bytes", url, size, total)
        if length is not None and size != length:
            msg = f"body cut short: got {size} of {length} bytes (Content-Length)"
            raise _Short(msg)
    return h.hexdigest(), size


def _spec(spec) -> dict:
    """Normalise a config file spec (string or dict) to a dict."""
    if isinstance(spec, str):
        return {"url": spec, "sha256": None, "mirror": None, "filename": None}
    out = {"url": None, "sha256": None, "mirror": None, "filename": None}
    out.update(spec)
    return out


def plain_filename_problem(name) -> str | None:
    """Why ``name`` is not a plain file name (None when it is).

    A file spec's ``filename`` becomes ``<download_dir>/<dataset>/<filename>``,
    so it must not hold a directory part, be absolute, be ``.``/``..`` or
    contain control characters: otherwise a download could be written outside
    the download directory.
    """
    name = str(name)
    if name in ("", ".", ".."):
        return f"{name!r} is not a file name"
    if "/" in name or "\\" in name or Path(name).is_absolute():
        return f"{name!r} has a directory part"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return f"{name!r} contains control characters"
    return None


def check_expanded_size(path, max_bytes: int, what: str = "") -> int | None:
    """Expanded size of a gzip file (None for a file that is not gzip); FetchError above ``max_bytes``.

    The file is decompressed in a stream (1 MB at a time, nothing kept) and
    stopped as soon as it passes ``max_bytes``, so a small file that expands
    without limit is refused here, before a reader tries to hold it in
    memory.  A corrupt or truncated gzip is left to the reader, whose error
    names it.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return None
    size = 0
    try:
        with gzip.open(path, "rb") as fh:
            while True:
                block = fh.read(1 << 20)
                if not block:
                    return size
                size += len(block)
                if size > max_bytes:
                    break
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError):
        return None
    prefix = f"{what}: " if what else ""
    msg = (
        f"{prefix}{path} is gzip-compressed and expands to more than {max_bytes} bytes "
        f"(fetch.max_expanded_gb = {max_bytes / _GB:.3g}); stopped there ({path.stat().st_size} bytes compressed). "
        "If it really is this large, raise fetch.max_expanded_gb (a text matrix takes several times its size "
        "in memory; store large matrices as .h5ad)"
    )
    raise FetchError(msg)


def not_regular(path) -> str | None:
    """What ``path`` is when it exists and is not a regular file ("a FIFO (named pipe)", "a directory", ...), else
    None.  ``os.stat`` never opens it: opening a FIFO blocks until a writer comes, past ``fetch.timeout`` and
    ``fetch.max_time``."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return None if stat.S_ISREG(mode) else next((what for test, what in kinds if test(mode)), "not a regular file")


def _verify_local(path: Path, expected: str | None, what: str) -> str:
    if not path.exists():
        msg = f"{what}: file {path} does not exist"
        raise FetchError(msg)
    kind = not_regular(path)
    if kind:
        msg = f"{what}: file {path} is not a readable file: it is {kind}, not a regular file; name the file itself"
        raise FetchError(msg)
    if not os.access(path, os.R_OK):
        msg = f"{what}: file {path} is not a readable file"
        raise FetchError(msg)
    digest = sha256_file(path)
    if expected is not None and digest != expected.lower():
        msg = f"{what}: checksum mismatch for {path}: expected sha256 {expected.lower()}, got {digest}"
        raise FetchError(msg)
    return digest


def resolve_file(
    spec,
    *,
    dataset: str,
    role: str,
    mirror_dir: str | None = None,
    download_dir: str = "results/downloads",
    retries: int = 4,
    timeout: float = 60.0,
    backoff: float = 2.0,
    max_download_bytes: int | None = None,
    max_time: float | None = None,
    max_expanded_bytes: int | None = None,
) -> dict:
    """Find one input file locally or download it; return its provenance record.

    Order: a plain local path is used as is; for a URL, the spec's ``mirror``
    path, then ``<mirror_dir>/<dataset>/<filename>`` and
    ``<mirror_dir>/<filename>``, then an earlier verified download in
    ``<download_dir>/<dataset>/<filename>``, then the URL itself.  Every file
    is checked against ``sha256`` when known.  A mirror whose checksum does
    not match is an error (never silently replaced).

    A download is capped at ``max_download_bytes`` and ``max_time`` seconds
    (:func:`download`); a gzip file from any source may expand to at most
    ``max_expanded_bytes`` (:func:`check_expanded_size`).  None = no limit.

    Returns ``{role, source, url, path, sha256, expected_sha256, size, time}``
    with ``source`` one of ``local``, ``mirror``, ``cache``, ``download``.
    """
    rec = _resolve_file(
        spec,
        dataset=dataset,
        role=role,
        mirror_dir=mirror_dir,
        download_dir=download_dir,
        retries=retries,
        timeout=timeout,
        backoff=backoff,
        max_download_bytes=max_download_bytes,
        max_time=max_time,
    )
    if max_expanded_bytes is not None:
        check_expanded_size(rec["path"], int(max_expanded_bytes), f"dataset {dataset!r} file {role!r}")
    return rec


def _resolve_file(
    spec, *, dataset, role, mirror_dir, download_dir, retries, timeout, backoff, max_download_bytes, max_time
) -> dict:
    s = _spec(spec)
    url, expected = s["url"], s["sha256"]
    what = f"dataset {dataset!r} file {role!r}"
    rec = {"role": role, "url": url, "expected_sha256": expected}
    if not is_url(url):
        p = Path(url)
        digest = _verify_local(p, expected, what)
        rec.update(source="local", path=str(p), sha256=digest, size=p.stat().st_size, time=_now())
        log.info("%s: local file %s (sha256 %s)", what, p, digest)
        return rec
    if s["filename"] is not None:
        problem = plain_filename_problem(s["filename"])
        if problem:
            msg = f"{what}: filename must be a plain file name (no directory, not '.' or '..', no control characters); {problem}"
            raise FetchError(msg)
        filename = s["filename"]
    else:
        filename = Path(urllib.parse.urlparse(url).path).name
        if plain_filename_problem(filename):
            filename = f"{role}.dat"
    candidates = []
    if s["mirror"]:
        candidates.append(Path(s["mirror"]))
    if mirror_dir:
        candidates += [Path(mirror_dir) / dataset / filename, Path(mirror_dir) / filename]
    for c in candidates:
        if c.exists():
            digest = _verify_local(c, expected, f"{what} (mirror of {url})")
            rec.update(source="mirror", path=str(c), sha256=digest, size=c.stat().st_size, time=_now())
            log.info("%s: mirror %s (sha256 %s)", what, c, digest)
            return rec
    dest = Path(download_dir) / dataset / filename
    if dest.exists() and _cache_usable(dest, url, expected, what):
        digest = sha256_file(dest)
        if expected is None or digest == expected.lower():
            rec.update(source="cache", path=str(dest), sha256=digest, size=dest.stat().st_size, time=_now())
            log.info("%s: earlier download %s (sha256 %s)", what, dest, digest)
            return rec
        log.warning("%s: cached %s has sha256 %s, expected %s; downloading again", what, dest, digest, expected)
    log.info("%s: downloading %s -> %s", what, url, dest)
    try:
        got = download(
            url,
            dest,
            sha256=expected,
            retries=retries,
            timeout=timeout,
            backoff=backoff,
            max_bytes=max_download_bytes,
            max_time=max_time,
        )
    except FetchError as exc:
        msg = f"{what}: {exc}"
        raise FetchError(msg) from None
    _source_of(dest).write_text(url + "\n")  # after the download is in place: the cache is keyed by the URL
    rec.update(
        source="download",
        path=got["path"],
        sha256=got["sha256"],
        size=got["size"],
        time=got["time"],
        attempts=got["attempts"],
    )
    return rec


def _source_of(dest: Path) -> Path:
    """The file beside a download that records the URL it came from (``.<name>.url``)."""
    return dest.with_name(f".{dest.name}.url")


def _cache_usable(dest: Path, url: str, expected: str | None, what: str) -> bool:
    """Whether an earlier download at ``dest`` may stand for ``url``: with a ``sha256`` the content
    decides (checked by the caller); without one, only a download recorded as coming from this very URL
    (a changed URL with the same file name, e.g. .../v1/data.tsv to .../v2/data.tsv, is downloaded again)."""
    if expected is not None:
        return True
    side = _source_of(dest)
    before = side.read_text().strip() if side.is_file() else None
    if before == url:
        return True
    log.warning(
        "%s: %s was downloaded from %s, not from %s, and no sha256 is given; downloading again",
        what,
        dest,
        before or "an unrecorded URL (a download before URLs were recorded)",
        url,
    )
    return False


def dataset_file_specs(cfg: dict) -> dict:
    """Map role -> file spec for a dataset config (expression, labels, extra_files)."""
    specs = {}
    expr = _spec(cfg["expression"])
    if cfg.get("sha256") and not expr["sha256"]:
        expr["sha256"] = cfg["sha256"]
    specs["expression"] = expr
    if cfg.get("labels"):
        lab = _spec(cfg["labels"])
        if cfg.get("labels_sha256") and not lab["sha256"]:
            lab["sha256"] = cfg["labels_sha256"]
        specs["labels"] = lab
    for role, spec in (cfg.get("extra_files") or {}).items():
        specs[role] = _spec(spec)
    return specs


def check_provenance(prov: dict, provenance_path="provenance.json") -> dict:
    """Role -> local path of a provenance record, checking each file still has its recorded size.

    A file deleted or changed since the fetch step is an error that names it
    and says how to fetch again.
    """
    paths = {}
    for role, rec in prov.get("files", {}).items():
        p = Path(rec["path"])
        if not p.is_file():
            msg = f"{p} (file {role!r} recorded in {provenance_path}) no longer exists; fetch again with `snakemake --forcerun fetch_dataset`"
            raise DataError(msg)
        if rec.get("size") is not None and p.stat().st_size != rec["size"]:
            msg = f"{p} (file {role!r} recorded in {provenance_path}) has {p.stat().st_size} bytes, {rec['size']} when fetched; fetch again with `snakemake --forcerun fetch_dataset`"
            raise DataError(msg)
        paths[role] = str(p)
    return paths


def fetch_dataset_files(dataset: str, cfg: dict, fetch_cfg: dict | None = None) -> dict:
    """Resolve every file of a dataset; return the provenance record.

    ``fetch_cfg`` is the config's ``fetch`` section: ``mirror``,
    ``download_dir``, ``retries``, ``timeout``, ``backoff``, and the limits
    ``max_download_gb`` (size of one download), ``max_time`` (seconds for one
    download, retries included) and ``max_expanded_gb`` (what a gzip file may
    expand to), in GB of 2**30 bytes.  The limits in bytes are recorded in the
    provenance under ``limits``.
    """
    f = dict(fetch_cfg or {})
    limits = {
        "max_download_bytes": int(float(f.get("max_download_gb", DEFAULT_MAX_DOWNLOAD_GB)) * _GB),
        "max_time": float(f.get("max_time", DEFAULT_MAX_TIME)),
        "max_expanded_bytes": int(float(f.get("max_expanded_gb", DEFAULT_MAX_EXPANDED_GB)) * _GB),
    }
    files = {}
    for role, spec in dataset_file_specs(cfg).items():
        files[role] = resolve_file(
            spec,
            dataset=dataset,
            role=role,
            mirror_dir=f.get("mirror"),
            download_dir=f.get("download_dir", "results/downloads"),
            retries=int(f.get("retries", 4)),
            timeout=float(f.get("timeout", 60)),
            backoff=float(f.get("backoff", 2.0)),
            **limits,
        )
    return {"dataset": dataset, "created": _now(), "files": files, "limits": limits}
