"""Gene blocks of a dask X sized by the workers' memory (issue 42, glfs.core._cluster_memory.worker_block_values): a
worker holds its process, the shared inputs, and per thread a row chunk with its pieces or a block with its
pieces and temporaries; blocks are cut to fit the workers' spill fraction and, while one is made, on top of
dask's data at its target below the pause fraction; a row chunk or a gene that cannot fit is refused up front
with the numbers."""

import logging
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
from glfs import ConstantFeatureWarning
from glfs.core import limits
from glfs.core._cluster_memory import nbytes, worker_block_values, workers_info
from glfs.core._graph_shards import graph_shards
from glfs.core._validation import check_X
from glfs.scores._genewise import laplacian_score

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


def _sparse(n=2000, d=300, density=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csr", dtype=np.float32)
    X.data = np.round(X.data * 5) + 1
    return X


#: The worker process's memory as these tests have it measured (their workers are threads of the test process).
PROCESS = 300 * 2**20


@pytest.fixture
def fixed_process(monkeypatch):
    """The planner's measurement of each worker's process memory (glfs.core._heap.process_memory, run on the
    workers) made PROCESS."""
    from glfs.core import _cluster_memory

    monkeypatch.setattr(_cluster_memory, "process_memory", lambda dask_worker=None: PROCESS)


def _workers(client):
    info = workers_info(client).values()
    limit = min(w["memory_limit"] for w in info)
    threads = max(w["nthreads"] for w in info)
    return limit, threads, max(PROCESS, 2**28)


def test_nbytes_counts_arrays_and_sparse_parts():
    W = sp.random(50, 50, density=0.2, format="csr", random_state=0)
    shared = {"W": W, "deg": np.zeros(50), "k": 3, "parts": (np.zeros(4, np.int32), [np.zeros(2)])}
    want = W.data.nbytes + W.indices.nbytes + W.indptr.nbytes + 50 * 8 + 4 * 4 + 2 * 8
    assert nbytes(shared) == want


def _planned(memory, threads, config):
    """``worker_block_values`` on a sparse X in row chunks of 500 cells with a graph in shards, on one worker of
    ``memory`` and ``threads`` under the dask ``config``; (values, limit, base, X, shared, shards)."""
    import dask

    X = _sparse()
    with (
        dask.config.set(config),
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=threads, processes=False, memory_limit=memory, dashboard_address=":0"
        ) as cl,
        distributed.Client(cl) as client,
    ):
        ooc = check_X(da.from_array(X, chunks=(500, X.shape[1]), asarray=False), lazy=True)
        shared = {"deg": np.ones(2000)}
        U = sp.random(2000, 2000, density=0.01, format="csr", random_state=1)
        shards = [rows for _, rows in graph_shards(U, 10_000)]
        limit, _, base = _workers(client)
        values = worker_block_values(client, ooc, shared, "test", graph=shards)
    return values, limit, base, X, shared, shards


# dask's fractions of the limit: (target, spill, pause); the last one moves the target below a third of pause
DEFAULT, LOW_TARGET = (0.6, 0.7, 0.8), (0.3, 0.7, 0.8)


@pytest.mark.parametrize(
    ("memory", "fractions", "binds"),
    [
        ("6GiB", DEFAULT, "target"),
        ("3GiB", DEFAULT, "target"),
        ("3GiB", LOW_TARGET, "spill"),
        ("1.5GiB", DEFAULT, "floor"),
    ],
)
def test_blocks_fit_the_spill_fraction_and_above_dasks_target(memory, fractions, binds, fixed_process, caplog):
    """The documented plan (docs/guides/atlases.md): ``M`` below the spill fraction, and a block being made (its
    values and indices and the CSR index pointers) on top of dask's data at its target below the pause fraction, but
    not below a quarter of the spill plan (a warning then)."""
    target, spill, pause = fractions
    config = {"distributed.worker.memory.target": target}
    with caplog.at_level(logging.WARNING, logger="glfs.core._cluster_memory"):
        values, limit, base, X, shared, shards = _planned(memory, 2, config)
    threads = 2
    assert len(shards) >= 4
    # float32 values with int64 indices at worst; per task the CSR block's index pointers, 32 bytes a cell and
    # one shard of the graph; the one worker holds all the shards
    value_b, n = 4 + 8, X.shape[0]
    pointers = 8 * (n + 1)
    task_fixed = pointers + 32 * n + max(nbytes(g) for g in shards)
    held_shared = nbytes(shared) + sum(nbytes(g) for g in shards)
    room = spill * limit - base - held_shared
    by_spill = int((room / threads - task_fixed) / 3 // value_b)
    by_target = int(((pause - target) * limit - base) / threads - pointers) // value_b
    floor = int(0.25 * by_spill)
    assert values == {"spill": by_spill, "target": by_target, "floor": floor}[binds]
    assert values == min(by_spill, max(by_target, floor))
    held = base + held_shared + threads * (task_fixed + 3 * values * value_b)
    assert held <= spill * limit  # the first plan's M below the spill fraction
    making = base + target * limit + threads * (values * value_b + pointers)
    warned = [r for r in caplog.records if "between dask's target and pause" in r.getMessage()]
    if binds == "floor":
        assert making > pause * limit and len(warned) == 1
        assert "lower distributed.worker.memory.target" in warned[0].getMessage()
    else:  # a block being made on top of dask's data at its target: below pause (with one value more, not)
        assert making <= pause * limit and not warned
        if binds == "target":
            assert making + threads * value_b > pause * limit


def test_a_row_chunk_too_large_for_the_workers_is_refused_with_the_numbers(fixed_process):
    X = _sparse(n=4000, d=400, density=0.3)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, memory_limit="8GiB", dashboard_address=":0"
        ) as cl,
        distributed.Client(cl) as client,
    ):
        ooc = check_X(da.from_array(X, chunks=(2000, X.shape[1]), asarray=False), lazy=True)
        limit, threads, base = _workers(client)
        # the room left below the pause fraction after the worker's process: less than 3 of these chunks (the chunk
        # as read, by genes, and the temporaries)
        chunk_b = ooc.chunk_values * (4 + 8) + 8 * 2001
        assert ooc.chunk_values == max(X[:2000].nnz, X[2000:].nnz)
        shared = {"pad": np.zeros(int((0.8 * limit - base - 2.5 * chunk_b) // 8))}
        with pytest.raises(MemoryError, match=r"row chunks of 2000 cells .* read X in smaller row chunks"):
            worker_block_values(client, ooc, shared, "laplacian_score")
        # with room for 3.5 chunks below pause (above spill): blocks of one gene at least, no refusal
        roomy = {"pad": np.zeros(int((0.8 * limit - base - 3.5 * chunk_b) // 8))}
        assert worker_block_values(client, ooc, roomy, "laplacian_score") >= int(ooc.gene_nnz.max())


def test_a_gene_block_past_the_pause_fraction_is_refused_with_the_numbers(fixed_process):
    """A block of one gene of all cells whose task would take the worker between its pause (0.8) and terminate
    (0.95) fractions is refused at once: the task runs on above pause while dask fetches and spills (at 10^7 cells
    such a plan, at 90 % of the limit, lost a worker); below pause it is planned."""
    X = _sparse(n=4000, d=200, density=0.3).tolil()
    X[:, 7] = 1.0  # a gene in every cell: the largest one-gene block
    X = X.tocsr()
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, memory_limit="8GiB", dashboard_address=":0"
        ) as cl,
        distributed.Client(cl) as client,
    ):
        ooc = check_X(da.from_array(X, chunks=(X.shape[0], 50), asarray=False), lazy=True)
        limit, _, base = _workers(client)
        n = X.shape[0]
        one_gene = 8 * (n + 1) + 32 * n + 3 * n * (4 + 8)  # task_fixed + 3 x the gene's values and indices
        for share, refused in ((0.875, True), (0.75, False)):
            shared = {"pad": np.zeros(int((share * limit - base - one_gene) // 8))}
            if refused:
                with pytest.raises(MemoryError, match=r"a block of one gene of all 4000 cells .* pause fraction 0.8"):
                    worker_block_values(client, ooc, shared, "laplacian_score")
            else:
                assert worker_block_values(client, ooc, shared, "laplacian_score") >= n


def test_blocks_sized_by_memory_give_the_in_memory_scores(dask_client, monkeypatch):
    """Many small blocks (a tight budget) or one large one: the same scores as in memory."""
    X = _sparse(n=600, d=120, density=0.2, seed=2)
    W = glfs.similarity_graph(np.log1p(X.toarray()), n_neighbors=6)
    want = laplacian_score(X, W)
    import glfs.scores._genewise as genewise

    monkeypatch.setattr(genewise, "worker_block_values", lambda *a, **k: 600 * 3)  # about 15 genes a block
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        got = laplacian_score(da.from_array(X, chunks=(100, X.shape[1]), asarray=False), W)
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    assert limits.STREAM_VALUES > 600 * 3


def _rows(block_info=None):
    """A row chunk of 40 stored values a cell, seeded by its first row (made on the worker that reads it)."""
    (r0, r1), (c0, c1) = block_info[None]["array-location"]
    rng = np.random.default_rng(r0)
    m, k = r1 - r0, 40
    cols = np.sort(rng.integers(0, c1 - c0, (m, k)), axis=1)
    X = sp.csr_matrix((rng.integers(1, 6, m * k).astype(np.float32), cols.ravel(), np.arange(0, m * k + 1, k)))
    X.resize((m, c1 - c0))
    X.sum_duplicates()
    return X


def _moved(dask_worker):
    """(keys, bytes) of every transfer a worker received."""
    return [(list(e["keys"]), int(e["total"])) for e in dask_worker.transfer_incoming_log]


def test_row_chunks_never_move_between_workers():
    """Issue 42: a row-chunked X on two worker processes with a memory limit: each row chunk is read by the task
    that splits it (or scans or projects it), so no chunk of X moves between workers (dask's rechunk moved whole
    row chunks to the workers that split them); a value moves at most as a piece and in its stacked block (taken
    by an idle worker), once each on two workers, and the graph's row shards once; the scores are the in-memory
    ones and no worker is restarted."""
    n, d, chunk = 40_000, 400, 5_000
    X = da.map_blocks(_rows, chunks=((chunk,) * (n // chunk), (d,)), dtype=np.float32, meta=sp.csr_matrix((0, 0)))
    rng = np.random.default_rng(1)
    rows = np.repeat(np.arange(n), 5)
    W = sp.csr_matrix((np.ones(rows.size), (rows, rng.integers(0, n, rows.size))), shape=(n, n))
    W = W + W.T
    W.data[:] = 1.0
    want = laplacian_score(X.compute(), W)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB", dashboard_address=":0"
        ) as cl,
        distributed.Client(cl) as client,
    ):
        started = set(workers_info(client))
        got = laplacian_score(X, W)
        moved = client.run(_moved)
        assert set(workers_info(client)) == started  # none restarted
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    keys = [str(k) for log in moved.values() for ks, _ in log for k in ks]
    assert not [k for k in keys if X.name in k], keys
    matrix = sum(b.nnz for b in [X.blocks[i].compute() for i in range(X.numblocks[0])]) * (4 + 4)
    graph = sp.triu(W, k=1, format="csr")
    graph_b = graph.data.nbytes + graph.indices.nbytes + graph.indptr.nbytes
    assert sum(b for log in moved.values() for _, b in log) <= 2 * matrix + graph_b


class _Held:
    """A stand-in for glfs.core._cluster._Chunk: the chunk as read."""

    def __init__(self, chunk):
        self.chunk = chunk

    def read(self):
        return self.chunk


def test_split_pieces_are_the_columns_of_the_chunk_and_cost_its_stored_values():
    """_split_rows gives each block's columns by genes, as CSC (unsorted and duplicate entries of the chunk summed
    and sorted), whatever the block widths (one gene, several, the last): a piece's index pointers are one a gene,
    where a CSR piece has one a cell of the chunk."""
    from glfs.core import _cluster

    rng = np.random.default_rng(5)
    X = sp.random(300, 90, density=0.1, format="coo", random_state=5)
    dup = sp.coo_matrix((rng.random(20), (rng.integers(0, 300, 20), rng.integers(0, 90, 20))), shape=X.shape)
    chunk = sp.csr_matrix((np.r_[X.data, dup.data], (np.r_[X.row, dup.row], np.r_[X.col, dup.col])), shape=X.shape)
    chunk.has_canonical_format = False
    chunk.indices = chunk.indices.copy()
    for r in range(0, 300, 7):  # reverse some rows' entries: unsorted indices
        a, b = chunk.indptr[r], chunk.indptr[r + 1]
        chunk.indices[a:b], chunk.data[a:b] = chunk.indices[a:b][::-1].copy(), chunk.data[a:b][::-1].copy()
    dense = X.toarray() + dup.toarray()
    edges = np.array([0, 1, 7, 40, 41, 90])
    pieces = _cluster._split_rows(_Held(chunk), edges)
    assert len(pieces) == 5
    for (a, b), piece in zip(zip(edges[:-1], edges[1:]), pieces):
        assert piece.format == "csc" and piece.has_sorted_indices
        assert piece.indptr.size == b - a + 1
        np.testing.assert_array_equal(piece.toarray(), dense[:, a:b])
    assert sum(p.nnz for p in pieces) == np.count_nonzero(dense)


@pytest.mark.parametrize("seed", range(6))
def test_stacked_pieces_are_scipys_vstack(seed):
    """_stack_rows of CSC pieces (empty pieces, pieces of no rows, one gene) is bitwise scipy's CSR vstack of the
    pieces made CSR (rows sorted by gene), the block a task scores."""
    from glfs.core import _cluster

    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 12))
    heights = rng.integers(0, 40, int(rng.integers(1, 7)))
    pieces = [
        sp.random(int(h), d, density=float(rng.choice([0.0, 0.1, 0.6])), format="csc", random_state=rng)
        for h in heights
    ]
    pieces = [sp.csc_matrix(p.astype(np.float32)) for p in pieces]
    got = _cluster._stack_rows(pieces)
    want = sp.vstack([p.tocsr() for p in pieces], format="csr")
    assert got.format == "csr" and got.shape == want.shape and got.has_sorted_indices
    for a in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(got, a), getattr(want, a))
    np.testing.assert_array_equal(got.toarray(), np.vstack([p.toarray() for p in pieces]))


def test_waves_hold_at_most_the_budget_and_keep_the_blocks_in_order():
    """_waves against every way of cutting a short list into consecutive runs: the fewest runs whose pieces fit
    the budget (a block above it alone), in order, covering every block once."""
    import itertools

    from glfs.core import _cluster

    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(1, 8))
        sizes = rng.integers(1, 10, k).astype(float)
        budget = float(rng.integers(1, 25))
        got = _cluster._waves(list(range(k)), sizes, budget)
        assert [a for a, _ in got] == [0] + [b for _, b in got[:-1]] and got[-1][1] == k
        assert all(b - a == 1 or sizes[a:b].sum() <= budget for a, b in got)
        fewest = k
        for cuts in itertools.product([0, 1], repeat=k - 1):
            ends = [i + 1 for i, c in enumerate(cuts) if c] + [k]
            runs = list(zip([0] + ends[:-1], ends))
            if all(b - a == 1 or sizes[a:b].sum() <= budget for a, b in runs):
                fewest = min(fewest, len(runs))
        assert len(got) == fewest


def test_piece_bytes_bound_the_pieces():
    """_piece_bytes counts, for each block, at least the bytes of its by-genes pieces over all row chunks and at
    most twice them (int64 row indices and pointers counted where scipy may keep int32)."""
    from glfs.core import _cluster

    X = _sparse(3_000, 120, 0.05, seed=2)
    dx = da.from_array(X, chunks=(700, 120), asarray=False)
    ooc = check_X(dx, lazy=True)
    assert ooc.gene_nnz is not None
    parts = [slice(0, 1), slice(1, 30), slice(30, 120)]
    est = _cluster._piece_bytes(ooc, parts)
    edges = np.array([0, 1, 30, 120])
    real = np.zeros(3)
    for i in range(dx.numblocks[0]):
        for k, p in enumerate(_cluster._split_rows(_Held(dx.blocks[i].compute()), edges)):
            real[k] += p.data.nbytes + p.indices.nbytes + p.indptr.nbytes
    assert np.all(est >= real) and np.all(est <= 2 * real), (est, real)


def test_waves_on_the_cluster_score_as_in_memory(caplog):
    """A wave budget (dask config glfs.wave-bytes) below the matrix: the blocks run in several waves, each
    reading every row chunk, and the scores are the in-memory ones."""
    import dask

    X = _sparse(4_000, 300, 0.05, seed=3)
    rng = np.random.default_rng(1)
    rows = np.repeat(np.arange(X.shape[0]), 5)
    W = sp.csr_matrix((np.ones(rows.size), (rows, rng.integers(0, X.shape[0], rows.size))), shape=(X.shape[0],) * 2)
    W = W + W.T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        want = laplacian_score(X, W)
        matrix = X.nnz * (4 + 8)
        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=False, memory_limit="2GiB", dashboard_address=":0"
            ) as cl,
            distributed.Client(cl),
            dask.config.set({"glfs.wave-bytes": matrix // 4}),
            caplog.at_level(logging.INFO, logger="glfs.core._cluster"),
        ):
            got = laplacian_score(da.from_array(X, chunks=(500, 300), asarray=False), W)
    said = [r.getMessage() for r in caplog.records if "waves, each of at most" in r.getMessage()]
    assert len(said) == 1, said
    waves = int(said[0].split(" waves")[0].split()[-1])
    assert 4 <= waves <= 8, said
    assert sum("row chunks split into" in r.getMessage() for r in caplog.records) == waves
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("value", ["-1 GB", 0, "lots"])
def test_a_bad_wave_budget_is_refused_by_name(value):
    import dask

    from glfs.core import _cluster_memory

    with dask.config.set({"glfs.wave-bytes": value}), pytest.raises(ValueError, match="glfs.wave-bytes"):
        _cluster_memory.wave_bytes(None, None, {})


def test_a_gene_denser_than_the_room_above_the_target_is_a_block_alone(monkeypatch):
    """At 10^7 cells on 2 GiB workers (as measured, studies/dask-row-chunks.md) the room above dask's target is
    about 5 M values a block, and the densest gene stores 9.27 M: the plan stays at the room, not at that gene, and
    the partition gives the gene a block of its own while every other block keeps to the room."""
    from types import SimpleNamespace

    from glfs.core import _cluster_memory
    from glfs.core._out_of_core import _gene_partition

    n, d, limit, base = 10_000_000, 20_000, 2 * 2**30, int(0.27 * 2**30)
    monkeypatch.setattr(_cluster_memory, "_workers_memory", lambda client: (limit, 1, base))
    gene_nnz = np.full(d, 267_000, np.int64)
    gene_nnz[123] = 9_270_000
    X = SimpleNamespace(
        shape=(n, d),
        format="csr",
        dtype=np.dtype(np.float32),
        nnz=int(gene_nnz.sum()),
        gene_nnz=gene_nnz,
        chunk_values=None,
        source=SimpleNamespace(numblocks=(200, 1), chunks=((50_000,) * 200, (d,))),
    )
    # the shared inputs as measured there (0.32 GiB: the degrees and the worker's share of the graph's shards),
    # counted by their sizes, not allocated
    shared = {"deg": np.broadcast_to(np.float64(1), (n,)), "graph": np.broadcast_to(np.float64(0), (33_000_000,))}
    values = worker_block_values(None, X, shared, "laplacian_score")
    room = int(((0.8 - 0.6) * limit - base - 8 * (n + 1)) // 12)  # pause less target, the process and the pointers
    by_spill = int(((0.7 * limit - base - nbytes(shared)) - 40 * n - 8) / 3 // 12)
    assert 0.25 * by_spill < room < by_spill  # neither the spill plan nor the floor
    assert values == room
    assert 4_000_000 < room < gene_nnz[123]
    parts = list(_gene_partition(gene_nnz, values))
    sums = np.array([gene_nnz[sl].sum() for sl in parts])
    alone = [sl for sl in parts if sl.start <= 123 < sl.stop]
    assert alone == [slice(123, 124)]
    assert sums.max() == gene_nnz[123] and np.sort(sums)[-2] <= room
