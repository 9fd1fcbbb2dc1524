"""A dask X scored after another step on the same cluster never stalls (issue 31): the stall of the Laplacian
score at 10^6 x 2,000 on CSC shards, reproduced on 4 small shards; a stalled step raises, naming its blocks;
a dask X is validated once per process (glfs.core._cluster, glfs.core._out_of_core)."""

import logging
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.core.limits
import glfs.graph._neighbors as nb
from glfs import ConstantFeatureWarning
from glfs.core._cluster import chunk_grid, gather_blocks, stall_seconds

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")


@pytest.fixture(autouse=True)
def _streamed_route(monkeypatch):
    """These tests are about the streamed (cluster) route of the graph, at small sizes: below
    AUTO_APPROX_MIN_SAMPLES an out-of-core X is read into memory instead (issue 40, item 5)."""
    import glfs.graph._neighbors

    monkeypatch.setattr(glfs.graph._neighbors, "AUTO_APPROX_MIN_SAMPLES", 100)


def _shards(n=2000, d=120, seed=0):
    """X (CSR) and the dask X of its 4 shards stored by genes (CSC), read as 2-D tiles of 30 genes (bench.atlas_store's form)."""
    X = sp.random(n, d, density=0.1, format="csr", random_state=seed, dtype=np.float64)
    shards = [X[i : i + n // 4].tocsc() for i in range(0, n, n // 4)]
    return X, da.concatenate([da.from_array(s, chunks=(-1, 30), asarray=False) for s in shards], axis=0)


@pytest.fixture
def one_worker():
    """A LocalCluster of 1 in-process worker with 1 thread (the form of the stalled run), its client."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        with distributed.Client(cl) as c:
            yield c


def test_score_after_the_graph_with_its_scores_held_does_not_stall(one_worker, monkeypatch):
    """The stall: the graph's PCA scores held by the client (as the benchmarks held them), then the score of the
    same dask X with gene blocks that cut the tiles.  With the steps' graphs optimised the worker kept the projection's task of a
    tile's key with its fused dependency, took the score's task of that key, and waited forever (here: the stall
    limit of 20 s raised).  Now the call ends with the in-memory scores."""
    X, dX = _shards()
    monkeypatch.setattr(nb, "PCA_FIT_SAMPLES", 1000)
    monkeypatch.setattr(glfs.core.limits, "STREAM_VALUES", 2000)  # gene blocks narrower than the tiles: each tile split
    held = {}
    search = nb.search_on_cluster

    def keep(Z, *args, **kw):
        held["Z"] = Z
        return search(Z, *args, **kw)

    monkeypatch.setattr(nb, "search_on_cluster", keep)
    with dask.config.set({"glfs.stall-timeout": 20}), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        W = glfs.similarity_graph(dX, n_neighbors=5, n_pcs=10, method="approx")
        assert "Z" in held and held["Z"] is not None  # the scores' future is alive during the score
        got = glfs.laplacian_score(dX, W)
        want = glfs.laplacian_score(X, W)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12, equal_nan=True)


def test_every_step_submits_the_chunks_as_x_defines_them():
    """The graph's shape that stalled: each step's graph kept X's chunk keys with X's own tasks (not fused
    into renamed tasks), both for the chunk-wise steps and the score's rechunk into gene blocks."""
    X, dX = _shards(n=400, d=60)
    own = dict(dX.__dask_graph__())
    for grid in (chunk_grid(dX), chunk_grid(dX.rechunk(((400,), (20, 20, 20)), method="tasks"))):
        graph = dict(grid.ravel()[0].__dask_graph__())
        assert set(own) <= set(graph)  # no chunk or tile renamed away
        assert all(str(graph[k]) == str(own[k]) for k in own)  # the same task under each key
    got = sp.vstack([sp.hstack(list(row)) for row in dask.compute(chunk_grid(dX).tolist(), scheduler="sync")[0]])
    np.testing.assert_array_equal(got.toarray(), X.toarray())


def test_a_stalled_step_raises_naming_its_blocks(dask_client):
    """Tasks that no worker can run (a resource none has) and idle workers: RuntimeError after the limit."""
    futures = [dask_client.submit(np.sum, [i, 1], resources={"absent": 1}, pure=False) for i in range(3)]
    with dask.config.set({"glfs.stall-timeout": 1}), pytest.raises(RuntimeError, match="stalled") as err:
        gather_blocks(dask_client, futures, "a test step", ["block a", "block b", "block c"])
    assert "block a" in str(err.value) and "glfs.stall-timeout" in str(err.value)
    assert all(f.cancelled() for f in futures)  # the others cancelled: no partial result


def test_the_stall_limit_is_dask_config():
    assert stall_seconds() == glfs.core._cluster.STALL_SECONDS
    with dask.config.set({"glfs.stall-timeout": "2 minutes"}):
        assert stall_seconds() == 120
    with dask.config.set({"glfs.stall-timeout": None}):
        assert stall_seconds() is None
    with dask.config.set({"glfs.stall-timeout": -1}), pytest.raises(ValueError, match="glfs.stall-timeout"):
        stall_seconds()


def test_a_dask_x_is_validated_on_every_call(dask_client, caplog):
    """No facts are kept between calls (issue 41, item 2: a name does not say the bytes are the same):
    two calls, two scans, equal scores; a NaN in a new X is refused."""
    X, dX = _shards(n=600, d=60, seed=2)
    W = glfs.similarity_graph(X, n_neighbors=5)
    with caplog.at_level(logging.INFO, logger="glfs.core._out_of_core"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        first = glfs.laplacian_score(dX, W)
        second = glfs.laplacian_score(dX, W)
    scans = [r for r in caplog.records if "scanned" in r.getMessage()]
    assert len(scans) == 2
    np.testing.assert_array_equal(first, second)
    bad = X.copy()
    bad.data[5] = np.nan
    with pytest.raises(ValueError, match="finite"):
        glfs.laplacian_score(da.from_array(bad, chunks=(200, 60), asarray=False), W)


def test_tiles_without_a_client_are_read_by_columns(monkeypatch, caplog):
    """The single-process route of a dask X of 2-D tiles (the 3 x 10^6 reference): gene blocks cut at the
    tiles' edges and read by columns, no split of the row blocks through temporary files; the in-memory scores."""
    X, dX = _shards(n=800, d=90, seed=4)
    W = glfs.similarity_graph(X, n_neighbors=5)
    monkeypatch.setattr(
        glfs.core.limits, "STREAM_VALUES", 1500
    )  # 5 or more gene blocks: the row-stored route would split
    with caplog.at_level(logging.INFO, logger="glfs.core._out_of_core"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        got = glfs.laplacian_score(dX, W)
        want = glfs.laplacian_score(X, W)
    assert not [r for r in caplog.records if "splitting" in r.getMessage() or "once per gene block" in r.getMessage()]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12, equal_nan=True)
