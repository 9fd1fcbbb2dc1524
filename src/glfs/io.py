"""Data adapter: fetch, read, validate and prepare expression data sets.

This is the one ``glfs`` module that does file and network I/O (it is an
adapter, like ``glfs.tl``; the core modules stay pure).  It never imports
snakemake: the workflow's thin scripts (``scripts/fetch_file.py``,
``scripts/prepare_dataset.py``) call it.

Everything returned follows the product's orientation: X is
(n_samples, n_features) = (patients, genes); AnnData obs = samples,
var = genes.

Errors are :class:`DataError` (a ``ValueError``) whose message names the file
and the row/column or the config key, and what was expected.  Writers are
atomic (temporary file in the same directory, fsync, ``os.replace``), so a
failed step never leaves a partial file where a later run would trust it.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import http.client
import io as _io
import json
import logging
import os
import re
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

__all__ = [
    "DataError",
    "FetchError",
    "DiskFullError",
    "dataset_has_labels",
    "expression_format",
    "looks_like_counts",
    "is_url",
    "sha256_file",
    "download",
    "resolve_file",
    "fetch_dataset_files",
    "check_provenance",
    "read_golub",
    "read_stategra",
    "read_clanc840",
    "read_matrix",
    "read_labels",
    "attach_labels",
    "preprocess",
    "prepare_dataset",
    "write_h5ad_atomic",
    "write_json_atomic",
    "PREPROCESS_DEFAULTS",
]

_NA_STRINGS = {"", "na", "nan", "n/a", "null", "none", "-nan"}


class DataError(ValueError):
    """Bad input data: the message names the file and the row/column or key."""


class FetchError(RuntimeError):
    """A file could not be resolved, downloaded or verified."""


class DiskFullError(OSError):
    """The device filled up while an output was written (errno ENOSPC); the message names the file."""

    def __init__(self, dest):
        super().__init__(f"no space left on device while writing {dest}")
        self.errno = errno.ENOSPC  # (no strerror/filename: str() stays the one-line message)
        self.path = str(dest)


def _is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` or an exception it was raised from is ENOSPC.

    h5py reports a full disk as an ``OSError`` whose text carries
    ``errno = 28``, and anndata re-raises it wrapped; both are recognised.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError):
            text = str(exc)
            if exc.errno == errno.ENOSPC or "No space left on device" in text or f"errno = {errno.ENOSPC}," in text:
                return True
        exc = exc.__cause__ or exc.__context__
    return False


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------


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


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(str(path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _atomic_path(dest, suffix=""):
    """Yield a temporary path next to ``dest``; on success fsync and rename it.

    On any exception the temporary file is removed and ``dest`` is untouched.
    A full disk (ENOSPC, however deep in the writer's exception chain) becomes
    one :class:`DiskFullError` naming ``dest`` instead of the writer's
    traceback (h5py's runs to hundreds of lines).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # temporaries of an earlier run that was killed (SIGKILL) are never trusted: remove them
    for stale in dest.parent.glob(f".{dest.name}.*.part{suffix}"):
        with contextlib.suppress(OSError):
            stale.unlink()
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=f".part{suffix}", dir=dest.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; outputs get the usual permissions
    tmp = Path(tmp)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
        _fsync_dir(dest.parent)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, Exception) and not isinstance(exc, DiskFullError) and _is_disk_full(exc):
            raise DiskFullError(dest) from None
        raise


def write_json_atomic(obj, dest) -> None:
    """Write ``obj`` as indented JSON to ``dest`` atomically."""
    with _atomic_path(dest) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_h5ad_atomic(adata, dest) -> None:
    """Write an AnnData to ``dest`` atomically (temporary .h5ad, fsync, rename)."""
    with _atomic_path(dest, suffix=".h5ad") as tmp:
        adata.write_h5ad(tmp)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --------------------------------------------------------------------------
# download and resolution
# --------------------------------------------------------------------------

_RETRY_HTTP = {408, 425, 429, 500, 502, 503, 504}


def download(
    url: str,
    dest,
    *,
    sha256: str | None = None,
    retries: int = 4,
    timeout: float = 60.0,
    backoff: float = 2.0,
    progress_every: float = 5.0,
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

    Returns a dict with ``url``, ``path``, ``sha256``, ``size``, ``attempts``
    and ``time``.
    """
    dest = Path(dest)
    last = None
    for attempt in range(retries + 1):
        if attempt:
            wait = backoff * 2 ** (attempt - 1)
            log.warning("retrying %s in %.2f s (attempt %d of %d) after: %s", url, wait, attempt + 1, retries + 1, last)
            time.sleep(wait)
        try:
            with _atomic_path(dest) as tmp:
                digest, size = _stream(url, tmp, timeout=timeout, progress_every=progress_every)
                if sha256 is not None and digest != sha256.lower():
                    msg = f"checksum mismatch for {url}: expected sha256 {sha256.lower()}, got {digest} ({size} bytes); the file was not kept"
                    raise _Fatal(msg)
            log.info("downloaded %s -> %s (%d bytes, sha256 %s)", url, dest, size, digest)
            return {"url": url, "path": str(dest), "sha256": digest, "size": size, "attempts": attempt + 1, "time": _now()}
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


def _stream(url: str, tmp: Path, *, timeout: float, progress_every: float):
    h = hashlib.sha256()
    size = 0
    req = urllib.request.Request(url, headers={"User-Agent": "glfs-workflow/0.1"})
    with urllib.request.urlopen(req, timeout=timeout) as resp, open(tmp, "wb") as out:
        length = resp.headers.get("Content-Length") if hasattr(resp, "headers") else None
        length = int(length) if length and str(length).isdigit() else None
        t_last = time.monotonic()
        while True:
            try:
                block = resp.read(1 << 16)
            except http.client.IncompleteRead as exc:
                msg = f"body cut short: {len(exc.partial)} more bytes then end of stream"
                raise _Short(msg) from None
            except socket.timeout:
                msg = f"read timed out after {timeout} s with {size} bytes received"
                raise TimeoutError(msg) from None
            if not block:
                break
            out.write(block)
            h.update(block)
            size += len(block)
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


def _verify_local(path: Path, expected: str | None, what: str) -> str:
    if not path.exists():
        msg = f"{what}: file {path} does not exist"
        raise FetchError(msg)
    if not path.is_file() or not os.access(path, os.R_OK):
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
) -> dict:
    """Find one input file locally or download it; return its provenance record.

    Order: a plain local path is used as is; for a URL, the spec's ``mirror``
    path, then ``<mirror_dir>/<dataset>/<filename>`` and
    ``<mirror_dir>/<filename>``, then an earlier verified download in
    ``<download_dir>/<dataset>/<filename>``, then the URL itself.  Every file
    is checked against ``sha256`` when known.  A mirror whose checksum does
    not match is an error (never silently replaced).

    Returns ``{role, source, url, path, sha256, expected_sha256, size, time}``
    with ``source`` one of ``local``, ``mirror``, ``cache``, ``download``.
    """
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
    if dest.exists():
        digest = sha256_file(dest)
        if expected is None or digest == expected.lower():
            rec.update(source="cache", path=str(dest), sha256=digest, size=dest.stat().st_size, time=_now())
            log.info("%s: earlier download %s (sha256 %s)", what, dest, digest)
            return rec
        log.warning("%s: cached %s has sha256 %s, expected %s; downloading again", what, dest, digest, expected)
    log.info("%s: downloading %s -> %s", what, url, dest)
    try:
        got = download(url, dest, sha256=expected, retries=retries, timeout=timeout, backoff=backoff)
    except FetchError as exc:
        msg = f"{what}: {exc}"
        raise FetchError(msg) from None
    rec.update(source="download", path=got["path"], sha256=got["sha256"], size=got["size"], time=got["time"], attempts=got["attempts"])
    return rec


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
    """Resolve every file of a dataset; return the provenance record."""
    f = dict(fetch_cfg or {})
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
        )
    return {"dataset": dataset, "created": _now(), "files": files}


# --------------------------------------------------------------------------
# generic table parsing with precise errors
# --------------------------------------------------------------------------


def _open_text(path: Path):
    """Text handle for a plain or gzip file; a corrupt gzip raises DataError on read."""
    if path.suffix == ".gz" or _is_gzip(path):
        return _io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _read_text(path: Path) -> str:
    try:
        with _open_text(path) as fh:
            return fh.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        msg = f"{path}: truncated or corrupt gzip file ({type(exc).__name__}: {exc})"
        raise DataError(msg) from None
    except UnicodeDecodeError as exc:
        msg = f"{path}: not a UTF-8 text file (byte {exc.start}: {exc.reason})"
        raise DataError(msg) from None


def _strip_ext(name: str) -> str:
    return name[:-3] if name.endswith(".gz") else name


def infer_format(path, fmt: str = "auto") -> str:
    """The table format of ``path``: tsv, csv, gct or h5ad."""
    if fmt and fmt != "auto":
        return fmt
    name = _strip_ext(Path(path).name.lower())
    for ext, f in ((".tsv", "tsv"), (".txt", "tsv"), (".tab", "tsv"), (".csv", "csv"), (".gct", "gct"), (".h5ad", "h5ad")):
        if name.endswith(ext):
            return f
    msg = f"{path}: cannot tell the format from the file name; expected .tsv, .txt, .csv, .gct or .h5ad (optionally .gz), or set the dataset's `format` key"
    raise DataError(msg)


def expression_format(cfg: dict) -> str | None:
    """The reader a dataset config selects, from ``format`` or the file name; None if unknown.

    Works on the config alone (no file is opened), so the workflow can decide
    at DAG-building time what :func:`prepare_dataset` will do.  The name is the
    file spec's ``filename`` when given, else the path or URL path.
    """
    fmt = cfg.get("format", "auto") or "auto"
    if fmt != "auto":
        return fmt
    spec = _spec(cfg["expression"])
    for name in (spec.get("filename"), spec.get("url")):
        if name:
            name = urllib.parse.urlparse(name).path if is_url(name) else name
            with contextlib.suppress(DataError):
                return infer_format(name)
    return None


def dataset_has_labels(cfg: dict) -> bool:
    """Whether a dataset has class labels, from its config alone.

    True with a ``labels`` table; for the stategra and clanc840 readers (the
    labels are in the file); for an ``.h5ad`` whose config names an ``obs``
    column with ``label_column``.  An ``.h5ad`` without ``label_column`` is
    unlabelled even if its ``obs`` has a column called ``label``:
    :func:`prepare_dataset` says so in a warning.  The workflow (rules
    ``common.smk``) and :func:`prepare_dataset` both decide with this function.
    """
    if cfg.get("labels"):
        return True
    fmt = expression_format(cfg)
    if fmt in ("stategra", "clanc840"):
        return True
    return fmt == "h5ad" and cfg.get("label_column") is not None


def _read_raw_table(path: Path, sep: str, skiprows: int = 0) -> list[list[str]]:
    text = _read_text(path)
    if not text.strip():
        msg = f"{path}: file is empty"
        raise DataError(msg)
    lines = [ln for ln in text.splitlines()[skiprows:skiprows + 3] if ln.strip()]
    if len(lines) >= 2 and lines[0].count(sep) == lines[1].count(sep) - 1:
        # R write.table style: the header has no cell above the row names
        head, _, rest = text.partition("\n") if skiprows == 0 else ("", "", "")
        if skiprows == 0:
            text = sep + head + "\n" + rest
    try:
        df = pd.read_csv(
            _io.StringIO(text), sep=sep, header=None, dtype=str, keep_default_na=False,
            skiprows=skiprows, skip_blank_lines=True, quotechar='"',
        )
    except pd.errors.EmptyDataError:
        msg = f"{path}: file is empty"
        raise DataError(msg) from None
    except pd.errors.ParserError as exc:
        raise _parse_error(path, text, sep, exc, "a {}-separated table".format("tab" if sep == chr(9) else repr(sep))) from None
    return df


def _unclosed_quote_line(text: str, sep: str) -> int | None:
    """1-based line of the '"' that opens a field and is never closed (None if every quote closes).

    Only run after pandas failed: pandas reports the place as a 0-based
    "row", which users read as a line number one too low.
    """
    line, start, in_quote, prev = 1, None, False, "\n"
    for ch in text:
        if in_quote:
            if ch == '"':
                in_quote = False
        elif ch == '"' and prev in (sep, "\n", "\r"):
            in_quote, start = True, line
        if ch == "\n":
            line += 1
        prev = ch
    return start if in_quote else None


def _parse_error(path, text: str, sep: str, exc, what: str) -> DataError:
    line = _unclosed_quote_line(text, sep) if "EOF inside string" in str(exc) else None
    if line is not None:
        return DataError(f"{path}: unclosed quote: the '\"' opened on line {line} is never closed (a quoted field runs to the end of the file)")
    return DataError(f"{path}: cannot parse as {what}: {exc}")


def _to_float(values: pd.DataFrame, path: Path, row_ids, col_ids, row_kind: str, col_kind: str, line0: int) -> np.ndarray:
    """Convert a string DataFrame to float64; errors name row, column and line."""
    raw = values.to_numpy(dtype=object)
    flat = pd.Series(raw.ravel())
    num = pd.to_numeric(flat, errors="coerce").to_numpy(dtype=np.float64)
    low = flat.str.strip().str.lower()
    is_na = low.isin(_NA_STRINGS).to_numpy() | flat.isna().to_numpy()
    bad = np.isnan(num) & ~is_na & ~low.isin({"nan", "-nan"}).to_numpy()
    shape = raw.shape
    if bad.any():
        i, j = np.unravel_index(int(np.flatnonzero(bad)[0]), shape)
        msg = (
            f"{path}: non-numeric value {raw[i, j]!r} at {row_kind} {row_ids[i]!r} (line {line0 + i}), "
            f"{col_kind} {col_ids[j]!r} (column {j + 2}); expected a number ({int(bad.sum())} such cells)"
        )
        raise DataError(msg)
    X = num.reshape(shape)
    nonfinite = ~np.isfinite(X)
    if nonfinite.any():
        i, j = np.argwhere(nonfinite)[0]
        kind = "missing/NaN" if np.isnan(X[i, j]) else "infinite"
        msg = (
            f"{path}: {kind} value {raw[i, j]!r} at {row_kind} {row_ids[i]!r} (line {line0 + i}), "
            f"{col_kind} {col_ids[j]!r} (column {j + 2}); expected finite numbers "
            f"({int(nonfinite.sum())} NaN or infinite cells in total)"
        )
        raise DataError(msg)
    return X


def _check_unique(ids, path, kind: str, where: str) -> None:
    s = pd.Index(ids)
    if s.has_duplicates:
        dup = s[s.duplicated()].unique().tolist()
        msg = f"{path}: duplicate {kind} ids in {where}: {dup[:10]} ({len(dup)} duplicated); each {kind} id must be unique"
        raise DataError(msg)
    empty = [k for k, v in enumerate(ids) if str(v).strip() == ""]
    if empty:
        msg = f"{path}: empty {kind} id in {where} (position {empty[0] + 1})"
        raise DataError(msg)


@dataclass
class Matrix:
    """A parsed matrix: X (n_samples, n_genes), sample ids, gene ids, var extras."""

    X: np.ndarray
    samples: list
    genes: list
    var: pd.DataFrame
    obs: pd.DataFrame | None = None


def read_matrix(path, *, fmt: str = "auto", orientation: str = "genes_by_samples") -> Matrix:
    """Read a generic expression matrix (.tsv/.txt/.csv[.gz], .gct, .h5ad).

    Text files have one header line (first cell = the row-id column name,
    then column ids) and one id column.  ``orientation`` says whether rows are
    genes (``genes_by_samples``) or samples.  The result is always oriented
    samples x genes.  More samples than genes is allowed (logged by
    :func:`prepare_dataset`), never silently transposed.
    """
    path = Path(path)
    fmt = infer_format(path, fmt)
    if fmt == "h5ad":
        return _read_h5ad(path)
    if orientation not in ("genes_by_samples", "samples_by_genes"):
        msg = f"orientation must be 'genes_by_samples' or 'samples_by_genes'; got {orientation!r}"
        raise DataError(msg)
    sep = "," if fmt == "csv" else "\t"
    skip = 2 if fmt == "gct" else 0
    df = _read_raw_table(path, sep, skiprows=skip)
    header = [str(h).strip() for h in df.iloc[0].tolist()]  # stripped like the row ids
    body = df.iloc[1:]
    if body.shape[0] == 0:
        msg = f"{path}: header only, no data rows; expected one row per {'gene' if orientation == 'genes_by_samples' else 'sample'}"
        raise DataError(msg)
    n_id = 2 if fmt == "gct" else 1
    # a trailing empty column (every line ending in a separator) is dropped
    if header[-1] == "" and (body.iloc[:, -1].fillna("") == "").all():
        header, body = header[:-1], body.iloc[:, :-1]
    col_ids = header[n_id:]
    row_ids = body.iloc[:, 0].fillna("").astype(str).str.strip().tolist()
    rows_kind, cols_kind = ("gene", "sample") if orientation == "genes_by_samples" else ("sample", "gene")
    if len(col_ids) == 0:
        msg = f"{path}: no {cols_kind} columns after the id column; check the separator (format {fmt})"
        raise DataError(msg)
    _check_unique(col_ids, path, cols_kind, "the header line")
    _check_unique(row_ids, path, rows_kind, "the first column")
    line0 = 2 + skip
    X = _to_float(body.iloc[:, n_id:], path, row_ids, col_ids, rows_kind, cols_kind, line0)
    extra = {}
    if fmt == "gct":
        extra["description"] = body.iloc[:, 1].fillna("").astype(str).tolist()
    if orientation == "genes_by_samples":
        var = pd.DataFrame({"gene_id": row_ids, **extra}, index=pd.Index(row_ids, name=None))
        return Matrix(X.T.copy(), col_ids, row_ids, var)
    var = pd.DataFrame({"gene_id": col_ids}, index=pd.Index(col_ids))
    return Matrix(X, row_ids, col_ids, var)


def _read_h5ad(path: Path) -> Matrix:
    import anndata as ad
    import scipy.sparse as sp

    try:
        a = ad.read_h5ad(path)
    except Exception as exc:  # noqa: BLE001 - h5py raises many types
        msg = f"{path}: cannot read as .h5ad ({type(exc).__name__}: {exc})"
        raise DataError(msg) from None
    X = a.X.toarray() if sp.issparse(a.X) else np.asarray(a.X)
    X = np.asarray(X, dtype=np.float64)
    if a.n_obs == 0 or a.n_vars == 0:
        msg = f"{path}: empty AnnData ({a.n_obs} obs x {a.n_vars} var)"
        raise DataError(msg)
    samples, genes = [str(s) for s in a.obs_names], [str(g) for g in a.var_names]
    _check_unique(samples, path, "sample", "obs_names")
    _check_unique(genes, path, "gene", "var_names")
    nonfinite = ~np.isfinite(X)
    if nonfinite.any():
        i, j = np.argwhere(nonfinite)[0]
        msg = f"{path}: non-finite value {X[i, j]} in X at obs {samples[i]!r} (row {i}), var {genes[j]!r} (column {j}); expected finite numbers ({int(nonfinite.sum())} cells)"
        raise DataError(msg)
    var = a.var.copy()
    var.index = pd.Index(genes)
    var.insert(0, "gene_id", genes)
    obs = a.obs.copy()
    obs.index = pd.Index(samples)
    return Matrix(X, samples, genes, var, obs)


# --------------------------------------------------------------------------
# the vendored data sets
# --------------------------------------------------------------------------


def _read_golub_part(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One Golub CSV -> (values genes x patients (columns = patient int), annotation)."""
    text = _read_text(path)
    if not text.strip():
        msg = f"{path}: file is empty"
        raise DataError(msg)
    df = pd.read_csv(_io.StringIO(text), dtype=str, keep_default_na=False)
    need = ["Gene Description", "Gene Accession Number"]
    for c in need:
        if c not in df.columns:
            msg = f"{path}: column {c!r} missing; expected the Golub/Broad layout {need} + (patient, call) pairs"
            raise DataError(msg)
    cols = [c for c in df.columns if c not in need]
    values = [c for c in cols if not str(c).startswith("call")]
    for c in values:
        if not str(c).strip().isdigit():
            msg = f"{path}: column {c!r} is neither a patient number nor a 'call' column"
            raise DataError(msg)
    probes = df["Gene Accession Number"].str.strip().tolist()
    _check_unique(probes, path, "probe", "column 'Gene Accession Number'")
    patients = [int(c) for c in values]
    _check_unique(patients, path, "patient", "the header line")
    X = _to_float(df[values], path, probes, [str(p) for p in patients], "probe", "patient", 2)
    vals = pd.DataFrame(X, index=probes, columns=patients)
    ann = pd.DataFrame({"probe_id": probes, "description": df["Gene Description"].tolist()}, index=probes)
    return vals, ann


def read_golub(train, independent, labels=None, *, train_patients=None) -> Matrix:
    """Golub et al. (1999) ALL/AML: 72 patients x 7129 probes in patient order.

    ``train`` and ``independent`` are the Broad/Kaggle CSVs (Gene Description,
    Gene Accession Number, then a value and a ``call`` column per patient; the
    column order is not patient order).  ``labels`` is ``actual.csv``
    (``patient``, ``cancer``).  Patients are sorted 1..72; obs ``patient``
    (int), ``split`` (``train`` for ``train_patients``, default 1-38, else
    ``test``) and, with labels, ``label`` (ALL/AML).  Values are the raw
    "average difference" intensities (not logged).
    """
    train, independent = Path(train), Path(independent)
    v1, a1 = _read_golub_part(train)
    v2, a2 = _read_golub_part(independent)
    if list(a1.index) != list(a2.index):
        msg = f"{independent}: probe ids (column 'Gene Accession Number') differ from those of {train}; expected the same probes in the same order"
        raise DataError(msg)
    both = set(v1.columns) & set(v2.columns)
    if both:
        msg = f"{independent}: patients {sorted(both)[:10]} also appear in {train}; each patient must be in one file"
        raise DataError(msg)
    vals = pd.concat([v1, v2], axis=1)
    vals = vals[sorted(vals.columns)]
    patients = list(vals.columns)
    if train_patients is None:
        train_patients = list(range(1, 39))
    tp = set(int(p) for p in train_patients)
    unknown = sorted(tp - set(patients))
    if unknown:
        msg = f"split.train_patients names patients {unknown[:10]} that are in neither {train} nor {independent}"
        raise DataError(msg)
    samples = [str(p) for p in patients]
    obs = pd.DataFrame(
        {"patient": np.array(patients, dtype=np.int64), "split": ["train" if p in tp else "test" for p in patients]},
        index=samples,
    )
    m = Matrix(vals.to_numpy(dtype=np.float64).T.copy(), samples, list(a1.index), a1.copy(), obs)
    return m


def read_stategra(rda, sample_map) -> Matrix:
    """STATegRa_S1.rda ``Block1`` (1740 genes x 169 samples) with real TCGA ids.

    Labels come from ``ed$classname`` (Verhaak 2010 subtype).  The anonymised
    ``sampleN`` columns are renamed to TCGA sample ids with the derived map
    (``stategra_sample`` -> ``tcga_sample``); the map's ``stategra_classname``
    must agree with ``ed$classname``.  obs: ``label``, ``stategra_sample``;
    var: ``gene_symbol``.
    """
    import rdata

    rda = Path(rda)
    try:
        conv = rdata.conversion.convert(rdata.parser.parse_file(rda))
    except Exception as exc:  # noqa: BLE001 - rdata raises many types
        msg = f"{rda}: cannot read as an R data file ({type(exc).__name__}: {exc})"
        raise DataError(msg) from None
    for key in ("Block1", "ed"):
        if key not in conv:
            msg = f"{rda}: object {key!r} missing; found {sorted(conv)}"
            raise DataError(msg)
    b = conv["Block1"]
    genes = [str(g) for g in b.coords[b.dims[0]].values]
    anon = [str(s) for s in b.coords[b.dims[1]].values]
    X = np.asarray(b.values, dtype=np.float64).T.copy()
    _check_unique(genes, rda, "gene", "Block1 row names")
    _check_unique(anon, rda, "sample", "Block1 column names")
    if not np.isfinite(X).all():
        i, j = np.argwhere(~np.isfinite(X))[0]
        msg = f"{rda}: non-finite value in Block1 at gene {genes[j]!r}, sample {anon[i]!r}"
        raise DataError(msg)
    ed = conv["ed"]
    if "classname" not in ed.columns:
        msg = f"{rda}: data frame 'ed' has no column 'classname'; found {list(ed.columns)}"
        raise DataError(msg)
    cls = ed["classname"].astype(str)
    missing = [s for s in anon if s not in cls.index]
    if missing:
        msg = f"{rda}: samples {missing[:5]} of Block1 have no row in 'ed'"
        raise DataError(msg)
    sample_map = Path(sample_map)
    mp = read_table(sample_map)
    for c in ("stategra_sample", "tcga_sample"):
        if c not in mp.columns:
            msg = f"{sample_map}: column {c!r} missing; found {list(mp.columns)}"
            raise DataError(msg)
    mp = mp.set_index("stategra_sample")
    nomap = [s for s in anon if s not in mp.index]
    if nomap:
        msg = f"{sample_map}: no row (column 'stategra_sample') for Block1 samples {nomap[:5]} ({len(nomap)} missing)"
        raise DataError(msg)
    if "stategra_classname" in mp.columns:
        bad = [s for s in anon if mp.loc[s, "stategra_classname"] != cls[s]]
        if bad:
            msg = f"{sample_map}: column 'stategra_classname' disagrees with {rda} ed$classname for {bad[:5]}"
            raise DataError(msg)
    tcga = [str(mp.loc[s, "tcga_sample"]) for s in anon]
    _check_unique(tcga, sample_map, "sample", "column 'tcga_sample'")
    obs = pd.DataFrame({"label": [cls[s] for s in anon], "stategra_sample": anon}, index=tcga)
    var = pd.DataFrame({"gene_symbol": genes}, index=genes)
    return Matrix(X, tcga, genes, var, obs)


def read_clanc840(path) -> Matrix:
    """Verhaak's TCGA_unified_CORE_ClaNC840.txt: 173 samples x 840 genes.

    Line 1: ``CLID``, a description column, then sample ids; line 2
    (``Subtype``): the subtype of each sample (-> obs ``label``); then one line
    per gene (symbol, GO subtype tag -> var ``go_subtype``, values).
    """
    path = Path(path)
    df = _read_raw_table(path, "\t")
    if df.shape[0] < 3 or df.shape[1] < 3:
        msg = f"{path}: expected a header line, a 'Subtype' line and gene lines with >= 3 columns; got {df.shape[0]} lines x {df.shape[1]} columns"
        raise DataError(msg)
    header = df.iloc[0].tolist()
    samples = [str(s).strip() for s in header[2:]]
    sub = df.iloc[1]
    if str(sub.iloc[0]).strip() != "Subtype":
        msg = f"{path}: line 2 must start with 'Subtype' (the subtype of each sample); got {sub.iloc[0]!r}"
        raise DataError(msg)
    labels = [str(x).strip() for x in sub.iloc[2:].tolist()]
    body = df.iloc[2:]
    genes = body.iloc[:, 0].astype(str).str.strip().tolist()
    _check_unique(samples, path, "sample", "the header line")
    _check_unique(genes, path, "gene", "the first column")
    X = _to_float(body.iloc[:, 2:], path, genes, samples, "gene", "sample", 3)
    obs = pd.DataFrame({"label": labels}, index=samples)
    var = pd.DataFrame({"gene_symbol": genes, "go_subtype": body.iloc[:, 1].fillna("").astype(str).tolist()}, index=genes)
    return Matrix(X.T.copy(), samples, genes, var, obs)


# --------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------


def read_table(path) -> pd.DataFrame:
    """A small annotation table (.csv = comma, otherwise tab), all strings."""
    path = Path(path)
    sep = "," if _strip_ext(path.name.lower()).endswith(".csv") else "\t"
    text = _read_text(path)
    if not text.strip():
        msg = f"{path}: file is empty"
        raise DataError(msg)
    try:
        df = pd.read_csv(_io.StringIO(text), sep=sep, dtype=str, keep_default_na=False)
    except pd.errors.ParserError as exc:
        raise _parse_error(path, text, sep, exc, "a table") from None
    if df.shape[0] == 0:
        msg = f"{path}: header only, no rows"
        raise DataError(msg)
    return df


def read_labels(path, sample_column: str = "sample", label_column: str = "label") -> pd.Series:
    """Labels table -> Series (index = sample id, value = label or NaN)."""
    path = Path(path)
    df = read_table(path)
    for key, col in (("sample_column", sample_column), ("label_column", label_column)):
        if col not in df.columns:
            msg = f"{path}: column {col!r} (config key {key}) not found; columns are {list(df.columns)[:20]}"
            raise DataError(msg)
    ids = df[sample_column].astype(str).str.strip()
    _check_unique(ids.tolist(), path, "sample", f"column {sample_column!r}")
    lab = df[label_column].astype(str).str.strip()
    lab = lab.where(~lab.str.lower().isin(_NA_STRINGS))
    return pd.Series(lab.to_numpy(), index=pd.Index(ids.tolist()), name="label")


def _tcga_key(s: str) -> str | None:
    """Patient barcode of a TCGA id; None for a non-primary-tumour sample.

    ``TCGA-02-0003`` -> itself; ``TCGA-02-0003-01A-01`` (sample type 01,
    primary solid tumour) -> ``TCGA-02-0003``; other sample types (02
    recurrent, 10-19 normal, ...) -> None, so a patient's subtype is never
    given to a normal or recurrent sample.
    """
    t = str(s).replace(".", "-").upper()
    if len(t) >= 15 and t[12] == "-" and t[13:15].isdigit() and t[13:15] != "01":
        return None
    return t[:12]


def attach_labels(
    m: Matrix,
    labels: pd.Series,
    *,
    path="labels",
    match: str = "exact",
    label_map: dict | None = None,
    drop_unlabelled: bool = False,
) -> tuple[Matrix, dict]:
    """Put ``labels`` into ``m.obs['label']``; return (matrix, report dict).

    Strict by default: a sample without a label, and a label row for a sample
    that is not in the matrix, are errors that list the ids.  With
    ``drop_unlabelled``, unlabelled samples are dropped and extra rows are
    ignored; both counts go into the report.
    """
    label_map = dict(label_map or {})
    samples = list(m.samples)
    if match == "tcga_patient":
        keyed = {}
        for sid, lab in labels.items():
            keyed.setdefault(_tcga_key(sid), lab)
        keys = [_tcga_key(s) for s in samples]
        lab_index = set(keyed)
        if any(k is None for k in keys):
            log.info("%s: %d non-primary-tumour samples (TCGA sample type != 01) get no label", path, sum(k is None for k in keys))
    else:
        keyed = labels.to_dict()
        keys = samples
        lab_index = set(labels.index)
    values = [keyed.get(k, np.nan) for k in keys]
    values = [label_map.get(v, v) if isinstance(v, str) else v for v in values]
    missing = [s for s, v in zip(samples, values) if not isinstance(v, str)]
    extra = sorted(lab_index - {k for k in keys if k is not None})
    report = {"n_label_rows_unmatched": len(extra), "n_samples_unlabelled_dropped": 0}
    if extra and not drop_unlabelled:
        msg = f"{path}: labels for {len(extra)} samples that are not in the expression matrix: {extra[:10]}; every labelled sample must be in the matrix (or set drop_unlabelled: true)"
        raise DataError(msg)
    if missing:
        if not drop_unlabelled:
            msg = f"{path}: no label for {len(missing)} of {len(samples)} samples: {missing[:10]}; every sample needs a label (or set drop_unlabelled: true)"
            raise DataError(msg)
        keep = np.array([isinstance(v, str) for v in values])
        log.warning("%s: dropping %d unlabelled samples: %s", path, len(missing), missing[:10])
        report["n_samples_unlabelled_dropped"] = len(missing)
        m = Matrix(
            m.X[keep], [s for s, k in zip(samples, keep) if k], m.genes, m.var,
            None if m.obs is None else m.obs.loc[[s for s, k in zip(samples, keep) if k]],
        )
        values = [v for v, k in zip(values, keep) if k]
    if extra:
        log.warning("%s: ignored %d label rows for samples not in the matrix", path, len(extra))
    obs = m.obs.copy() if m.obs is not None else pd.DataFrame(index=pd.Index(m.samples))
    obs["label"] = values
    m.obs = obs
    return m, report


# --------------------------------------------------------------------------
# preprocessing
# --------------------------------------------------------------------------

PREPROCESS_DEFAULTS = {
    "none": {},
    "log2": {"floor": 20.0, "ceiling": 16000.0},
    "zscore": {},
    "dudoit": {"floor": 100.0, "ceiling": 16000.0, "min_fold": 5.0, "min_diff": 500.0},
    "log1p": {},
    "normalize_log1p": {"target_sum": None},
}

# how far the largest count must lie above the median non-zero count to call a matrix count-like
COUNT_DYNAMIC_RANGE = 100.0


def looks_like_counts(X: np.ndarray) -> bool:
    """Whether X (n_samples, n_genes) looks like unnormalised counts.

    True when every value is a non-negative integer and the largest value is
    at least :data:`COUNT_DYNAMIC_RANGE` (100) times the median of the
    non-zero values: raw read or UMI counts, whose few very highly expressed
    genes dominate every distance and variance (log-scale data are not
    integers; microarray intensities such as Golub's have negative values;
    0/1 data have no dynamic range).  O(n d) time; works through X in blocks
    of about 10^6 cells, so the extra memory stays small; the median comes
    from at most 10^6 evenly spaced non-zero values.
    """
    X = np.asarray(X)
    if X.size == 0:
        return False
    X2 = X.reshape(X.shape[0], -1) if X.ndim > 1 else X.reshape(1, -1)
    rows = max(1, int(1e6 // max(X2.shape[1], 1)))
    quota = max(1, 1_000_000 // -(-X2.shape[0] // rows))  # non-zero values kept per block
    top, sample = -np.inf, []
    for i in range(0, X2.shape[0], rows):
        block = X2[i : i + rows]
        if block.min() < 0 or not np.array_equal(block, np.floor(block)):
            return False
        top = max(top, float(block.max()))
        pos = block[block > 0]
        if pos.size:
            sample.append(pos[:: -(-pos.size // quota)])
    if not sample:
        return False
    med = float(np.median(np.concatenate(sample)))
    return bool(top >= COUNT_DYNAMIC_RANGE * max(med, 1.0))


_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_SPREADSHEET_DATE = re.compile(
    rf"(?:\d{{1,2}}-(?:{_MONTHS})|(?:{_MONTHS})-\d{{1,2}}|\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}})",
    re.IGNORECASE,
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def id_warnings(ids, kind: str) -> list[str]:
    """Warnings about ids that tools mangle or that break line-based files.

    - ids that look like dates made by a spreadsheet from gene symbols
      (Zeeberg et al. 2004, BMC Bioinformatics 5:80: SEPT2 -> ``2-Sep``,
      MARCH1 -> ``1-Mar``; also ISO and d/m/y dates);
    - ids with tabs, newlines or other control characters: the workflow's
      tables quote them (CSV quoting, read back exactly by any CSV reader),
      but line-based tools (cut, awk, grep) split them.

    Returns one message per kind of problem (empty when none); the ids are
    kept as given.
    """
    ids = [str(i) for i in ids]
    out = []
    dates = [i for i in ids if _SPREADSHEET_DATE.fullmatch(i)]
    if dates:
        out.append(
            f"{len(dates)} {kind} ids look like dates a spreadsheet made from gene symbols "
            f"(SEPT2 -> 2-Sep, MARCH1 -> 1-Mar): {dates[:10]}; fix them in the source file"
        )
    odd = [i for i in ids if _CONTROL.search(i)]
    if odd:
        out.append(
            f"{len(odd)} {kind} ids contain tabs, newlines or other control characters: {odd[:10]}; "
            "the output tables quote them, but line-based tools (cut, awk, grep) will split them"
        )
    return out


def preprocess(X: np.ndarray, genes: list, method: str = "none", params: dict | None = None, *, samples: list | None = None):
    """Apply a preprocessing option to X (n_samples, n_genes).

    - ``none``: unchanged (Wang & Goldenberg 2013: "no pre-processing").
    - ``log2``: clip to [floor, ceiling] (defaults 20, 16000), then log2.
      A floor is required when X has values <= 0.
    - ``zscore``: each gene centred and scaled to unit SD (ddof=0); a
      constant gene becomes all zeros.
    - ``dudoit``: Dudoit, Fridlyand & Speed (2002, JASA 97:77), Sec. 3.1:
      thresholding (floor 100, ceiling 16000), filtering (keep genes with
      max/min > 5 and max - min > 500), base-10 log.  On Golub's 72 samples
      this keeps 3571 genes, the number the paper reports.
    - ``log1p``: log(1 + x), for counts; values must be >= 0.
    - ``normalize_log1p``: library-size normalisation then log1p, for raw
      counts: each sample is scaled to total ``target_sum`` (default the
      median of the samples' totals), then log(1 + x), as scanpy's
      ``normalize_total`` + ``log1p``.  A sample with total 0 is an error.

    ``samples`` (ids, optional) only names samples in error messages.
    Returns (X, kept gene mask (n_genes,) bool, params used).
    """
    params = {k: v for k, v in (params or {}).items() if v is not None or k in ("floor", "ceiling")}
    if method not in PREPROCESS_DEFAULTS:
        msg = f"preprocess must be one of {sorted(PREPROCESS_DEFAULTS)}; got {method!r}"
        raise DataError(msg)
    used = {**PREPROCESS_DEFAULTS[method], **params}
    keep = np.ones(X.shape[1], dtype=bool)
    if method == "none":
        return X, keep, used
    if method == "zscore":
        mu = X.mean(axis=0)
        sd = X.std(axis=0)
        sd_safe = np.where(sd > 0, sd, 1.0)
        return (X - mu) / sd_safe, keep, used
    if method in ("log1p", "normalize_log1p"):
        sample_ids = samples if samples is not None else [str(i) for i in range(X.shape[0])]
        if X.min() < 0:
            i, j = np.unravel_index(int(np.argmin(X)), X.shape)
            msg = f"preprocess {method!r} needs non-negative values; gene {genes[j]!r} has {X[i, j]} at sample {sample_ids[i]!r}"
            raise DataError(msg)
        if method == "log1p":
            return np.log1p(X), keep, used
        totals = X.sum(axis=1)
        if (totals <= 0).any():
            i = int(np.flatnonzero(totals <= 0)[0])
            msg = f"preprocess {method!r}: sample {sample_ids[i]!r} has a total of 0 over all genes; remove it or use preprocess 'log1p'"
            raise DataError(msg)
        target = used.get("target_sum")
        target = float(np.median(totals)) if target is None else float(target)
        used = {**used, "target_sum": target}
        return np.log1p(X * (target / totals)[:, None]), keep, used
    lo, hi = used.get("floor"), used.get("ceiling")
    Xc = np.clip(X, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
    if method == "log2":
        if Xc.min() <= 0:
            i, j = np.unravel_index(int(np.argmin(Xc)), Xc.shape)
            msg = f"preprocess 'log2' needs positive values after clipping; gene {genes[j]!r} has {Xc[i, j]} (set preprocess_params.floor > 0)"
            raise DataError(msg)
        return np.log2(Xc), keep, used
    # dudoit
    if Xc.min() <= 0:
        msg = f"preprocess 'dudoit' needs preprocess_params.floor > 0; got {lo}"
        raise DataError(msg)
    mx, mn = Xc.max(axis=0), Xc.min(axis=0)
    keep = (mx / mn > used["min_fold"]) & (mx - mn > used["min_diff"])
    if not keep.any():
        msg = "preprocess 'dudoit' removed every gene (preprocess_params min_fold / min_diff too strict)"
        raise DataError(msg)
    return np.log10(Xc[:, keep]), keep, used


# --------------------------------------------------------------------------
# prepare: the whole step
# --------------------------------------------------------------------------


def _h5ad_labels(m: Matrix, expr, cfg: dict) -> tuple[Matrix, dict]:
    """Labels of an .h5ad from the ``obs`` column named by ``label_column``.

    A column that does not exist, or samples without a label (NaN, empty or
    an NA spelling), are errors naming the column and the samples (or, with
    ``drop_unlabelled``, the samples are dropped), as for a labels table.
    """
    col = cfg["label_column"]
    where = f"{expr}: obs column {col!r} (config key label_column)"
    if m.obs is None or col not in m.obs.columns:
        cols = [] if m.obs is None else list(m.obs.columns)
        msg = f"{where} not found; obs columns are {cols[:20]}"
        raise DataError(msg)
    raw = m.obs[col]
    text = raw.astype(object).where(raw.notna(), None)
    values = [None if v is None else str(v).strip() for v in text]
    values = [np.nan if v is None or v.lower() in _NA_STRINGS else v for v in values]
    if col != "label" and "label" in m.obs.columns:
        log.warning("%s: obs column 'label' is replaced by the labels of column %r", expr, col)
    labels = pd.Series(values, index=pd.Index(m.samples), name="label", dtype=object)
    return attach_labels(
        m, labels, path=where, label_map=cfg.get("label_map"),
        drop_unlabelled=bool(cfg.get("drop_unlabelled", False)),
    )


def _plain(x):
    """Make a value storable in AnnData.uns (no None; nested plain types)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items() if v is not None}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x if v is not None]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    return x


def prepare_dataset(name: str, cfg: dict, paths: dict, *, n_neighbors: int = 5, provenance: dict | None = None):
    """Read, label, preprocess and check one dataset; return an AnnData.

    Parameters
    ----------
    name : dataset key.
    cfg : the dataset's config entry (see workflow/schemas/config.schema.yaml).
    paths : role -> local path (``expression``, optional ``labels``, extra files).
    n_neighbors : the graph's k (config ``graph.n_neighbors``); at least
        ``n_neighbors + 1`` samples are required.
    provenance : fetched-file records, stored in ``uns['dataset']['files']``.

    Returns
    -------
    AnnData with X dense float64 (n_samples, n_genes), obs_names = sample ids,
    ``obs['label']`` categorical when labelled, ``uns['dataset']`` plain values.
    """
    import anndata as ad

    fmt = cfg.get("format", "auto") or "auto"
    expr = Path(paths["expression"])
    if fmt == "golub":
        if "independent" not in paths:
            msg = f"datasets.{name}.extra_files.independent is required for format 'golub'"
            raise DataError(msg)
        split = cfg.get("split") or {}
        m = read_golub(expr, paths["independent"], train_patients=split.get("train_patients"))
    elif fmt == "stategra":
        if "sample_map" not in paths:
            msg = f"datasets.{name}.extra_files.sample_map is required for format 'stategra'"
            raise DataError(msg)
        m = read_stategra(expr, paths["sample_map"])
    elif fmt == "clanc840":
        m = read_clanc840(expr)
    else:
        m = read_matrix(expr, fmt=fmt, orientation=cfg.get("orientation", "genes_by_samples"))

    notes = []
    label_report = {}
    labelled = True
    is_h5ad = fmt not in ("golub", "stategra", "clanc840") and infer_format(expr, fmt) == "h5ad"
    if paths.get("labels"):
        labels = read_labels(paths["labels"], cfg.get("sample_column", "sample"), cfg.get("label_column", "label"))
        m, label_report = attach_labels(
            m, labels, path=paths["labels"], match=cfg.get("labels_match", "exact"),
            label_map=cfg.get("label_map"), drop_unlabelled=bool(cfg.get("drop_unlabelled", False)),
        )
    elif is_h5ad and cfg.get("label_column") is not None:
        m, label_report = _h5ad_labels(m, expr, cfg)
    elif fmt in ("stategra", "clanc840") and m.obs is not None and "label" in m.obs:
        lm = cfg.get("label_map") or {}
        m.obs["label"] = [lm.get(v, v) for v in m.obs["label"]]
    else:
        labelled = False
        if m.obs is not None and "label" in m.obs:
            note = (
                f"obs column 'label' is not used as class labels: datasets.{name}.label_column is not set, "
                f"so the dataset is unlabelled (set label_column: label to evaluate against it)"
            )
            log.warning("%s: %s", expr, note)
            notes.append(note)

    n, d = m.X.shape
    if n < 2:
        msg = f"{expr}: only {n} sample(s); at least 2 are needed (check `orientation`: {cfg.get('orientation', 'genes_by_samples')})"
        raise DataError(msg)
    if n <= n_neighbors:
        msg = f"{expr}: {n} samples but graph.n_neighbors = {n_neighbors}; a kNN graph needs more samples than neighbours (lower graph.n_neighbors or add samples)"
        raise DataError(msg)
    if n > d:
        note = f"{n} samples > {d} genes: orientation {cfg.get('orientation', 'genes_by_samples')!r} kept as configured (not transposed); check it is right"
        log.warning("%s: %s", expr, note)
        notes.append(note)

    for kind, ids in (("gene", m.genes), ("sample", m.samples)):
        for note in id_warnings(ids, kind):
            log.warning("%s: %s", expr, note)
            notes.append(note)
    method = cfg.get("preprocess", "none") or "none"
    if method == "none" and looks_like_counts(m.X):
        pos = m.X[m.X > 0]
        note = (
            f"values look like raw counts (non-negative integers up to {m.X.max():.4g}, "
            f"{m.X.max() / np.median(pos):.3g} times the median non-zero value {np.median(pos):.4g}): "
            "distances, variances and GLFS are then driven by a few very highly expressed genes; "
            f"set datasets.{name}.preprocess: normalize_log1p (library-size normalisation + log1p) "
            "or log1p (docs/data.md)"
        )
        log.warning("%s: %s", expr, note)
        notes.append(note)
    X, keep, used = preprocess(m.X, m.genes, method, cfg.get("preprocess_params"), samples=m.samples)
    var = m.var.loc[np.asarray(m.genes)[keep]].copy() if not keep.all() else m.var.copy()
    if not keep.all():
        log.info("preprocess %s kept %d of %d genes", method, int(keep.sum()), d)
    const = np.ptp(X, axis=0) == 0
    const_names = list(np.asarray(var.index)[const])
    if const.all():
        zero = " (all zero)" if not X.any() else ""
        msg = (
            f"{expr}: every one of the {X.shape[1]} genes is constant across the {n} samples{zero}; "
            "nothing to select (check the file, `orientation` and `preprocess`)"
        )
        raise DataError(msg)
    if const.any():
        log.warning("%s: %d constant genes (allowed; they get NaN scores from score-based methods): %s", expr, len(const_names), const_names[:10])

    obs = m.obs.copy() if m.obs is not None else pd.DataFrame(index=pd.Index(m.samples))
    obs.index = pd.Index([str(s) for s in m.samples])
    if labelled:
        obs["label"] = pd.Categorical(obs["label"].astype(str))
        n_classes = int(obs["label"].nunique())
        nc = cfg.get("n_clusters")
        if nc is not None and nc > n:
            msg = f"datasets.{name}.n_clusters = {nc} exceeds the {n} samples"
            raise DataError(msg)
    var.index = pd.Index([str(g) for g in var.index])
    for c in var.columns:
        if var[c].dtype == object:
            var[c] = var[c].astype(str)
    for c in obs.columns:
        if obs[c].dtype == object:
            obs[c] = obs[c].astype(str)

    info = {
        "name": name,
        "format": fmt,
        "n_samples": int(n),
        "n_genes": int(X.shape[1]),
        "n_genes_raw": int(d),
        "labelled": bool(labelled),
        "n_clusters": int(cfg.get("n_clusters") or (n_classes if labelled else 0)),
        "preprocess": method,
        "preprocess_params": used,
        "orientation": cfg.get("orientation", "genes_by_samples"),
        "note": cfg.get("note", ""),
        "n_constant_genes": len(const_names),
        "constant_genes": ", ".join(const_names[:50]),
        "warnings": "; ".join(notes),
        "labels": label_report,
        "files": {k: {kk: vv for kk, vv in v.items()} for k, v in (provenance or {}).get("files", {}).items()},
    }
    if labelled:
        # two parallel lists, not a dict: labels may hold "/" (an HDF5 group separator) or anything else
        counts = obs["label"].value_counts().sort_index()
        info["label_counts"] = {"labels": [str(k) for k in counts.index], "counts": [int(v) for v in counts.to_numpy()]}
    adata = ad.AnnData(X=np.ascontiguousarray(X, dtype=np.float64), obs=obs, var=var)
    adata.uns["dataset"] = _plain(info)
    return adata
