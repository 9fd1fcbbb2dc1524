"""Issue 30 (low): the README's backed example, glfs.tl.select(anndata.read_h5ad(f, backed="r"),
"laplacian_score", 2000), refused files under 8,192 cells ("pass n_pcs").  Since issue 40 (item 5, one graph whatever the storage)
an out-of-core X below 8,192 cells is read into memory for its graph, which is then the in-memory X's graph
on all genes (the rule depends on the size and settings, never on the storage)."""

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

ad = pytest.importorskip("anndata")


def test_the_readme_backed_example_runs_below_8192_cells(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(600, 120, density=0.1, random_state=rng, format="csr", dtype=np.float64)
    X.data = np.log1p(np.round(10 * X.data) + 1)
    path = tmp_path / "small.h5ad"
    ad.AnnData(X).write_h5ad(path)
    a = ad.read_h5ad(path, backed="r")
    glfs.tl.select(a, "laplacian_score", 20)  # the README's line, on 600 cells
    assert int(a.var["laplacian_score"].sum()) == 20
    # the in-memory X's own graph (exact, all genes), so its scores
    W = glfs.similarity_graph(X)
    assert (abs(a.obsp[glfs.tl.CONNECTIVITIES_KEY] - W) > 1e-12).nnz == 0
    want = glfs.laplacian_score(X, W)
    np.testing.assert_allclose(a.var["laplacian_score_score"].to_numpy(), want, rtol=1e-9, atol=1e-12)


def test_a_backed_x_with_few_genes_gets_the_in_memory_graph(tmp_path):
    X = sp.random(100, 20, density=0.3, random_state=0, format="csr", dtype=np.float64)
    ad.AnnData(X).write_h5ad(tmp_path / "few.h5ad")
    a = ad.read_h5ad(tmp_path / "few.h5ad", backed="r")
    for kernel in ("heat", "cosine", "snf"):  # every kernel, as in memory
        W = glfs.similarity_graph(X, kernel=kernel)
        assert (abs(glfs.similarity_graph(a.X, kernel=kernel) - W) > 1e-12).nnz == 0, kernel
