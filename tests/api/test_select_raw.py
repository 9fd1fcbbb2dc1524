"""Issue 30 (low): glfs.select(adata.raw) said "could not convert Raw: setting an array element with a
sequence"; it now reads adata.raw.X, as it reads an AnnData's .X."""

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

ad = pytest.importorskip("anndata")


@pytest.mark.parametrize("sparse", [False, True])
def test_select_reads_adata_raw_x(sparse):
    rng = np.random.default_rng(0)
    counts = rng.poisson(2.0, (40, 12)).astype(float)
    counts[:, 3] *= 5  # the most variable gene
    a = ad.AnnData(sp.csr_matrix(counts) if sparse else counts)
    a.raw = a
    a.X = np.log1p(counts)  # X is something else now
    got = glfs.select(a.raw, "variance", n_features_to_select=3)
    want = glfs.select(counts, "variance", n_features_to_select=3)
    np.testing.assert_allclose(got.scores, want.scores)
    assert got.ranking[0] == 3
    np.testing.assert_array_equal(a.raw.X.toarray() if sparse else a.raw.X, counts)  # nothing written
