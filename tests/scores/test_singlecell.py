"""A single-cell AnnData (scanpy's bundled pbmc68k_reduced: 700 cells x 765 genes) through
glfs.tl.select with every method of the library (issue 9)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import glfs

sc = pytest.importorskip("scanpy")

N_FEATURES = 30
# the published GLFS variants on 700 cells: a short lam path keeps the test to seconds (issue 9 report)
GLFS_PARAMS = {"n_lams": 3, "max_iter": 30}
PARAMS = {
    m: dict(GLFS_PARAMS) for m in ("glfs_exact", "glfs_paper", "glfs_printed")
}  # "glfs" (design) runs with defaults


@pytest.fixture(scope="module")
def pbmc():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = sc.datasets.pbmc68k_reduced()
    # the methods that score raw counts read layers["counts"]; this dataset ships log-normalised
    # values only, so counts are drawn from them (Poisson with mean expm1(raw)): the contract is tested
    rng = np.random.default_rng(0)
    a.layers["counts"] = rng.poisson(np.expm1(a.raw[:, a.var_names].X.toarray())).astype(np.float32)
    return a


@pytest.fixture(scope="module")
def fisher(pbmc):
    """Fisher score of every gene for the louvain clusters: an independent yardstick of cluster genes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glfs.fisher_score(pbmc.X, pbmc.obs["louvain"].to_numpy())


@pytest.mark.parametrize("method", sorted(glfs.METHODS))
def test_every_method_through_tl_select(pbmc, method):
    adata = pbmc.copy()
    info = glfs.METHODS[method]
    kwargs = {"labels_key": "louvain"} if info.needs_labels else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        glfs.tl.select(adata, method=method, n_top_genes=N_FEATURES, **kwargs, **PARAMS.get(method, {}))
    var = adata.var
    rank = var[f"{method}_rank"].to_numpy()
    assert sorted(rank.tolist()) == list(range(1, adata.n_vars + 1))  # a full ranking, 1 = best
    assert var[method].sum() == N_FEATURES or (info.own_support and 1 <= var[method].sum() <= adata.n_vars)
    assert adata.uns[method]["params"]["n_top_genes"] == N_FEATURES
    if info.needs_graph:
        W = adata.obsp[glfs.tl.CONNECTIVITIES_KEY]
        assert W.shape == (700, 700) and abs(W - W.T).max() == 0
    else:
        assert glfs.tl.CONNECTIVITIES_KEY not in adata.obsp
    # the AnnData can be used downstream as the README says
    sub = adata[:, adata.var[method].to_numpy()]
    assert sub.n_vars == int(var[method].sum())


@pytest.mark.parametrize("method", ["laplacian_score", "lkr_score", "lkr_score_supervised"])
def test_graph_methods_pick_cluster_genes(pbmc, fisher, method):
    """Top genes separate the louvain clusters far better than the bottom genes (Fisher score)."""
    adata = pbmc.copy()
    kwargs = {"labels_key": "louvain"} if glfs.METHODS[method].needs_labels else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = glfs.tl.select(adata, method=method, n_top_genes=N_FEATURES, inplace=False, **kwargs)
    order = np.argsort(df["rank"].to_numpy())
    top, bottom = order[:50], order[-50:]
    assert np.nanmedian(fisher[top]) > 3 * np.nanmedian(fisher[bottom])


def test_scanpy_connectivities_as_graph(pbmc):
    """The graph scanpy's pp.neighbors stored in obsp works as the patient-similarity graph."""
    adata = pbmc.copy()
    glfs.tl.select(adata, method="laplacian_score", n_top_genes=N_FEATURES, obsp="connectivities")
    assert adata.uns["laplacian_score"]["params"]["graph"] == "obsp:connectivities"
    s = adata.var["laplacian_score_score"].to_numpy()
    direct = glfs.laplacian_score(pbmc.X, pbmc.obsp["connectivities"])
    np.testing.assert_allclose(s, direct, rtol=1e-12)
