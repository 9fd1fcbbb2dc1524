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
    "check_scale",
    "scale_problem",
    "SCALE_RANGE",
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


def check_X(X, *, name: str = "X", allow_sparse: bool = True, dense: bool = False, read_only: bool = False):
    """Validate an expression matrix of shape (n_samples, n_features).

    Returns a float64 ndarray, or a float64 CSR matrix when ``X`` is sparse and
    ``allow_sparse`` and not ``dense``.  The input is never modified (a copy is
    made when a dtype change is needed).  ``read_only=True`` (for callers that
    only read X, e.g. in float64 column blocks): a float32 or float64 ndarray is
    returned as it is, without the O(n d) copy (float32 stays float32).
    """
    if sp.issparse(X):
        if not allow_sparse and not dense:
            msg = f"{name} must be a dense array of shape (n_samples, n_features); got a sparse {type(X).__name__}"
            raise ValueError(msg)
        _refuse_complex(X.dtype, name)
        Xs = sp.csr_matrix(X, dtype=np.float64)
        if Xs.ndim != 2:
            msg = f"{name} must be 2-D (n_samples, n_features); got shape {Xs.shape}"
            raise ValueError(msg)
        if not np.all(np.isfinite(Xs.data)):
            bad = int(np.sum(~np.isfinite(Xs.data)))
            msg = f"{name} must contain only finite values; got {bad} NaN or infinite entries"
            raise ValueError(msg)
        _check_size(Xs.shape, name)
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
    finite = np.isfinite(arr)
    if not finite.all():
        rows, cols = np.nonzero(~finite)
        msg = (
            f"{name} must contain only finite values; got {rows.size} NaN or infinite entries, "
            f"first at sample {rows[0]}, feature {cols[0]} (value {arr[rows[0], cols[0]]})"
        )
        raise ValueError(msg)
    if arr is X and not read_only:  # never hand back the caller's array to code that might write to it
        arr = arr.copy()
    return arr


class _ComplexInput(ValueError):
    """X holds complex numbers (refused, never cast to their real part)."""


def _refuse_complex(dtype, name):
    if np.dtype(dtype).kind == "c":
        msg = f"{name} must be real; got complex values (dtype {np.dtype(dtype)}); pass X.real or abs(X) explicitly"
        raise _ComplexInput(msg)


#: The range of the largest absolute value of X that :func:`glfs.select` accepts (:func:`check_scale`).
SCALE_RANGE = (1e-50, 1e50)


def scale_problem(X) -> str | None:
    """Why the scale of X (finite, dense or sparse) is outside :data:`SCALE_RANGE`, or None.

    The methods square and multiply values (Gram matrices, distances,
    determinants): float64 overflows above about 1e154 squared and underflows
    below about 1e-154 squared, and products of several factors fail sooner
    (LapDOFS at 1e80).  Only the largest absolute value counts: a gene at a
    tiny scale beside normal genes is only a gene with a tiny spread.  An all-zero
    X is not a scale problem (every gene is constant, refused elsewhere).
    """
    v = X.data if sp.issparse(X) else np.asarray(X)
    top = float(np.abs(v).max()) if v.size else 0.0
    lo, hi = SCALE_RANGE
    if top > hi:
        return f"values up to {top:.4g} in absolute value"
    if 0 < top < lo:
        return f"values only up to {top:.4g} in absolute value"
    return None


def check_scale(X, *, name: str = "X", where: str = "glfs.select"):
    """Refuse X whose largest absolute value is outside :data:`SCALE_RANGE` (:func:`scale_problem`)."""
    problem = scale_problem(X)
    if problem:
        lo, hi = SCALE_RANGE
        msg = (
            f"{name} has {problem}; {where} needs the largest |{name}| in [{lo:g}, {hi:g}], where squares and "
            f"products of values stay within float64: divide {name} by a constant (e.g. {name} / abs({name}).max()). "
            "glfs.laplacian_score and glfs.fisher_score are scale-free and accept any scale"
        )
        raise ValueError(msg)
    return X


def holds_counts(X) -> bool:
    """Whether X (dense or sparse, already finite) holds raw counts: non-negative integers."""
    v = X.data if sp.issparse(X) else np.asarray(X)
    return bool(v.size == 0 or (v.min() >= 0 and np.array_equal(v, np.floor(v))))


def check_counts(X, *, name: str = "counts", hint: str = ""):
    """Refuse a matrix (the output of :func:`check_X`) that does not hold raw counts.

    Raw counts are non-negative integers; log-normalised or scaled values are
    not.  The message names the first offending value and, with ``hint``,
    where the counts should come from.  Returns X unchanged.
    """
    if holds_counts(X):
        return X
    v = X.data if sp.issparse(X) else np.asarray(X).ravel()
    bad = v[(v < 0) | (v != np.floor(v))]
    what = "negative" if bad[0] < 0 else "non-integer"
    msg = f"{name} must hold raw counts (non-negative integers); got {what} values such as {bad[0]:.6g}"
    if hint:
        msg += f". {hint}"
    raise ValueError(msg)


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
