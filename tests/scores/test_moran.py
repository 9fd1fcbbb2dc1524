"""glfs.scores._moran.graph_autocorrelation: Moran's I and its exact randomisation z-score (issue 18).

The permutation moments are checked against brute-force permutations (an independent route),
sparse input against dense, and the z-score's point: a gene with a few counts in a few
neighbouring cells (huge kurtosis) gets a small z although its Moran's I is high.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from glfs import ConstantFeatureWarning
from glfs.scores._moran import graph_autocorrelation


def _ring(n, k=2):
    """A ring: each sample linked to its k nearest on either side (weights 1)."""
    rows = np.repeat(np.arange(n), 2 * k)
    offs = np.tile(np.r_[np.arange(1, k + 1), -np.arange(1, k + 1)], n)
    return sp.csr_matrix((np.ones(rows.size), (rows, (rows + offs) % n)), shape=(n, n))


def _moran_i(f, W):
    """Moran's I written out from its definition (dense, small n)."""
    W = W.toarray().copy()
    np.fill_diagonal(W, 0)
    z = f - f.mean()
    return f.size / W.sum() * (z @ W @ z) / (z @ z)


def test_moments_equal_brute_force_permutations():
    rng = np.random.default_rng(0)
    n = 14
    A = sp.random(n, n, density=0.3, random_state=1)
    W = (A + A.T).tocsr()  # weighted, irregular degrees
    X = np.column_stack([rng.normal(size=n), rng.exponential(size=n) ** 3, (rng.random(n) < 0.25).astype(float)])
    res = graph_autocorrelation(X, W)
    np.testing.assert_allclose(res.moran_i, [_moran_i(X[:, j], W) for j in range(3)], rtol=1e-12)
    perms = np.array([[_moran_i(X[rng.permutation(n), j], W) for j in range(3)] for _ in range(30000)])
    var = ((res.moran_i - res.expected) / res.z) ** 2
    # Monte Carlo standard errors: mean sd/sqrt(30000); variance about var*sqrt(2/30000)*kurtosis factor
    np.testing.assert_allclose(perms.mean(axis=0), res.expected, atol=4 * perms.std(axis=0).max() / np.sqrt(30000))
    np.testing.assert_allclose(perms.var(axis=0), var, rtol=0.05)


def test_sparse_equals_dense():
    rng = np.random.default_rng(1)
    n, d = 120, 40
    X = rng.poisson(0.3, size=(n, d)) * rng.gamma(2.0, 3.0, size=d)  # mostly zeros, scales 0.1-30
    X[:, 5] *= 1e6  # scale-free: a huge gene
    W = _ring(n, 3)
    a = graph_autocorrelation(X, W)
    b = graph_autocorrelation(sp.csr_matrix(X), W, block_size=7)
    np.testing.assert_allclose(b.moran_i, a.moran_i, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.z, a.z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(b.kurtosis, a.kurtosis, rtol=1e-9)


def test_invariant_to_scale_and_shift_and_permutes_with_genes():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 8))
    W = _ring(60)
    a = graph_autocorrelation(X, W)
    b = graph_autocorrelation(3e-4 * X + 7.0, W)
    np.testing.assert_allclose(b.z, a.z, rtol=1e-8)
    perm = rng.permutation(8)
    np.testing.assert_allclose(graph_autocorrelation(X[:, perm], W).z, a.z[perm], rtol=1e-12)


def test_planted_smooth_gene_outranks_noise():
    rng = np.random.default_rng(3)
    n = 200
    W = _ring(n, 5)
    smooth = np.sin(np.linspace(0, 4 * np.pi, n, endpoint=False)) + 0.3 * rng.normal(size=n)
    X = np.column_stack([smooth, rng.normal(size=(n, 30))])
    res = graph_autocorrelation(X, W)
    assert np.argmax(res.z) == 0
    assert res.z[0] > 10
    assert np.all(np.abs(res.z[1:]) < 4)  # noise genes: about standard normal


def test_few_counts_in_neighbouring_cells_are_significant_but_not_broad():
    """Three counts in three neighbouring cells of 300: as non-random as a broad two-group gene
    (z of both well above 3), and a large kurtosis does not widen the null: it narrows it (Cliff &
    Ord's b2 term is subtracted), so z alone does not demote such genes.  Measured and
    kept as a fact of the statistic: the selection method must weigh the amount of shared
    signal, not only its significance (docs/methods/graph-moran.md)."""
    rng = np.random.default_rng(4)
    n = 300
    W = _ring(n, 5)
    rare = np.zeros(n)
    rare[[10, 11, 12]] = 1.0
    broad = (np.arange(n) < n // 2) + 0.8 * rng.normal(size=n)
    res = graph_autocorrelation(np.column_stack([rare, broad]), W)
    assert res.kurtosis[0] > 50 and abs(res.kurtosis[1] - 3) < 1
    assert res.z[0] > 3 and res.z[1] > 3
    # a narrower null for the kurtotic gene: (I - E) / z is its null sd
    sd = (res.moran_i - res.expected) / res.z
    assert sd[0] < sd[1]


def test_constant_genes_are_nan_with_one_warning():
    X = np.column_stack([np.ones(20), np.arange(20.0)])
    with pytest.warns(ConstantFeatureWarning):
        res = graph_autocorrelation(X, _ring(20))
    assert np.isnan(res.z[0]) and np.isfinite(res.z[1])


@pytest.mark.parametrize(
    ("X", "W", "match"),
    [
        (np.ones((3, 2)), _ring(3, 1), "at least 4 samples"),
        (np.arange(12.0).reshape(6, 2), sp.csr_matrix((6, 6)), "at least one edge|positive degree|isolated"),
        (np.arange(12.0).reshape(6, 2), _ring(5, 1), r"graph must|shape"),
    ],
)
def test_bad_inputs(X, W, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match):
            graph_autocorrelation(X, W)


def test_pearson_residual_autocorrelation_equals_scanpys_residuals():
    """Residuals formed in gene blocks from sparse counts = scanpy's dense residuals, then Moran's I."""
    sc = pytest.importorskip("scanpy")
    ad = pytest.importorskip("anndata")
    from glfs.scores._moran import pearson_residual_autocorrelation

    rng = np.random.default_rng(5)
    n, d = 150, 30
    counts = rng.poisson(rng.gamma(0.5, 2.0, size=d) * rng.uniform(0.5, 2, size=(n, 1))).astype(np.float64)
    counts[:, 3] = 0  # a gene without counts
    W = _ring(n, 4)
    a = ad.AnnData(counts.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.experimental.pp.normalize_pearson_residuals(a)
        R = np.nan_to_num(np.asarray(a.X))  # scanpy: 0/0 = NaN for the gene without counts
        ref = graph_autocorrelation(R, W)
        got = pearson_residual_autocorrelation(sp.csr_matrix(counts), W, block_size=7)
    keep = np.arange(d) != 3
    np.testing.assert_allclose(got.moran_i[keep], ref.moran_i[keep], rtol=1e-9, atol=1e-12)
    assert np.isnan(got.moran_i[3])
    # float32 counts (as anndata stores them) are read as they are, without a float64 copy: the same result,
    # counts being integers (exact in float32)
    got32 = pearson_residual_autocorrelation(sp.csr_matrix(counts.astype(np.float32)), W, block_size=7)
    np.testing.assert_allclose(got32.moran_i[keep], got.moran_i[keep], rtol=1e-12, atol=1e-15)
