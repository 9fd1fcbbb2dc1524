"""Genes stored in most cells are scored on their dense columns (glfs.scores._genewise, DENSE_SHARE).  Those
columns are made in one pass over the block's stored values (glfs.core._sparse_kernels.dense_columns) and
scaled and centred in place, so that a task's temporaries per cell are the column's 8 bytes (issue 42: at
10^7 cells the cut column, its float64 copy and the centred copy were 24 bytes a cell in the local step)."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from glfs.core._sparse_kernels import dense_columns
from glfs.scores import _genewise, _moran


def _block(n, d, seed=0):
    """float32 CSR counts, gene 0 stored in every cell, gene 3 in 95 % of them, the rest sparse."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.05, random_state=rng, format="lil", dtype=np.float32)
    X[:, 0] = rng.integers(1, 9, (n, 1)).astype(np.float32)
    X[:, 3] = (rng.random((n, 1)) < 0.95) * rng.integers(1, 5, (n, 1)).astype(np.float32)
    return X.tocsr()


@pytest.mark.parametrize("fmt", ["csr", "csr-unsorted", "csc"])
def test_dense_columns_are_the_columns_made_dense(fmt):
    X = _block(500, 12)
    if fmt == "csr-unsorted":  # the kernel takes a row's entries in any order
        rng = np.random.default_rng(1)
        for i in range(X.shape[0]):
            a, b = X.indptr[i], X.indptr[i + 1]
            perm = a + rng.permutation(b - a)
            X.indices[a:b], X.data[a:b] = X.indices[perm], X.data[perm]
        X.has_sorted_indices = False
        assert not X.has_sorted_indices
    B = X.tocsc() if fmt == "csc" else X
    genes = np.array([7, 0, 3])
    got = dense_columns(B, genes)
    assert got.dtype == np.float64 and got.shape == (500, 3)
    np.testing.assert_array_equal(got, X.toarray()[:, genes].astype(np.float64))
    assert not np.shares_memory(got, B.data)
    got[:] = -1.0  # a new array: the caller centres it in place
    np.testing.assert_array_equal(dense_columns(B, genes), X.toarray()[:, genes])


def _peak_above(fn):
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_dense_gene_costs_its_column_per_task():
    """A block of one gene stored in every cell of 10^6: the local step of the Laplacian score and of Moran's I
    and one shard's graph term each hold at most 2 x 8 bytes a cell beyond their inputs (the column made dense,
    and for Moran's I its squares).  The former cut-and-copy path held 24 bytes a cell in the Laplacian score's
    local step and 16 in the graph term."""
    n = 10**6
    rng = np.random.default_rng(0)
    B = sp.csr_matrix(rng.integers(1, 9, (n, 1)).astype(np.float32))
    deg = rng.random(n) + 1.0
    # a shard of the graph's upper triangle: 1,000 rows, each linked to a cell further on
    rows = np.arange(1000)
    U = sp.csr_matrix((np.ones(1000), (rows, rows + 1 + rng.integers(0, n - 1001, 1000))), shape=(1000, n))
    kw = {"deg": deg, "total": deg.sum(), "w_diag": None, "block_size": 8}
    (partial, plan) = _genewise._laplacian_local(B, **kw)  # kernels compiled before tracing
    _genewise.graph_term(B, U, plan, r0=0)
    _moran._moran_local(B, w_row=deg, block_size=8)
    assert plan["dense"].tolist() == [0]
    local = _peak_above(lambda: _genewise._laplacian_local(B, **kw))
    term = _peak_above(lambda: _genewise.graph_term(B, U, plan, r0=0))
    moran = _peak_above(lambda: _moran._moran_local(B, w_row=deg, block_size=8))
    assert local < 1.25 * 8 * n, local
    assert term < 1.25 * 8 * n, term
    assert moran < 1.25 * 16 * n, moran
    # and the terms are the dense formula's: z centred with the degree-weighted mean, t = sum_U z_i z_j
    x = B.toarray().ravel().astype(np.float64)
    z = x / x.max()
    z -= deg @ z / deg.sum()
    t = _genewise.graph_term(B, U, plan, r0=0)
    np.testing.assert_allclose(t, [z[U.nonzero()[0]] @ z[U.nonzero()[1]]], rtol=1e-12)
    np.testing.assert_allclose(partial[1], [deg @ (z * z)], rtol=1e-12)
