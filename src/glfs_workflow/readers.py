"""Read expression matrices and tables with precise errors.

X is (n_samples, n_features) = (patients or cells, genes).  Errors are
:class:`DataError` (a ``ValueError``) whose message names the file and the
row/column, and what was expected.  Pure reading: no network, no writing
(the workflow's downloads, provenance and atomic writers are in
``glfs_workflow``).
"""

from __future__ import annotations

import functools
import gzip
import io
import logging
import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DataError
from .memory import ParseBudget, job_memory_bytes

log = logging.getLogger(__name__)


_NA_STRINGS = {"", "na", "nan", "n/a", "null", "none", "-nan"}

#: Largest size, in bytes, that a gzip-compressed text file may expand to (10 GB = 10 * 2**30).
#: Reading stops there with a :class:`DataError`, so that a small file that expands without limit
#: (a "gzip bomb") cannot exhaust memory.  A text matrix takes several times its text size in
#: memory while it is parsed; larger matrices are better stored as .h5ad.  The workflow's
#: ``fetch.max_expanded_gb`` has the same default.
MAX_EXPANDED_BYTES = 10 * 2**30


def _names_errors(fn):
    """Decorator for readers whose first argument is the path: every error names the file.

    A ``MemoryError`` (whose message is empty) and any other exception with an
    empty message become a :class:`DataError` that names the file and what
    happened; other errors pass through unchanged.
    """

    @functools.wraps(fn)
    def wrapper(path, *args, **kwargs):
        try:
            return fn(path, *args, **kwargs)
        except DataError:
            raise
        except MemoryError:
            msg = (
                f"{path}: out of memory while reading this file ({_disk_size(path)}); parsing a text "
                "matrix takes several times its (expanded) size in memory: give the job more memory, "
                "or store the matrix as .h5ad"
            )
            raise DataError(msg) from None
        except Exception as exc:
            if str(exc).strip():
                raise
            msg = f"{path}: {type(exc).__name__} while reading this file (no further message)"
            raise DataError(msg) from exc

    return wrapper


def _disk_size(path) -> str:
    try:
        return f"{Path(path).stat().st_size} bytes on disk"
    except OSError:
        return "size unknown"


# Formats that are not UTF-8 text, recognised by their first bytes: (test, what it is, what to do).
_NOT_TEXT = (
    (
        lambda h: h[:3] == b"BZh" and h[3:4].isdigit() and h[4:10] in (b"1AY&SY", b"\x17rE8P\x90"),
        "bz2-compressed",
        "convert it to gzip (`bunzip2 -c FILE | gzip > FILE.gz`) or decompress it",
    ),
    (
        lambda h: h[:6] == b"\xfd7zXZ\x00",
        "xz-compressed",
        "convert it to gzip (`xz -dc FILE | gzip > FILE.gz`) or decompress it",
    ),
    (
        lambda h: h[:4] == b"\x28\xb5\x2f\xfd",
        "zstd-compressed",
        "convert it to gzip (`zstd -dc FILE | gzip > FILE.gz`) or decompress it",
    ),
    (
        lambda h: h[:4] in (b"PK\x03\x04", b"PK\x05\x06"),
        "a zip archive",
        "extract the table from it (gzip is read directly)",
    ),
    (
        lambda h: h[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"),
        "UTF-32 text (byte-order mark)",
        "convert it to UTF-8 (`iconv -f UTF-32 -t UTF-8 FILE > NEW`)",
    ),
    (
        lambda h: h[:2] in (b"\xff\xfe", b"\xfe\xff"),
        "UTF-16 text (byte-order mark)",
        "convert it to UTF-8 (`iconv -f UTF-16 -t UTF-8 FILE > NEW`; spreadsheets: save as 'CSV UTF-8')",
    ),
)


def _refuse_other_formats(path: Path, head: bytes) -> None:
    """DataError when ``head`` (a file's first bytes) shows a compression or encoding that is not read."""
    for test, what, todo in _NOT_TEXT:
        if test(head):
            msg = f"{path}: this file is {what}; {todo}"
            raise DataError(msg)
    sample = head[:4096]
    if b"\x00" in sample and len(sample) >= 8:
        even, odd = sample[0::2], sample[1::2]
        if max(even.count(0) / len(even), odd.count(0) / len(odd)) > 0.3 and min(
            even.count(0), odd.count(0)
        ) < 0.05 * len(odd):
            msg = (
                f"{path}: this file looks like UTF-16 text without a byte-order mark (every other byte is 0); "
                "convert it to UTF-8 (`iconv -f UTF-16LE -t UTF-8 FILE > NEW`, or UTF-16BE)"
            )
            raise DataError(msg)


def _read_gzip(path: Path, limit: int, budget: ParseBudget | None = None, key: str = "max_expanded_bytes") -> bytes:
    """The expanded content of a gzip file; DataError above ``limit`` bytes (read in chunks, stopped there).

    With a ``budget`` (a text matrix) reading also stops at the most text its memory can parse.
    """
    cap = budget.cap() if budget is not None else None
    stop = limit if cap is None else min(limit, cap)
    chunks, size = [], 0
    with gzip.open(path, "rb") as fh:
        while True:
            block = fh.read(min(1 << 24, stop + 1 - size))
            if not block:
                break
            chunks.append(block)
            size += len(block)
            if size > stop and stop < limit:
                raise DataError(budget.refusal(path, stop, stopped=True))
            if size > limit:
                msg = (
                    f"{path}: gzip-compressed text expands to more than {limit} bytes (the limit, "
                    f"{key}); stopped there. "
                    f"The file has {path.stat().st_size} bytes compressed; if it really is this large, raise {key} "
                    "or store the matrix as .h5ad"
                )
                raise DataError(msg)
    return b"".join(chunks)


@_names_errors
def _read_text(
    path: Path,
    max_expanded_bytes: int | None = None,
    budget: ParseBudget | None = None,
    key: str = "max_expanded_bytes",
) -> str:
    """The text of a UTF-8 file, plain or gzip-compressed, without a leading byte-order mark.

    A gzip file may expand to at most ``max_expanded_bytes`` (default
    :data:`MAX_EXPANDED_BYTES`).  UTF-16/32 text and bz2, xz, zstd or zip
    files are recognised by their first bytes and refused with a message
    saying what the file is and how to convert it.  With a ``budget`` (a text
    matrix) a file whose parsing would take more memory than there is is
    refused before it is decoded or parsed (:mod:`glfs_workflow.memory`).
    """
    path = Path(path)
    limit = MAX_EXPANDED_BYTES if max_expanded_bytes is None else int(max_expanded_bytes)
    with open(path, "rb") as fh:
        head = fh.read(4096)
    gz = head[:2] == b"\x1f\x8b" or path.suffix == ".gz"
    if not gz:
        _refuse_other_formats(path, head)
        cap = budget.cap() if budget is not None else None
        if cap is not None and path.stat().st_size > cap:
            raise DataError(budget.refusal(path, path.stat().st_size))
    try:
        data = _read_gzip(path, limit, budget, key) if gz else path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        _refuse_other_formats(path, head)  # e.g. a bz2 file named .gz
        msg = f"{path}: truncated or corrupt gzip file ({type(exc).__name__}: {exc})"
        raise DataError(msg) from None
    if gz:
        _refuse_other_formats(path, data[:4096])  # UTF-16 text inside the gzip
    if budget is not None:
        try:
            budget.check(path, data)
        except ValueError as exc:
            raise DataError(str(exc)) from None
    try:
        return data.decode("utf-8-sig")  # "-sig": a UTF-8 byte-order mark is dropped, not kept in the first id
    except UnicodeDecodeError as exc:
        msg = f"{path}: not a UTF-8 text file (byte {exc.start}: {exc.reason}); convert it to UTF-8"
        raise DataError(msg) from None


def _strip_ext(name: str) -> str:
    return name[:-3] if name.endswith(".gz") else name


def infer_format(path, fmt: str = "auto") -> str:
    """The table format of ``path``: tsv, csv, gct or h5ad."""
    if fmt and fmt != "auto":
        return fmt
    low = Path(path).name.lower()
    for ext, what in ((".bz2", "bz2"), (".xz", "xz"), (".zst", "zstd"), (".zip", "zip")):
        if low.endswith(ext):
            msg = f"{path}: this file is {what}-compressed ({ext}); convert it to gzip (.gz) or decompress it"
            raise DataError(msg)
    name = _strip_ext(low)
    for ext, f in (
        (".tsv", "tsv"),
        (".txt", "tsv"),
        (".tab", "tsv"),
        (".csv", "csv"),
        (".gct", "gct"),
        (".h5ad", "h5ad"),
    ):
        if name.endswith(ext):
            return f
    msg = f"{path}: cannot tell the format from the file name; expected .tsv, .txt, .csv, .gct or .h5ad (optionally .gz), or set the dataset's `format` key"
    raise DataError(msg)


@_names_errors
def _read_raw_table(
    path: Path, sep: str, skiprows: int = 0, *, text: str | None = None, max_expanded_bytes: int | None = None
) -> pd.DataFrame:
    if text is None:
        text = _read_text(path, max_expanded_bytes)
    if not text.strip():
        msg = f"{path}: file is empty"
        raise DataError(msg)
    lines = [ln for ln in text.splitlines()[skiprows : skiprows + 3] if ln.strip()]
    if len(lines) >= 2 and lines[0].count(sep) == lines[1].count(sep) - 1:
        # R write.table style: the header has no cell above the row names
        head, _, rest = text.partition("\n") if skiprows == 0 else ("", "", "")
        if skiprows == 0:
            text = sep + head + "\n" + rest
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            header=None,
            dtype=str,
            keep_default_na=False,
            skiprows=skiprows,
            skip_blank_lines=True,
            quotechar='"',
        )
    except pd.errors.EmptyDataError:
        msg = f"{path}: file is empty"
        raise DataError(msg) from None
    except pd.errors.ParserError as exc:
        raise _parse_error(
            path, text, sep, exc, "a {}-separated table".format("tab" if sep == chr(9) else repr(sep))
        ) from None
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
        return DataError(
            f"{path}: unclosed quote: the '\"' opened on line {line} is never closed (a quoted field runs to the end of the file)"
        )
    return DataError(f"{path}: cannot parse as {what}: {exc}")


def _to_float(
    values: pd.DataFrame, path: Path, row_ids, col_ids, row_kind: str, col_kind: str, line0: int
) -> np.ndarray:
    """Convert a string DataFrame to float64; errors name row, column and line."""
    raw = values.to_numpy(dtype=object)
    flat = pd.Series(raw.ravel())
    num = pd.to_numeric(flat, errors="coerce").to_numpy(dtype=np.float64)
    # only the cells that did not read as numbers are looked at as text (a lower-cased copy of
    # every cell was most of the parse's peak memory: studies/size-limits.md)
    at = np.flatnonzero(np.isnan(num))
    sub = flat.iloc[at]
    low = sub.str.strip().str.lower()
    is_na = low.isin(_NA_STRINGS).to_numpy() | sub.isna().to_numpy()
    bad = np.zeros(num.size, dtype=bool)
    bad[at[~is_na & ~low.isin({"nan", "-nan"}).to_numpy()]] = True
    shape = raw.shape
    if bad.any():
        i, j = np.unravel_index(int(np.flatnonzero(bad)[0]), shape)
        if _overflows(raw[i, j]):
            msg = (
                f"{path}: value {raw[i, j]!r} at {row_kind} {row_ids[i]!r} (line {line0 + i}), "
                f"{col_kind} {col_ids[j]!r} (column {j + 2}) overflows: its magnitude is beyond the largest "
                f"float64 (about 1.8e308); expected a finite number ({int(bad.sum())} cells not read as numbers)"
            )
            raise DataError(msg)
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


_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _overflows(cell) -> bool:
    """Whether a cell is a decimal number too large for float64 (``1e309``; pandas reads it as NaN)."""
    text = str(cell).strip()
    if not _DECIMAL.fullmatch(text):
        return False
    try:
        return math.isinf(float(text))
    except (ValueError, OverflowError):
        return False


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


def _gct_head(path: Path, text: str) -> tuple[int, int]:
    """Check a GCT 1.2 file's first two lines; return the (rows, sample columns) its line 2 gives.

    A GCT 1.2 file starts with ``#1.2``, then the numbers of data rows and of
    sample columns (https://software.broadinstitute.org/cancer/software/gsea/wiki/index.php/Data_formats).
    Without the version line the dimension line would be skipped as the
    version and the first data row read as the header, silently.
    """
    lines = text.split("\n", 2)
    first = lines[0].rstrip("\r")
    fields = first.split("\t")
    if fields[0].strip() != "#1.2" or any(f.strip() for f in fields[1:]):
        if fields[0].strip().startswith("#1.3"):
            msg = f"{path}: line 1 is {first[:60]!r}: GCT version 1.3 is not read here; save the file as GCT 1.2 or as a .tsv"
        else:
            msg = (
                f"{path}: line 1 is {first[:60]!r}, expected '#1.2': a .gct file starts with its version line, "
                "then a line with the numbers of rows and sample columns (without them a data row would be read as the header)"
            )
        raise DataError(msg)
    second = lines[1].rstrip("\r") if len(lines) > 1 else ""
    dims = [f.strip() for f in second.split("\t") if f.strip()]
    if len(dims) != 2 or not all(d.isdigit() for d in dims):
        msg = f"{path}: line 2 is {second[:60]!r}, expected the numbers of rows and sample columns (two whole numbers, tab-separated) of a GCT 1.2 file"
        raise DataError(msg)
    return int(dims[0]), int(dims[1])


@dataclass
class Matrix:
    """A parsed matrix: X (n_samples, n_genes), sample ids, gene ids, var extras.

    X is a float64 ndarray, or a float64 CSR matrix for a sparse ``.h5ad``.
    """

    X: np.ndarray
    samples: list
    genes: list
    var: pd.DataFrame
    obs: pd.DataFrame | None = None


@_names_errors
def read_matrix(
    path,
    *,
    fmt: str = "auto",
    orientation: str = "genes_by_samples",
    layer: str | None = None,
    max_expanded_bytes: int | None = None,
    mem_mb: float | None = None,
    keys: dict | None = None,
) -> Matrix:
    """Read a generic expression matrix (.tsv/.txt/.csv[.gz], .gct, .h5ad).

    ``layer`` (.h5ad only): read ``adata.layers[layer]`` instead of ``adata.X``
    (e.g. ``"counts"``, where scanpy users keep raw counts).

    ``max_expanded_bytes``: the largest size a gzip-compressed text file may
    expand to (default :data:`MAX_EXPANDED_BYTES`, 10 GB).  A text matrix
    whose parsing would take more memory than ``mem_mb`` (MB; None: the
    machine's available memory) less what the process holds is refused
    before pandas parses it (:mod:`glfs_workflow.memory`), and so is an
    ``.h5ad`` whose X declares more (its shape and dtype, read before its
    values).  ``keys`` name in
    the messages how to raise either limit (``{"expanded": ..., "memory": ...}``,
    e.g. config keys; default the arguments' names).  A UTF-8
    byte-order mark is dropped; UTF-16 text and bz2/xz/zip files are refused
    with a message that says so.  A ``.gct`` must start with ``#1.2`` and a
    dimension line that agrees with its body.

    Text files have one header line (first cell = the row-id column name,
    then column ids) and one id column.  ``orientation`` says whether rows are
    genes (``genes_by_samples``) or samples.  The result is always oriented
    samples x genes.  More samples than genes is allowed (logged by
    :func:`prepare_dataset`), never silently transposed.
    """
    path = Path(path)
    fmt = infer_format(path, fmt)
    keys = {"expanded": "max_expanded_bytes", "memory": "mem_mb", **(keys or {})}
    budget = ParseBudget(*job_memory_bytes(mem_mb), keys["memory"], "," if fmt == "csv" else "\t")
    if fmt == "h5ad":
        from .h5ad import read_h5ad

        return read_h5ad(path, layer, budget)
    if layer is not None:
        msg = f"{path}: `layer` ({layer!r}) applies only to .h5ad files; this one is read as {fmt}"
        raise DataError(msg)
    if orientation not in ("genes_by_samples", "samples_by_genes"):
        msg = f"orientation must be 'genes_by_samples' or 'samples_by_genes'; got {orientation!r}"
        raise DataError(msg)
    sep = "," if fmt == "csv" else "\t"
    skip = 2 if fmt == "gct" else 0
    text = _read_text(path, max_expanded_bytes, budget, keys["expanded"])
    gct_dims = _gct_head(path, text) if fmt == "gct" and text.strip() else None
    df = _read_raw_table(path, sep, skiprows=skip, text=text)
    del text
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
    if gct_dims is not None and gct_dims != (body.shape[0], len(col_ids)):
        msg = (
            f"{path}: line 2 says {gct_dims[0]} rows x {gct_dims[1]} sample columns, but the file has "
            f"{body.shape[0]} data rows (lines 4-{3 + body.shape[0]}) and {len(col_ids)} sample columns (line 3)"
        )
        raise DataError(msg)
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


@_names_errors
def read_table(
    path, *, max_expanded_bytes: int | None = None, mem_mb: float | None = None, keys: dict | None = None
) -> pd.DataFrame:
    """A small annotation table (.csv = comma, otherwise tab), all strings.

    Read as :func:`read_matrix` reads text (UTF-8, a byte-order mark dropped,
    gzip expanded to at most ``max_expanded_bytes``, refused before it is parsed
    when parsing would take more than the job's ``mem_mb``, or the machine's
    available memory; ``keys`` as :func:`read_matrix`'s, the config keys named).
    """
    path = Path(path)
    sep = "," if _strip_ext(path.name.lower()).endswith(".csv") else "\t"
    keys = {"expanded": "max_expanded_bytes", "memory": "mem_mb", **(keys or {})}
    budget = ParseBudget(*job_memory_bytes(mem_mb), keys["memory"], sep)
    text = _read_text(path, max_expanded_bytes, budget, keys["expanded"])
    if not text.strip():
        msg = f"{path}: file is empty"
        raise DataError(msg)
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False)
    except pd.errors.ParserError as exc:
        raise _parse_error(path, text, sep, exc, "a table") from None
    if df.shape[0] == 0:
        msg = f"{path}: header only, no rows"
        raise DataError(msg)
    return df


@_names_errors
def read_labels(
    path,
    sample_column: str = "sample",
    label_column: str = "label",
    *,
    max_expanded_bytes: int | None = None,
    mem_mb: float | None = None,
    keys: dict | None = None,
) -> pd.Series:
    """Labels table -> Series (index = sample id, value = label or NaN); read as :func:`read_table`."""
    path = Path(path)
    df = read_table(path, max_expanded_bytes=max_expanded_bytes, mem_mb=mem_mb, keys=keys)
    for key, col in (("sample_column", sample_column), ("label_column", label_column)):
        if col not in df.columns:
            msg = f"{path}: column {col!r} (config key {key}) not found; columns are {list(df.columns)[:20]}"
            raise DataError(msg)
    ids = df[sample_column].astype(str).str.strip()
    _check_unique(ids.tolist(), path, "sample", f"column {sample_column!r}")
    lab = df[label_column].astype(str).str.strip()
    lab = lab.where(~lab.str.lower().isin(_NA_STRINGS))
    return pd.Series(lab.to_numpy(), index=pd.Index(ids.tolist()), name="label")


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


def read_graph(path, n_samples: int):
    """The workflow's graph file (``scipy.sparse.save_npz``) as a checked float64 CSR matrix.

    The graph gets the structure check X gets (:func:`glfs.core.check_graph`): an index outside the
    matrix, a non-monotone ``indptr``, a wrong shape or an unreadable file is a :class:`DataError`
    naming the file, never a crash in scipy's C++ routines.
    """
    import scipy.sparse as sp

    from glfs.core import check_graph

    try:
        W = sp.load_npz(path)
    except Exception as exc:  # noqa: BLE001 - numpy, zipfile and scipy raise many types
        msg = f"{path}: cannot read as a scipy sparse graph (.npz) ({type(exc).__name__}: {exc})"
        raise DataError(msg) from None
    try:
        return check_graph(W, n_samples, name=str(path))
    except ValueError as exc:
        raise DataError(str(exc)) from None
