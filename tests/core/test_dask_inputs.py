"""Issue 41, out-of-core X as it really arrives (items 17, 22 and a closed client): a dask X with unknown chunk
sizes or not 2-D is refused naming X and the fix; bool, float16 and long double values out of core give the
scores of the same X in memory; a closed dask client is named as such."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

da = pytest.importorskip("dask.array")


def _counts(n=60, d=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.poisson(rng.gamma(1.0, 2.0, d), size=(n, d)).astype(np.float64)
    X[:, 3] += 5.0 * (np.arange(n) < n // 2)  # a planted gene
    return X


def _select(X, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glfs.select(X, method, n_features_to_select=4)


# ---- 17: unknown chunk sizes, 1-D, 3-D -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (
            lambda d: d[d[:, 0] >= 0],
            r"X is a dask array with unknown chunk sizes \(shape \(nan, 20\).*X\.compute_chunk_sizes\(\)",
        ),
        (lambda d: d[:, 0], r"X must be 2-D \(n_samples, n_features\); got a dask array with shape \(60,\)"),
        (
            lambda d: d[:, :, None],
            r"X must be 2-D \(n_samples, n_features\); got a dask array with shape \(60, 20, 1\)",
        ),
    ],
    ids=["nan_chunks", "1d", "3d"],
)
def test_a_dask_x_of_unknown_or_wrong_shape_is_refused_naming_the_fix(make, pattern):
    X = make(da.from_array(_counts(), chunks=(15, 20)))
    with pytest.raises(ValueError, match=pattern):
        _select(X, "variance")


def test_after_compute_chunk_sizes_the_filtered_x_is_scored():
    X = _counts()
    filtered = da.from_array(X, chunks=(15, 20))
    filtered = filtered[filtered[:, 0] >= 1].compute_chunk_sizes()
    np.testing.assert_allclose(_select(filtered, "variance").scores, X[X[:, 0] >= 1].var(axis=0))


# ---- 22: bool, float16, long double out of core = in memory ---------------------------------------------------
@pytest.mark.parametrize(
    ("dtype", "sparse"), [(bool, False), (bool, True), (np.float16, False)], ids=["bool", "bool-sparse", "float16"]
)  # scipy.sparse holds no float16
@pytest.mark.parametrize("method", ["deviance", "variance", "laplacian_score"])
def test_bool_and_float16_dask_x_gives_the_in_memory_scores(dtype, sparse, method):
    X = _counts()
    X = (X > 2) if dtype is bool else X.astype(np.float16)
    mem = sp.csr_matrix(X) if sparse else X
    lazy = da.from_array(mem, chunks=(15, 20), asarray=False) if sparse else da.from_array(mem, chunks=(15, 20))
    expected = _select(mem, method)
    got = _select(lazy, method)
    np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(got.selected, expected.selected)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("method", ["deviance", "variance", "laplacian_score"])
def test_a_backed_long_double_x_gives_the_in_memory_scores(tmp_path, sparse, method):
    ad = pytest.importorskip("anndata")
    X = _counts().astype(np.longdouble)
    mem = sp.csr_matrix(X) if sparse else X
    ad.AnnData(mem).write_h5ad(tmp_path / "ld.h5ad")
    a = ad.read_h5ad(tmp_path / "ld.h5ad", backed="r")
    try:
        got = _select(a.X, method)
    finally:
        a.file.close()
    expected = _select(mem, method)
    assert np.isfinite(got.scores).sum() >= X.shape[1] - 2  # a constant gene or two: NaN on both routes
    np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-6, equal_nan=True)
    if method == "variance":  # and the in-memory answer is the brute-force one
        np.testing.assert_allclose(got.scores, np.asarray(X, np.float64).var(axis=0), rtol=1e-12)


# ---- also seen: a closed dask client --------------------------------------------------------------------------
def test_a_closed_client_is_named_not_an_ioloop_error():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        client = distributed.Client(cl)
        client.close()
        with (
            client.as_current(),
            pytest.raises(RuntimeError, match=r"the dask client in use .* is closed.*running one"),
        ):
            _select(da.from_array(_counts(), chunks=(15, 20)), "variance")
