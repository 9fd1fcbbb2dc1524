"""The sparse-times-dense kernel of the PCA projection (glfs.core._sparse_kernels.times_dense).

It must sum as scipy's ``X @ B`` does, so that the projected scores, and hence the graphs, are those of
scipy's product whatever the number of threads: checked bit for bit.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from glfs.core._sparse_kernels import times_dense
from glfs.graph._sharded import project_block


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_times_dense_is_scipys_product_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    X = sp.random(400, 90, 0.07, format="csr", random_state=1, data_rvs=lambda k: rng.integers(1, 9, k)).astype(dtype)
    X[5] = 0  # an empty row
    X.eliminate_zeros()
    B = rng.standard_normal((90, 13)).astype(np.float32)
    want = X @ B
    got = times_dense(X, B)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(times_dense(X.tocsc(), B), want)  # another format: converted to CSR first


def test_times_dense_does_not_depend_on_the_thread_count():
    numba = pytest.importorskip("numba")
    X = sp.random(3000, 200, 0.05, format="csr", random_state=2, dtype=np.float32)
    B = np.random.default_rng(3).standard_normal((200, 20)).astype(np.float32)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = times_dense(X, B)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(times_dense(X, B), one)


def test_project_block_gives_scipys_float32_scores_for_every_block_kind():
    rng = np.random.default_rng(4)
    X = sp.random(500, 40, 0.1, format="csr", random_state=5, dtype=np.float64)
    V = rng.standard_normal((40, 6)).astype(np.float32)
    want = np.asarray(X @ V, dtype=np.float32)
    for blk in (X, X.tocsc(), X.toarray(), X.astype(np.float32)):
        got = project_block(blk, V)
        assert got.dtype == np.float32
        if blk.dtype == np.float64:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_array_equal(got, np.asarray(blk @ V, dtype=np.float32))


def test_column_range_counts_the_implicit_zeros():
    from glfs.core._sparse_kernels import column_range

    D = np.array([[0.0, 2.0, -1.0, 0.0, 5.0], [0.0, 3.0, 0.0, 0.0, 5.0], [0.0, 4.0, 0.0, 7.0, 5.0]])
    X = sp.csr_matrix(D)
    X[0, 0] = 0.0  # an explicitly stored zero
    lo, hi = column_range(X)
    np.testing.assert_array_equal(lo, D.min(axis=0))
    np.testing.assert_array_equal(hi, D.max(axis=0))
    R = sp.random(300, 40, 0.2, format="csr", random_state=6) - 0.5 * sp.random(
        300, 40, 0.1, format="csr", random_state=7
    )
    for M in (R, R.tocsc()):  # CSC read by columns, without a CSR copy
        for got, want in zip(column_range(M), (R.toarray().min(axis=0), R.toarray().max(axis=0))):
            np.testing.assert_array_equal(got, want)
    for got, want in zip(column_range(X.tocsc()), (D.min(axis=0), D.max(axis=0))):
        np.testing.assert_array_equal(got, want)
