"""The gene-wise scores of a dask X on a dask.distributed LocalCluster (issue 31, glfs.core._cluster): the
same scores as in memory, on random and planted data, sparse and dense chunks; a failed task or a lost
worker never yields partial scores; no task holds more than its block."""

import functools
import logging
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.core.limits
import glfs.scores._genewise as genewise
from glfs import ConstantFeatureWarning
from glfs.core._cluster_memory import _workers_memory, n_workers, workers_info
from glfs.scores._genewise import deviance_score, fisher_score, laplacian_score, variance_score
from glfs.scores._moran import graph_autocorrelation

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


def _planted(n=500, d=80, seed=0):
    """Counts with 3 cell groups; genes 0-7 are high in group 0 only (planted), the rest random."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 3, n)
    X = sp.random(n, d, density=0.15, random_state=rng, format="csr", dtype=np.float64)
    X.data = np.round(X.data * 6) + 1
    X = X.toarray()
    X[groups == 0, :8] += rng.poisson(6.0, size=(int(np.sum(groups == 0)), 8)) + 1
    X[:, 9] = 0.0  # a constant gene: NaN on both routes
    return sp.csr_matrix(X.astype(np.float32)), groups


def _graph(X, groups):
    return glfs.similarity_graph(np.log1p(X.toarray()), n_neighbors=6)


def _scores(X, W, groups):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        g = graph_autocorrelation(X, W)
        return {
            "laplacian": laplacian_score(X, W),
            "moran_i": g.moran_i,
            "moran_z": g.z,
            "variance": variance_score(X),
            "fisher": fisher_score(X, groups),
            "deviance": deviance_score(X),
        }


def _chunked(X, kind):
    if kind == "sparse-rows":
        return da.from_array(X, chunks=(120, X.shape[1]), asarray=False)
    if kind == "sparse-2d":
        return da.from_array(X, chunks=(200, 30), asarray=False)
    return da.from_array(X.toarray(), chunks=(150, 25))


@pytest.mark.parametrize("data", ["planted", "random"])
@pytest.mark.parametrize("kind", ["sparse-rows", "sparse-2d", "dense"])
def test_cluster_scores_equal_in_memory(dask_client, caplog, data, kind):
    X, groups = _planted() if data == "planted" else _planted(seed=3)
    if data == "random":
        groups = np.random.default_rng(4).integers(0, 3, X.shape[0])  # labels unrelated to the counts
    W = _graph(X, groups)
    want = _scores(X, W, groups)
    with caplog.at_level(logging.INFO, logger="glfs.core._cluster"):
        got = _scores(_chunked(X, kind), W, groups)
    ran = [r.getMessage() for r in caplog.records if "gene blocks of all" in r.getMessage()]
    assert len(ran) == 5, ran  # laplacian, moran, variance, fisher, deviance: each as dask tasks
    assert all("on 2 workers" in m for m in ran)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-12, equal_nan=True, err_msg=name)
    assert np.isnan(got["laplacian"][9]) and np.isnan(got["moran_i"][9])
    if data == "planted":  # the planted genes lead the graph scores (lower Laplacian score is better)
        assert set(np.argsort(got["laplacian"])[:8]) == set(range(8))
        assert set(np.argsort(-np.nan_to_num(got["moran_z"], nan=-np.inf))[:8]) == set(range(8))


def test_the_workers_are_counted_while_the_client_refreshes_its_cache():
    """The client's cached scheduler identity is replaced, every scheduler-info-interval, by one that lists no
    worker; refreshed every millisecond, it must never make the 2 workers look like 1 or hide their limit."""
    import dask

    with dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}):
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, memory_limit="3GiB", dashboard_address=":0"
        ) as cl:
            with distributed.Client(cl) as c:
                counted = [n_workers(c) for _ in range(200)]
                limits = [_workers_memory(c)[0] for _ in range(200)]
    assert set(counted) == {2}
    assert set(limits) == {3 * 2**30}


def test_sparse_chunks_are_rechunked_by_tasks_not_p2p(dask_client):
    """dask chooses its P2P rechunk for large graphs on a distributed client, and P2P cannot move scipy.sparse
    chunks (it failed at 10^6 cells in row chunks of 50,000): the gene blocks of X in 2-D tiles are made by the
    task rechunk (row chunks are split by glfs' own tasks, tests/core/test_cluster_memory.py)."""
    import dask

    X, groups = _planted(n=300, d=40)
    W = _graph(X, groups)
    with dask.config.set({"array.rechunk.method": "p2p"}), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        got = laplacian_score(da.from_array(X, chunks=(50, 20), asarray=False), W)
        np.testing.assert_allclose(got, laplacian_score(X, W), rtol=1e-6, equal_nan=True)


def test_a_passed_client_is_used_without_a_default(dask_client):
    X, groups = _planted(n=300, d=40)
    W = _graph(X, groups)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        other = distributed.Client(cl, set_as_default=False)
        try:
            # the tasks the other cluster ran (its scheduler's task groups may be gone once the results are in)
            with distributed.get_task_stream(client=other) as stream:
                got = laplacian_score(da.from_array(X, chunks=(100, 40), asarray=False), W, client=other)
            assert len(stream.data) > 0
        finally:
            other.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        np.testing.assert_allclose(got, laplacian_score(X, W), rtol=1e-6, equal_nan=True)


def test_select_and_tl_select_run_on_the_cluster(dask_client, caplog):
    ad = pytest.importorskip("anndata")
    X, groups = _planted()
    W = _graph(X, groups)
    dx = da.from_array(X, chunks=(125, X.shape[1]), asarray=False)
    with caplog.at_level(logging.INFO, logger="glfs.core._cluster"):
        sel = glfs.select(dx, "laplacian_score", graph=W, n_features_to_select=8)
        dev = glfs.select(dx, "deviance", n_features_to_select=8)
    assert sum("gene blocks of all" in r.getMessage() for r in caplog.records) == 2
    assert set(np.flatnonzero(sel.selected)) == set(range(8))
    np.testing.assert_allclose(dev.scores, deviance_score(X), rtol=1e-6)
    a = ad.AnnData(X=dx)
    a.obsp["connectivities"] = W
    glfs.tl.select(a, "laplacian_score", 8, obsp="connectivities")
    b = ad.AnnData(X=X)
    b.obsp["connectivities"] = W
    glfs.tl.select(b, "laplacian_score", 8, obsp="connectivities")
    assert list(a.var.columns) == list(b.var.columns)
    for col in b.var.columns:
        np.testing.assert_allclose(a.var[col].to_numpy(float), b.var[col].to_numpy(float), rtol=1e-6, equal_nan=True)


_CALLS = {"n": 0, "fail_on": 0, "closed": 0}


def _fail_first_chunk(block, block_info=None):
    """The first chunk raises on its ``_CALLS["fail_on"]``-th computation (module state: the in-process
    workers run this very function, not a copy)."""
    if block_info[0]["chunk-location"][0] == 0:
        _CALLS["n"] += 1
        if _CALLS["n"] == _CALLS["fail_on"]:
            msg = "disk read failed"
            raise OSError(msg)
    return block


def _failing_chunks(X, fail_on_call):
    """A dask X whose first chunk raises on its ``fail_on_call``-th computation (1 = the validation scan)."""
    _CALLS.update(n=0, fail_on=fail_on_call)
    return da.from_array(X, chunks=(100, X.shape[1]), asarray=False).map_blocks(
        _fail_first_chunk, dtype=X.dtype, meta=X[:0]
    )


@pytest.mark.parametrize("fail_on_call", [1, 2])
def test_a_failed_task_fails_the_call(dask_client, fail_on_call):
    X, groups = _planted(n=300, d=40)
    W = _graph(X, groups)
    with pytest.raises(RuntimeError, match=r"failed on the dask cluster at .*OSError: disk read failed.*no partial"):
        laplacian_score(_failing_chunks(X, fail_on_call), W)


def _close_worker_once(block, block_info=None):
    """Closes the worker computing the second chunk, the first time only."""
    if block_info[0]["chunk-location"][0] == 1 and _CALLS["closed"] == 0:
        _CALLS["closed"] = 1
        w = distributed.get_worker()
        w.loop.add_callback(w.close)
    return block


def test_a_lost_worker_is_recovered_or_fails_never_partial():
    """A worker closed while it reads a chunk: the scheduler reruns its work on the other worker."""
    X, groups = _planted(n=300, d=40)
    W = _graph(X, groups)
    _CALLS.update(closed=0)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        with distributed.Client(cl) as c:
            dx = da.from_array(X, chunks=(100, X.shape[1]), asarray=False).map_blocks(
                _close_worker_once, dtype=X.dtype, meta=X[:0]
            )
            try:
                got = laplacian_score(dx, W)
            except RuntimeError as e:  # allowed: a clear error, never a partial result
                assert "no partial result" in str(e)
                assert "KilledWorker" in str(e)
                got = None
            assert _CALLS["closed"] == 1
            assert len(workers_info(c)) == 1
    if got is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstantFeatureWarning)
            np.testing.assert_allclose(got, laplacian_score(X, W), rtol=1e-6, equal_nan=True)


_TRACE = {}


def _traced(name, B, *args, **kw):
    """The Laplacian score's task function ``name`` (its block's local step, or a graph shard's term),
    recording the peak of the memory each call allocates (tracemalloc) beside its block's bytes."""
    start = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    out = _TRACE["inner"][name](B, *args, **kw)
    _TRACE["peaks"].append((name, tracemalloc.get_traced_memory()[1] - start, B.nbytes))
    return out


def test_no_task_holds_more_than_its_block(monkeypatch):
    """A dense X of 128 MB, generated block by block: the peak traced memory of the whole call (client
    and the one in-process worker) stays under half of X, and each block task's own (its local step, each
    graph shard's term) under 4 blocks."""
    n, d, width = 2000, 8000, 500
    monkeypatch.setattr(genewise, "LS_BLOCK_VALUES", n * 250)  # blocks of 250 genes, 4 MB
    rng = np.random.default_rng(0)
    W = _graph(sp.csr_matrix(rng.poisson(1.0, (n, 20)).astype(np.float64)), None)

    def gen(block_info=None):
        (r0, r1), (c0, c1) = block_info[None]["array-location"]
        return np.random.default_rng(c0).poisson(2.0, (r1 - r0, c1 - c0)).astype(np.float64)

    X = da.map_blocks(gen, chunks=((n,), (width,) * (d // width)), dtype=np.float64, meta=np.empty((0, 0)))
    task_peaks = _TRACE["peaks"] = []
    _TRACE["inner"] = {}
    for name in ("_laplacian_local", "graph_term"):
        _TRACE["inner"][name] = getattr(genewise, name)
        monkeypatch.setattr(genewise, name, functools.partial(_traced, name))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        with distributed.Client(cl):
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                got = laplacian_score(X, W)
                peak = tracemalloc.get_traced_memory()[1] - base
            finally:
                tracemalloc.stop()
    whole = n * d * 8
    assert sum(name == "_laplacian_local" for name, _, _ in task_peaks) == d // 250
    assert sum(name == "graph_term" for name, _, _ in task_peaks) >= d // 250
    assert peak < whole / 2, (peak, whole)
    assert max(p for _, p, _ in task_peaks) < 4 * max(b for _, _, b in task_peaks) <= whole / 8
    monkeypatch.undo()
    np.testing.assert_allclose(got[:500], laplacian_score(X[:, :500].compute(), W), rtol=1e-6)


def _sparse_tile(block_info=None):
    """A sparse CSR tile of X, the same for its location whenever it is computed (never the whole X at once)."""
    (r0, r1), (c0, c1) = block_info[None]["array-location"]
    rng = np.random.default_rng(1000 * r0 + c0)
    T = sp.random(r1 - r0, c1 - c0, density=0.2, random_state=rng, format="csr", dtype=np.float64)
    T.data = np.round(T.data * 5) + 1
    return T


def test_tiles_the_workers_never_hold_the_matrix(monkeypatch, caplog):
    """X stored in 2-D tiles (2,000 cells x 250 genes, sparse), made tile by tile: its own graph and
    Laplacian score on a one-worker in-process cluster, traced.  The gene blocks are columns of tiles,
    and each call's traced peak (client and worker together) stays under half of X's size as CSR;
    the scores equal the in-memory ones on the same graph."""
    import glfs.graph._neighbors as nb

    n, d = 8000, 4000
    X = da.map_blocks(_sparse_tile, chunks=((2000,) * 4, (250,) * 16), dtype=np.float64, meta=sp.csr_matrix((0, 0)))
    whole = int(0.2 * n * d) * 12  # CSR: 8-byte values, 4-byte indices
    monkeypatch.setattr(glfs.core.limits, "STREAM_VALUES", int(0.2 * n * d) // 16)  # blocks of 1 column of tiles
    monkeypatch.setattr(nb, "PCA_FIT_SAMPLES", 800)
    graph = dict(n_neighbors=8, n_pcs=10, method="approx", kernel="heat")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        with distributed.Client(cl), caplog.at_level(logging.INFO, logger="glfs.core._cluster"):
            small = X[:600, :500]  # the imports and numba compilations first: they are traced too
            laplacian_score(small, glfs.similarity_graph(small, **graph))
            caplog.clear()
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                W = glfs.similarity_graph(X, **graph)
                peaks = [tracemalloc.get_traced_memory()[1] - base]
                tracemalloc.reset_peak()
                got = laplacian_score(X, W)
                peaks.append(tracemalloc.get_traced_memory()[1] - base)
            finally:
                tracemalloc.stop()
    blocks = [r.getMessage() for r in caplog.records if r.getMessage().startswith("laplacian_score: genes")]
    assert sorted(m.split(" done")[0] for m in blocks) == sorted(
        f"laplacian_score: genes {a}-{a + 249}" for a in range(0, d, 250)
    )
    assert max(peaks) < whole / 2, (peaks, whole)
    np.testing.assert_allclose(got, laplacian_score(X.compute(), W), rtol=1e-6)


def test_worker_processes_score_as_in_memory(monkeypatch):
    """Two worker processes (the graph, the dask chunks, the block functions, the PCA's fit and the
    faiss index pickled between them): the Laplacian score and the deviance equal the in-memory ones,
    and the graph built there has the edges of the graph streamed through this process."""
    pytest.importorskip("faiss")
    import glfs.graph._neighbors as nb
    import glfs.graph._sharded as sharded

    X, groups = _planted(n=400, d=60)
    W = _graph(X, groups)
    dx = da.from_array(X, chunks=(100, 20), asarray=False)
    kw = dict(n_neighbors=6, n_pcs=8, method="approx", kernel="heat")
    monkeypatch.setattr(sharded, "QUERY_BLOCK", 150)  # 3 shards
    with pytest.MonkeyPatch.context() as m:  # no client: streamed through this process
        m.setattr(nb, "cluster_client", lambda X, client=None: None)
        streamed = glfs.similarity_graph(dx, **kw)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cl:
        with distributed.Client(cl):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConstantFeatureWarning)
                got, dev = laplacian_score(dx, W), deviance_score(dx)
                want = laplacian_score(X, W)
            G = glfs.similarity_graph(dx, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(dev, deviance_score(X), rtol=1e-6)
    # the same edges; the weights to float32 rounding (the tiles of a row are projected one by one there)
    assert ((G > 0) != (streamed > 0)).nnz == 0
    np.testing.assert_allclose(G.data, streamed.data, rtol=1e-4)
