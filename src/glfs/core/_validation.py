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

from glfs.core._out_of_core import (
    OutOfCore,
    _check_size,
    _count_nonfinite,
    _DtypeRefused,
    _refuse_complex,
    _refuse_dtype,
    out_of_core_kind,
)
from glfs.core._structure import canonical, check_sparse_structure, check_stored_values
from glfs.core.limits import DENSE_ALTERNATIVE, check_dense_size

log = logging.getLogger(__name__)

__all__ = [
    "check_X",
    "check_X_kind",
    "check_graph",
    "check_n_features",
    "check_scalar",
    "check_int",
    "check_real",
    "check_positive",
    "check_nonnegative",
    "ParameterTypeError",
    "check_labels",
    "constant_features",
    "warn_constant",
    "ConstantFeatureWarning",
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
    1 s of every workflow job; ``studies/workflow-runtime.md``.

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
        value,
        name,
        numbers.Real,
        min_val=min_val,
        max_val=max_val,
        include_boundaries=include_boundaries,
        coerce=coerce,
    )


def check_X(
    X,
    *,
    name: str = "X",
    allow_sparse: bool = True,
    dense: bool = False,
    read_only: bool = False,
    lazy: bool = False,
    method: str | None = None,
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
    limit (:func:`glfs.core.limits.check_dense_size`, naming ``method``) before it
    is made.  ``lazy=True``: an out-of-core X (an AnnData backed sparse matrix
    or dense dataset, or a dask array) is read once in blocks (finite, real,
    its largest |value| and non-zeros per gene) and returned as an
    :class:`OutOfCore`, which the streaming scores read block by block; without
    ``lazy`` such an X is refused with a message saying how to load it.
    """
    kind = "validated" if isinstance(X, OutOfCore) else out_of_core_kind(X)
    if kind is not None:
        if not lazy:
            ooc = X if isinstance(X, OutOfCore) else OutOfCore(X, name)
            msg = (
                f"{name} is an out-of-core matrix ({ooc.describe()}); {method or 'this function'} needs it in memory. "
                f"Load it first (adata.to_memory(), or X.compute() for a dask array; {ooc.memory_hint()}), "
                "or use a method that streams it (glfs.METHODS[m].streams)"
            )
            raise ValueError(msg)
        if kind == "validated":
            return X if X.max_abs is not None else X.validate(name)
        return OutOfCore(X, name).validate(name)
    check_X_kind(X, name)
    if sp.issparse(X):
        if not allow_sparse and not dense:
            msg = f"{name} must be a dense array of shape (n_samples, n_features); got a sparse {type(X).__name__}"
            raise ValueError(msg)
        if X.ndim != 2:
            msg = f"{name} must be 2-D (n_samples, n_features); got shape {X.shape}"
            raise ValueError(msg)
        _check_size(X.shape, name)
        check_sparse_structure(X, name)  # before anything reads the indices (docs/methods/size-limits.md)
        X = canonical(X, name)
        if dense:
            n, d = X.shape
            check_dense_size(
                method or name,
                f"a dense copy of the sparse {name} ({n} x {d})",
                float(n) * d,
                DENSE_ALTERNATIVE,
            )
        Xs = _sparse_read_only(X) if read_only and not dense else sp.csr_matrix(X, dtype=np.float64)
        check_stored_values(Xs, name)
        return Xs.toarray() if dense else Xs
    keep = read_only and isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64)
    try:
        raw = X if keep else np.asarray(X)  # no dtype yet: complex values must not lose their imaginary part unseen
        _refuse_dtype(raw.dtype, name)
        arr = raw if keep else np.asarray(raw, dtype=np.float64)
    except _DtypeRefused:
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


def check_X_kind(X, name: str = "X") -> None:
    """Refuse, before anything reads its values, an in-memory X whose values are not plain numbers: complex, text or
    structured values (the dtype, :func:`~glfs.core._out_of_core._refuse_dtype`), or a masked array (numpy.ma) with
    masked entries, whose stored values under the mask would be scored as data.  The one check of :func:`check_X`,
    which ``glfs.tl`` also makes before it looks at X (counts, the graph)."""
    dtype = getattr(X, "dtype", None)
    if dtype is not None:
        _refuse_dtype(dtype, name)
    if isinstance(X, np.ma.MaskedArray):
        masked = np.ma.getmaskarray(X)
        if masked.any():
            rows, cols = np.nonzero(masked)
            msg = (
                f"{name} is a masked array (numpy.ma) with {rows.size} masked entries, first at sample {rows[0]}, "
                f"feature {cols[0]}; the methods have no masked values. Fill them (X.filled(value)), remove those "
                "samples or genes, or pass X.data to score the stored values as they are"
            )
            raise ValueError(msg)


def _sparse_read_only(X):
    """A sparse X as CSR or CSC without a copy when it is CSR/CSC float32/float64; other formats become CSR,
    integer values float32 when exact in it (|x| <= 2**24), else float64."""
    fmt = X.format if X.format in ("csr", "csc") else "csr"
    dtype = X.dtype
    if dtype not in (np.float32, np.float64):
        top = float(max(X.data.max(), -X.data.min())) if X.nnz and dtype != bool else 1.0  # noqa: E721 (bool: no unary minus)
        dtype = np.float32 if dtype.kind in "iub" and top <= 2**24 else np.float64
    cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    if isinstance(X, cls) and X.dtype == dtype:
        return X
    return cls(X, dtype=dtype)


def check_graph(W, n_samples: int, *, name: str = "graph", atol: float = 1e-10):
    """Validate a patient-similarity graph: square (n, n), symmetric, non-negative, finite.

    Dense input is accepted and converted to CSR (the caller already paid for
    the dense array).  A sparse graph gets the structure check X gets
    (:func:`glfs.core.check_sparse_structure`: index ranges, ``indptr``; then
    duplicates summed on a copy, :func:`glfs.core.canonical`) before anything
    reads its indices, so that a corrupt graph is a ``ValueError`` naming
    ``name``, never a crash.  Returns a float64 CSR matrix with explicit zeros
    removed; the caller's graph is never changed (a copy is made when explicit
    zeros must go or the dtype or format differs; a read-only graph is fine).
    A non-zero diagonal is allowed: it cancels in L = D - W (the supervised graph
    of He et al. 2005 keeps it).
    """
    Ws = _graph_csr(W, name)
    if Ws.shape[0] != Ws.shape[1]:
        msg = f"{name} must be square (n_samples, n_samples); got shape {Ws.shape}"
        raise ValueError(msg)
    if Ws.shape[0] != n_samples:
        msg = f"{name} must have shape ({n_samples}, {n_samples}) to match X's {n_samples} samples; got {Ws.shape}"
        raise ValueError(msg)
    if not np.all(np.isfinite(Ws.data)):
        msg = f"{name} must contain only finite weights; got NaN or infinite entries"
        raise ValueError(msg)
    if Ws.nnz and not Ws.data.all():  # explicit zeros: removed on a copy, never in the caller's arrays
        Ws = Ws.copy()
        Ws.eliminate_zeros()
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


def _graph_csr(W, name: str):
    """W as a float64 CSR matrix whose structure has been checked (shared with W when it already is one)."""
    if W is None:
        msg = f"{name} must be a sparse (n_samples, n_samples) matrix; got None"
        raise ValueError(msg)
    if sp.issparse(W):
        _refuse_complex(W.dtype, name)
        if len(W.shape) != 2:
            msg = f"{name} must be a 2-D (n_samples, n_samples) matrix; got shape {W.shape}"
            raise ValueError(msg)
        check_sparse_structure(W, name)  # before scipy's C++ routines read the indices
        W = canonical(W, name)  # duplicate entries summed on a copy
    else:
        raw = np.asarray(W)
        _refuse_complex(raw.dtype, name)
        if raw.ndim != 2:
            msg = f"{name} must be a 2-D (n_samples, n_samples) matrix; got an array with shape {raw.shape}"
            raise ValueError(msg)
    try:
        return sp.csr_matrix(W, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        msg = f"{name} must be a square numeric matrix; could not convert {type(W).__name__}: {exc}"
        raise ValueError(msg) from None


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
    if given.dtype == object:  # e.g. tuples: anndata reads a 2-D categorical's codes into them
        nested = [i for i, v in enumerate(given) if isinstance(v, (tuple, list, set, dict, np.ndarray))]
        if nested:
            v = given[nested[0]]
            msg = (
                f"{name} must hold one label per sample (text or a number); got {len(nested)} {type(v).__name__} "
                f"values, e.g. {v!r} at sample {nested[0]}"
            )
            raise ValueError(msg)
    missing = pd.isna(given)
    if missing.any():
        first = np.flatnonzero(np.asarray(missing))[:5].tolist()
        msg = f"{name} must not contain missing values; got {int(missing.sum())} missing (samples {first})"
        raise ValueError(msg)
    try:
        classes, codes = np.unique(arr, return_inverse=True)
    except TypeError:  # labels that cannot be sorted together: text beside numbers
        kinds = {}
        for v in arr:
            kinds.setdefault(type(v).__name__, v)
        msg = (
            f"{name} must hold labels of one kind that can be sorted (all text or all numbers); got a mix of "
            f"{sorted(kinds)}, e.g. {list(kinds.values())[:4]}; convert them to text first (e.g. .astype(str))"
        )
        raise ValueError(msg) from None
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
