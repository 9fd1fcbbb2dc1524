"""The structure of a sparse X, checked once at the door, before any kernel reads it.

A CSR/CSC matrix is three arrays that a file may hold in any state: ``indptr`` (one more than the
rows of CSR, the columns of CSC, starting at 0, non-decreasing, ending at the number of stored
values), ``indices`` (each in [0, number of columns of CSR, rows of CSC)) and ``data``.  scipy and
anndata take them as stored; the numba kernels (:mod:`glfs.core._sparse_kernels`) and scipy's C++
routines (``toarray``, ``tocsc``) then index memory with them, and a bad index ends the process
with SIGSEGV or, for a negative one, reads another gene's memory.  :func:`check_sparse_structure`
refuses such a matrix with a ``ValueError`` that names it and its first bad entry, in a few
vectorised passes over ``indptr`` and ``indices`` (docs/methods/size-limits.md, "Size limits": its cost at a
million cells).  :func:`canonical` then sums duplicate entries and sorts the indices of a copy
(never of the caller's matrix), so that a matrix stored with duplicates scores as the matrix it
means; a CSR matrix whose indices are unsorted within rows but hold no duplicate (a column subset
``X[:, genes]``, some scanpy outputs) is taken as it is: every consumer sums over the stored
entries, in any order (docs/methods/size-limits.md, "Size limits").  :func:`check_stored_values` finds the
first NaN/infinite stored value.
"""

from __future__ import annotations

import logging

import numpy as np

from glfs.core._sparse_kernels import _kernel

log = logging.getLogger(__name__)

__all__ = ["check_sparse_structure", "check_compressed", "check_indptr", "canonical", "check_stored_values"]


def _where(fmt: str, major: int, minor: int, row0: int = 0) -> str:
    """ "row i, column j" of a stored entry (CSR: major = row; CSC: major = column)."""
    if fmt == "csc":
        return f"row {minor}, column {major}"
    return f"row {major + row0}, column {minor}"


def _axes(shape, fmt: str):
    """(entries of indptr - 1, size of the indexed axis, name of the compressed axis, of the indexed one)."""
    if fmt == "csc":
        return shape[1], shape[0], "column", "row"
    return shape[0], shape[1], "row", "column"


def check_indptr(indptr, n_idx: int, shape, fmt: str, name: str, *, row0: int = 0) -> None:
    """Refuse a CSR/CSC ``indptr`` that does not describe a ``shape`` matrix of ``n_idx`` stored values:
    integers, one entry per row (CSR) or column (CSC) and one more, from 0 to ``n_idx``, non-decreasing."""
    n_major, _, axis, _ = _axes(shape, fmt)
    indptr = np.asarray(indptr)
    kind = f"a valid {fmt.upper()} matrix of shape {tuple(shape)}"
    if indptr.dtype.kind not in "iu":
        msg = f"{name} is not {kind}: its indptr must be integers; got dtype {indptr.dtype}"
        raise ValueError(msg)
    if indptr.ndim != 1 or indptr.size != n_major + 1:
        msg = (
            f"{name} is not {kind}: its indptr must have {n_major + 1} entries (one per {axis} + 1); got {indptr.size}"
        )
        raise ValueError(msg)
    if indptr[0] != 0 or indptr[-1] != n_idx:
        msg = (
            f"{name} is not {kind}: its indptr must start at 0 and end at the {n_idx} stored values; "
            f"got {int(indptr[0])} ... {int(indptr[-1])}"
        )
        raise ValueError(msg)
    step = np.diff(indptr)
    if step.size and step.min() < 0:
        k = int(np.argmax(step < 0))
        msg = (
            f"{name} is not {kind}: its indptr decreases at {axis} {k + row0} (indptr[{k}] = {int(indptr[k])}, "
            f"indptr[{k + 1}] = {int(indptr[k + 1])}); it must be non-decreasing"
        )
        raise ValueError(msg)


def check_compressed(indptr, indices, n_data: int, shape, fmt: str, name: str, *, row0: int = 0) -> None:
    """Refuse CSR/CSC arrays that do not describe a ``shape`` matrix (see :func:`check_sparse_structure`).

    ``row0``: the first row of this block in the whole matrix (a row block of a larger CSR
    matrix), so that the message names the row of the whole matrix.
    """
    _, n_minor, axis, other = _axes(shape, fmt)
    indices = np.asarray(indices)
    if indices.dtype.kind not in "iu" or indices.ndim != 1:
        msg = f"{name} is not a valid {fmt.upper()} matrix: its indices must be a 1-D integer array; got dtype {indices.dtype}"
        raise ValueError(msg)
    if indices.size != n_data:
        msg = f"{name} is not a valid {fmt.upper()} matrix: it has {indices.size} indices but {n_data} stored values"
        raise ValueError(msg)
    check_indptr(indptr, indices.size, shape, fmt, name, row0=row0)
    if indices.size and (indices.min() < 0 or indices.max() >= n_minor):
        t = int(np.flatnonzero((indices < 0) | (indices >= n_minor))[0])
        major = int(np.searchsorted(indptr, t, side="right") - 1)
        msg = (
            f"{name} is not a valid {fmt.upper()} matrix of shape {tuple(shape)}: stored value {t} "
            f"({axis} {major + (row0 if axis == 'row' else 0)}) has {other} index {int(indices[t])}, "
            f"outside [0, {n_minor}); the file or the arrays are corrupt"
        )
        raise ValueError(msg)


def check_sparse_structure(X, name: str = "X", *, row0: int = 0) -> None:
    """Refuse a scipy sparse X whose index arrays do not describe its shape.

    CSR and CSC (also sparse arrays): ``indptr`` of length (rows or columns) + 1, from 0 to the
    number of stored values, non-decreasing; every index in [0, columns or rows); as many indices as
    values.  COO: row and column indices within the shape.  BSR, LIL, DOK and DIA hold their
    structure in forms scipy checks itself.  Values are not read (:func:`check_stored_values`).
    Costs two passes over ``indices`` and one over ``indptr`` (no copy of either beyond a
    difference of ``indptr``), and raises ``ValueError`` naming ``name`` and the first bad entry.
    """
    fmt = X.format
    if fmt in ("csr", "csc"):
        check_compressed(X.indptr, X.indices, int(np.asarray(X.data).size), X.shape, fmt, name, row0=row0)
    elif fmt == "coo":
        coords = getattr(X, "coords", None) or (X.row, X.col)
        for axis, (idx, size) in enumerate(zip(coords, X.shape)):
            if idx.size and (idx.min() < 0 or idx.max() >= size):
                t = int(np.flatnonzero((idx < 0) | (idx >= size))[0])
                msg = (
                    f"{name} is not a valid COO matrix of shape {tuple(X.shape)}: stored value {t} has "
                    f"{'row' if axis == 0 else 'column'} index {int(idx[t])}, outside [0, {size})"
                )
                raise ValueError(msg)


def check_stored_values(X, name: str = "X", *, row0: int = 0) -> None:
    """Refuse NaN or infinite stored values of a CSR/CSC X, naming the first (its row and column)."""
    data = X.data
    if data.dtype.kind not in "fc":
        return
    finite = np.isfinite(data)
    if finite.all():
        return
    t = int(np.argmin(finite))
    major = int(np.searchsorted(X.indptr, t, side="right") - 1)
    msg = (
        f"{name} must contain only finite values; got {int(finite.size - np.count_nonzero(finite))} NaN or "
        f"infinite entries, first at {_where(X.format, major, int(X.indices[t]), row0)} (value {data[t]})"
    )
    raise ValueError(msg)


def canonical(X, name: str = "X", *, warn: bool = True):
    """X itself when it is in canonical form (CSR/CSC: indices sorted within each row or column, no
    duplicate entries) or a CSR matrix without duplicates whose indices are unsorted, else a
    canonical copy: duplicate entries summed, indices sorted.

    Unsorted rows without duplicates change no result: the numba kernels, scipy's products and
    conversions and scikit-learn's sparse PCA sum over the stored entries, and each gene's sum
    over the rows runs in row order whatever the order within a row (the kernels' results are
    bitwise the same; ``tests/core/test_structure.py``).  A CSC matrix keeps the copy: scipy's
    reductions over its columns sort a CSC in place.

    The caller's matrix is never changed (scipy's ``sum_duplicates`` works in place, so it runs on a
    copy).  ``warn=False``: said at DEBUG level only (the second and later blocks of one matrix).  Call after :func:`check_sparse_structure`: scipy's test of the form reads the indices.
    """
    if X.format not in ("csr", "csc") or X.has_canonical_format:
        return X
    if X.format == "csr" and not X.has_sorted_indices and _first_duplicate(X) is None:
        log.debug("%s: indices unsorted within rows, no duplicate entries: used as it is", name)
        return X
    Xc = X.copy()
    Xc.sum_duplicates()
    dup = X.nnz - Xc.nnz
    (log.warning if warn else log.debug)(
        "%s: the sparse matrix is not in canonical form (%s); scored as the matrix it means, on a canonical copy "
        "(duplicates summed, indices sorted: %d more stored values of memory)",
        name,
        f"{dup} duplicate entries" if dup else "indices unsorted within rows",
        Xc.nnz,
    )
    return Xc


def _first_duplicate(X):
    """(row, column) of the first entry stored twice in a CSR matrix (indices in any order), or None."""
    i, j = _kernel("duplicate")(X.indptr, X.indices, X.shape[1])
    return None if i < 0 else (int(i), int(j))
