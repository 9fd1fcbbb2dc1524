"""Laplacian score in column blocks: equal to the naive dense formula for every block size.

The naive form builds L = D - W and D densely and evaluates He et al. (2005),
Eq. 1 gene by gene, independently of the library's blockwise sparse form.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
from glfs import ConstantFeatureWarning


def naive_laplacian_score(X, W):
    """L_r = f~' L f~ / f~' D f~, f~ = f - (f' D 1 / 1' D 1) 1, with dense L = D - W (tiny inputs only)."""
    Wd = np.asarray(W.toarray() if sp.issparse(W) else W, dtype=np.float64)
    D = np.diag(Wd.sum(axis=1))
    L = D - Wd
    one = np.ones(Wd.shape[0])
    out = []
    for f in np.asarray(X, dtype=np.float64).T:
        ft = f - (f @ D @ one) / (one @ D @ one) * one
        out.append(ft @ L @ ft / (ft @ D @ ft))
    return np.array(out)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    n, d = 150, 23
    groups = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d))
    X[:, :3] += 3.0 * (groups[:, None] == np.arange(3))  # planted: smooth on the graph
    X[:, 5] = 5.0 + rng.exponential(size=n)  # skewed, non-zero mean
    W = glfs.similarity_graph(X, n_neighbors=6, kernel="heat")
    return X, W


@pytest.mark.parametrize("block_size", [1, 2, 7, 22, 23, 24, 1000, None])
def test_blockwise_equals_naive_dense_formula(data, block_size):
    X, W = data
    expected = naive_laplacian_score(X, W)
    np.testing.assert_allclose(glfs.laplacian_score(X, W, block_size=block_size), expected, rtol=1e-10)


@pytest.mark.parametrize("block_size", [3, None])
def test_graph_with_a_diagonal(data, block_size):
    # the upper-triangle product must add the diagonal back (label_graph keeps W_ii = 1 / n_l)
    X, W = data
    Wd = W + sp.diags(np.linspace(0.1, 2.0, X.shape[0]))
    np.testing.assert_allclose(
        glfs.laplacian_score(X, Wd, block_size=block_size), naive_laplacian_score(X, Wd), rtol=1e-10
    )
    groups = np.arange(X.shape[0]) % 4
    Wl = glfs.label_graph(groups)
    np.testing.assert_allclose(
        glfs.laplacian_score(X, Wl, block_size=block_size), naive_laplacian_score(X, Wl), rtol=1e-10
    )


def test_input_array_is_not_modified(data):
    # float32 and float64 arrays are read in place (no validation copy): they must come back unchanged
    X, W = data
    for A in (X.copy(), X.astype(np.float32)):
        before = A.copy()
        glfs.laplacian_score(A, W, block_size=4)
        np.testing.assert_array_equal(A, before)


def test_default_block_is_smaller_than_d_for_many_samples(monkeypatch, data):
    # the default block (LS_BLOCK_VALUES // n_samples genes) splits X into several blocks
    import glfs.scores._genewise as gs

    X, W = data
    monkeypatch.setattr(gs, "LS_BLOCK_VALUES", 4 * X.shape[0])  # 4 genes per block: 6 blocks
    np.testing.assert_allclose(glfs.laplacian_score(X, W), naive_laplacian_score(X, W), rtol=1e-10)


@pytest.mark.parametrize("block_size", [1, 4, None])
def test_large_mean_small_variance_gene(data, block_size):
    # a gene g + 1e4 with sd 1e-2: the score must be that of g (affine invariance).  The centred form
    # gets it to ~1e-10; the uncentred identity f'Df - (f'd)^2 / 1'd would lose ~1e-4 to cancellation.
    X, W = data
    rng = np.random.default_rng(3)
    g = 0.01 * (X[:, 0] + 0.3 * rng.normal(size=X.shape[0]))
    Xs = np.column_stack([X[:, :4], g + 1e4, g])
    s = glfs.laplacian_score(Xs, W, block_size=block_size)
    ref = naive_laplacian_score(g[:, None], W)[0]  # well-conditioned: mean ~0
    np.testing.assert_allclose(s[4], ref, rtol=1e-8)
    np.testing.assert_allclose(s[5], ref, rtol=1e-10)


def test_float32_input_is_scored_in_float64(data):
    # float32 values give the score of the same values in float64 (the blocks are float64)
    X, W = data
    X32 = X.astype(np.float32)
    np.testing.assert_allclose(
        glfs.laplacian_score(X32, W, block_size=5), naive_laplacian_score(X32.astype(np.float64), W), rtol=1e-10
    )


def test_constant_gene_inside_a_block_is_nan(data):
    X, W = data
    Xc = X.copy()
    Xc[:, 9] = 2.5
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        s = glfs.laplacian_score(Xc, W, block_size=4)
    assert sum(issubclass(w.category, ConstantFeatureWarning) for w in rec) == 1
    assert np.isnan(s[9]) and np.isfinite(np.delete(s, 9)).all()
    keep = np.arange(X.shape[1]) != 9
    np.testing.assert_allclose(s[keep], naive_laplacian_score(Xc[:, keep], W), rtol=1e-10)


def test_sparse_input_blockwise(data):
    X, W = data
    Xs = sp.csr_matrix(np.where(X > 0.5, X, 0.0))
    np.testing.assert_allclose(
        glfs.laplacian_score(Xs, W, block_size=3), naive_laplacian_score(Xs.toarray(), W), rtol=1e-10
    )


BAD = [
    ("zero", 0, ValueError, r"block_size must be a positive integer; got 0"),
    ("negative", -2, ValueError, r"block_size must be a positive integer; got -2"),
    ("float", 2.5, ValueError, r"block_size must be a positive integer; got 2\.5"),
    ("bool", True, ValueError, r"block_size must be a positive integer; got True"),
]


@pytest.mark.parametrize("case,value,exc,match", BAD, ids=[b[0] for b in BAD])
def test_bad_block_size(data, case, value, exc, match):
    X, W = data
    with pytest.raises(exc, match=match):
        glfs.laplacian_score(X, W, block_size=value)
