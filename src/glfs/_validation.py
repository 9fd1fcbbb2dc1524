"""Input validation shared by every public entry point.

Every check raises ``ValueError`` with a message that names the argument, the
expected form and what was given (house style); a scalar parameter of the wrong
type raises :class:`ParameterTypeError`, which is both a ``TypeError`` and a
``ValueError``.  Nothing here mutates its input.
"""

from __future__ import annotations

import logging
import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp

log = logging.getLogger(__name__)

__all__ = [
    "check_X",
    "check_graph",
    "check_n_features",
    "check_scalar",
    "check_int",
    "check_real",
    "check_positive",
    "check_nonnegative",
    "ParameterTypeError",
    "check_labels",
    "check_params",
    "constant_features",
    "warn_constant",
    "ConstantFeatureWarning",
    "OutOfCore",
    "out_of_core_kind",
    "STREAMING_SCORES",
]


class ConstantFeatureWarning(UserWarning):
    """Some features (genes) are constant across samples and cannot be scored."""


class ParameterTypeError(TypeError, ValueError):
    """A scalar parameter of the wrong type (e.g. 2.5 or True where an integer is asked).

    A ``TypeError``, and also a ``ValueError``: the library raised ``ValueError``
    for every bad parameter before, so ``except ValueError`` keeps working
    (scikit-learn's ``InvalidParameterError`` is both for the same reason).
    """


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _form(integral: bool, min_val, max_val, include_boundaries: str) -> str:
    """Expected form in words: "a positive integer", "a number in (0, 1)", ..."""
    noun = "integer" if integral else "number"
    left = include_boundaries in ("left", "both")
    right = include_boundaries in ("right", "both")
    if min_val is not None and max_val is not None:
        lo, hi = ("[" if left else "("), ("]" if right else ")")
        return f"{'an' if integral else 'a'} {noun} in {lo}{_fmt(min_val)}, {_fmt(max_val)}{hi}"
    if min_val is not None:
        if min_val == 0 or (integral and min_val == 1 and left):
            positive = not left or min_val == 1
            return f"a {'positive' if positive else 'non-negative'} {noun}"
        return f"{'an' if integral else 'a'} {noun} {'>=' if left else '>'} {_fmt(min_val)}"
    if max_val is not None:
        return f"{'an' if integral else 'a'} {noun} {'<=' if right else '<'} {_fmt(max_val)}"
    return f"{'an' if integral else 'a'} {noun}"


def _within(x, min_val, max_val, include_boundaries: str) -> bool:
    """Whether x lies within the bounds (NaN never does); the rule of scikit-learn's ``check_scalar``."""
    if include_boundaries not in ("left", "right", "both", "neither"):
        msg = f"include_boundaries must be 'left', 'right', 'both' or 'neither'; got {include_boundaries!r}"
        raise ValueError(msg)
    for side, bound in (("left", min_val), ("right", max_val)):
        if include_boundaries == side and bound is None:  # a caller's mistake, refused as scikit-learn does
            msg = f"include_boundaries={side!r} needs {'min_val' if side == 'left' else 'max_val'}"
            raise ValueError(msg)
    left = include_boundaries in ("left", "both")
    right = include_boundaries in ("right", "both")
    if min_val is not None and not (x >= min_val if left else x > min_val):
        return False
    return max_val is None or bool(x <= max_val if right else x < max_val)


def check_scalar(
    value, name: str, target_type, *, min_val=None, max_val=None, include_boundaries: str = "both", coerce=False
):
    """Validate a scalar parameter, in the house message style.

    The type and bound rules are those of :func:`sklearn.utils.check_scalar`,
    written out so that ``import glfs`` does not import scikit-learn (about
    1 s of every workflow job; ``docs/methods.md``, "Workflow runtime").

    Parameters
    ----------
    value : object
        The value given.
    name : str
        The argument's name (first word of the message).
    target_type : numbers.Integral or numbers.Real
        Integers: Python and numpy integers; ``bool`` and ``numpy.bool_`` are
        refused (``True`` is not a count).  Numbers: Python and numpy integers
        and floats, never ``bool``; only finite values pass (scikit-learn's
        check lets NaN through every bound and infinity through an open one).
    min_val, max_val, include_boundaries
        As in :func:`sklearn.utils.check_scalar`.
    coerce : bool, default False
        Numbers only: first read the value with ``float()`` (numeric strings,
        e.g. ``"1e-9"``, which YAML reads as a string, and 0-d arrays), as
        the entry points that use it always have.

    Returns
    -------
    int or float
        The value as a Python ``int`` (integers) or ``float`` (numbers).

    Raises
    ------
    ParameterTypeError
        Wrong type (a ``TypeError`` and a ``ValueError``).
    ValueError
        Out of range, or not finite.  Both messages read
        "``name`` must be <expected form>; got <value>".
    """
    integral = target_type is numbers.Integral
    form = _form(integral, min_val, max_val, include_boundaries)
    x = value
    if coerce and not integral and not isinstance(value, (bool, np.bool_, numbers.Real)):
        try:
            x = float(value)
        except (TypeError, ValueError):
            pass
    if isinstance(x, (bool, np.bool_)):
        msg = f"{name} must be {form}; got {value!r} (bool)"
        raise ParameterTypeError(msg)
    if not isinstance(x, target_type):
        msg = f"{name} must be {form}; got {value!r} ({type(value).__name__})"
        raise ParameterTypeError(msg)
    if not _within(x, min_val, max_val, include_boundaries):
        msg = f"{name} must be {form}; got {value!r}"
        raise ValueError(msg)
    if integral:
        return int(x)
    if not math.isfinite(x):
        msg = f"{name} must be {form}; got {value!r}"
        raise ValueError(msg)
    return float(x)


def check_int(value, name: str, min_val=None, max_val=None):
    """An integer in [min_val, max_val] (either bound optional); returns a Python int."""
    return check_scalar(value, name, numbers.Integral, min_val=min_val, max_val=max_val)


def check_real(value, name: str, min_val=None, max_val=None, *, include_boundaries="both", coerce=False):
    """A finite number in the given range; returns a Python float.  ``min_val=0,
    include_boundaries="neither"`` is "a positive number"."""
    return check_scalar(
        value, name, numbers.Real, min_val=min_val, max_val=max_val, include_boundaries=include_boundaries,
        coerce=coerce,
    )


def check_X(
    X, *, name: str = "X", allow_sparse: bool = True, dense: bool = False, read_only: bool = False,
    lazy: bool = False, method: str | None = None,
):
    """Validate an expression matrix of shape (n_samples, n_features).

    Returns a float64 ndarray, or a float64 CSR matrix when ``X`` is sparse and
    ``allow_sparse`` and not ``dense``.  The input is never modified (a copy is
    made when a dtype change is needed).  ``read_only=True`` (for callers that
    only read X, e.g. in float64 column blocks): a float32 or float64 ndarray is
    returned as it is, without the O(n d) copy (float32 stays float32), and a
    sparse X keeps its CSR or CSC format and its float32/float64 values (integer
    values become float32 when they are exact in it, else float64).

    ``dense=True`` with a sparse X: the dense copy is checked against the size
    limit (:func:`glfs.limits.check_dense_size`, naming ``method``) before it
    is made.  ``lazy=True``: an out-of-core X (an AnnData backed sparse matrix
    or dense dataset, or a dask array) is read once in blocks (finite, real,
    its largest |value| and non-zeros per gene) and returned as an
    :class:`OutOfCore`, which the streaming scores read block by block; without
    ``lazy`` such an X is refused with a message saying how to load it.
    """
    kind = "validated" if isinstance(X, OutOfCore) else out_of_core_kind(X)
    if kind is not None:
        if not lazy:
            ooc = X if isinstance(X, OutOfCore) else OutOfCore(X)
            msg = (
                f"{name} is an out-of-core matrix ({ooc.describe()}); {method or 'this function'} needs it in memory. "
                f"Load it first (adata.to_memory(), or X.compute() for a dask array; {ooc.memory_hint()}), "
                f"or use a score that streams it: {', '.join(STREAMING_SCORES)}"
            )
            raise ValueError(msg)
        if kind == "validated":
            return X if X.max_abs is not None else X.validate(name)
        return OutOfCore(X).validate(name)
    if sp.issparse(X):
        if not allow_sparse and not dense:
            msg = f"{name} must be a dense array of shape (n_samples, n_features); got a sparse {type(X).__name__}"
            raise ValueError(msg)
        _refuse_complex(X.dtype, name)
        if X.ndim != 2:
            msg = f"{name} must be 2-D (n_samples, n_features); got shape {X.shape}"
            raise ValueError(msg)
        _check_size(X.shape, name)
        if dense:
            from .limits import check_dense_size

            n, d = X.shape
            check_dense_size(
                method or name, f"a dense copy of the sparse {name} ({n} x {d})", float(n) * d, DENSE_ALTERNATIVE,
            )
        Xs = _sparse_read_only(X) if read_only and not dense else sp.csr_matrix(X, dtype=np.float64)
        bad = _count_nonfinite(Xs.data)
        if bad:
            msg = f"{name} must contain only finite values; got {bad} NaN or infinite entries"
            raise ValueError(msg)
        return Xs.toarray() if dense else Xs
    keep = read_only and isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64)
    try:
        raw = X if keep else np.asarray(X)  # no dtype yet: complex values must not lose their imaginary part unseen
        _refuse_complex(raw.dtype, name)
        arr = raw if keep else np.asarray(raw, dtype=np.float64)
    except _ComplexInput:
        raise
    except (TypeError, ValueError) as exc:
        msg = f"{name} must be numeric of shape (n_samples, n_features); could not convert {type(X).__name__}: {exc}"
        raise ValueError(msg) from None
    if arr.ndim != 2:
        msg = f"{name} must be 2-D (n_samples, n_features); got an array with shape {arr.shape}"
        raise ValueError(msg)
    _check_size(arr.shape, name)
    if _count_nonfinite(arr):
        rows, cols = np.nonzero(~np.isfinite(arr))
        msg = (
            f"{name} must contain only finite values; got {rows.size} NaN or infinite entries, "
            f"first at sample {rows[0]}, feature {cols[0]} (value {arr[rows[0], cols[0]]})"
        )
        raise ValueError(msg)
    if arr is X and not read_only:  # never hand back the caller's array to code that might write to it
        arr = arr.copy()
    return arr


#: What a method that needs a dense X tells the user of a sparse X above the size limit.
DENSE_ALTERNATIVE = (
    "The gene-wise scores (laplacian_score, variance, fisher_score, deviance, glfs.moran.graph_autocorrelation) "
    "and scanpy's HVG flavours run on sparse X without a dense copy; for this method pre-filter the genes "
    "(e.g. 2,000 highly variable genes) or subsample the cells first"
)

#: The functions that read an out-of-core X block by block (:class:`OutOfCore`).
STREAMING_SCORES = ("laplacian_score", "variance", "fisher_score", "glfs.moran.graph_autocorrelation")

#: Values (non-zeros of a sparse X, entries of a dense one) per block streamed from an out-of-core X:
#: 2**26 = 67 million, about 0.5 GB as float32 values with int32 indices.
STREAM_VALUES = 2**26


def _count_nonfinite(values) -> int:
    """Number of NaN/inf entries, checked in slices of 2**22 values (no full-size boolean temporary)."""
    flat = values.reshape(-1) if values.flags.c_contiguous or values.flags.f_contiguous else None
    if flat is None:  # a strided view: per row block
        step = max(1, 2**22 // max(1, values.shape[-1]))
        return sum(int(values[i : i + step].size - np.count_nonzero(np.isfinite(values[i : i + step])))
                   for i in range(0, values.shape[0], step))
    bad = 0
    for i in range(0, flat.size, 2**22):
        part = flat[i : i + 2**22]
        bad += int(part.size - np.count_nonzero(np.isfinite(part)))
    return bad


def _sparse_read_only(X):
    """A sparse X as CSR or CSC without a copy when it is CSR/CSC float32/float64; other formats become CSR,
    integer values float32 when exact in it (|x| <= 2**24), else float64."""
    fmt = X.format if X.format in ("csr", "csc") else "csr"
    dtype = X.dtype
    if dtype not in (np.float32, np.float64):
        top = float(max(X.data.max(), -X.data.min())) if X.nnz else 0.0
        dtype = np.float32 if dtype.kind in "iub" and top <= 2**24 else np.float64
    cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    if isinstance(X, cls) and X.dtype == dtype:
        return X
    return cls(X, dtype=dtype)


def out_of_core_kind(X) -> str | None:
    """"backed" (an AnnData backed sparse matrix, or an h5py dataset), "dask" (a dask array), or None.

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
    at most :data:`STREAM_VALUES` values, so the memory does not grow with the matrix.
    Attributes after validation: ``max_abs`` (largest |value|), ``gene_nnz`` (non-zeros per
    gene, sparse only), ``nnz``.
    """

    def __init__(self, source):
        self.source = source
        self.kind = out_of_core_kind(source)
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

    def describe(self) -> str:
        what = {"backed": "an AnnData backed", "dask": "a dask"}[self.kind]
        fmt = {"csr": "CSR", "csc": "CSC", "sparse": "sparse", "dense": "dense"}[self.format]
        return f"{what} {fmt} matrix {self.shape[0]} x {self.shape[1]}, {self.dtype}"

    def memory_hint(self) -> str:
        n, d = self.shape
        if self.format == "dense":
            return f"{n * d * self.dtype.itemsize / 2**30:.1f} GB"
        if self.nnz is not None:
            return f"{self.nnz * (self.dtype.itemsize + 4) / 2**30:.1f} GB as a sparse matrix"
        return "its size as a sparse matrix"

    # -- reading ------------------------------------------------------------------------------
    def _natural_blocks(self):
        """(axis, slice, block in memory) over the whole matrix in the order its storage favours:
        row blocks (CSR, dense, dask) or column blocks (CSC)."""
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
        step = max(1, STREAM_VALUES // (32 * other))  # first guess: 25 % non-zeros, STREAM_VALUES / 8 a block
        i = 0
        while i < total:
            sl = slice(i, min(total, i + step))
            blk = src[:, sl] if axis else src[sl]
            yield axis, sl, blk
            i = sl.stop
            if sp.issparse(blk) and blk.nnz:  # adapt to the density seen: about STREAM_VALUES / 8 per block
                step = max(1, int(step * (STREAM_VALUES / 8) / blk.nnz))

    def validate(self, name: str = "X"):
        """Read the matrix once: real, finite, at least 2 samples and 1 gene; record max |x| and non-zeros per gene."""
        _refuse_complex(self.dtype, name)
        if self.dtype.kind not in "fiub":
            msg = f"{name} must be numeric of shape (n_samples, n_features); got an out-of-core matrix of dtype {self.dtype}"
            raise ValueError(msg)
        _check_size(self.shape, name)
        n, d = self.shape
        top, nnz = 0.0, 0
        gene_nnz = np.zeros(d, np.int64) if self.format != "dense" else None
        for axis, sl, blk in self._natural_blocks():
            vals = blk.data if sp.issparse(blk) else np.asarray(blk)
            bad = _count_nonfinite(vals)
            if bad:
                where = "rows" if axis == 0 else "columns"
                msg = f"{name} must contain only finite values; got {bad} NaN or infinite entries in {where} {sl.start}-{sl.stop - 1}"
                raise ValueError(msg)
            if vals.size:
                top = max(top, float(vals.max()), -float(vals.min()))
            if gene_nnz is not None:
                blk = sp.csr_matrix(blk) if not sp.issparse(blk) else blk
                nnz += blk.nnz
                if axis == 0:
                    gene_nnz += np.bincount(blk.tocsr().indices, minlength=d)
                else:
                    gene_nnz[sl] += np.diff(blk.tocsc().indptr)
        self.max_abs, self.gene_nnz = top, gene_nnz
        self.nnz = nnz if gene_nnz is not None else n * d
        log.info("%s: read %s once (%d values stored, max |x| %.4g)", name, self.describe(), self.nnz, top)
        return self

    def column_blocks(self, dense_genes: int | None = None, max_values: int | None = None):
        """(column slice, block) over the genes: each block an in-memory (n_samples, b) matrix.

        Sparse: a CSC source is sliced by columns (anndata reads only those); a CSR or dask source is
        read row block by row block once per gene block, keeping that block's columns, with at most
        ``max_values`` (default :data:`STREAM_VALUES`) non-zeros per block (so ceil(nnz / max_values)
        passes over the file).  Dense: ``dense_genes`` genes per block (default max_values / n).
        """
        n, d = self.shape
        max_values = STREAM_VALUES if max_values is None else int(max_values)
        if self.format == "dense":
            step = max(1, dense_genes or max_values // n)
            for j0 in range(0, d, step):
                sl = slice(j0, min(d, j0 + step))
                blk = self.source[:, sl]
                yield sl, (blk.compute() if self.kind == "dask" else np.asarray(blk))
            return
        if self.gene_nnz is None:
            self.validate()
        for sl in _gene_partition(self.gene_nnz, max_values):
            if self.format == "csc" and self.kind == "backed":
                yield sl, sp.csc_matrix(self.source[:, sl])
            else:
                yield sl, self._gather_columns(sl)

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


class _ComplexInput(ValueError):
    """X holds complex numbers (refused, never cast to their real part)."""


def _refuse_complex(dtype, name):
    if np.dtype(dtype).kind == "c":
        msg = f"{name} must be real; got complex values (dtype {np.dtype(dtype)}); pass X.real or abs(X) explicitly"
        raise _ComplexInput(msg)


def _check_size(shape, name):
    if shape[0] < 2:
        msg = f"{name} must have at least 2 samples (rows); got shape {shape}"
        raise ValueError(msg)
    if shape[1] < 1:
        msg = f"{name} must have at least 1 feature (column); got shape {shape}"
        raise ValueError(msg)


def check_graph(W, n_samples: int, *, name: str = "graph", atol: float = 1e-10):
    """Validate a patient-similarity graph: square (n, n), symmetric, non-negative, finite.

    Dense input is accepted and converted to CSR (the caller already paid for
    the dense array).  Returns a float64 CSR matrix with explicit zeros removed.
    A non-zero diagonal is allowed: it cancels in L = D - W (the supervised graph
    of He et al. 2005 keeps it).
    """
    if W is None:
        msg = f"{name} must be a sparse (n_samples, n_samples) matrix; got None"
        raise ValueError(msg)
    try:
        Ws = sp.csr_matrix(W, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        msg = f"{name} must be a square numeric matrix; could not convert {type(W).__name__}: {exc}"
        raise ValueError(msg) from None
    if Ws.shape[0] != Ws.shape[1]:
        msg = f"{name} must be square (n_samples, n_samples); got shape {Ws.shape}"
        raise ValueError(msg)
    if Ws.shape[0] != n_samples:
        msg = f"{name} must have shape ({n_samples}, {n_samples}) to match X's {n_samples} samples; got {Ws.shape}"
        raise ValueError(msg)
    Ws.eliminate_zeros()
    if not np.all(np.isfinite(Ws.data)):
        msg = f"{name} must contain only finite weights; got NaN or infinite entries"
        raise ValueError(msg)
    if Ws.nnz and Ws.data.min() < 0:
        msg = f"{name} must be non-negative; got a minimum weight of {Ws.data.min():.4g}"
        raise ValueError(msg)
    diff = Ws - Ws.T
    if diff.nnz and np.abs(diff.data).max() > atol * max(1.0, np.abs(Ws.data).max()):
        msg = f"{name} must be symmetric; got max |W - W^T| = {np.abs(diff.data).max():.4g}"
        raise ValueError(msg)
    if Ws.nnz == 0:
        msg = f"{name} must have at least one edge; got an empty graph"
        raise ValueError(msg)
    return Ws


def check_positive(value, name: str, *, coerce=False):
    """A finite number > 0; returns a Python float."""
    return check_real(value, name, 0, include_boundaries="neither", coerce=coerce)


def check_nonnegative(value, name: str, *, coerce=False):
    """A finite number >= 0; returns a Python float."""
    return check_real(value, name, 0, coerce=coerce)


def check_n_features(n_features, n_total: int, *, name: str = "n_features", allow_none: bool = False):
    """Validate a number of features to select: an integer in [1, n_total]."""
    if n_features is None and allow_none:
        return None
    return check_int(n_features, name, 1, n_total)


def check_labels(y, n_samples: int, *, name: str = "labels", min_classes: int = 2):
    """Validate class labels: length n_samples, no missing values, >= min_classes classes.

    Returns (classes, codes) with codes an int array in [0, n_classes).
    """
    if y is None:
        msg = f"{name} must be given (one label per sample, length {n_samples}); got None"
        raise ValueError(msg)
    arr = np.asarray(y)
    if arr.ndim != 1:
        msg = f"{name} must be 1-D with one label per sample; got shape {arr.shape}"
        raise ValueError(msg)
    if arr.shape[0] != n_samples:
        msg = f"{name} must have length {n_samples} (one per sample of X); got length {arr.shape[0]}"
        raise ValueError(msg)
    import pandas as pd

    # a plain list ["a", nan] becomes the strings "a", "nan" in np.asarray: look at the values as given
    given = arr if arr.dtype == object or not isinstance(y, (list, tuple)) else np.asarray(y, dtype=object)
    missing = pd.isna(given)
    if missing.any():
        msg = f"{name} must not contain missing values; got {int(missing.sum())} missing"
        raise ValueError(msg)
    classes, codes = np.unique(arr, return_inverse=True)
    if classes.size < min_classes:
        msg = f"{name} must contain at least {min_classes} classes; got {classes.size} ({list(classes)})"
        raise ValueError(msg)
    return classes, codes


def constant_features(X) -> np.ndarray:
    """Boolean mask (n_features,) of features whose values are all equal (exactly)."""
    if sp.issparse(X):
        Xc = sp.csc_matrix(X)
        mx = Xc.max(axis=0).toarray().ravel()
        mn = Xc.min(axis=0).toarray().ravel()
        return mx == mn
    X = np.asarray(X)
    return np.ptp(X, axis=0) == 0


def warn_constant(mask: np.ndarray, method: str) -> None:
    """Emit one warning naming how many constant features get a NaN score."""
    n = int(np.sum(mask))
    if n:
        idx = np.flatnonzero(mask)[:5].tolist()
        msg = (
            f"{method}: {n} constant feature(s) (e.g. column(s) {idx}) cannot be scored; "
            "their score is NaN and they are ranked last and never selected"
        )
        warnings.warn(msg, ConstantFeatureWarning, stacklevel=3)
        log.warning(msg)


def check_params(method, params, allowed):
    """Refuse keyword parameters of a method outside ``allowed`` (a set of names), naming them."""
    bad = sorted(set(params) - set(allowed))
    if bad:
        msg = f"method {method!r} accepts parameters {sorted(allowed)}; got unknown {bad}"
        raise ValueError(msg)
