"""Issue 30 (low): the README's backed example, glfs.tl.select(anndata.read_h5ad(f, backed="r"),
"laplacian_score", 2000), refused files under 8,192 cells ("pass n_pcs"); an out-of-core X is now
searched on 20 principal components (APPROX_N_PCS; 50 until 2026-12-05) at any size, as the two-pass graph needs."""

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
    # the same graph as the in-memory X asks for explicitly: 20 components, fitted on all 600 cells
    W = glfs.similarity_graph(X, n_pcs=20)
    want = glfs.laplacian_score(X, W)
    np.testing.assert_allclose(a.var["laplacian_score_score"].to_numpy(), want, rtol=1e-4, atol=1e-6)


def test_a_backed_x_with_few_genes_still_says_what_to_do(tmp_path):
    X = sp.random(100, 20, density=0.3, random_state=0, format="csr", dtype=np.float64)
    ad.AnnData(X).write_h5ad(tmp_path / "few.h5ad")
    a = ad.read_h5ad(tmp_path / "few.h5ad", backed="r")
    with pytest.raises(ValueError, match=r"pass n_pcs, e\.g\. 20, or method='approx'.* or load X first"):
        glfs.similarity_graph(a.X)
