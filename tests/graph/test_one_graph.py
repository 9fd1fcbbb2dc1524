"""Issue 40, item 5: one graph whatever the storage.  In memory, AnnData backed and dask, the library's own
graph of one X with one set of settings is the same graph (the rule that picks all genes or principal
components reads the size and settings only), so the same genes come out; the resolved settings are
recorded in ``uns[key]["params"]``; a dask counts layer streams (deviance) or is left alone (graph_moran on
a given graph)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.graph._neighbors as nb
from glfs import ConstantFeatureWarning

ad = pytest.importorskip("anndata")
da = pytest.importorskip("dask.array")


def _cells(n=700, d=150, seed=0):
    """Log-like sparse cells of four planted groups, each with 8 genes of its own; and their raw counts."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 4, n)
    rate = np.full((n, d), 0.3)
    for g in range(4):
        rate[np.ix_(groups == g, np.arange(8 * g, 8 * g + 8))] = 4.0
    counts = sp.csr_matrix(rng.poisson(rate).astype(np.float32))
    logx = counts.copy()
    logx.data = np.log1p(logx.data)
    return logx, counts


def _three(X, tmp_path, chunks=250):
    """The AnnData of X in memory, read backed from a CSR .h5ad, and with X a dask array of row chunks."""
    f = tmp_path / "x.h5ad"
    ad.AnnData(X=X).write_h5ad(f)
    yield "memory", ad.AnnData(X=X.copy())
    yield "backed", ad.read_h5ad(f, backed="r")
    yield "dask", ad.AnnData(X=da.from_array(X, chunks=(chunks, X.shape[1])))


def _same_graph(A, B):
    return A.shape == B.shape and (abs(A - B) > 1e-9 * abs(A).max()).nnz == 0 and (A != 0).nnz == (B != 0).nnz


@pytest.mark.parametrize("above", [False, True], ids=["all genes below 8192", "components from 8192 on"])
def test_the_same_graph_and_genes_whatever_the_storage(tmp_path, monkeypatch, above):
    """The same graph, edge for edge and weight for weight, and the same 40 genes, on either side of the
    size threshold (moved to 500 samples for the second case: components, fitted on every sample)."""
    if above:
        monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 500)
    X, _ = _cells()
    got = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        for name, a in _three(X, tmp_path):
            glfs.tl.select(a, "laplacian_score", 40)
            got[name] = a.obsp[glfs.tl.CONNECTIVITIES_KEY].tocsr(), a.var["laplacian_score"].to_numpy(), a.uns
    W, sel, uns = got["memory"]
    # the representation is decided by the size, as the in-memory X's rule says (independent of the code under test)
    assert uns["laplacian_score"]["params"]["graph_params"]["n_pcs"] == (20 if above else 0)
    for name in ("backed", "dask"):
        Wo, selo, unso = got[name]
        assert _same_graph(W, Wo), name
        assert np.array_equal(sel, selo), (name, np.flatnonzero(sel != selo))
        p, po = uns["laplacian_score"]["params"]["graph_params"], unso["laplacian_score"]["params"]["graph_params"]
        assert po["out_of_core"] and not p["out_of_core"]
        assert {k: v for k, v in p.items() if k != "out_of_core"} == {k: v for k, v in po.items() if k != "out_of_core"}
    # the planted genes come first (an independent check that the graph is a graph of the cells)
    assert np.flatnonzero(sel)[:32].tolist() == list(range(32))


def test_below_the_threshold_the_graph_is_on_all_genes(tmp_path):
    """Below 8,192 samples a backed X's graph is the exact graph on all genes, brute force on the dense
    distances of the in-memory X (5 nearest others per sample, symmetrised)."""
    X, _ = _cells(n=120, d=40, seed=2)
    ad.AnnData(X=X).write_h5ad(tmp_path / "x.h5ad")
    a = ad.read_h5ad(tmp_path / "x.h5ad", backed="r")
    W = glfs.similarity_graph(a.X, kernel="binary")
    D = np.linalg.norm(X.toarray()[:, None, :] - X.toarray()[None, :, :], axis=2)
    np.fill_diagonal(D, np.inf)
    A = np.zeros_like(D, dtype=bool)
    A[np.repeat(np.arange(120), 5), np.argsort(D, axis=1, kind="stable")[:, :5].ravel()] = True
    np.testing.assert_array_equal(W.toarray() > 0, A | A.T)


def test_the_recorded_settings_say_what_was_built():
    """uns params: n_pcs is the number of columns the search ran on, n_neighbors the
    neighbours asked for; a given graph records none of them."""
    X, _ = _cells(n=300, d=60, seed=3)
    a = ad.AnnData(X=X)
    glfs.tl.select(a, "laplacian_score", 10, graph_params={"n_neighbors": 7, "n_pcs": 12})
    p = a.uns["laplacian_score"]["params"]["graph_params"]
    assert (p["n_pcs"], p["n_neighbors"], p["search"], p["kernel"]) == (12, 7, "exact", "heat")
    a.obsp["given"] = a.obsp[glfs.tl.CONNECTIVITIES_KEY]
    glfs.tl.select(a, "laplacian_score", 10, obsp="given", key_added="given")
    assert "graph_params" not in a.uns["given"]["params"]


@pytest.mark.parametrize("x_storage", ["memory", "dask"])
def test_deviance_streams_a_dask_counts_layer(x_storage):
    """deviance on a dask layers['counts'] gives the deviance of the counts in memory, gene for gene."""
    X, C = _cells(n=400, d=80, seed=4)
    want = glfs.scores.deviance_score(C)
    a = ad.AnnData(X=X if x_storage == "memory" else da.from_array(X, chunks=(150, 80)))
    a.layers["counts"] = da.from_array(C, chunks=(150, 80))
    glfs.tl.select(a, "deviance", 20)
    np.testing.assert_allclose(a.var["deviance_score"].to_numpy(), want, rtol=1e-10)
    assert a.uns["deviance"]["params"]["counts"] == "layers:counts"


def test_graph_moran_on_a_given_graph_with_a_dask_counts_layer():
    """The README keeps the raw counts in layers['counts']; as a dask array they must not stop graph_moran
    on a given graph, whose scores are those without the layer."""
    X, C = _cells(n=400, d=80, seed=5)
    W = glfs.similarity_graph(X)
    ref = ad.AnnData(X=X)
    ref.obsp["g"] = W
    glfs.tl.select(ref, "graph_moran", 20, obsp="g")
    a = ad.AnnData(X=X)
    a.obsp["g"] = W
    a.layers["counts"] = da.from_array(C, chunks=(150, 80))
    glfs.tl.select(a, "graph_moran", 20, obsp="g")
    np.testing.assert_array_equal(a.var["graph_moran_score"].to_numpy(), ref.var["graph_moran_score"].to_numpy())
