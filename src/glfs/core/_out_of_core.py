"""An out-of-core X, read in blocks: an AnnData backed matrix, an h5py dataset or a dask array.

:func:`glfs.core._validation.check_X` (``lazy=True``) wraps such an X in an :class:`OutOfCore` and
reads it once; the streaming scores (the methods with ``glfs.METHODS[m].streams``) then take it gene block by gene
block, each block at most :data:`glfs.core.limits.STREAM_VALUES` values (a user setting: raise it on a
machine with more memory for fewer, larger blocks).  A row-stored sparse X (CSR file, dask array) with 3 or more gene blocks is split
into them in one pass through temporary files (:data:`glfs.core.limits.SPILL`), instead of being read once per
block (docs/methods/size-limits.md, "Size limits", "Out of core").  Also here: the checks of
a matrix's values and shape that :func:`~glfs.core._validation.check_X` shares with
:meth:`OutOfCore.validate` (finite, real, at least 2 samples and 1 feature).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid

import numpy as np
import scipy.sparse as sp

from glfs.core import limits
from glfs.core._cluster import BLOCKS_PER_WORKER, active_client, map_chunks
from glfs.core._cluster_memory import n_workers
from glfs.core._sparse_kernels import _kernel
from glfs.core._structure import canonical, check_indptr, check_sparse_structure, check_stored_values

log = logging.getLogger(__name__)

__all__ = ["OutOfCore", "out_of_core_kind", "cluster_client", "gene_parts"]


#: Free space left in the temporary directory after the split (bytes); below it X is read once per gene block.
SPILL_HEADROOM = 2**30


def _count_nonfinite(values) -> int:
    """Number of NaN/inf entries, checked in slices of 2**22 values (no full-size boolean temporary)."""
    flat = values.reshape(-1) if values.flags.c_contiguous or values.flags.f_contiguous else None
    if flat is None:  # a strided view: per row block
        step = max(1, 2**22 // max(1, values.shape[-1]))
        return sum(
            int(values[i : i + step].size - np.count_nonzero(np.isfinite(values[i : i + step])))
            for i in range(0, values.shape[0], step)
        )
    bad = 0
    for i in range(0, flat.size, 2**22):
        part = flat[i : i + 2**22]
        bad += int(part.size - np.count_nonzero(np.isfinite(part)))
    return bad


def out_of_core_kind(X) -> str | None:
    """ "backed" (an AnnData backed sparse matrix, or an h5py dataset), "dask" (a dask array), or None.

    Duck-typed: the core modules import neither anndata, h5py nor dask.
    """
    module = type(X).__module__ or ""
    if module.startswith("dask") and hasattr(X, "chunks") and hasattr(X, "compute"):
        return "dask"
    if getattr(X, "format", None) in ("csr", "csc") and hasattr(X, "to_memory") and not sp.issparse(X):
        return "backed"
    if module.startswith("h5py") and getattr(X, "ndim", 0) == 2:
        return "backed"
    return None


class OutOfCore:
    """An out-of-core X of shape (n_samples, n_features), read in blocks through its own library.

    An AnnData backed sparse matrix (``anndata.read_h5ad(f, backed="r").X``, CSR or CSC: rows or
    columns sliced by anndata), an h5py dataset (a backed dense X), or a dask array (blocks
    computed by dask).  :func:`check_X` (``lazy=True``) builds it and reads it once
    (:meth:`validate`); :meth:`column_blocks` then hands the scores gene blocks in memory, each
    at most :data:`glfs.core.limits.STREAM_VALUES` values, so the memory does not grow with the matrix.
    Attributes after validation: ``max_abs`` (largest |value|), ``gene_nnz`` (non-zeros per
    gene, sparse only), ``nnz``.
    """

    def __init__(self, source, name: str = "X"):
        self.kind = out_of_core_kind(source)
        _check_known_shape(source, self.kind, name)
        self.stored_dtype = np.dtype(source.dtype)
        if self.stored_dtype.kind in "bf" and self.stored_dtype not in (np.float32, np.float64):
            # bool, float16, long double: the kernels (numba, scipy.sparse) take none of them; each block is
            # cast to float64 as it is read, as check_X casts an X in memory (the same scores)
            source = source.astype(np.float64) if self.kind == "dask" else _AsFloat64(source)
        self.source = source
        self.shape = tuple(int(s) for s in source.shape)
        self.dtype = np.dtype(source.dtype)
        fmt = getattr(source, "format", None)
        if self.kind == "dask":
            meta = getattr(source, "_meta", None)
            fmt = "sparse" if sp.issparse(meta) else "dense"
        self.format = fmt if fmt in ("csr", "csc", "sparse") else "dense"
        self.ndim = 2
        self.max_abs = None
        self.gene_nnz = None
        self.nnz = None
        self.chunk_values = None
        self.name = "X"
        self._warned = False  # said once that the blocks are not canonical
        self.counts = None

    def __getitem__(self, rows):
        """The cells ``rows`` (sorted int indices) of a dask X, as an :class:`OutOfCore` still to validate.

        One row chunk per chunk of X that holds some of them, the column chunks kept (a batch's
        cells for the batch-aware scores, ``glfs.scores._batches``): nothing is read here.  Only rows
        of a dask X: an AnnData backed X would be read into memory by its own slicing.
        """
        idx = np.asarray(rows) if not isinstance(rows, tuple) else None
        if self.kind != "dask" or idx is None or idx.ndim != 1 or idx.dtype.kind not in "iu":
            msg = (
                f"an out-of-core X ({self.describe()}) can only be cut to a set of its cells (sorted int indices) "
                f"when it is a dask array; got {type(rows).__name__} on {self.kind} storage: load it first "
                f"(adata.to_memory(); {self.memory_hint()}) or pass a dask array"
            )
            raise ValueError(msg)
        import dask.array as da

        starts = np.r_[0, np.cumsum(self.source.chunks[0])]
        parts = []
        for i in range(len(starts) - 1):
            local = idx[(idx >= starts[i]) & (idx < starts[i + 1])] - starts[i]
            if local.size:
                parts.append(self.source.blocks[i][local])
        return OutOfCore(da.concatenate(parts, axis=0), self.name)

    def describe(self) -> str:
        what = {"backed": "an AnnData backed", "dask": "a dask"}[self.kind]
        fmt = {"csr": "CSR", "csc": "CSC", "sparse": "sparse", "dense": "dense"}[self.format]
        cast = f" read as {self.dtype}" if self.dtype != self.stored_dtype else ""
        return f"{what} {fmt} matrix {self.shape[0]} x {self.shape[1]}, {self.stored_dtype}{cast}"

    def memory_hint(self) -> str:
        n, d = self.shape
        if self.format == "dense":
            return f"{n * d * self.dtype.itemsize / 2**30:.1f} GiB"
        if self.nnz is not None:
            return f"{self.nnz * (self.dtype.itemsize + 4) / 2**30:.1f} GiB as a sparse matrix"
        return "its size as a sparse matrix"

    # -- reading ------------------------------------------------------------------------------
    def _natural_blocks(self):
        """(axis, slice, block in memory) over the whole matrix in the order its storage favours:
        row blocks (CSR, dense, dask) or column blocks (CSC).  A sparse block is checked
        (:func:`~glfs.core._structure.check_sparse_structure`) before it is handed on, on every pass,
        and made canonical (duplicates summed, on a copy), so no kernel sees a bad index."""
        label = self._label(self.name)
        for axis, sl, blk in self._raw_blocks():
            if sp.issparse(blk):
                check_sparse_structure(blk, label, row0=sl.start if axis == 0 else 0)
                fixed = canonical(blk, label, warn=not self._warned)
                self._warned = self._warned or fixed is not blk
                blk = fixed
            yield axis, sl, blk

    def _raw_blocks(self):
        """The blocks of :meth:`_natural_blocks` as the source gives them."""
        n, d = self.shape
        src = self.source
        if self.kind == "dask":
            r0 = 0
            for i in range(src.numblocks[0]):
                blk = src.blocks[i].compute()
                r1 = r0 + blk.shape[0]
                yield 0, slice(r0, r1), blk
                r0 = r1
            return
        axis = 1 if self.format == "csc" else 0
        total, other = (d, n) if axis else (n, d)
        step = max(1, limits.STREAM_VALUES // (32 * other))  # first guess: 25 % non-zeros, STREAM_VALUES / 8 a block
        i = 0
        while i < total:
            sl = slice(i, min(total, i + step))
            blk = src[:, sl] if axis else src[sl]
            yield axis, sl, blk
            i = sl.stop
            if sp.issparse(blk) and blk.nnz:  # adapt to the density seen: about STREAM_VALUES / 8 per block
                step = max(1, int(step * (limits.STREAM_VALUES / 8) / blk.nnz))

    def validate(self, name: str = "X"):
        """Read the matrix once: real, finite, at least 2 samples and 1 gene; record max |x| and non-zeros per gene.

        Nothing is kept between calls: a dask array's name names its tasks, not the bytes they read (a zarr
        store rewritten under the same path keeps its name), so every call on a dask X reads it again
        (:func:`glfs.select` and :func:`glfs.tl.select` once per call, the graph and the score sharing it).
        """
        _refuse_dtype(self.dtype, name)
        if self.dtype.kind not in "fiub":
            msg = f"{name} must be numeric of shape (n_samples, n_features); got an out-of-core matrix of dtype {self.dtype}"
            raise ValueError(msg)
        _check_size(self.shape, name)
        n, d = self.shape
        client = cluster_client(self)
        if client is not None or (self.kind == "dask" and len(self.source.chunks[1]) > 1):  # the tiles one by one
            return self._validate_on_cluster(client, name)
        top, nnz, counts = 0.0, 0, True
        gene_nnz = np.zeros(d, np.int64) if self.format != "dense" else None
        self.name = name
        label = self._label(name)
        self._check_stored_index(label)
        for axis, sl, blk in self._natural_blocks():  # each sparse block checked there (the file's indptr: above)
            if gene_nnz is not None and axis == 0:  # a sparse row block: one scan (counts, NaN/inf, max |x|)
                blk = sp.csr_matrix(blk)
                vals = blk.data.view(np.uint8) if blk.data.dtype == bool else blk.data  # numba: no float(bool)
                cnt, bad, big = _kernel("scan")(blk.indices, vals, d)
                gene_nnz += cnt
            else:
                vals = blk.data if sp.issparse(blk) else np.asarray(blk)
                bad = _count_nonfinite(vals)
                big = max(float(vals.max()), -float(vals.min())) if vals.size and not bad else 0.0
                if gene_nnz is not None:
                    blk = sp.csc_matrix(blk)
                    gene_nnz[sl] += np.diff(blk.indptr)
            if bad:
                if sp.issparse(blk):  # names the first bad entry
                    check_stored_values(blk, label, row0=sl.start if axis == 0 else 0)
                where = "rows" if axis == 0 else "columns"
                msg = f"{label} must contain only finite values; got {bad} NaN or infinite entries in {where} {sl.start}-{sl.stop - 1}"
                raise ValueError(msg)
            top = max(top, big)
            nnz += blk.nnz if gene_nnz is not None else 0
            counts = counts and _all_counts(vals)
        self.max_abs, self.gene_nnz, self.counts = top, gene_nnz, counts
        self.nnz = nnz if gene_nnz is not None else n * d
        log.info("%s: read %s once (%d values stored, max |x| %.4g)", name, self.describe(), self.nnz, top)
        return self

    def _label(self, name: str) -> str:
        """``name``, and for an AnnData backed matrix the file and group it is read from."""
        group = getattr(self.source, "group", None)
        filename = getattr(getattr(group, "file", None), "filename", None)
        return f"{name} ({filename}:{group.name})" if filename else name

    def _check_stored_index(self, label: str) -> None:
        """The index pointer of an AnnData backed CSR/CSC file, read whole (8 bytes per row or column),
        against the file's own shape and stored values: anndata slices the rows by it as stored."""
        group = getattr(self.source, "group", None)
        if self.kind != "backed" or group is None or self.format not in ("csr", "csc"):
            return
        try:
            indptr, n_idx, n_data = group["indptr"][()], group["indices"].shape[0], group["data"].shape[0]
        except (KeyError, OSError, AttributeError) as e:
            msg = f"{label}: cannot read the index arrays of the sparse matrix ({type(e).__name__}: {e})"
            raise ValueError(msg) from None
        if n_idx != n_data:
            msg = f"{label} is not a valid {self.format.upper()} matrix: it has {n_idx} indices but {n_data} stored values"
            raise ValueError(msg)
        check_indptr(indptr, n_idx, self.shape, self.format, label)

    def _validate_on_cluster(self, client, name):
        """:meth:`validate` with every chunk scanned by a task on the dask cluster (glfs.core._cluster), or
        with ``client`` None by this process chunk by chunk (a dask X of 2-D tiles: no row block assembled)."""
        n, d = self.shape
        sparse = self.format != "dense"
        gene_nnz = np.zeros(d, np.int64) if sparse else None
        top, nnz, counts = 0.0, 0, True
        self.name = name
        shared = {"sparse": sparse, "label": self._label(name)}
        found = (
            map_chunks(self, _scan_chunk, shared, client, f"validating {name}")
            if client is not None
            else self._scanned_here(shared)
        )
        per_rows = {}
        for rows, cols, (cnt, bad, big, is_counts) in found:
            if bad:
                msg = (
                    f"{name} must contain only finite values; got {bad} NaN or infinite entries in rows "
                    f"{rows.start}-{rows.stop - 1}, columns {cols.start}-{cols.stop - 1}"
                )
                raise ValueError(msg)
            top, counts = max(top, big), counts and is_counts
            if sparse:
                gene_nnz[cols] += cnt
                nnz += int(cnt.sum())
                per_rows[rows.start] = per_rows.get(rows.start, 0) + int(cnt.sum())
        self.max_abs, self.gene_nnz, self.counts = top, gene_nnz, counts
        # stored values of the largest row of chunks (what a task splitting it holds, glfs.core._cluster)
        self.chunk_values = max(per_rows.values(), default=0) if sparse else max(self.source.chunks[0]) * d
        self.nnz = nnz if sparse else n * d
        log.info(
            "%s: scanned %s once %s (%d values stored, max |x| %.4g)",
            name,
            self.describe(),
            "on the dask cluster" if client is not None else "tile by tile",
            self.nnz,
            top,
        )
        return self

    def _scanned_here(self, shared):
        """(rows, cols, :func:`_scan_chunk` of the chunk) for every chunk of the dask X, read one at a time here."""
        src = self.source
        starts = [np.r_[0, np.cumsum(c)] for c in src.chunks]
        for i in range(src.numblocks[0]):
            for j in range(src.numblocks[1]):
                rows = slice(int(starts[0][i]), int(starts[0][i + 1]))
                cols = slice(int(starts[1][j]), int(starts[1][j + 1]))
                yield rows, cols, _scan_chunk(src.blocks[i, j].compute(), rows, cols, **shared)

    def column_blocks(self, dense_genes: int | None = None, max_values: int | None = None):
        """(column slice, block) over the genes: each block an in-memory (n_samples, b) matrix.

        Sparse: at most ``max_values`` (default :data:`glfs.core.limits.STREAM_VALUES`) non-zeros per block.  A CSC
        file is sliced by columns (anndata reads only those); so is a dask array chunked by genes (2-D
        tiles), whose blocks are cut at the tiles' edges as on a cluster (:func:`gene_parts`).  A CSR file or dask array is read row
        block by row block: with 3 or more gene blocks, once, writing each gene block's columns to
        temporary files that are then read back block by block (:data:`glfs.core.limits.SPILL`); otherwise, or without
        the disk space, once per gene block, keeping that block's columns.  Each block is the same
        CSR matrix either way.  Dense: ``dense_genes`` genes per block (default max_values / n).
        """
        n, d = self.shape
        max_values = limits.STREAM_VALUES if max_values is None else int(max_values)
        if self.format == "dense":
            step = max(1, dense_genes or max_values // n)
            for j0 in range(0, d, step):
                sl = slice(j0, min(d, j0 + step))
                blk = self.source[:, sl]
                yield sl, (blk.compute() if self.kind == "dask" else np.asarray(blk))
            return
        if self.gene_nnz is None:
            self.validate()
        by_genes = self.kind == "dask" and len(self.source.chunks[1]) > 1  # 2-D tiles: a block = a column of tiles
        parts = (
            list(_merged(np.r_[0, np.cumsum(self.source.chunks[1])], self.gene_nnz, max_values))
            if by_genes
            else list(_gene_partition(self.gene_nnz, max_values))
        )
        row_stored = not (self.format == "csc" and self.kind == "backed") and not by_genes
        where = self._spill_dir(len(parts)) if row_stored else None
        if where is not None:
            yield from self._spilled_blocks(parts, where)
            return
        if len(parts) > 1 and row_stored:
            log.info(
                "%s is stored by rows: read once per gene block, %d times (blocks of at most %d values); "
                "a CSC file is read once (adata.X = adata.X.tocsc() before writing it), or raise "
                "glfs.core.limits.STREAM_VALUES (8 bytes of memory per value of a block)",
                self.describe(),
                len(parts),
                max_values,
            )
        for sl in parts:
            if not row_stored:
                blk = self.source[:, sl].compute() if by_genes else self.source[:, sl]
                check_sparse_structure(blk, self._label(self.name))
                yield sl, canonical(sp.csc_matrix(blk), self.name, warn=False)
            else:
                yield sl, self._gather_columns(sl)

    def _spill_bytes(self, n_blocks: int) -> int:
        """Disk space of the split of a row-stored sparse X into ``n_blocks`` gene blocks: values, int32
        column indices and int32 row lengths."""
        return self.nnz * (self.dtype.itemsize + 4) + 4 * n_blocks * self.shape[0]

    def _spill_dir(self, n_blocks: int) -> str | None:
        """The temporary directory to split the source into when :data:`glfs.core.limits.SPILL` is on and it would be
        read at least 3 times, None otherwise (also when that directory lacks the space: then said)."""
        if not limits.SPILL or n_blocks < 3:
            return None
        where = tempfile.gettempdir()
        need = self._spill_bytes(n_blocks)
        free = shutil.disk_usage(where).free
        if free < need + SPILL_HEADROOM:
            log.info(
                "%s: %.1f GiB free in %s, below the %.1f GiB (+ %.1f GiB headroom) of its split into %d gene blocks; "
                "reading it once per gene block instead (set TMPDIR to a larger disk)",
                self.describe(),
                free / 2**30,
                where,
                need / 2**30,
                SPILL_HEADROOM / 2**30,
                n_blocks,
            )
            return None
        return where

    def _spilled_blocks(self, parts, where):
        """The gene blocks ``parts`` of a row-stored source after one pass that appends each row block's
        columns to per-block temporary files; each block is then read back once and its files removed.
        The directory is removed when the blocks are done, on an error, or when the caller stops early."""
        n, k = self.shape[0], len(parts)
        starts = np.array([sl.start for sl in parts], np.int64)
        need = self._spill_bytes(k)
        log.info(
            "%s is stored by rows: splitting it into %d gene blocks in one pass, through %.1f GiB of "
            "temporary files in %s",
            self.describe(),
            k,
            need / 2**30,
            where,
        )
        t0 = time.perf_counter()
        # named before it is made, so that SIGTERM removes it from the moment it may exist
        tmp = os.path.join(where, f"glfs-split-{os.getpid()}-{uuid.uuid4().hex}")
        with _removed_on_sigterm(tmp):
            os.mkdir(tmp, 0o700)
            names = [os.path.join(tmp, str(p)) for p in range(k)]
            try:
                for _, _, blk in self._natural_blocks():
                    blk = sp.csr_matrix(blk)
                    if not blk.has_sorted_indices:  # the kernel cuts each row at the block starts
                        blk = blk.sorted_indices()
                    lengths, values, local, offset = _kernel("split")(
                        blk.indptr, blk.indices, blk.data.astype(self.dtype, copy=False), starts, k
                    )
                    for p, name in enumerate(names):
                        for ext, arr in (
                            ("len", lengths[p]),
                            ("val", values[offset[p] : offset[p + 1]]),
                            ("idx", local[offset[p] : offset[p + 1]]),
                        ):
                            with open(f"{name}.{ext}", "ab") as f:
                                arr.tofile(f)
            except OSError as e:
                msg = (
                    f"writing the split of {self.describe()} to {tmp} failed ({e}); it needs {need / 2**30:.1f} GiB: "
                    "set TMPDIR to a disk with the space, or glfs.core.limits.SPILL = False to read X once per gene block"
                )
                raise OSError(msg) from e
            log.info("split in %.1f s", time.perf_counter() - t0)
            for name, sl in zip(names, parts):
                indptr = np.zeros(n + 1, np.int64)
                np.cumsum(np.fromfile(f"{name}.len", np.int32), out=indptr[1:])
                data = np.fromfile(f"{name}.val", self.dtype)
                indices = np.fromfile(f"{name}.idx", np.int32)
                for ext in ("len", "val", "idx"):  # free the disk block by block
                    os.remove(f"{name}.{ext}")
                yield sl, sp.csr_matrix((data, indices, indptr), shape=(n, sl.stop - sl.start))

    def _gather_columns(self, sl):
        """The columns ``sl`` of a row-stored sparse source as one CSR matrix, in one pass over the row blocks."""
        n = self.shape[0]
        b = sl.stop - sl.start
        size = int(self.gene_nnz[sl].sum())
        data = np.empty(size, dtype=self.dtype)
        indices = np.empty(size, dtype=np.int32 if b < 2**31 else np.int64)
        indptr = np.zeros(n + 1, dtype=np.int64)
        pos = 0
        for _, rows, blk in self._natural_blocks():
            part = sp.csr_matrix(blk)[:, sl]
            k = part.nnz
            data[pos : pos + k] = part.data
            indices[pos : pos + k] = part.indices
            indptr[rows.start + 1 : rows.stop + 1] = pos + np.cumsum(np.diff(part.indptr))
            pos += k
        return sp.csr_matrix((data, indices, indptr), shape=(n, b))


def _all_counts(vals) -> bool:
    """Whether the values are non-negative integers (raw counts), checked in slices of 2**22."""
    flat = np.asarray(vals).reshape(-1)
    return all(
        bool(p.min() >= 0) and np.array_equal(p, np.floor(p))
        for p in (flat[i : i + 2**22] for i in range(0, flat.size, 2**22))
    )


def _scan_chunk(blk, rows, cols, *, sparse, label):
    """(stored values per gene or None, NaN/inf count, max |x|, raw counts) of one chunk (a cluster task);
    a sparse chunk's structure is checked first, and duplicates summed on a copy (as :meth:`OutOfCore._natural_blocks`)."""
    if sparse and blk.format == "csc":  # a tile stored by genes: its counts per gene without a CSR copy
        check_sparse_structure(blk, label, row0=rows.start)
        blk = canonical(blk, label, warn=False)
        vals = blk.data.view(np.uint8) if blk.data.dtype == bool else blk.data
        bad = _count_nonfinite(vals)
        big = max(float(vals.max()), -float(vals.min())) if vals.size and not bad else 0.0
        return np.diff(blk.indptr).astype(np.int64), bad, big, bool(not bad and _all_counts(vals))
    if sparse:
        check_sparse_structure(blk, label, row0=rows.start)
        blk = canonical(sp.csr_matrix(blk), label, warn=False)
        vals = blk.data.view(np.uint8) if blk.data.dtype == bool else blk.data
        cnt, bad, big = _kernel("scan")(blk.indices, vals, blk.shape[1])
        return np.asarray(cnt, np.int64), int(bad), float(big), bool(not bad and _all_counts(vals))
    vals = np.asarray(blk)
    bad = _count_nonfinite(vals)
    big = max(float(vals.max()), -float(vals.min())) if vals.size and not bad else 0.0
    return None, int(bad), big, bool(not bad and _all_counts(vals))


@contextlib.contextmanager
def _removed_on_sigterm(path):
    """The directory ``path`` (the split's temporary files) is removed when the block ends, however it ends, and
    on SIGTERM (what SLURM and other schedulers send on timeout): then the handler removes it and ends the process
    as SIGTERM's default action does (the signal sent again).  The handler does not raise SystemExit for the
    ``finally`` blocks to clean up: raised wherever the main thread happens to be, such an exception can be
    swallowed (in a finaliser) or turned into another (in a numba call), and the process went on or ended with
    another status.  Installed only when SIGTERM still has its default action and this is the main thread (a
    handler of the caller's own, e.g. the workflow's, is left alone)."""
    main = threading.current_thread() is threading.main_thread()
    install = main and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    def terminate(signum, frame):
        shutil.rmtree(path, ignore_errors=True)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    if install:
        signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)  # the handler stays until it is done
        if install:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _gene_partition(gene_nnz, max_values):
    """Consecutive gene slices with at most max_values non-zeros each (a single gene may exceed it)."""
    d = gene_nnz.size
    csum = np.cumsum(gene_nnz)
    j0 = 0
    while j0 < d:
        base = csum[j0 - 1] if j0 else 0
        j1 = int(np.searchsorted(csum, base + max_values, side="right"))
        j1 = min(d, max(j1, j0 + 1))
        yield slice(j0, j1)
        j0 = j1


# ---- the checks of a matrix's values and shape shared with glfs.core._validation.check_X ----


class _DtypeRefused(ValueError):
    """X's dtype holds no real numbers (complex, text, structured): refused as it is, never cast."""


class _ComplexInput(_DtypeRefused):
    """X holds complex numbers (refused, never cast to their real part)."""


def _refuse_complex(dtype, name):
    if np.dtype(dtype).kind == "c":
        msg = f"{name} must be real; got complex values (dtype {np.dtype(dtype)}); pass X.real or abs(X) explicitly"
        raise _ComplexInput(msg)


def _refuse_dtype(dtype, name):
    """The one refusal of a matrix's dtype, by every face (``check_X``, :meth:`OutOfCore.validate`, ``glfs.tl``):
    complex values (:func:`_refuse_complex`), text (numpy would parse it as numbers, or fail in a ufunc) and
    structured records."""
    _refuse_complex(dtype, name)
    dt = np.dtype(dtype)
    if dt.kind in "SU":
        msg = (
            f"{name} must be numeric of shape (n_samples, n_features); got text (dtype {dt}); convert it first "
            "(X.astype(float)) if the text holds numbers"
        )
        raise _DtypeRefused(msg)
    if dt.kind == "V":
        fields = list(dt.names or ())
        how = f"pass one field (X[{fields[0]!r}])" if fields else "pass"
        msg = (
            f"{name} must be numeric of shape (n_samples, n_features); got a structured dtype {dt} "
            f"(fields {fields}); {how} or a plain numeric array"
        )
        raise _DtypeRefused(msg)


def _check_known_shape(source, kind, name):
    """A dask X must be 2-D with known chunk sizes (NaN after boolean indexing or a filter whose size dask cannot
    know): refused naming X, what was given and the fix, before anything reads its shape."""
    if kind != "dask":
        return
    if source.ndim != 2:
        msg = f"{name} must be 2-D (n_samples, n_features); got a dask array with shape {source.shape}"
        raise ValueError(msg)
    if any(np.isnan(c) for axis in source.chunks for c in axis):
        msg = (
            f"{name} is a dask array with unknown chunk sizes (shape {source.shape}, e.g. after boolean indexing); "
            "glfs reads it block by block and needs them: call X.compute_chunk_sizes() first"
        )
        raise ValueError(msg)


class _AsFloat64:
    """An AnnData backed matrix or h5py dataset whose slices are read as float64 (its bool, float16 or long double
    values cast block by block); ``format`` and ``group`` as the source's."""

    def __init__(self, source):
        self._source = source
        self.shape = source.shape
        self.dtype = np.dtype(np.float64)
        self.ndim = len(source.shape)
        self.format = getattr(source, "format", None)
        self.group = getattr(source, "group", None)

    def __getitem__(self, key):
        blk = self._source[key]
        return blk.astype(np.float64) if sp.issparse(blk) else np.asarray(blk, dtype=np.float64)


def _check_size(shape, name):
    if shape[0] < 2:
        msg = f"{name} must have at least 2 samples (rows); got shape {shape}"
        raise ValueError(msg)
    if shape[1] < 1:
        msg = f"{name} must have at least 1 feature (column); got shape {shape}"
        raise ValueError(msg)


def cluster_client(X, client=None):
    """The client to run the block work of X on (:mod:`glfs.core._cluster`): X an out-of-core dask X and a
    client active (``client``, else the current one); else None."""
    if not isinstance(X, OutOfCore) or X.kind != "dask":
        return None
    return active_client(client)


def gene_parts(X, max_values: int, client):
    """Consecutive gene slices of the out-of-core X for :func:`glfs.core._cluster.map_gene_blocks`: at most ``max_values``
    stored values each, and at least :data:`glfs.core._cluster.BLOCKS_PER_WORKER` blocks per worker where X has the genes.

    A dask X chunked by genes (CSC chunks of all cells, or 2-D tiles) gets blocks of whole column chunks
    (consecutive ones merged up to ``max_values``; a larger one cut within itself): each block is then
    the concatenation of (part of) one column of tiles, never of pieces of every row chunk (docs/guides/atlases.md)."""
    n, d = X.shape
    nnz = X.nnz if X.nnz is not None else n * d
    want = min(d, BLOCKS_PER_WORKER * n_workers(client))
    max_values = max(1, min(int(max_values), -(-int(nnz) // want)))
    per_gene = X.gene_nnz if X.gene_nnz is not None else np.full(d, n, np.int64)
    widths = X.source.chunks[1] if X.kind == "dask" else (d,)
    if len(widths) > 1:  # whole column chunks, merged
        return list(_merged(np.r_[0, np.cumsum(widths)], per_gene, max_values))
    if X.gene_nnz is not None:
        return list(_gene_partition(X.gene_nnz, max_values))
    step = max(1, max_values // n)
    return [slice(j, min(d, j + step)) for j in range(0, d, step)]


def _merged(edges, per_gene, max_values):
    """Slices of consecutive column chunks (``edges`` their gene boundaries) with at most ``max_values``
    stored values each (``per_gene``: stored values per gene); a larger chunk cut within itself."""
    csum = np.r_[0, np.cumsum(per_gene)]
    j0 = int(edges[0])
    for a, b in zip(edges[:-1], edges[1:]):
        a, b = int(a), int(b)
        if csum[b] - csum[a] > max_values:  # one chunk above the limit: its own blocks
            if j0 < a:
                yield slice(j0, a)
            yield from (slice(a + sl.start, a + sl.stop) for sl in _gene_partition(per_gene[a:b], max_values))
            j0 = b
        elif csum[b] - csum[j0] > max_values:
            yield slice(j0, a)
            j0 = a
    if j0 < int(edges[-1]):
        yield slice(j0, int(edges[-1]))
