"""The graph of a dask X on a dask.distributed LocalCluster (issue 31, glfs.graph._sharded): the subsample
and the projection as tasks give the components of the single-process route, and the neighbour search
sharded into query blocks against the index on every worker equals the single search given the same index."""

import logging
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from test_out_of_core_graph import _planted

import glfs
import glfs.graph._ivf_blocks as ivf_blocks
import glfs.graph._neighbors as nb
import glfs.graph._sharded as sharded

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
faiss = pytest.importorskip("faiss")


@pytest.fixture(autouse=True)
def _streamed_route(monkeypatch):
    """These tests are about the streamed (cluster) route of the graph, at small sizes: below
    AUTO_APPROX_MIN_SAMPLES an out-of-core X is read into memory instead (issue 40, item 5)."""
    import glfs.graph._neighbors

    monkeypatch.setattr(glfs.graph._neighbors, "AUTO_APPROX_MIN_SAMPLES", 100)


@pytest.mark.parametrize("ivf", [False, True, "blocked"])
def test_sharded_search_equals_the_single_search(dask_client, monkeypatch, ivf):
    Z = np.random.default_rng(1).normal(size=(3000, 12)).astype(np.float32)
    monkeypatch.setattr(sharded, "QUERY_BLOCK", 700)  # 5 shards, the last one short
    if ivf == "blocked":  # the search of a million cells: lists against their queries in blocks
        monkeypatch.setattr(nb, "IVF_BLOCKED_MIN_SAMPLES", 3000)
        monkeypatch.setattr(ivf_blocks, "BLOCK_QUERIES", 300)
    if ivf:  # 32 of the 55 lists: ivf_nprobe's 8 for 12 dimensions finds 0.84 of these structureless
        # Gaussian neighbours (studies/graph-20-pcs.md, "The own graph on 20 principal components"); sharded = single either way
        want = nb._knn_ivf(Z, 10, random_state=3, nprobe=32)
        got = nb._knn_ivf(Z, 10, random_state=3, client=dask_client, nprobe=32)
    else:
        want = nb._knn_brute32(Z, 10, "faiss")
        got = nb._knn_brute32(Z, 10, "faiss", client=dask_client)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    exact = nb._knn(Z.astype(np.float64), 10, "euclidean")[1].reshape(3000, 10)
    found = got[1].reshape(3000, 10)
    recall = np.mean([np.isin(found[i], exact[i]).mean() for i in range(3000)])
    assert recall == 1.0 if not ivf else recall > 0.9  # flat: exact; IVF at nprobe 32 of nlist 55 here


@pytest.mark.parametrize(("nlist", "nprobe", "index_shard"), [(8, 3, 700), (12, 4, 1000), (300, 1, 1500)])
def test_index_in_shards_equals_the_single_blocked_search(dask_client, monkeypatch, caplog, nlist, nprobe, index_shard):
    """The blocked IVF search with its lists in shards on the workers (k-means on faiss' own subsample: 3,000
    cells > 256 nlist for nlist 8 and 12; 4 or 2 shards) gives the pairs of the one-machine search; with 300
    cells of 10 and one probed, most queries have too few candidates and are searched exactly on every shard."""
    Z = np.random.default_rng(2).normal(size=(3000, 12)).astype(np.float32)
    Z[1500] = Z[1499]  # a duplicate: a tie at distance 0, broken in the lists' order by both
    monkeypatch.setattr(nb, "IVF_BLOCKED_MIN_SAMPLES", 3000)
    monkeypatch.setattr(sharded, "QUERY_BLOCK", 700)
    monkeypatch.setattr(sharded, "INDEX_SHARD", index_shard)
    monkeypatch.setattr(ivf_blocks, "BLOCK_QUERIES", 300)
    want = nb._knn_ivf(Z, 10, random_state=3, nlist=nlist, nprobe=nprobe)
    with caplog.at_level(logging.INFO, logger="glfs"):
        got = nb._knn_ivf(Z, 10, random_state=3, nlist=nlist, nprobe=nprobe, client=dask_client)
    said = " ".join(r.getMessage() for r in caplog.records)
    shards = min(5, -(-3000 // (2 * index_shard)) * 2)  # a multiple of the 2 workers, at most the 5 blocks of Z
    assert f"against {shards} index shards" in said
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)
    assert ("searched exactly" in said) == (nlist == 300)


def test_kmeans_on_the_training_rows_alone_gives_faiss_centres():
    """faiss trains its k-means on a seeded subsample of 256 cells a centre; training_rows names those rows,
    in faiss' order, so the centres of those rows alone are faiss' (the index of the cluster's shards)."""
    Z = np.random.default_rng(4).normal(size=(5000, 6)).astype(np.float32)
    for nlist, rs in ((4, 0), (7, 11)):
        rows = ivf_blocks.training_rows(5000, nlist, rs)
        assert rows.size == 256 * nlist and np.unique(rows).size == rows.size
        full = ivf_blocks.train_centres(Z, nlist, rs)
        np.testing.assert_array_equal(ivf_blocks.train_centres(Z[rows], nlist, rs), full)
        other = ivf_blocks.train_centres(Z[np.sort(rows)], nlist, rs)  # the same rows in another order
        assert not np.array_equal(other, full)


_WHERE, _REAL = [], {}


def _spy_fit_components(*a, **k):  # module functions: the in-process workers run these, not copies
    _WHERE.append(threading.current_thread().name)
    return _REAL["_fit_components"](*a, **k)


def _spy_ivf_index(*a, **k):
    _WHERE.append(threading.current_thread().name)
    return _REAL["_ivf_index"](*a, **k)


def test_graph_on_the_cluster_equals_the_streamed_graph(dask_client, caplog, monkeypatch):
    """The dask X's graph with a client (tasks) and without one (streamed here): the same graph, on a
    subsample PCA (the fit on 500 of 1,500 cells) and the IVF search."""
    X, groups = _planted(1500, 120, 0)
    monkeypatch.setattr(nb, "PCA_FIT_SAMPLES", 500)
    monkeypatch.setattr(sharded, "QUERY_BLOCK", 400)
    kw = dict(n_neighbors=8, n_pcs=10, method="approx", kernel="heat")
    with pytest.MonkeyPatch.context() as m:  # no client: the single-process streamed route
        m.setattr(nb, "cluster_client", lambda X, client=None: None)
        want = glfs.similarity_graph(da.from_array(X, chunks=(300, 120), asarray=False), **kw)
    _WHERE.clear()  # in which thread the fit and the index build run: the calling one (the client's) or a worker's
    for name in ("_fit_components", "_ivf_index"):
        _REAL[name] = getattr(nb, name)
        monkeypatch.setattr(nb, name, globals()[f"_spy{name}"])
    with caplog.at_level(logging.INFO, logger="glfs"):
        got = glfs.similarity_graph(da.from_array(X, chunks=(300, 120), asarray=False), **kw)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "PCA fit: 500 cells done" in said and "PCA projection: cells from" in said and "query shards" in said
    assert "index built by a task" in said
    assert len(_WHERE) == 2 and threading.current_thread().name not in _WHERE, _WHERE  # neither on the client
    assert (got != want).nnz == 0
    np.testing.assert_allclose(got.data, want.data, rtol=1e-6)
    # the planted groups are the graph's communities
    A = got.tocoo()
    assert np.mean(groups[A.row] == groups[A.col]) > 0.95


def test_select_without_a_graph_on_the_cluster(dask_client):
    """glfs.select of a dask X with no graph given: the graph and the score both on the cluster, the
    planted genes first."""
    X, groups = _planted(1200, 60, 2)
    sel = glfs.select(
        da.from_array(X, chunks=(300, 60), asarray=False),
        "laplacian_score",
        n_features_to_select=18,
        graph_params={"n_pcs": 10, "method": "approx", "n_neighbors": 8},
    )
    assert set(np.flatnonzero(sel.selected)) == set(range(18))


def test_projection_of_tiles_is_summed_per_row_of_chunks_on_the_workers(dask_client, caplog):
    """A dask X chunked by cells and genes (3 x 4 tiles): X V - shift as in memory, the tiles of a row of
    chunks summed on the workers (3 sums waited for, nothing fetched) and the scores left on the cluster."""
    from glfs.core._out_of_core import OutOfCore

    X = sp.random(900, 80, density=0.1, format="csr", random_state=4, dtype=np.float32)
    V = np.random.default_rng(5).normal(size=(80, 6)).astype(np.float32)
    shift = np.arange(6, dtype=np.float32)
    with caplog.at_level(logging.INFO, logger="glfs.core._cluster"):
        Z = sharded.project(OutOfCore(da.from_array(X, chunks=(300, 25), asarray=False)), V, shift, dask_client)
    assert isinstance(Z, sharded.ClusterZ) and Z.shape == (900, 6)
    assert sum(r.getMessage().startswith("PCA projection: cells from") for r in caplog.records) == 3
    np.testing.assert_allclose(Z.gather(), X.toarray().astype(np.float64) @ V - shift, rtol=1e-4, atol=1e-4)


def test_an_index_too_large_for_the_workers_is_refused_before_any_task():
    """200,000 cells on 20 components, one worker process of 320 MiB: its process (at least 256 MiB counted),
    the lists (22 float32 a cell, 16.8 MiB) and one shard being built (51.9 MiB) pass 95 % of the limit, so
    the search refuses with the numbers before the k-means or a shard is computed (dask would restart the
    worker part-way instead)."""
    Z = np.random.default_rng(0).normal(size=(200_000, 20)).astype(np.float32)
    held, build = sharded.search_worker_bytes(20, 200_000, 1, 1)
    assert (held, build) == (200_000 * 22 * 4, 200_000 * (62 * 4 + 24))
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, memory_limit="320MiB", dashboard_address=":0"
        ) as cl,
        distributed.Client(cl) as client,
        distributed.get_task_stream(client) as ts,
    ):
        with pytest.raises(MemoryError, match=r"200000 cells on 20 components in 1 shards .* memory_limit of at least"):
            sharded.search_ivf_shards(Z, 15, 20, client, nlist=447, nprobe=13, random_state=0)
        ran = [t["key"] for t in ts.data]
    assert not any("k-means" in str(k) or "index shard" in str(k) for k in ran), ran
