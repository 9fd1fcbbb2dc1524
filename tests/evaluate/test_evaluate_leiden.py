"""Tests of the single-cell evaluation protocol (glfs.evaluate.evaluate_ranking_leiden) and of
the random-genes floor's gene orders (glfs.evaluate.random_gene_orders)."""

import logging
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score

import glfs.evaluate._leiden
from glfs.evaluate import (
    LEIDEN_RESOLUTIONS,
    best_match_f1,
    evaluate_ranking_leiden,
    random_gene_orders,
    rare_type_f1,
    rare_types,
    stratified_subsample,
)
from glfs.evaluate._clustering import nmi

pytest.importorskip("scanpy")
pytest.importorskip("igraph")

KEYS = {
    "n_features",
    "run",
    "seed",
    "ari",
    "nmi",
    "resolution",
    "n_clusters",
    "ari_nlabels",
    "nmi_nlabels",
    "resolution_nlabels",
    "n_clusters_nlabels",
    "nlabels_reached",
    "kmeans_ari",
    "kmeans_nmi",
    "rare_f1",
    "rare_f1_nlabels",
}
N_GROUPS, PER_GROUP, N_MARKERS, N_NOISE = 4, 150, 40, 200
GRID = (2, N_MARKERS)  # 2: the genes themselves (no PCA); 40: the markers
N_RUNS = 2


def _planted(seed=0):
    """4 groups x 150 cells; genes 0-39 are markers (10 per group, Poisson mean 20 in their group,
    1 elsewhere), genes 40-239 noise (Poisson mean 0.2-3, the same in every group).  Counts are
    normalised to the median total and log1p-transformed (what normalize_total + log1p gives)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(N_GROUPS), PER_GROUP)
    mean = np.empty((y.size, N_MARKERS + N_NOISE))
    mean[:, :N_MARKERS] = 1.0
    for g in range(N_GROUPS):
        mean[y == g, g * 10 : (g + 1) * 10] = 20.0
    mean[:, N_MARKERS:] = rng.uniform(0.2, 3.0, size=N_NOISE)
    counts = rng.poisson(mean).astype(np.float64)
    total = counts.sum(axis=1, keepdims=True)
    X = np.log1p(counts / total * np.median(total))
    return X, y.astype(str)


@pytest.fixture(scope="module")
def planted():
    return _planted()


@pytest.fixture(scope="module")
def planted_records(planted):
    X, y = planted
    return evaluate_ranking_leiden(X, y, np.arange(X.shape[1]), feature_grid=GRID, n_runs=N_RUNS, random_state=3)


def test_planted_partition_is_recovered_exactly(planted_records):
    at_k = [r for r in planted_records if r["n_features"] == N_MARKERS]
    assert len(at_k) == N_RUNS
    for r in at_k:
        assert r["ari"] == pytest.approx(1.0) and r["nmi"] == pytest.approx(1.0)
        assert r["n_clusters"] == N_GROUPS
        assert r["ari_nlabels"] == pytest.approx(1.0) and r["n_clusters_nlabels"] == N_GROUPS
        assert r["kmeans_ari"] == pytest.approx(1.0) and r["kmeans_nmi"] == pytest.approx(1.0)
        assert r["rare_f1"] == pytest.approx(1.0) and r["rare_f1_nlabels"] == pytest.approx(1.0)


def test_record_layout(planted_records):
    assert len(planted_records) == len(GRID) * N_RUNS
    assert all(set(r) == KEYS for r in planted_records)
    assert sorted({r["n_features"] for r in planted_records}) == [2, N_MARKERS]
    assert [r["run"] for r in planted_records] == [0, 1] * len(GRID)
    for r in planted_records:
        assert r["resolution"] in LEIDEN_RESOLUTIONS and r["resolution_nlabels"] in LEIDEN_RESOLUTIONS
        assert r["ari"] >= r["ari_nlabels"]  # the best resolution is the best over the grid
        assert -1 <= r["kmeans_ari"] <= 1 and 0 <= r["nmi"] <= 1


def test_deterministic_for_a_seed(planted, planted_records):
    X, y = planted
    again = evaluate_ranking_leiden(X, y, np.arange(X.shape[1]), feature_grid=GRID, n_runs=N_RUNS, random_state=3)
    assert again == planted_records


def test_sparse_gives_the_dense_records(planted, planted_records):
    X, y = planted
    Xs = sp.csr_matrix(X)
    assert Xs.nnz < 0.8 * X.size  # really sparse (Poisson zeros)
    got = evaluate_ranking_leiden(Xs, y, np.arange(X.shape[1]), feature_grid=GRID, n_runs=N_RUNS, random_state=3)
    assert len(got) == len(planted_records)
    for a, b in zip(got, planted_records):
        assert set(a) == set(b)
        for key in a:
            assert a[key] == pytest.approx(b[key], abs=1e-12), key


def test_noise_genes_score_near_chance(planted):
    X, y = planted
    ranking = np.r_[np.arange(N_MARKERS, X.shape[1]), np.arange(N_MARKERS)]  # noise genes first
    records = evaluate_ranking_leiden(X, y, ranking, feature_grid=(50,), n_runs=2, random_state=0)
    # Under independence E[ARI] = 0 and its sd is of order 1/n (n = 600 cells: a few 1e-3; here
    # every |ARI| is below 0.01).  The best of 10 resolutions is a maximum over correlated chance
    # values, still a few hundredths at most; the honest resolution picks no maximum.  So 0.1 and
    # 0.2 are 10 or more sd from chance, while a protocol that leaked the markers in scores 1.
    for r in records:
        assert r["n_features"] == 50
        assert abs(r["ari_nlabels"]) < 0.1
        assert r["ari"] < 0.2
        assert abs(r["kmeans_ari"]) < 0.1


def test_max_samples_is_a_stratified_subsample(planted, caplog):
    X, y = planted
    # unbalanced classes: 150, 100, 50, 20 cells
    rows = np.concatenate([np.flatnonzero(y == g)[:m] for g, m in zip("0123", (150, 100, 50, 20))])
    X, y = X[rows], y[rows]
    # noise genes first: their scores move with the cells, so a full-data run differs from the subsample's
    ranking = np.r_[np.arange(N_MARKERS, X.shape[1]), np.arange(N_MARKERS)]
    kw = dict(feature_grid=(50,), n_runs=1, random_state=5)
    with caplog.at_level(logging.INFO, logger="glfs.evaluate._leiden"):
        got = evaluate_ranking_leiden(X, y, ranking, max_samples=160, **kw)
    assert "stratified subsample of 160" in caplog.text
    keep = stratified_subsample(y, 160, 5)
    assert keep.size == 160
    assert pd.Series(y[keep]).value_counts().to_dict() == {"0": 75, "1": 50, "2": 25, "3": 10}
    # the records are those of the subsample: the same as evaluating it directly
    assert got == evaluate_ranking_leiden(X[keep], y[keep], ranking, **kw)
    # and not those of all the cells (a check that can fail)
    assert got != evaluate_ranking_leiden(X, y, ranking, **kw)


def test_resolution_choice_and_ties(monkeypatch):
    """The two resolutions of a record, on a fake Leiden whose partition depends on the resolution."""

    y = np.repeat(np.arange(4), 25)
    merge = np.where(y == 3, 2, y)  # 3 clusters: groups 2 and 3 merged
    split = np.where((y == 0) & (np.arange(100) % 2 == 0), 4, y)  # 5 clusters: group 0 split in halves
    many = y * 2 + np.arange(100) % 2  # 8 clusters: every group split
    partitions = {0.5: merge, 1.0: split, 1.5: many, 2.0: split}

    def fake_leiden_runs(sc, adata, seed, resolutions, graph=None):
        return [partitions[r] for r in resolutions]

    monkeypatch.setattr(glfs.evaluate._leiden, "_leiden_runs", fake_leiden_runs)
    X = np.random.default_rng(0).normal(size=(100, 10))
    (r,) = evaluate_ranking_leiden(X, y, np.arange(10), feature_grid=(10,), n_runs=1, resolutions=(0.5, 1.0, 1.5, 2.0))
    # ARI: split (0.88) > merge (0.79) > many; split at 1.0 and 2.0 ties -> the first, 1.0
    assert (r["resolution"], r["n_clusters"]) == (1.0, 5)
    # |n_clusters - 4| = 1, 1, 4, 1 -> the first, 0.5
    assert (r["resolution_nlabels"], r["n_clusters_nlabels"]) == (0.5, 3)
    assert r["ari"] > r["ari_nlabels"]
    # each figure is that of its own resolution's partition
    assert (r["ari"], r["nmi"]) == (adjusted_rand_score(y, split), nmi(y, split))
    assert (r["ari_nlabels"], r["nmi_nlabels"]) == (adjusted_rand_score(y, merge), nmi(y, merge))


@pytest.mark.parametrize("private_api", [True, False])
def test_leiden_runs_are_scanpys_leiden(planted, monkeypatch, private_api):
    """The graph built once gives, resolution by resolution and seed by seed, the partitions of
    sc.tl.leiden(flavor="igraph", n_iterations=2, directed=False, random_state=seed) itself; so
    does the route without scanpy's private helpers."""
    import anndata
    import scanpy as sc

    X, _ = planted
    adata = anndata.AnnData(X[:, :60].copy())
    sc.pp.pca(adata, n_comps=20, svd_solver="arpack", random_state=0)
    sc.pp.neighbors(adata, n_neighbors=15, random_state=0)
    if not private_api:
        monkeypatch.setitem(sys.modules, "scanpy._utils.random", None)
    resolutions = (0.3, 1.0, 2.0)
    n_distinct = set()
    graph = glfs.evaluate._leiden._leiden_graph(adata)  # built once, used for both seeds
    assert (graph is None) == (not private_api)
    for seed in (0, 7):
        got = glfs.evaluate._leiden._leiden_runs(sc, adata, seed, resolutions, graph=graph)
        assert len(got) == len(resolutions)
        for resolution, membership in zip(resolutions, got):
            ref = sc.tl.leiden(
                adata,
                resolution=resolution,
                flavor="igraph",
                n_iterations=2,
                directed=False,
                random_state=seed,
                key_added="ref",
                copy=True,
            ).obs["ref"]
            # the same partition: a one-to-one map between labels (scanpy's names are strings)
            pairs = set(zip(membership.tolist(), ref.astype(str)))
            assert len(pairs) == len(set(membership.tolist())) == ref.nunique()
            n_distinct.add(ref.nunique())
    assert len(n_distinct) > 1  # the resolutions gave different partitions: a real comparison


def test_shared_graph_keeps_the_records(planted, monkeypatch):
    """evaluate_ranking_leiden with the graph built once per k gives the records, floats and all, of
    sc.tl.leiden called at every resolution (a graph per call)."""
    X, y = planted
    kw = {"feature_grid": (5, 30), "n_runs": 2, "random_state": 3}
    ranking = np.arange(X.shape[1])
    got = evaluate_ranking_leiden(X, y, ranking, **kw)
    monkeypatch.setattr(glfs.evaluate._leiden, "_leiden_graph", lambda adata: None)
    want = evaluate_ranking_leiden(X, y, ranking, **kw)
    assert got == want
    assert len({r["n_clusters"] for r in got}) > 1 or len({r["resolution"] for r in got}) > 1


def test_missing_scanpy_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "scanpy", None)
    X, y = np.random.default_rng(0).normal(size=(20, 5)), np.repeat([0, 1], 10)
    with pytest.raises(ImportError, match=r"needs scanpy, leidenalg and igraph: pip install glfs\[singlecell\]"):
        evaluate_ranking_leiden(X, y, np.arange(5), feature_grid=(5,), n_runs=1)


# ---- random_gene_orders -------------------------------------------------------------


def test_random_gene_orders_is_the_workflow_scheme():
    n_genes, n_draws, seed = 300, 4, 11
    got = random_gene_orders(n_genes, n_draws, seed)
    # the scheme of the spectral floor (scripts/evaluate_clustering.py) written out: seeds from a SeedSequence, one
    # numpy Generator permutation per seed
    seeds = np.random.SeedSequence(seed).generate_state(n_draws).astype(np.int64)
    expected = [(int(s), np.random.default_rng(int(s)).permutation(n_genes)) for s in seeds]
    assert len(got) == n_draws
    for (s, order), (s_exp, order_exp) in zip(got, expected):
        assert isinstance(s, int) and s == s_exp
        np.testing.assert_array_equal(order, order_exp)
        np.testing.assert_array_equal(np.sort(order), np.arange(n_genes))
    assert not np.array_equal(got[0][1], got[1][1])


# ---- bad inputs ---------------------------------------------------------------------

_X = np.random.default_rng(1).normal(size=(30, 8))
_Y = np.repeat([0, 1, 2], 10)
_R = np.arange(8)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"ranking": np.r_[0, 0, np.arange(2, 8)]}, "ranking must be a permutation of the 8 feature indices"),
        ({"ranking": np.arange(7)}, "ranking must be a permutation of the 8 feature indices"),
        ({"ranking": np.arange(8) + 0.5}, "ranking must be a permutation"),
        ({"labels": _Y[:-1]}, "labels must have length 30"),
        ({"n_runs": 0}, "n_runs must be a positive integer; got 0"),
        ({"feature_grid": (5, "half")}, "feature_grid entries must be positive integers or 'all'; got 'half'"),
        ({"feature_grid": (0,)}, "feature_grid entries must be positive integers or 'all'; got 0"),
        ({"resolutions": (1.0, 0.0)}, r"resolutions\[1\] must be a positive number; got 0.0"),
        ({"resolutions": (-0.5,)}, r"resolutions\[0\] must be a positive number; got -0.5"),
        ({"resolutions": ()}, "resolutions must be a non-empty sequence"),
        ({"n_pcs": 0}, "n_pcs must be a positive integer; got 0"),
        ({"n_neighbors": 1}, "n_neighbors must be an integer >= 2; got 1"),
        ({"max_samples": 1}, "max_samples must be an integer >= 2; got 1"),
    ],
)
def test_bad_inputs(kwargs, match):
    args = {"X": _X, "labels": _Y, "ranking": _R, **kwargs}
    X, labels, ranking = args.pop("X"), args.pop("labels"), args.pop("ranking")
    with pytest.raises(ValueError, match=match):
        evaluate_ranking_leiden(X, labels, ranking, **args)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 3, 0), "n_genes must be a positive integer; got 0"),
        ((10, 0, 0), "n_draws must be a positive integer; got 0"),
    ],
)
def test_random_gene_orders_bad_inputs(args, match):
    with pytest.raises(ValueError, match=match):
        random_gene_orders(*args)


def test_leiden_random_floor_is_random_orders_scored_by_the_protocol(planted):
    """Leiden floor, written out: draw i scored by evaluate_ranking_leiden with master seed s_i and the
    configured runs, on the methods' max_samples subsample (seeded by the master seed)."""
    from glfs.evaluate import evaluate_random_floor

    X, y = planted
    kw = {"n_runs": 2, "resolutions": [0.5, 1.0], "n_pcs": 10, "n_neighbors": 10, "max_samples": 400, "random_state": 5}
    got = evaluate_random_floor(X, y, n_draws=2, protocol="leiden", feature_grid=[30], **kw)
    keep = stratified_subsample(y, 400, 5)
    want = []
    for i, (s, order) in enumerate(random_gene_orders(X.shape[1], 2, 5)):
        recs = evaluate_ranking_leiden(
            X[keep],
            y[keep],
            order,
            feature_grid=[30],
            n_runs=2,
            resolutions=[0.5, 1.0],
            n_pcs=10,
            n_neighbors=10,
            random_state=s,
        )
        want += [{**r, "draw": i} for r in recs]
    assert got == want and len(got) == 2 * 2


def test_a_label_count_never_reached_is_marked_and_warned(planted, caplog):
    """Issue 30 item 9: a grid whose resolutions never come near the label count (here one high resolution:
    more clusters than the 4 labels allow within 1) marks its *_nlabels figures and says the count reached."""
    X, y = planted
    with caplog.at_level(logging.INFO, logger="glfs.evaluate._leiden"):
        far = evaluate_ranking_leiden(
            X, y, np.arange(X.shape[1]), feature_grid=(N_MARKERS,), n_runs=1, resolutions=(50.0,), random_state=3
        )
    assert far[0]["n_clusters_nlabels"] >= 6 and far[0]["nlabels_reached"] is False
    text = caplog.text
    assert f"({far[0]['n_clusters_nlabels']:.1f} clusters on average" in text
    assert "ari_nlabels there is not at the label count" in text


def test_the_label_count_reached_is_marked(planted_records):
    for r in planted_records:
        assert r["nlabels_reached"] == (abs(r["n_clusters_nlabels"] - N_GROUPS) <= 1)


def test_pynndescent_kernels_get_numba_disk_cache():
    """pynndescent imported through the Leiden protocol's import: the kernels its modules compile at import
    get numba's disk cache (numba's FunctionCache, not its NullCache), numba.njit is numba's own again
    afterwards, and a function decorated outside pynndescent keeps no cache (fails without the import helper:
    pynndescent declares no cache on them)."""
    import os
    import subprocess

    pytest.importorskip("pynndescent")
    code = (
        "import numba, numba.core.decorators as dec\n"
        "from glfs.evaluate._leiden import _import_pynndescent_cached\n"
        "_import_pynndescent_cached()\n"
        "import pynndescent.distances as d, pynndescent.sparse as s\n"
        "f = numba.njit(lambda x: x + 1)\n"
        "print(type(d.euclidean._cache).__name__, type(s.sparse_euclidean._cache).__name__,"
        " type(d.squared_euclidean._cache).__name__, numba.njit is dec.njit, type(f._cache).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True
    ).stdout
    assert out.split() == ["FunctionCache", "FunctionCache", "FunctionCache", "True", "NullCache"]


# ---- the rare-type measure (best-matching cluster's F1 per label, mean over the smaller half) ----


def test_rare_type_split_in_two_clusters_gives_two_thirds():
    # 100 cells of a big type, 10 of a rare one split 5 + 5 into two clusters of their own:
    # F1 of either half = 2 * 5 / (10 + 5) = 2/3; the big type is one cluster (F1 1)
    labels = np.array(["big"] * 100 + ["rare"] * 10)
    clusters = np.array([0] * 100 + [1] * 5 + [2] * 5)
    assert best_match_f1(labels, clusters) == {"big": pytest.approx(1.0), "rare": pytest.approx(2 / 3)}
    assert rare_types(labels) == ["rare"]
    assert rare_type_f1(labels, clusters) == pytest.approx(2 / 3)


def test_rare_type_merged_into_a_big_cluster():
    # a rare type of 10 merged with 30 cells of another type: best cluster F1 = 2 * 10 / (10 + 40) = 0.4
    labels = np.array(["a"] * 30 + ["b"] * 60 + ["r"] * 10)
    clusters = np.array([0] * 30 + [1] * 60 + [0] * 10)
    f1 = best_match_f1(labels, clusters)
    assert f1["r"] == pytest.approx(0.4)
    assert f1["a"] == pytest.approx(2 * 30 / (30 + 40))
    assert f1["b"] == pytest.approx(1.0)
    # three types: the smaller half is the one smallest type; ARI barely sees it, the rare F1 does
    assert rare_types(labels) == ["r"]
    assert rare_type_f1(labels, clusters) == pytest.approx(0.4)


def test_rare_types_are_the_smaller_half():
    labels = np.repeat(["w", "x", "y", "z"], [40, 5, 20, 5])  # sizes 40, 5, 20, 5
    assert rare_types(labels) == ["x", "z"]  # the two below the median; tie in size kept in label order
    clusters = np.repeat([0, 1, 2, 3], [40, 5, 20, 5])
    clusters[40:42] = 3  # two x cells in z's cluster: x F1 = 2*3/(5+3) = .75, z F1 = 2*5/(5+7) = 5/6
    assert rare_type_f1(labels, clusters) == pytest.approx((0.75 + 5 / 6) / 2)


def test_best_match_f1_is_the_brute_force(planted):
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 5, 300).astype(str)
    clusters = rng.integers(0, 7, 300)
    got = best_match_f1(labels, clusters)
    for t in np.unique(labels):
        L = labels == t
        want = max(2 * np.sum(L & (clusters == c)) / (L.sum() + np.sum(clusters == c)) for c in np.unique(clusters))
        assert got[t] == pytest.approx(want)
    with pytest.raises(ValueError, match="same length"):
        best_match_f1(labels, clusters[:-1])


def test_rare_f1_is_the_records_clustering(planted, monkeypatch):
    # the records' rare_f1 is rare_type_f1 of the Leiden membership at the reported resolution
    X, y = planted
    seen = []
    real = glfs.evaluate._leiden._leiden_runs

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out)
        return out

    monkeypatch.setattr(glfs.evaluate._leiden, "_leiden_runs", spy)
    (r,) = evaluate_ranking_leiden(X, y, np.arange(X.shape[1]), feature_grid=(5,), n_runs=1, random_state=3)
    preds = seen[0]
    ints = np.unique(y, return_inverse=True)[1]
    best = LEIDEN_RESOLUTIONS.index(r["resolution"])
    honest = LEIDEN_RESOLUTIONS.index(r["resolution_nlabels"])
    assert r["rare_f1"] == pytest.approx(rare_type_f1(ints, preds[best]))
    assert r["rare_f1_nlabels"] == pytest.approx(rare_type_f1(ints, preds[honest]))
