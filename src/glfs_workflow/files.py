"""Atomic output files and workflow tables (TSV/JSON).

Writers are atomic (temporary file in the same directory, fsync,
``os.replace``), so a failed step never leaves a partial file where a later
run would trust it; a full disk becomes one :class:`DiskFullError` line.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from glfs.api import plain_value

log = logging.getLogger(__name__)


class DiskFullError(OSError):
    """The device filled up while an output was written (errno ENOSPC); the message names the file."""

    def __init__(self, dest, detail: str = ""):
        super().__init__(f"no space left on device while writing {dest}{f' ({detail})' if detail else ''}")
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


def h5ad_bytes(adata) -> int:
    """About the bytes of ``adata`` written as an uncompressed .h5ad: its matrices' values and indices
    (X, raw, layers, obsm, varm, obsp, varp) and its obs/var frames."""
    import scipy.sparse as sp

    def size(m):
        if m is None:
            return 0
        if sp.issparse(m):
            return m.data.nbytes + m.indices.nbytes + m.indptr.nbytes
        return int(getattr(m, "nbytes", 0))

    stores = (adata.layers, adata.obsm, adata.varm, adata.obsp, adata.varp)
    total = size(adata.X) + (size(adata.raw.X) if adata.raw is not None else 0)
    total += sum(size(v) for store in stores for v in store.values())
    return total + int(adata.obs.memory_usage(deep=True).sum() + adata.var.memory_usage(deep=True).sum())


def check_space(dest, need: int) -> None:
    """:class:`DiskFullError` naming ``dest`` when its directory's device has less than ``need`` bytes free.

    Checked before an .h5ad is written: h5py's failure on a disk that fills up
    while it writes ends the process with SIGSEGV when the objects of the
    failed write are freed (h5py 3.16, HDF5 2.0; earlier builds printed
    hundreds of lines of HDF5 errors), so the common case, too little space to
    begin with, is refused before the write.
    """
    free = shutil.disk_usage(Path(dest).parent).free
    if need > free:
        raise DiskFullError(dest, f"about {need} bytes needed, {free} free; refused before writing")


def write_h5ad_atomic(adata, dest) -> None:
    """Write an AnnData to ``dest`` atomically (temporary .h5ad, fsync, rename), after checking the space."""
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    check_space(dest, int(1.05 * h5ad_bytes(adata)) + 2**20)
    with _atomic_path(dest, suffix=".h5ad") as tmp:
        adata.write_h5ad(tmp)


@contextlib.contextmanager
def atomic_path(path, suffix=None):
    """Yield a temporary path (str) next to ``path``; fsync and rename it onto ``path`` only on success.

    A failing writer leaves neither a partial ``path`` nor the temporary file;
    temporaries of an earlier killed run are removed first.
    """
    path = Path(path)
    with _atomic_path(path, suffix=suffix if suffix is not None else "".join(path.suffixes)) as tmp:
        yield str(tmp)


def write_tsv(df: pd.DataFrame, path) -> None:
    """Write a DataFrame as TSV (no index), atomically."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, sep="\t", index=False, na_rep="NaN")


def write_json(obj, path) -> None:
    """Write plain data as JSON, atomically."""
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        json.dump(plain_value(obj), fh, indent=1, sort_keys=True, default=str)


TEXT_COLUMNS = ("gene", "method", "dataset", "sample", "label", "rule", "job", "variant", "item")


def read_tsv(path) -> pd.DataFrame:
    """Read a table written by :func:`write_tsv`: id columns as exact text, the rest parsed.

    The id columns (:data:`TEXT_COLUMNS`) keep every value as written
    (pandas' defaults would turn ``NA``/``null`` into NaN and ``007`` into 7);
    in the other columns only ``NaN``, ``nan`` and empty cells are missing.
    Quoted cells (ids with tabs or newlines) are read back exactly.
    """
    header = pd.read_csv(path, sep="\t", nrows=0).columns
    text = [c for c in header if c in TEXT_COLUMNS]
    return pd.read_csv(
        path,
        sep="\t",
        dtype={c: str for c in text},
        keep_default_na=False,
        na_values={c: ["NaN", "nan", ""] for c in header if c not in text},
    )


def concat_tsv(inputs, output) -> pd.DataFrame:
    """Concatenate TSV tables (same columns) into one, written atomically."""
    frames = [read_tsv(p) for p in inputs]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    write_tsv(df, output)
    return df
