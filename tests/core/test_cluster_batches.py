"""Batch-aware gene-wise scores of a dask X on a dask.distributed LocalCluster (issue 31): each batch's cells
cut from the dask X lazily (glfs.core._out_of_core.OutOfCore rows) and scored in gene blocks as tasks,
equal to the in-memory batch-aware result; one batch equals the plain result; the graph built within
the batches on the cluster equals the streamed one."""

import logging
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from test_cluster import _chunked, _graph, _planted

import glfs
from glfs import ConstantFeatureWarning

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

METHODS = ("laplacian_score", "variance", "deviance", "graph_moran")


def _select(X, method, batches, W, **kw):
    given = {"graph": W} if method in ("laplacian_score", "graph_moran") else {}
    if method == "graph_moran":  # the default rule's local share needs X in memory (refused out of core, below)
        kw = {"batch_rule": "minus_batch_share", **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        return glfs.select(X, method, batches=batches, n_features_to_select=8, **given, **kw)


def _same(got, want):
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-6, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(got.ranking, want.ranking)
    for key in ("nbatches", "median_rank", "batch_scores"):
        np.testing.assert_allclose(got.extra[key], want.extra[key], rtol=1e-6, atol=1e-12, equal_nan=True, err_msg=key)


@pytest.mark.parametrize(("data", "kind"), [("planted", "sparse-rows"), ("random", "sparse-2d"), ("planted", "dense")])
def test_batches_on_the_cluster_equal_in_memory(dask_client, caplog, data, kind):
    X, groups = _planted(seed=0 if data == "planted" else 3)
    W = _graph(X, groups)
    batches = np.random.default_rng(5).choice(["d1", "d2", "d3"], X.shape[0])  # donors unrelated to the groups
    dx = _chunked(X, kind)
    for method in METHODS:
        want = _select(X if kind != "dense" else X.toarray(), method, batches, W)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="glfs.core._cluster"):
            got = _select(dx, method, batches, W)
        tasks = [r.getMessage() for r in caplog.records if "gene blocks of all" in r.getMessage()]
        assert len(tasks) >= 3, (method, tasks)  # each batch scored in gene blocks as dask tasks
        _same(got, want)
        assert got.params["batches"] == ["d1", "d2", "d3"]
        if data == "planted" and method != "variance":  # the planted genes lead within the batches too
            assert set(np.flatnonzero(got.selected)) == set(range(8)), method


def test_the_local_share_rule_refuses_an_out_of_core_x(dask_client):
    X, groups = _planted(seed=0)
    batches = np.random.default_rng(5).choice(["d1", "d2", "d3"], X.shape[0])
    with pytest.raises(ValueError, match=r"needs X in memory.*batch_rule='minus_batch_share'"):
        glfs.select(
            _chunked(X, "sparse-rows"), "graph_moran", batches=batches, graph=_graph(X, groups), n_features_to_select=8
        )


def test_one_batch_is_the_plain_result_on_the_cluster(dask_client):
    X, groups = _planted(seed=1)
    W = _graph(X, groups)
    dx = _chunked(X, "sparse-rows")
    one = np.zeros(X.shape[0], int)
    for method in METHODS:
        got = _select(dx, method, one, W)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstantFeatureWarning)
            plain = glfs.select(
                dx,
                method,
                n_features_to_select=8,
                **({"graph": W} if method != "variance" and method != "deviance" else {}),
            )
        np.testing.assert_allclose(got.scores, plain.scores, rtol=1e-12, equal_nan=True, err_msg=method)
        np.testing.assert_array_equal(got.ranking, plain.ranking)


def test_graph_within_batches_on_the_cluster_equals_the_streamed_graph(dask_client, monkeypatch):
    """laplacian_score with batches and no graph: the graph of a shared PCA, searched within each batch on
    the cluster, is the one the single process streams; no edge joins two batches."""
    import glfs.graph._neighbors as nb
    import glfs.graph._sharded as sharded

    X, groups = _planted(n=900, d=60, seed=2)
    batches = np.repeat(["a", "b", "c"], 300)[np.random.default_rng(0).permutation(900)]
    monkeypatch.setattr(sharded, "QUERY_BLOCK", 200)
    gp = {"n_pcs": 10, "method": "approx", "n_neighbors": 8}

    def run():
        return _select(
            da.from_array(X, chunks=(250, 60), asarray=False), "laplacian_score", batches, None, graph_params=gp
        )

    got = run()
    with pytest.MonkeyPatch.context() as m:  # no client: every block streams through this process
        m.setattr(nb, "cluster_client", lambda X, client=None: None)
        want = run()
    _same(got, want)
    G = sp.coo_matrix(got.extra["graph"])
    assert G.nnz > 0 and np.all(batches[G.row] == batches[G.col])
    assert (sp.csr_matrix(got.extra["graph"]) != sp.csr_matrix(want.extra["graph"])).nnz == 0


def test_batches_with_a_backed_x_are_refused(tmp_path):
    ad = pytest.importorskip("anndata")
    X, _ = _planted(n=60, d=10)
    ad.AnnData(X=X).write_h5ad(tmp_path / "x.h5ad")
    backed = ad.read_h5ad(tmp_path / "x.h5ad", backed="r")
    with pytest.raises(ValueError, match=r"batches \(batch_key\) need X in memory or as a dask array.*backed"):
        glfs.select(backed.X, "variance", batches=np.arange(60) % 2, n_features_to_select=3)


def test_tl_select_with_batch_key_on_the_cluster(dask_client):
    """glfs.tl.select(adata, ..., batch_key=) with adata.X a dask array: the same .var columns as in memory."""
    ad = pytest.importorskip("anndata")
    pd = pytest.importorskip("pandas")
    X, groups = _planted(seed=4)
    W = _graph(X, groups)
    obs = pd.DataFrame(
        {"donor": np.random.default_rng(6).choice(["x", "y"], X.shape[0])}, index=[f"c{i}" for i in range(X.shape[0])]
    )
    out = []
    for x in (_chunked(X, "sparse-rows"), X):
        a = ad.AnnData(X=x, obs=obs.copy())
        a.obsp["connectivities"] = W
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstantFeatureWarning)
            glfs.tl.select(a, "laplacian_score", 8, obsp="connectivities", batch_key="donor")
        out.append(a.var)
    assert "laplacian_score_nbatches" in out[1].columns and list(out[0].columns) == list(out[1].columns)
    for col in out[1].columns:
        np.testing.assert_allclose(
            out[0][col].to_numpy(float), out[1][col].to_numpy(float), rtol=1e-6, equal_nan=True, err_msg=col
        )
