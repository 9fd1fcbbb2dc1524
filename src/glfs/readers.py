"""Read expression matrices and tables with precise errors.

X is (n_samples, n_features) = (patients or cells, genes).  Errors are
:class:`DataError` (a ``ValueError``) whose message names the file and the
row/column, and what was expected.  Pure reading: no network, no writing
(the workflow's downloads, provenance and atomic writers are in
``glfs_workflow``).
"""

from __future__ import annotations

import gzip
import io
import logging
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)


_NA_STRINGS = {"", "na", "nan", "n/a", "null", "none", "-nan"}


class DataError(ValueError):
    """Bad input data: the message names the file and the row/column or key."""


def _open_text(path: Path):
    """Text handle for a plain or gzip file; a corrupt gzip raises DataError on read."""
    if path.suffix == ".gz" or _is_gzip(path):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
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
            io.StringIO(text), sep=sep, header=None, dtype=str, keep_default_na=False,
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


def read_matrix(path, *, fmt: str = "auto", orientation: str = "genes_by_samples", layer: str | None = None) -> Matrix:
    """Read a generic expression matrix (.tsv/.txt/.csv[.gz], .gct, .h5ad).

    ``layer`` (.h5ad only): read ``adata.layers[layer]`` instead of ``adata.X``
    (e.g. ``"counts"``, where scanpy users keep raw counts).

    Text files have one header line (first cell = the row-id column name,
    then column ids) and one id column.  ``orientation`` says whether rows are
    genes (``genes_by_samples``) or samples.  The result is always oriented
    samples x genes.  More samples than genes is allowed (logged by
    :func:`prepare_dataset`), never silently transposed.
    """
    path = Path(path)
    fmt = infer_format(path, fmt)
    if fmt == "h5ad":
        return _read_h5ad(path, layer)
    if layer is not None:
        msg = f"{path}: `layer` ({layer!r}) applies only to .h5ad files; this one is read as {fmt}"
        raise DataError(msg)
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


def _read_h5ad(path: Path, layer: str | None = None) -> Matrix:
    import anndata as ad
    import scipy.sparse as sp

    try:
        a = ad.read_h5ad(path)
    except Exception as exc:  # noqa: BLE001 - h5py raises many types
        msg = f"{path}: cannot read as .h5ad ({type(exc).__name__}: {exc})"
        raise DataError(msg) from None
    if layer is not None:
        if layer not in a.layers:
            msg = f"{path}: no layer {layer!r} (config key `layer`); its layers are {list(a.layers)}"
            raise DataError(msg)
        X = a.layers[layer]
    elif a.X is None:
        msg = (
            f"{path}: X is empty (None); name the layer that holds the expression with the dataset's "
            f"`layer` key (its layers are {list(a.layers)})"
        )
        raise DataError(msg)
    else:
        X = a.X
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
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


def read_table(path) -> pd.DataFrame:
    """A small annotation table (.csv = comma, otherwise tab), all strings."""
    path = Path(path)
    sep = "," if _strip_ext(path.name.lower()).endswith(".csv") else "\t"
    text = _read_text(path)
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
