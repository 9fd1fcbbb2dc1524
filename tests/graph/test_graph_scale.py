"""Neighbour search at scale: all genes / principal components / approximate index in glfs.similarity_graph.

The approximate path (``method="approx"``) is faiss' IVF index when faiss-cpu is
installed, else pynndescent; the approximate-search tests run with each
available backend.  pynndescent compiles its search with numba once per
process, so the first test that uses it takes tens of seconds.
The exact search on components runs with faiss when it is installed and with
scikit-learn otherwise; both are checked against a plain numpy brute force.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.graph._neighbors as nb


def latent_clusters(n=1500, d=200, n_clusters=6, rank=8, noise=0.05, seed=0):
    """Cells on a low-dimensional latent space (clusters + within-cluster spread), mapped to d genes.

    Genes 0..n_clusters-1 are planted markers (one per cluster); the others
    load on the latent space at random, plus small Gaussian noise.  The
    nearest neighbours are then set by the latent positions, which the first
    principal components capture.
    """
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_clusters, n)
    centres = rng.normal(0, 4.0, size=(n_clusters, rank))
    latent = centres[groups] + rng.normal(0, 1.0, size=(n, rank))
    X = latent @ rng.normal(0, 1.0, size=(rank, d)) / np.sqrt(rank) + rng.normal(0, noise, size=(n, d))
    # planted marker genes: high in one cluster, noise elsewhere
    X[:, :n_clusters] = 3.0 * (groups[:, None] == np.arange(n_clusters)) + rng.normal(0, 0.3, size=(n, n_clusters))
    return X, groups


def neighbour_sets(W):
    W = sp.csr_matrix(W)
    return [set(W.indices[W.indptr[i] : W.indptr[i + 1]]) for i in range(W.shape[0])]


def knn_sets(rows, cols, n):
    out = [set() for _ in range(n)]
    for r, c in zip(rows, cols):
        out[r].add(c)
    return out


def recall(found, truth):
    return np.mean([len(f & t) / len(t) for f, t in zip(found, truth)])


@pytest.fixture(scope="module")
def data():
    return latent_clusters()


HAS_FAISS = nb.exact_backend() == "faiss"
APPROX_BACKENDS = [
    "pynndescent",
    pytest.param("faiss", marks=pytest.mark.skipif(not HAS_FAISS, reason="faiss-cpu not installed")),
]


@pytest.fixture(scope="module", params=APPROX_BACKENDS)
def backend_name(request):
    return request.param


@pytest.fixture
def use_backend(monkeypatch, backend_name):
    """method="approx" runs this backend's index."""
    monkeypatch.setattr(nb, "approx_backend", lambda: backend_name)
    return backend_name


@pytest.fixture(scope="module")
def approx_knn(data, backend_name):
    X, _ = data
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nb, "approx_backend", lambda: backend_name)
        return nb.nearest_neighbors(X, 5, method="approx", random_state=0)


def test_approx_recall_against_exact(data, approx_knn):
    X, _ = data
    n = X.shape[0]
    exact_all = knn_sets(*nb.nearest_neighbors(X, 5, method="exact")[:2], n)
    exact_pcs = knn_sets(*nb.nearest_neighbors(X, 5, method="exact", n_pcs=nb.APPROX_N_PCS)[:2], n)
    approx = knn_sets(*approx_knn[:2], n)
    assert all(len(s) == 5 for s in approx)
    # the index itself (the same APPROX_N_PCS components) and the whole approximation (PCs + index) against all genes
    assert recall(approx, exact_pcs) >= 0.95
    assert recall(approx, exact_all) >= 0.9


def test_approx_distances_are_true_distances_on_components(data, approx_knn):
    X, _ = data
    rows, cols, dist = approx_knn
    _, _, dist_exact = nb.nearest_neighbors(X, 5, method="exact", n_pcs=nb.APPROX_N_PCS)
    # per-row sorted distances: the approximate k-th distance can only be >= the exact one
    a = dist.reshape(-1, 5)
    e = dist_exact.reshape(-1, 5)
    assert np.all(np.diff(a, axis=1) >= 0)
    assert np.all(a[:, -1] >= e[:, -1] - 1e-4 * e[:, -1])


@pytest.mark.parametrize("kernel", ["heat", "binary", "snf", "cosine"])
def test_approx_graph_is_a_valid_graph(data, kernel, use_backend):
    X, _ = data
    W = glfs.similarity_graph(X, n_neighbors=5, kernel=kernel, method="approx")
    assert sp.isspmatrix_csr(W) or isinstance(W, sp.csr_array)
    assert W.shape == (X.shape[0], X.shape[0])
    assert abs(W - W.T).max() == 0
    assert W.diagonal().max() == 0
    assert W.data.min() > 0
    assert np.all(np.diff(W.indptr) >= 5)  # union symmetrisation: every sample keeps its 5 neighbours


def test_approx_cosine_neighbours(data, use_backend):
    X, _ = data
    X = X + 5.0  # make cosine and Euclidean neighbourhoods differ
    n = X.shape[0]
    r, c, dist = nb.nearest_neighbors(X, 5, method="approx", metric="cosine", n_pcs=50)
    r2, c2, dist2 = nb.nearest_neighbors(X, 5, method="exact", metric="cosine")
    assert recall(knn_sets(r, c, n), knn_sets(r2, c2, n)) >= 0.9
    assert np.all((dist >= 0) & (dist <= 2))


def test_approx_deterministic_given_random_state(data, use_backend):
    X, _ = data
    W1 = glfs.similarity_graph(X, n_neighbors=5, method="approx", random_state=3)
    W2 = glfs.similarity_graph(X, n_neighbors=5, method="approx", random_state=3)
    assert (W1 != W2).nnz == 0


def test_laplacian_score_on_approx_graph_recovers_planted_genes(use_backend):
    # 6 marker genes shifted by 4 in one of 6 clusters each, 94 pure-noise genes
    rng = np.random.default_rng(1)
    n, d, k = 2000, 100, 6
    groups = rng.integers(0, k, n)
    X = rng.normal(size=(n, d))
    X[:, :k] += 4.0 * (groups[:, None] == np.arange(k))
    W = glfs.similarity_graph(X, n_neighbors=5, method="approx")
    s = glfs.laplacian_score(X, W)
    assert set(np.argsort(s)[:k]) == set(range(k))
    assert np.nanmax(s[:k]) < np.nanmin(s[k:])


# ---------------------------------------------------------------- exact search on components
def brute_force_knn(Z, k):
    """The k nearest other rows of Z by a full float64 distance matrix (tiny inputs only)."""
    Z = np.asarray(Z, dtype=np.float64)
    D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    return [set(np.argsort(D[i], kind="stable")[:k]) for i in range(Z.shape[0])], np.sort(D, axis=1)[:, :k] ** 0.5


BACKENDS = [
    "sklearn",
    pytest.param("faiss", marks=pytest.mark.skipif(nb.exact_backend() != "faiss", reason="faiss-cpu not installed")),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_exact_on_components_equals_brute_force(backend):
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(400, 12)) * np.linspace(3, 0.5, 12)  # no ties
    rows, cols, dist = nb._knn_brute32(Z, 6, backend)
    truth, tdist = brute_force_knn(Z, 6)
    found = knn_sets(rows, cols, Z.shape[0])
    assert recall(found, truth) == 1.0
    np.testing.assert_allclose(dist.reshape(-1, 6), tdist, rtol=1e-10)  # distances recomputed in float64


def test_exact_on_components_duplicates_keep_k():
    # duplicated samples: the self-match may come second, every row must still get k other samples
    rng = np.random.default_rng(6)
    Z = np.repeat(rng.normal(size=(50, 4)), 3, axis=0)
    rows, cols, dist = nb._knn_brute32(Z, 4)
    assert np.all(np.bincount(rows, minlength=Z.shape[0]) == 4)
    assert np.all(rows != cols)
    assert np.all(dist.reshape(-1, 4)[:, :2] == 0)  # the two copies come first


def test_auto_at_scale_is_exact_on_components(monkeypatch, data):
    # with the threshold lowered, auto = exact search on 20 components: recall 1 against brute force on those components
    X, _ = data
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", X.shape[0])
    rows, cols, _ = nb.nearest_neighbors(X, 5, random_state=0)
    Z = nb._pca(nb.check_X(X), 20, 0, float32=True)
    truth, _ = brute_force_knn(Z, 5)
    assert recall(knn_sets(rows, cols, X.shape[0]), truth) >= 0.999  # float32 PCs: allow a near-tie or two


def test_backends_give_the_same_graph(monkeypatch, data):
    if nb.exact_backend() != "faiss":
        pytest.skip("faiss-cpu not installed")
    X, _ = data
    W_faiss = glfs.similarity_graph(X, n_neighbors=5, method="exact", n_pcs=30)
    monkeypatch.setattr(nb, "exact_backend", lambda: "sklearn")
    W_sk = glfs.similarity_graph(X, n_neighbors=5, method="exact", n_pcs=30)
    assert (W_faiss != W_sk).nnz == 0


@pytest.mark.skipif(not HAS_FAISS, reason="faiss-cpu not installed")
def test_ivf_recall_against_brute_force():
    # the IVF index with its defaults on planted clusters: nearly all of the exact neighbours
    X, _ = latent_clusters(n=3000, d=20, noise=0.2, seed=4)
    rows, cols, dist = nb._knn_ivf(X, 6)
    truth, tdist = brute_force_knn(X, 6)
    assert np.all(np.bincount(rows, minlength=X.shape[0]) == 6)
    assert recall(knn_sets(rows, cols, X.shape[0]), truth) >= 0.95
    d = dist.reshape(-1, 6)
    assert np.all(np.diff(d, axis=1) >= 0)
    assert np.all(d[:, -1] >= tdist[:, -1] * (1 - 1e-6))  # an approximate k-th neighbour is never nearer


@pytest.mark.skipif(not HAS_FAISS, reason="faiss-cpu not installed")
def test_ivf_cells_with_too_few_samples_are_searched_exactly():
    # one cell per ~1 sample and one probed cell: no sample finds 6 candidates in its cell, all go exact
    rng = np.random.default_rng(8)
    Z = rng.normal(size=(300, 5)) * np.linspace(3, 1, 5)
    rows, cols, dist = nb._knn_ivf(Z, 5, nlist=250, nprobe=1)
    truth, tdist = brute_force_knn(Z, 5)
    assert recall(knn_sets(rows, cols, Z.shape[0]), truth) == 1.0
    np.testing.assert_allclose(dist.reshape(-1, 5), tdist, rtol=1e-10)


def knn_ivf_on_1_and_2_threads(Z, k, random_state):
    """_knn_ivf with faiss on 1 and on 2 threads: the same arrays (returned once)."""
    import faiss

    before = faiss.omp_get_max_threads()
    try:
        faiss.omp_set_num_threads(1)
        one = nb._knn_ivf(Z, k, random_state=random_state)
        faiss.omp_set_num_threads(2)
        two = nb._knn_ivf(Z, k, random_state=random_state)
    finally:
        faiss.omp_set_num_threads(before)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    return one


@pytest.mark.skipif(not HAS_FAISS, reason="faiss-cpu not installed")
def test_ivf_same_graph_for_any_thread_count(data):
    X, _ = data
    knn_ivf_on_1_and_2_threads(nb._pca(nb.check_X(X), 30, 0, float32=True), 5, 2)


def test_unknown_backend():
    with pytest.raises(ValueError, match=r"backend must be 'faiss' or 'sklearn'; got 'annoy'"):
        nb._knn_brute32(np.eye(10), 3, "annoy")


# ---------------------------------------------------------------- the switch rule
@pytest.mark.parametrize(
    "n,d,method,n_pcs,expected",
    [
        (173, 1740, "auto", None, ("exact", None)),  # bulk cohort: exact, all genes
        (3000, 20000, "auto", None, ("exact", None)),
        (nb.AUTO_APPROX_MIN_SAMPLES - 1, 2000, "auto", None, ("exact", None)),
        (nb.AUTO_APPROX_MIN_SAMPLES, 2000, "auto", None, ("exact", 20)),  # at scale: exact on 20 components
        (nb.AUTO_INDEX_MIN_SAMPLES - 1, 2000, "auto", None, ("exact", 20)),
        (nb.AUTO_INDEX_MIN_SAMPLES, 2000, "auto", None, ("approx" if HAS_FAISS else "exact", 20)),  # faiss IVF
        (50000, 2000, "auto", None, ("approx" if HAS_FAISS else "exact", 20)),
        (50000, 20, "auto", None, ("approx" if HAS_FAISS else "exact", None)),  # few genes: no PCA
        (50000, 21, "auto", None, ("approx" if HAS_FAISS else "exact", 20)),
        (50000, 2000, "auto", 50, ("approx" if HAS_FAISS else "exact", 50)),  # scanpy's 50, asked for
        (50000, 2000, "exact", None, ("exact", None)),  # forced: all genes
        (100, 500, "approx", None, ("approx", 20)),  # forced
        (100, 500, "exact", 10, ("exact", 10)),
    ],
)
def test_choose_neighbor_method(n, d, method, n_pcs, expected):
    assert nb.choose_neighbor_method(n, d, method, n_pcs) == expected


def _spy(monkeypatch, name):
    calls = []
    real = getattr(nb, name)

    def spy(*a, **k):
        calls.append(a[0].shape)
        return real(*a, **k)

    monkeypatch.setattr(nb, name, spy)
    return calls


def test_auto_switches_at_threshold(monkeypatch, data):
    X, _ = data
    approx = _spy(monkeypatch, "_knn_approx")
    pcs = _spy(monkeypatch, "_knn_brute32")
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", X.shape[0] + 1)
    W_auto = glfs.similarity_graph(X, n_neighbors=5)
    assert approx == [] and pcs == []
    assert (W_auto != glfs.similarity_graph(X, n_neighbors=5, method="exact")).nnz == 0
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", X.shape[0])
    W_big = glfs.similarity_graph(X, n_neighbors=5)
    assert approx == [] and pcs == [(X.shape[0], 20)]  # exact, on 20 components
    assert (W_big != glfs.similarity_graph(X, n_neighbors=5, method="exact", n_pcs=20)).nnz == 0
    assert (W_big != W_auto).nnz > 0  # the components do change the graph a little


def test_auto_without_faiss_stays_exact_until_nn_descent_pays(monkeypatch):
    """Without faiss the exact brute force runs up to AUTO_NNDESCENT_MIN_SAMPLES (pynndescent's numba
    compilation costs more below it), pynndescent from there on (the brute force grows like n^2)."""
    monkeypatch.setattr(nb, "exact_backend", lambda: "sklearn")
    assert nb.approx_backend() == "pynndescent"
    assert nb.choose_neighbor_method(50000, 2000) == ("exact", 20)
    assert nb.choose_neighbor_method(nb.AUTO_NNDESCENT_MIN_SAMPLES - 1, 2000) == ("exact", 20)
    assert nb.choose_neighbor_method(nb.AUTO_NNDESCENT_MIN_SAMPLES, 2000) == ("approx", 20)
    assert nb.choose_neighbor_method(1_000_000, 20000) == ("approx", 20)
    assert nb.choose_neighbor_method(1_000_000, 20000, "exact", n_pcs=50) == ("exact", 50)  # forcing still works
    monkeypatch.setattr(nb, "exact_backend", lambda: "faiss")  # with faiss: its IVF index from 30,000
    assert nb.choose_neighbor_method(nb.AUTO_INDEX_MIN_SAMPLES, 2000) == ("approx", 20)
    assert nb.choose_neighbor_method(nb.AUTO_INDEX_MIN_SAMPLES - 1, 2000) == ("exact", 20)


@pytest.mark.skipif(not HAS_FAISS, reason="faiss-cpu not installed")
def test_auto_switches_to_the_index(monkeypatch, data):
    X, _ = data
    ivf = _spy(monkeypatch, "_knn_ivf")
    pcs = _spy(monkeypatch, "_knn_brute32")
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 100)
    monkeypatch.setattr(nb, "AUTO_INDEX_MIN_SAMPLES", X.shape[0] + 1)
    glfs.similarity_graph(X, n_neighbors=5)
    assert ivf == [] and pcs == [(X.shape[0], 20)]
    monkeypatch.setattr(nb, "AUTO_INDEX_MIN_SAMPLES", X.shape[0])
    W = glfs.similarity_graph(X, n_neighbors=5)
    assert ivf == [(X.shape[0], 20)] and len(pcs) == 1
    assert (W != glfs.similarity_graph(X, n_neighbors=5, method="approx")).nnz == 0
    glfs.similarity_graph(X, n_neighbors=5, method="exact", n_pcs=50)  # forcing exact on components
    assert len(ivf) == 2 and len(pcs) == 2


def test_forcing_either_way(monkeypatch, data, use_backend):
    X, _ = data
    approx = _spy(monkeypatch, "_knn_ivf" if use_backend == "faiss" else "_knn_approx")
    pcs = _spy(monkeypatch, "_knn_brute32")
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 10)  # auto would search components
    glfs.similarity_graph(X, n_neighbors=5, method="exact")
    assert approx == [] and pcs == []  # all genes
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 10**9)  # auto would stay on all genes
    glfs.similarity_graph(X, n_neighbors=5, method="approx", n_pcs=20)
    assert approx == [(X.shape[0], 20)] and pcs == []
    glfs.similarity_graph(X, n_neighbors=5, method="exact", n_pcs=20)
    assert pcs == [(X.shape[0], 20)]


def test_sparse_input_approx(data, use_backend):
    X, _ = data
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    n = X.shape[0]
    r, c, _ = nb.nearest_neighbors(Xs, 5, method="approx", n_pcs=30)
    r2, c2, _ = nb.nearest_neighbors(Xs.toarray(), 5, method="exact", n_pcs=30)
    assert recall(knn_sets(r, c, n), knn_sets(r2, c2, n)) >= 0.9


BAD = [
    (
        "unknown method",
        lambda X: glfs.similarity_graph(X, method="fast"),
        r"method must be one of \('auto', 'exact', 'approx'\); got 'fast'",
    ),
    (
        "approx metric",
        lambda X: glfs.similarity_graph(X, method="approx", metric="manhattan"),
        r"metric must be 'euclidean' or 'cosine' for the approximate search \(method='approx'\); got 'manhattan'",
    ),
    (
        "approx n_pcs",
        lambda X: glfs.similarity_graph(X, method="approx", n_pcs=0),
        r"n_pcs must be an integer in \[1, 8\]",
    ),
]


@pytest.mark.parametrize("case,call,match", BAD, ids=[b[0] for b in BAD])
def test_bad_input(case, call, match):
    X = np.random.default_rng(0).normal(size=(30, 8))
    with pytest.raises(ValueError, match=match):
        call(X)


@pytest.mark.skipif(not HAS_FAISS, reason="faiss-cpu not installed")
def test_ivf_query_order_changes_nothing(data):
    """_knn_ivf searches the queries grouped by their k-means cell (for the cache); the graph equals a
    search in the samples' own order on the same index, written out here, and the blocked distances
    equal the distances of all pairs at once."""
    import faiss

    X, _ = data
    Z = nb._pca(nb.check_X(X), 30, 0, float32=True)
    got = nb._knn_ivf(Z, 5, random_state=3)
    n, p = Z.shape
    Z32 = np.ascontiguousarray(Z, dtype=np.float32)
    nlist = max(1, round(nb.IVF_NLIST_PER_SQRT_N * np.sqrt(n)))
    index = faiss.IndexIVFFlat(faiss.IndexFlatL2(p), p, nlist)
    index.cp.seed = int(np.random.RandomState(3).randint(2**31 - 1))
    index.cp.min_points_per_centroid = 1
    index.train(Z32)
    index.add(Z32)
    index.nprobe = nb.ivf_nprobe(nlist, p)
    _, ind = index.search(Z32, 5 + 5)
    rows = np.repeat(np.arange(n), ind.shape[1])
    cols = ind.ravel().astype(np.int64)
    ok = cols >= 0
    rows, cols = rows[ok], cols[ok]
    Zd = Z.astype(np.float64)
    d = np.sqrt(np.maximum(np.einsum("ij,ij->i", Zd[rows] - Zd[cols], Zd[rows] - Zd[cols]), 0.0))
    want = nb._keep_k(rows, cols, d, 5)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_ivf_nprobe_grows_like_the_root_of_the_cell_count():
    """The probed cells: sqrt(nlist), never fewer than 32 (the measured setting of every size up to nlist 1,024,
    a million cells), never more than nlist; docs/guides/atlases.md ('Atlas scale') has the recall and time trade-off."""
    assert [nb.ivf_nprobe(m) for m in (1, 20, 224, 256)] == [1, 20, 32, 32]
    assert nb.ivf_nprobe(1000) == 32  # a million cells: the setting of the 380 s end-to-end run
    assert nb.ivf_nprobe(1024) == 32 and nb.ivf_nprobe(1025) == 33
    big = [nb.ivf_nprobe(m) for m in (10_000, 40_000, 160_000)]
    assert big == [100, 200, 400]  # doubling with every fourfold nlist


def test_ivf_nprobe_is_in_proportion_to_the_components():
    """The rule above is the one on 50 components; on p components it probes p/50 of its cells, rounded up
    (studies/graph-20-pcs.md: the recall at a given number of probes falls with p)."""
    assert nb.ivf_nprobe(1000, 50) == nb.ivf_nprobe(1000) == 32
    assert [nb.ivf_nprobe(1000, p) for p in (10, 20, 30, 100)] == [7, 13, 20, 64]  # 6.4, 12.8, 19.2, 64 up
    assert nb.ivf_nprobe(1000, nb.APPROX_N_PCS) == 13  # the default graph of a million cells
    assert nb.ivf_nprobe(10_000, 20) == 40 and nb.ivf_nprobe(10, 20) == 10  # never more than nlist
    assert nb.ivf_nprobe(1000, 1) == 1  # at least one


def test_pynndescent_distances_are_recomputed_in_blocks():
    """pynndescent's candidates get their float64 distances through _from_candidates, in blocks of pairs:
    the traced peak stays below one (pairs x components) float64 array, the size of each of the three
    temporaries of the all-at-once form (at a million cells those were about 8 GB each, and the search
    was killed for memory at 24 GB)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n, p, k = 20_000, 50, 5
    Z = rng.normal(size=(n, p))
    nb._knn_approx(Z[:2_000], k, 0)  # numba compiles pynndescent's search first (not traced)
    k_search = max(20, 2 * (k + 1))
    one_temporary = n * k_search * p * 8
    tracemalloc.start()
    try:
        rows, cols, d = nb._knn_approx(Z, k, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < one_temporary, (peak / 2**20, one_temporary / 2**20)
    np.testing.assert_allclose(d, np.linalg.norm(Z[rows] - Z[cols], axis=1), rtol=1e-12)
    assert np.all(np.bincount(rows, minlength=n) == k)


@pytest.mark.parametrize("value", [0.0, 2.5])
def test_constant_sparse_x_has_zero_components_as_dense(value):
    """Every gene constant: the centred X is zero.  ARPACK refused it when sparse ("Starting vector is zero", seen
    on graph_moran's refined graph of simulated cells, issue 28); its scores are 0, as the dense path gives."""
    Xd = np.full((60, 40), value)
    Zs, Zd = nb._pca(sp.csr_matrix(Xd), 5, 0), nb._pca(Xd, 5, 0, float32=True)
    assert Zs.shape == Zd.shape == (60, 5)
    assert np.abs(Zs).max() == 0 and np.abs(Zd).max() < 1e-6
    V, shift = nb._fit_components(sp.csr_matrix(Xd), 5, 0)  # the out-of-core fit
    assert V.shape == (40, 5) and np.abs(V).max() == 0 == np.abs(shift).max()
    W = glfs.similarity_graph(sp.csr_matrix(Xd), n_neighbors=5, kernel="binary", n_pcs=5)
    assert W.shape == (60, 60) and (np.diff(sp.csr_matrix(W).indptr) >= 5).all()


def test_all_constant_counts_a_sparse_columns_implicit_zeros():
    X = np.full((6, 3), 2.5)
    assert nb._all_constant(sp.csr_matrix(X)) and nb._all_constant(X)
    X[4, 1] = 0.0  # one implicit zero in a column of 2.5: not constant
    assert not nb._all_constant(sp.csr_matrix(X)) and not nb._all_constant(X)
    assert not nb._all_constant(sp.csr_matrix(np.eye(4)))


def test_sparse_components_do_not_depend_on_the_order_within_rows():
    """A CSR matrix whose genes were taken in another order (X[:, genes]: rows unsorted, as graph_moran's
    refinement makes them) has the components of the same matrix with sorted rows, bit for bit.  scikit-learn's
    ARPACK PCA alone differs by up to about 1e-3 here (its products sum each row in stored order)."""
    rng = np.random.default_rng(0)
    X = sp.random(400, 300, density=0.2, random_state=rng, format="csr", dtype=np.float32)
    Xu = X[:, rng.permutation(300)]
    assert not Xu.has_sorted_indices
    before = Xu.indices.copy()
    np.testing.assert_array_equal(nb._pca(Xu, 10, 0), nb._pca(Xu.sorted_indices(), 10, 0))
    assert np.array_equal(Xu.indices, before)  # the caller's matrix is not sorted in place
