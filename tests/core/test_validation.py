"""Scalar parameters of every public entry point: one table of bad values, one of edge values that must pass.

Each bad row is (entry point, argument, bad value, exception, message pattern).  Every
message names the argument and the expected form (house style); the value given is
in the message too.  A wrong type raises an error that is both a ``TypeError`` and a
``ValueError`` (the library raised ``ValueError`` for every bad parameter before it
used ``sklearn.utils.check_scalar``, so ``except ValueError`` keeps working).
"""

import math
import re

import numpy as np
import pytest

import glfs
from glfs.designs._budgeted import glfs_design
from glfs.designs._gradient import glfs_objective, glfs_path, laprls_fit
from glfs.designs._optimal import lapaofs, optimal_design_greedy
from glfs.designs._ufi import ufi
from glfs.scores._baselines import q_alpha, spca_score
from glfs.scores._lkr import lkr_coefficients, lkr_score

NAN, INF = float("nan"), float("inf")


def _data(n=20, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = glfs.similarity_graph(X, n_neighbors=3)
    return X, W


X, W = _data()
Y = np.repeat([0, 1], 10)

# entry point -> call with valid arguments, overridden by the row's argument
CALLS = {
    "glfs_objective": lambda **kw: glfs_objective(np.ones(X.shape[1]), X, W, **kw),
    "glfs": lambda **kw: glfs.glfs_published(X, W, **{"n_lams": 2, "max_iter": 20, **kw}),
    "glfs_path": lambda **kw: glfs_path(X, W, **{"n_lams": 2, "max_iter": 20, **kw}),
    "laprls_fit": lambda **kw: laprls_fit(X[:, :3], Y.astype(float), W, **kw),
    "glfs_design": lambda **kw: glfs_design(X, W, **{"n_features_to_select": 3, **kw}),
    "lapaofs": lambda **kw: lapaofs(X, W, **{"n_features": 3, **kw}),
    "optimal_design_greedy": lambda **kw: optimal_design_greedy(X, W, **{"n_features": 3, **kw}),
    "lkr_score": lambda **kw: lkr_score(X, **kw),
    "lkr_coefficients": lambda **kw: lkr_coefficients(X, W, **kw),
    "ufi": lambda **kw: ufi(X[:8], **{"n_features": 3, **kw}),
    "spca_score": lambda **kw: spca_score(X, **kw),
    "q_alpha": lambda **kw: q_alpha(X, **kw),
    "select": lambda **kw: glfs.select(X, **{"method": "variance", "n_features_to_select": 3, **kw}),
    "GLFSClassifier.fit": lambda **kw: glfs.GLFSClassifier(**{"n_genes_grid": (2,), "cv": 2, **kw}).fit(X, Y),
    "FeatureSelector.fit": lambda **kw: glfs.FeatureSelector(**kw).fit(X),
}

# (entry point, argument, bad value, exception, start of the message)
V, T = ValueError, TypeError
BAD = [
    # gradient.py: lambdas, lam, start level, path and search parameters
    ("glfs_objective", "lambda1", -1.0, V, "lambda1 must be a non-negative number"),
    ("glfs_objective", "lambda1", NAN, V, "lambda1 must be a non-negative number"),
    ("glfs_objective", "lambda1", "a", T, "lambda1 must be a non-negative number"),
    ("glfs_objective", "lambda1", None, T, "lambda1 must be a non-negative number"),
    ("glfs_objective", "lambda2", 0.0, V, "lambda2 must be a positive number"),
    ("glfs_objective", "lambda2", INF, V, "lambda2 must be a positive number"),
    ("glfs_objective", "lam", -0.5, V, "lam must be a non-negative number"),
    ("glfs_objective", "lambda2", True, T, "lambda2 must be a positive number"),  # was read as 1.0 before
    ("glfs_path", "lambda1", -1.0, V, "lambda1 must be a non-negative number"),
    ("glfs_path", "lambda2", -1.0, V, "lambda2 must be a positive number"),
    ("glfs_path", "max_iter", 0, V, "max_iter must be a positive integer"),
    ("glfs_path", "max_iter", 2.5, T, "max_iter must be a positive integer"),
    ("glfs_path", "max_iter", True, T, "max_iter must be a positive integer"),
    ("glfs_path", "n_lams", 0, V, "n_lams must be a positive integer"),
    ("glfs_path", "n_lams", 2.0, T, "n_lams must be a positive integer"),
    ("glfs_path", "n_lams", True, T, "n_lams must be a positive integer"),
    ("glfs_path", "lam_ratio", 0.0, V, r"lam_ratio must be a number in \(0, 1\)"),
    ("glfs_path", "lam_ratio", 1.0, V, r"lam_ratio must be a number in \(0, 1\)"),
    ("glfs_path", "lam_ratio", NAN, V, r"lam_ratio must be a number in \(0, 1\)"),
    ("glfs_path", "search_C", 1.5, V, "search_C must be a number >= 2"),
    ("glfs_path", "beta_init", 0.0, V, "beta_init must be a positive number"),
    ("glfs_path", "scale", -1.0, V, "scale must be a positive number"),
    ("glfs_path", "scale", 0, V, "scale must be a positive number"),
    ("glfs", "lam", -1.0, V, "lam must be a non-negative number"),
    ("glfs", "lam_init", -1.0, V, "lam_init must be a positive number"),
    ("glfs", "search_C", 0.0, V, "search_C must be a positive number"),
    ("glfs", "n_features", 0, V, r"n_features must be an integer in \[1, 10\]"),
    ("glfs", "n_features", 11, V, r"n_features must be an integer in \[1, 10\]"),
    ("glfs", "n_features", True, T, r"n_features must be an integer in \[1, 10\]"),
    ("laprls_fit", "lambda1", -1.0, V, "lambda1 must be a non-negative number"),
    ("laprls_fit", "lambda2", 0.0, V, "lambda2 must be a positive number"),
    # design.py
    ("glfs_design", "graph_weight", -1.0, V, "graph_weight must be a non-negative number"),
    ("glfs_design", "graph_weight", NAN, V, "graph_weight must be a non-negative number"),
    ("glfs_design", "ridge", 0.0, V, "ridge must be a positive number"),
    ("glfs_design", "ridge", INF, V, "ridge must be a positive number"),
    ("glfs_design", "ridge", True, T, "ridge must be a positive number"),
    ("glfs_design", "ridge", "x", T, "ridge must be a positive number"),
    ("glfs_design", "tol", -1, V, "tol must be a non-negative number"),
    ("glfs_design", "tol", NAN, V, "tol must be a non-negative number"),
    ("glfs_design", "max_swaps", -1, V, "max_swaps must be a non-negative integer"),
    ("glfs_design", "max_swaps", 1.5, T, "max_swaps must be a non-negative integer"),
    ("glfs_design", "max_swaps", True, T, "max_swaps must be a non-negative integer"),
    ("glfs_design", "n_features_to_select", 0, V, r"n_features_to_select must be an integer in \[1, 10\]"),
    ("glfs_design", "n_features_to_select", 11, V, r"n_features_to_select must be an integer in \[1, 10\]"),
    # optimal.py
    ("lapaofs", "lambda1", 0, V, "lambda1 must be a positive number"),
    ("lapaofs", "lambda1", True, T, "lambda1 must be a positive number"),
    ("lapaofs", "lambda1", "0.1", T, "lambda1 must be a positive number"),
    ("lapaofs", "lambda2", -1.0, V, "lambda2 must be a positive number"),
    ("lapaofs", "lambda2", NAN, V, "lambda2 must be a positive number"),
    ("lapaofs", "n_features", 2.5, T, r"n_features must be an integer in \[1, 10\]"),
    ("lapaofs", "n_features", np.bool_(True), T, r"n_features must be an integer in \[1, 10\]"),
    ("lapaofs", "n_features", 99, V, r"n_features must be an integer in \[1, 10\]"),
    ("optimal_design_greedy", "lambda1", INF, V, "lambda1 must be a positive number"),
    # lkr.py
    ("lkr_score", "h", -1.0, V, "h must be a positive number"),
    ("lkr_score", "h", 0, V, "h must be a positive number"),
    ("lkr_score", "h", True, T, "h must be a positive number"),
    ("lkr_score", "ridge", 0.0, V, "ridge must be a positive number"),
    ("lkr_score", "ridge", NAN, V, "ridge must be a positive number"),
    ("lkr_score", "n_neighbors", 0, V, "n_neighbors must be a positive integer"),
    ("lkr_score", "n_neighbors", 2.5, T, "n_neighbors must be a positive integer"),
    ("lkr_score", "n_neighbors", True, T, "n_neighbors must be a positive integer"),
    ("lkr_coefficients", "ridge", -1.0, V, "ridge must be a positive number"),
    # ufi.py
    ("ufi", "n_iter", 0, V, "n_iter must be a positive integer"),
    ("ufi", "n_iter", 1.5, T, "n_iter must be a positive integer"),
    ("ufi", "n_iter", True, T, "n_iter must be a positive integer"),
    ("ufi", "ridge", -1.0, V, "ridge must be a positive number"),
    ("ufi", "ridge", NAN, V, "ridge must be a positive number"),
    ("ufi", "ridge", True, T, "ridge must be a positive number"),
    ("ufi", "n_instances", 0, V, r"n_instances must be an integer in \[1, 8\]"),
    ("ufi", "n_instances", 9, V, r"n_instances must be an integer in \[1, 8\]"),
    ("ufi", "n_features", 0, V, r"n_features must be an integer in \[1, 10\]"),
    # baselines.py
    ("spca_score", "n_components", 0, V, "n_components must be .*integer"),
    ("spca_score", "n_components", 50, V, r"n_components must be an integer in \[1, 10\]"),
    ("spca_score", "n_components", True, T, "n_components must be .*integer"),
    ("spca_score", "n_components", 1.5, T, "n_components must be .*integer"),
    ("spca_score", "max_iter", 0, V, "max_iter must be a positive integer"),
    ("spca_score", "n_nonzero", 0, V, "n_nonzero must be a positive integer"),
    ("q_alpha", "n_clusters", 0, V, "n_clusters must be .*integer"),
    ("q_alpha", "n_clusters", 20, V, r"n_clusters must be an integer in \[1, 19\]"),
    ("q_alpha", "max_iter", 0, V, "max_iter must be a positive integer"),
    ("q_alpha", "max_iter", True, T, "max_iter must be a positive integer"),
    # api.py (through _validation.check_n_features)
    ("select", "n_features_to_select", 0, V, r"n_features_to_select must be an integer in \[1, 10\]"),
    ("select", "n_features_to_select", True, T, r"n_features_to_select must be an integer in \[1, 10\]"),
    ("select", "n_features_to_select", 2.5, T, r"n_features_to_select must be an integer in \[1, 10\]"),
    # sklearn.py
    ("GLFSClassifier.fit", "cv", 1, V, "cv must be an integer >= 2"),
    ("GLFSClassifier.fit", "cv", True, T, "cv must be an integer >= 2"),
    ("GLFSClassifier.fit", "cv", 2.5, T, "cv must be an integer >= 2"),
    ("GLFSClassifier.fit", "n_genes_grid", (), V, "n_genes_grid must be a non-empty sequence of positive integers"),
    ("GLFSClassifier.fit", "n_genes_grid", (0, 2), V, "n_genes_grid must be a non-empty sequence of positive integers"),
    ("GLFSClassifier.fit", "n_genes_grid", (1.5,), V, "n_genes_grid must be a non-empty sequence of positive integers"),
]


def _id(row):
    fn, arg, value = row[:3]
    return f"{fn}-{arg}={value!r}"


@pytest.mark.parametrize(("fn", "arg", "value", "exc", "match"), BAD, ids=[_id(r) for r in BAD])
def test_bad_scalar(fn, arg, value, exc, match):
    with pytest.raises(exc, match=match) as info:
        CALLS[fn](**{arg: value})
    assert isinstance(info.value, ValueError)  # what the library has always raised: `except ValueError` still works
    text = str(info.value)
    shown = "nan" if isinstance(value, float) and math.isnan(value) else repr(value)
    assert text.startswith(arg) and shown in text, text


# Edge values that must still be accepted (no narrowing): numpy scalars, zero where zero is allowed,
# integers where a number is asked, and numeric strings where float() was always applied (YAML reads
# 1e-9 without a dot as a string).
GOOD = [
    ("glfs_objective", "lambda1", 0.0),
    ("glfs_objective", "lambda1", np.float32(0.5)),
    ("glfs_objective", "lambda2", 1),
    ("glfs_objective", "lam", "0.5"),
    ("glfs_path", "max_iter", np.int64(20)),
    ("glfs_path", "n_lams", np.int32(2)),
    ("glfs_path", "lam_ratio", 0.5),
    ("glfs_path", "scale", 2),
    ("glfs_path", "beta_init", np.array(2.0)),
    ("glfs_design", "graph_weight", 0),
    ("glfs_design", "tol", 0.0),
    ("glfs_design", "tol", "1e-9"),
    ("glfs_design", "max_swaps", 0),
    ("glfs_design", "max_swaps", np.int64(3)),
    ("glfs", "search_C", 1.5),
    ("lapaofs", "lambda1", np.float64(1e-3)),
    ("lapaofs", "lambda2", 2),
    ("lapaofs", "n_features", np.int64(10)),
    ("lkr_score", "n_neighbors", np.int64(3)),
    ("lkr_score", "h", 1),
    ("ufi", "n_iter", np.int64(2)),
    ("ufi", "ridge", 1),
    ("ufi", "n_instances", 8),
    ("spca_score", "n_components", np.int64(10)),
    ("q_alpha", "n_clusters", 19),
    ("GLFSClassifier.fit", "cv", np.int64(2)),
]


@pytest.mark.parametrize(("fn", "arg", "value"), GOOD, ids=[_id(r) for r in GOOD])
def test_edge_scalar_accepted(fn, arg, value):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CALLS[fn](**{arg: value})


# ---------------------------------------------------------------- the wrapper itself
def test_check_scalar_closes_what_sklearn_lets_through():
    import numbers

    from sklearn.utils import check_scalar as sk_check_scalar

    from glfs.core._validation import ParameterTypeError, check_scalar

    # scikit-learn's check accepts these (why the wrapper guards them) ...
    assert sk_check_scalar(True, "k", numbers.Integral, min_val=1) is True
    assert math.isnan(sk_check_scalar(NAN, "r", numbers.Real, min_val=0))
    assert sk_check_scalar(INF, "r", numbers.Real, min_val=0) == INF
    # ... the wrapper does not
    with pytest.raises(ParameterTypeError, match=r"k must be a positive integer; got True \(bool\)"):
        check_scalar(True, "k", numbers.Integral, min_val=1)
    with pytest.raises(ParameterTypeError, match=r"r must be a non-negative number; got True \(bool\)"):
        check_scalar(True, "r", numbers.Real, min_val=0)
    for bad in (NAN, INF, -INF):
        with pytest.raises(ValueError, match="r must be a non-negative number"):
            check_scalar(bad, "r", numbers.Real, min_val=0)
    assert issubclass(ParameterTypeError, TypeError) and issubclass(ParameterTypeError, ValueError)
    out = check_scalar(np.int64(3), "k", numbers.Integral, min_val=1)
    assert out == 3 and type(out) is int
    out = check_scalar(np.float32(0.5), "r", numbers.Real, min_val=0)
    assert out == 0.5 and type(out) is float


_SK_VALUES = [
    0,
    1,
    2,
    3,
    7,
    8,
    -1,
    np.int64(3),
    np.uint8(7),
    0.0,
    0.5,
    1.0,
    2.5,
    -0.5,
    7.0,
    np.float32(1.0),
    np.float64(0.99),
    "3",
    None,
    1j,
]
_SK_BOUNDS = [(None, None), (0, None), (1, None), (None, 7), (0, 1), (1, 7), (2.5, None)]


@pytest.mark.parametrize("include", ["left", "right", "both", "neither"])
@pytest.mark.parametrize("target_name", ["int", "real"])
def test_check_scalar_agrees_with_sklearn_on_finite_non_bool_values(target_name, include):
    """The type and bound rules are written out (no scikit-learn import); scikit-learn's own
    check_scalar is the reference: same pass/fail and same exception class on a grid of
    values x bounds x boundary rules (the finite, non-bool values where the two must agree)."""
    import numbers

    from sklearn.utils import check_scalar as sk_check_scalar

    from glfs.core._validation import ParameterTypeError, check_scalar

    target = numbers.Integral if target_name == "int" else numbers.Real
    n_fail = 0
    for lo, hi in _SK_BOUNDS:
        for v in _SK_VALUES:
            kw = {"min_val": lo, "max_val": hi, "include_boundaries": include}
            try:
                expected = sk_check_scalar(v, "p", target, **kw)
                expected_exc = None
            except (TypeError, ValueError) as e:
                expected_exc = TypeError if isinstance(e, TypeError) else ValueError
            if expected_exc is None:
                assert check_scalar(v, "p", target, **kw) == expected, (v, kw)
            else:
                n_fail += 1
                with pytest.raises(ParameterTypeError if expected_exc is TypeError else ValueError):
                    check_scalar(v, "p", target, **kw)
    assert 0 < n_fail < len(_SK_BOUNDS) * len(_SK_VALUES)  # the grid exercises both outcomes


def test_import_glfs_does_not_import_sklearn():
    """scikit-learn costs about 1 s per process; the workflow's select jobs never need it
    for the graph methods (studies/workflow-runtime.md, "Workflow runtime")."""
    import subprocess
    import sys

    code = "import sys, glfs, glfs.api; print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("kwargs", "form"),
    [
        ({"target_type": "int", "min_val": 1}, "a positive integer"),
        ({"target_type": "int", "min_val": 0}, "a non-negative integer"),
        ({"target_type": "int", "min_val": 2}, "an integer >= 2"),
        ({"target_type": "int", "min_val": 1, "max_val": 7}, r"an integer in \[1, 7\]"),
        ({"target_type": "real", "min_val": 0, "include_boundaries": "neither"}, "a positive number"),
        ({"target_type": "real", "min_val": 0}, "a non-negative number"),
        ({"target_type": "real", "min_val": 0, "max_val": 1, "include_boundaries": "neither"}, r"a number in \(0, 1\)"),
        ({"target_type": "real", "min_val": 0, "max_val": 1, "include_boundaries": "left"}, r"a number in \[0, 1\)"),
        ({"target_type": "real", "min_val": 2.5}, "a number >= 2.5"),
    ],
)
def test_check_scalar_message_names_argument_form_and_value(kwargs, form):
    import numbers

    from glfs.core._validation import check_scalar

    kwargs = dict(kwargs)
    target = numbers.Integral if kwargs.pop("target_type") == "int" else numbers.Real
    with pytest.raises(ValueError, match=rf"^p must be {form}; got -5$"):
        check_scalar(-5, "p", target, **kwargs)


# ---------------------------------------------------------------- issue 19: library inputs (items 5, 6, 8, 9)
def _small(n=10, d=6, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _tl_select(**kw):
    import anndata as ad

    return glfs.tl.select(ad.AnnData(_small()), "variance", 2, **kw)


# (case, call, exception, message pattern)
BAD_INPUTS_19 = [
    (
        "labels NaN in a plain list",
        lambda: glfs.fisher_score(_small(), ["a"] * 5 + ["b"] * 4 + [np.nan]),
        V,
        r"labels must not contain missing values; got 1 missing",
    ),
    (
        "labels None in a plain list",
        lambda: glfs.select(_small(), "fisher_score", n_features_to_select=2, labels=["a", None] * 5),
        V,
        r"labels must not contain missing values; got 5 missing",
    ),
    (
        "labels NaN in a Series",
        lambda: glfs.fisher_score(_small(), __import__("pandas").Series(["a"] * 9 + [np.nan])),
        V,
        r"labels must not contain missing values; got 1 missing",
    ),
    (
        "complex X",
        lambda: glfs.select(_small() + 1j, "variance", n_features_to_select=2),
        V,
        r"X must be real; got complex values \(dtype complex128\)",
    ),
    (
        "complex X, list",
        lambda: glfs.laplacian_score([[1 + 1j, 2.0]] * 3, None),
        V,
        r"X must be real; got complex values",
    ),
    (
        "complex X, sparse",
        lambda: glfs.variance_score(__import__("scipy.sparse").sparse.csr_matrix(_small() * 1j)),
        V,
        r"X must be real; got complex values",
    ),
    (
        "fisher, one sample per class",
        lambda: glfs.fisher_score(_small(), list("abcdefghij")),
        V,
        r"labels must have a class with at least 2 samples for the Fisher score; got 10 classes of 1 sample each",
    ),
    (
        "fisher via select, one sample per class",
        lambda: glfs.select(_small(), "fisher_score", n_features_to_select=2, labels=np.arange(10)),
        V,
        r"labels must have a class with at least 2 samples",
    ),
    (
        "method a list",
        lambda: glfs.select(_small(), ["glfs"], n_features_to_select=2),
        V,
        r"method must be a method name \(str\), one of \[.*\]; got \['glfs'\] \(list\)",
    ),
    (
        "method a list, tl",
        lambda: glfs.tl.select(__import__("anndata").AnnData(_small()), ["glfs"], 2),
        V,
        r"method must be a method name \(str\)",
    ),
    (
        "key_added empty",
        lambda: _tl_select(key_added=""),
        V,
        r"key_added must be a non-empty string \(it names every output",
    ),
    ("key_added blank", lambda: _tl_select(key_added="  "), V, r"key_added must be a non-empty string"),
    ("key_added not a string", lambda: _tl_select(key_added=3), V, r"key_added must be a non-empty string.*got 3"),
    (
        "X too large",
        lambda: glfs.select(1e154 * _small(), "glfs", n_features_to_select=2),
        V,
        r"X has values up to 2\.3\d*e\+154 in absolute value; glfs\.select needs the largest \|X\| in \[1e-50, 1e\+50\]",
    ),
    (
        "X too small",
        lambda: glfs.select(1e-200 * _small(), "laplacian_score", n_features_to_select=2),
        V,
        r"X has values only up to 2\.3\d*e-200 in absolute value; glfs\.select needs the largest \|X\| in \[1e-50, 1e\+50\]",
    ),
]


@pytest.mark.parametrize(("case", "call", "exc", "match"), BAD_INPUTS_19, ids=[b[0] for b in BAD_INPUTS_19])
def test_bad_library_input_issue_19(case, call, exc, match):
    import warnings

    with warnings.catch_warnings():
        # never "imaginary part discarded"; np.exceptions is numpy >= 1.25, np.ComplexWarning (1.24) left in 2.0
        complex_warning = np.exceptions.ComplexWarning if hasattr(np, "exceptions") else np.ComplexWarning
        warnings.simplefilter("error", complex_warning)
        with pytest.raises(exc, match=match):
            call()


def test_failed_tl_select_leaves_adata_unchanged():
    import anndata as ad

    a = ad.AnnData(_small())
    with pytest.raises(ValueError, match="key_added"):
        glfs.tl.select(a, "laplacian_score", 2, key_added="")
    assert list(a.var.columns) == [] and len(a.obsp) == 0 and len(a.uns) == 0


@pytest.mark.parametrize("scale", [1e-45, 1.0, 1e45])
def test_select_accepts_scales_within_the_range(scale):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow, no invalid value
        s = glfs.select(scale * _small(20, 8), "laplacian_score", n_features_to_select=3)
    assert s.selected.sum() == 3


def test_affinity_neighbors_larger_than_the_samples_is_logged(caplog):
    from glfs.evaluate import evaluate_ranking

    X = _small(12, 4)
    y = np.repeat([0, 1], 6)
    with caplog.at_level("WARNING", logger="glfs.evaluate._clustering"):
        recs = evaluate_ranking(X, y, np.arange(4), feature_grid=["all"], n_runs=1, affinity_neighbors=50)
    assert recs
    assert re.search(r"affinity_neighbors = 50 is more than the 12 samples allow; using 11", caplog.text), caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="glfs.evaluate._clustering"):
        evaluate_ranking(X, y, np.arange(4), feature_grid=["all"], n_runs=1, affinity_neighbors=5)
    assert "affinity_neighbors" not in caplog.text


# ---- method parameters checked without running the method (glfs.api.check_method_params)
PARAMS_BAD = [
    (
        "glfs",
        {"graph_weigth": 0.1},
        r"parameter 'graph_weigth' is not a parameter of method 'glfs'; its parameters are \[.*'graph_weight'.*\]",
    ),
    ("ufi", {"n_iter": 5.0}, r"parameter 'n_iter' of method 'ufi' must be an integer; got 5\.0 \(float\)"),
    ("glfs", {"tol": "small"}, r"parameter 'tol' of method 'glfs' must be a number; got 'small' \(str\)"),
    ("glfs", {"center": "yes"}, r"parameter 'center' of method 'glfs' must be true or false; got 'yes' \(str\)"),
    ("glfs_exact", {"n_lams": 2.0}, r"parameter 'n_lams' of method 'glfs_exact' must be an integer; got 2\.0"),
    ("glfs_exact", {"objective": "paper"}, r"parameter 'objective' is not a parameter of method 'glfs_exact'"),
    ("lapaofs", {"lambda1": "big"}, r"parameter 'lambda1' of method 'lapaofs' must be a number; got 'big' \(str\)"),
    ("lapaofs", {"lambda1": True}, r"parameter 'lambda1' of method 'lapaofs' must be a number; got True \(bool\)"),
    ("lkr_score", {"n_neighbors": 3.5}, r"parameter 'n_neighbors' of method 'lkr_score' must be an integer"),
    (
        "lkr_score_supervised",
        {"n_neighbors": 3},
        r"parameter 'n_neighbors' is not a parameter of method 'lkr_score_supervised'",
    ),
    ("ufi", {"n_instances": 2.0}, r"parameter 'n_instances' of method 'ufi' must be an integer or null"),
    (
        "spca",
        {"n_components": [2]},
        r"parameter 'n_components' of method 'spca' must be an integer; got \[2\] \(list\)",
    ),
    ("q_alpha", {"random_state": 1}, r"parameter 'random_state' is not a parameter of method 'q_alpha'"),
    ("variance", {"ddof": 1}, r"parameter 'ddof' is not a parameter of method 'variance'; it takes none"),
    (
        "hvg_seurat",
        {"flavor": "x"},
        r"parameter 'flavor' is not a parameter of method 'hvg_seurat'; its parameters are \['n_bins'\]",
    ),
    ("nope", {}, r"method must be one of"),
]


@pytest.mark.parametrize(("method", "params", "match"), PARAMS_BAD, ids=[f"{m}-{sorted(p)}" for m, p, _ in PARAMS_BAD])
def test_method_params_checked_without_running(method, params, match):
    from glfs.api import check_method_params

    with pytest.raises(ValueError, match=match):
        check_method_params(method, params)


def test_method_params_good_values_pass():
    from glfs.api import check_method_params

    check_method_params(
        "glfs", {"graph_weight": 0, "ridge": "1e-3", "center": True, "max_swaps": None, "order": "greedy", "tol": 1e-9}
    )
    check_method_params("glfs_exact", {"lambda1": 1, "scale": 2, "n_lams": 3, "lam_init": None, "rank_by": "weight"})
    check_method_params("ufi", {"n_instances": 8, "ridge": 1})
    check_method_params("hvg_pearson_residuals", {"theta": 100, "clip": None})
    check_method_params("variance", {})


def test_method_params_agree_with_what_each_method_accepts():
    """Every name check_method_params accepts, the method accepts too (run on a tiny problem with
    the defaults); a name it refuses, the method refuses.  A method whose function takes **params
    needs a params_from in its registry row for its names to be checked (without one they are
    checked only when it runs); every method registered when this test was written has one."""
    import warnings

    from glfs.api import method_params

    X = np.abs(np.round(_small(30, 8, seed=4) * 5))
    y = np.repeat([0, 1, 2], 10)
    covered_when_written = {
        "laplacian_score",
        "fisher_score",
        "variance",
        "lapaofs",
        "lapdofs",
        "glfs",
        "glfs_exact",
        "glfs_paper",
        "glfs_printed",
        "lkr_score",
        "lkr_score_supervised",
        "ufi",
        "spca",
        "q_alpha",
        "hvg_seurat",
        "hvg_cell_ranger",
        "hvg_seurat_v3",
        "hvg_pearson_residuals",
        "deviance",
    }
    for method, info in glfs.METHODS.items():
        params = method_params(method)
        if params is None:
            assert method not in covered_when_written, f"{method}: no known parameter list (MethodInfo.params_from)"
            continue
        if info.family == "hvg":
            continue  # scanpy's own defaults; names come from the registry row (MethodInfo.params_from)
        given = {k: p.default for k, p in params.items() if p.default is not p.empty and p.default is not None}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            glfs.select(X, method, n_features_to_select=2, labels=y, **given)
            with pytest.raises((ValueError, TypeError)):
                glfs.select(X, method, n_features_to_select=2, labels=y, not_a_parameter_of_any_method=1)
