"""The IVF search in dense blocks (glfs.graph._ivf_blocks, the library's search from
IVF_BLOCKED_MIN_SAMPLES on): exact within the probed lists, the same candidates as IndexIVFFlat on
the same centres, and the same result for any thread count, query block or distance block."""

import numpy as np
import pytest
from test_graph_scale import brute_force_knn, knn_ivf_on_1_and_2_threads, knn_sets, latent_clusters, recall

import glfs.graph._ivf_blocks as ib
import glfs.graph._neighbors as nb

faiss = pytest.importorskip("faiss")


def _planted(n=2000, p=10, seed=0):
    """Gaussian blobs on p dimensions, float32 (distinct distances: no ties)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3.0, size=(8, p))
    return (centres[rng.integers(0, 8, n)] + rng.normal(size=(n, p))).astype(np.float32)


def _graph(Z, ind, k):
    rows, cols, dist = nb._from_candidates(Z, ind, k)
    return cols.reshape(-1, k), dist.reshape(-1, k)


@pytest.mark.parametrize("nlist", [40, 700])  # 700 of 2,000: most nearest cells hold fewer than k_search
def test_probing_every_list_equals_brute_force(nlist):
    Z = _planted()
    lists = ib.ivf_lists(Z, nlist, 0)
    ind = ib.search_lists(lists, Z, 6 + 5, nprobe=nlist)
    cols, dist = _graph(Z, ind, 6)
    truth, tdist = brute_force_knn(Z, 6)
    assert [set(r) for r in cols] == truth
    np.testing.assert_allclose(dist, tdist, rtol=1e-12)


def test_candidates_are_the_nearest_in_the_probed_lists():
    """Each query's kept neighbours are its exact nearest among the samples of its nprobe nearest
    centres, written out here in float64 (and each sample is in the list of its nearest centre)."""
    Z = _planted(seed=1)
    lists = ib.ivf_lists(Z, 40, 0)
    Z64, C = Z.astype(np.float64), lists.centres.astype(np.float64)
    dc = ((Z64[:, None, :] - C[None]) ** 2).sum(-1)
    cell = np.empty(Z.shape[0], np.int64)
    for L in range(40):
        cell[lists.ids[lists.bounds[L] : lists.bounds[L + 1]]] = L
    np.testing.assert_array_equal(cell, dc.argmin(1))
    cols, _ = _graph(Z, ib.search_lists(lists, Z, 6 + 5, nprobe=5), 6)
    probes = np.argsort(dc, axis=1)[:, :5]
    for i in range(Z.shape[0]):
        cand = np.flatnonzero(np.isin(cell, probes[i]) & (np.arange(Z.shape[0]) != i))
        d = ((Z64[cand] - Z64[i]) ** 2).sum(1)
        assert set(cols[i]) == set(cand[np.argsort(d)[:6]]), i


def test_same_candidates_as_ivfflat_on_the_same_centres():
    Z = _planted(seed=2)
    lists = ib.ivf_lists(Z, 40, 3)
    quantizer = faiss.IndexFlatL2(Z.shape[1])
    quantizer.add(lists.centres)
    index = faiss.IndexIVFFlat(quantizer, Z.shape[1], 40)
    index.add(Z)
    index.nprobe = 6
    _, ind = index.search(Z, 11)
    want = _graph(Z, ind, 6)
    got = _graph(Z, ib.search_lists(lists, Z, 11, nprobe=6), 6)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_same_result_for_any_threads_and_blocks(monkeypatch):
    Z = _planted(3000, 12, seed=3)
    lists = ib.ivf_lists(Z, 55, 0)
    want = ib.search_lists(lists, Z, 15, nprobe=8, n_threads=1)
    monkeypatch.setattr(ib, "BLOCK_QUERIES", 128)  # 24 blocks, the last one short
    monkeypatch.setattr(ib, "PAIR_CHUNK", 3000)  # a list's queries in chunks of a few rows
    for threads in (1, 3):
        np.testing.assert_array_equal(ib.search_lists(lists, Z, 15, nprobe=8, n_threads=threads), want)
    # a query's candidates do not depend on the other queries searched with it
    sub = np.random.default_rng(0).choice(3000, 300, replace=False)
    np.testing.assert_array_equal(ib.search_lists(lists, Z[sub], 15, nprobe=8), want[sub])
    assert np.all(want >= 0) and np.all(np.diff(np.sort(want, axis=1), axis=1) > 0)  # k_search distinct samples


def test_knn_ivf_blocked_recall_and_determinism(monkeypatch):
    """From IVF_BLOCKED_MIN_SAMPLES on (forced here at 3,000 samples) _knn_ivf searches in blocks: the
    same graph as IndexIVFFlat's (same k-means, same probes), nearly all exact neighbours on planted
    clusters, the same graph for 1 and 2 faiss threads (the block threads)."""
    X, _ = latent_clusters(n=3000, d=20, noise=0.2, seed=4)
    Z = X.astype(np.float32)
    truth, tdist = brute_force_knn(Z.astype(np.float64), 6)
    flat = nb._knn_ivf(Z, 6, random_state=2)
    monkeypatch.setattr(nb, "IVF_BLOCKED_MIN_SAMPLES", 3000)
    monkeypatch.setattr(ib, "BLOCK_QUERIES", 700)
    rows, cols, dist = knn_ivf_on_1_and_2_threads(Z, 6, 2)
    assert np.all(np.bincount(rows, minlength=Z.shape[0]) == 6)
    got = recall(knn_sets(rows, cols, Z.shape[0]), truth)
    assert got >= 0.95
    assert abs(got - recall(knn_sets(*flat[:2], Z.shape[0]), truth)) <= 0.005
    d = dist.reshape(-1, 6)
    assert np.all(d[:, -1] >= tdist[:, -1] * (1 - 1e-6))  # an approximate k-th neighbour is never nearer
    np.testing.assert_allclose(d, np.sqrt(((Z[rows].astype(np.float64) - Z[cols]) ** 2).sum(1)).reshape(-1, 6))


def test_kept_order_keeps_the_k_nearest_whatever_the_ties():
    """The k nearest pairs of each query, brute force on small inputs full of tied distances: every pair
    nearer than the k-th is kept, and of those tied with it the earlier (the rule an index in shards merges
    by); a nearer pair is never left out for a tie (the rule before kept the first k at most the k-th)."""
    rng = np.random.default_rng(7)
    assert sorted(ib.kept_order(1, np.zeros(5, np.int64), np.float32([5, 1, 5, 5, 2]), 3)[0]) == [0, 1, 4]
    for _ in range(200):
        m, k = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        q = np.sort(rng.integers(0, m, 30))
        d = rng.integers(0, 4, 30).astype(np.float32)  # four values: ties everywhere
        keep, slot = ib.kept_order(m, q, d, k)
        for i in range(m):
            mine = keep[q[keep] == i]
            want = np.flatnonzero(q == i)
            want = want[np.argsort(d[want], kind="stable")][:k]  # the k nearest, ties in the given order
            assert sorted(mine) == sorted(want)
            assert list(mine) == sorted(mine) and list(slot[q[keep] == i]) == list(range(mine.size))


def test_probed_cells_of_a_block_need_less_than_one_full_product():
    """query_side on 8,192 queries and 2,048 centres: its temporaries stay below one (queries x centres)
    float32 product (64 MB), which the search at 10^7 cells (32,768 x 3,162: 414 MB, taken twice by the
    partition) could not afford on a 2 GiB worker; the probed cells are those of the whole product."""
    import tracemalloc

    rng = np.random.default_rng(4)
    Q = rng.normal(size=(8192, 20)).astype(np.float32)
    centres = rng.normal(size=(2048, 20)).astype(np.float32)
    full = Q.shape[0] * centres.shape[0] * 4
    tracemalloc.start()
    try:
        qn, Qa, q, cell, nearest = ib.query_side(Q, centres, 45)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < full, (peak, full)
    d = (Q**2).sum(1)[:, None] - 2.0 * Q.astype(np.float64) @ centres.T.astype(np.float64) + (centres**2).sum(1)
    np.testing.assert_array_equal(nearest, d.argmin(1))
    probed = np.zeros(d.shape, bool)
    probed[q, cell] = True
    assert np.all(probed.sum(1) == 45)  # no ties among random float centres
    np.testing.assert_array_equal(
        np.sort(np.argsort(d, axis=1)[:, :45], axis=1), np.sort(np.nonzero(probed)[1].reshape(-1, 45), axis=1)
    )
