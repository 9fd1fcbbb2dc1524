"""The graph in row shards on a dask cluster (issue 42): a graph score's pair term sum_{i<j} W_ij z_i z_j is a sum
over the graph's rows, so each task takes its gene block and one row shard of the graph, and no worker is given the
whole graph; the shards' terms add up to the whole graph's."""

import numpy as np
import pytest
import scipy.sparse as sp

from glfs.core import _cluster_memory, _graph_shards
from glfs.scores import _genewise
from glfs.scores._genewise import cross_sums, graph_term, laplacian_score
from glfs.scores._moran import graph_autocorrelation

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


def _graph(n, k=6, seed=1):
    """A symmetric random graph with weights in (0, 1] (no diagonal), every sample with a neighbour."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), k)
    W = sp.csr_matrix((rng.random(rows.size) + 0.01, (rows, rng.integers(0, n, rows.size))), shape=(n, n))
    W = W + W.T
    W.setdiag(0)
    W.eliminate_zeros()
    return W.tocsr()


def _expression(n, d, seed=0):
    """Sparse float32 counts with three genes stored in every cell (scored on their dense columns) and one
    constant gene."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.15, random_state=rng, format="lil", dtype=np.float32)
    X[:, :3] = rng.integers(1, 9, (n, 3)).astype(np.float32)
    X[:, 3] = 0
    X = X.tocsr()
    X.data = np.round(X.data * 4) + 1
    return X


@pytest.mark.parametrize("limit", [1, 500, 3000, 10**9])
def test_shards_are_consecutive_rows_within_the_bound(limit):
    U = sp.triu(_graph(300), k=1, format="csr")
    cut = _graph_shards.graph_shards(U, limit)
    starts = [r0 for r0, _ in cut]
    assert starts[0] == 0
    assert all(rows.shape[1] == 300 for _, rows in cut)
    assert [a + rows.shape[0] for a, (_, rows) in zip(starts, cut)] == starts[1:] + [300]
    np.testing.assert_array_equal(sp.vstack([rows for _, rows in cut]).toarray(), U.toarray())
    for _, rows in cut:  # a shard above the bound is one row alone
        assert _cluster_memory.nbytes(rows) <= limit or rows.shape[0] == 1
    if limit == 10**9:
        assert len(cut) == 1


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_cross_sums_of_row_shards_add_up_to_the_brute_force(fmt):
    """sum_{(i, j) in U} U_ij x_i x_j written out densely, against the shards' sums added (CSR and CSC kernels)."""
    n = 200
    X = _expression(n, 12).asformat(fmt)
    U = sp.triu(_graph(n), k=1, format="csr")
    inv = 1.0 / np.abs(X.toarray()).max(axis=0).clip(1)
    Z = X.toarray().astype(np.float64) * inv
    brute = np.array([Z[:, g] @ (U.toarray() @ Z[:, g]) for g in range(Z.shape[1])])
    for limit in (400, 2000, 10**9):
        total = sum(cross_sums(X, rows, inv, r0=r0) for r0, rows in _graph_shards.graph_shards(U, limit))
        np.testing.assert_allclose(total, brute, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="do not fit"):
        cross_sums(X, U[:50], inv, r0=n - 10)


@pytest.mark.parametrize("dense", [False, True])
def test_graph_terms_of_row_shards_add_up_to_the_whole(dense):
    """graph_term on each shard, added, is graph_term on the whole graph, for the sparse and the dense genes
    (the Laplacian score's plan: scaled and degree-centred dense columns)."""
    n = 250
    X = _expression(n, 10)
    B = X.toarray() if dense else X
    W = _graph(n)
    deg = np.asarray(W.sum(axis=1)).ravel()
    U = sp.triu(W, k=1, format="csr")
    _, plan = _genewise._laplacian_local(B, deg=deg, total=deg.sum(), w_diag=None, block_size=2)
    assert plan["dense"].size == (10 if dense else 3)
    whole = graph_term(B, U, plan)
    shards = sum(graph_term(B, rows, plan, r0) for r0, rows in _graph_shards.graph_shards(U, 700))
    np.testing.assert_allclose(shards, whole, rtol=1e-12, atol=1e-12)


def _row_chunked(X, chunk):
    """X as a dask array of CSR row chunks (as read_elem_lazy gives a backed .h5ad)."""
    return da.from_array(X, chunks=(chunk, X.shape[1]), asarray=False, meta=sp.csr_matrix((0, 0), dtype=X.dtype))


def test_scores_on_a_cluster_with_the_graph_in_shards_are_the_in_memory_ones():
    """Row-chunked and tiled X on two worker processes, the graph cut into 5 or more row shards: the Laplacian score
    and Moran's I equal the in-memory ones, sparse and dense genes alike; the tasks took a shard each (counted
    from the scheduler's task stream)."""
    n, d = 3000, 40
    X = _expression(n, d)
    W = _graph(n)
    U = sp.triu(W, k=1, format="csr")
    limit = _cluster_memory.nbytes(U) // 5
    shards = len(_graph_shards.graph_shards(U, limit))
    assert shards >= 5
    want_ls = laplacian_score(X, W)
    want_mi = graph_autocorrelation(X, W)
    inputs = {"rows": _row_chunked(X, 500), "tiles": da.from_array(X.toarray(), chunks=(1000, 20))}
    with (
        dask.config.set({"glfs.graph-shard-bytes": limit}),  # the users' knob (docs/guides/atlases.md)
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cl,
        distributed.Client(cl),
        distributed.get_task_stream() as ts,
    ):
        for name, dx in inputs.items():
            with pytest.warns(UserWarning):  # the constant gene
                got_ls = laplacian_score(dx, W)
                got_mi = graph_autocorrelation(dx, W)
            np.testing.assert_allclose(got_ls, want_ls, rtol=1e-10, equal_nan=True, err_msg=name)
            np.testing.assert_allclose(got_mi.moran_i, want_mi.moran_i, rtol=1e-10, equal_nan=True, err_msg=name)
            np.testing.assert_allclose(got_mi.z, want_mi.z, rtol=1e-10, equal_nan=True, err_msg=name)
    stream = ts.data
    graph_tasks = [t for t in stream if "laplacian_score graph" in str(t["key"])]
    local_tasks = [t for t in stream if "laplacian_score local" in str(t["key"])]
    assert local_tasks and len(graph_tasks) == shards * len(local_tasks)


@pytest.mark.parametrize("value", [0, -5, "lots", True])
def test_a_bad_shard_size_is_refused(value):
    with dask.config.set({"glfs.graph-shard-bytes": value}), pytest.raises(ValueError, match="glfs.graph-shard-bytes"):
        _graph_shards.graph_shards(sp.eye(10, format="csr"))


def test_the_shard_size_is_read_from_dask_config():
    U = sp.triu(_graph(300), k=1, format="csr")
    with dask.config.set({"glfs.graph-shard-bytes": "2 kB"}):
        cut = _graph_shards.graph_shards(U)
    assert len(cut) > 1 and all(_cluster_memory.nbytes(rows) <= 2000 or rows.shape[0] == 1 for _, rows in cut)
    assert len(_graph_shards.graph_shards(U)) == 1  # 64 MB by default
