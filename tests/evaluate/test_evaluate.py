"""Tests of glfs.evaluate with independently derived expected values."""

import math
import warnings

import numpy as np
import pytest
import sklearn.metrics

from glfs.evaluate import (
    clustering_accuracy,
    evaluate_ranking,
    kmeans_best_of,
    knn_affinity,
    loo_1nn_accuracy,
    nmi,
    nmi_max,
    resolve_feature_grid,
    run_seeds,
    spectral_cluster,
    stratified_subsample,
)

# ---- accuracy ---------------------------------------------------------------


def test_acc_of_a_relabelling_is_one():
    y = np.array([0, 0, 1, 1, 2, 2, 2])
    perm = {0: 2, 1: 0, 2: 1}
    pred = np.array([perm[v] for v in y])
    assert clustering_accuracy(y, pred) == 1.0


def test_acc_hand_computed():
    # clusters: {0,1} -> class 0 (2 matches), {2,3,4,5} contains 1 of class 0 and 3 of class 1.
    # best one-to-one map: cluster 1 -> class 0 (2), cluster 0 -> class 1 (3) => 5/6.
    y = np.array([0, 0, 0, 1, 1, 1])
    pred = np.array([1, 1, 0, 0, 0, 0])
    assert clustering_accuracy(y, pred) == pytest.approx(5 / 6)


def test_acc_more_clusters_than_classes_counts_surplus_as_errors():
    y = np.array([0, 0, 1, 1])
    pred = np.array([0, 1, 2, 3])  # each class can claim only one of its two clusters
    assert clustering_accuracy(y, pred) == pytest.approx(0.5)


def test_acc_string_labels():
    assert clustering_accuracy(np.array(["a", "a", "b"]), np.array([5, 5, 7])) == 1.0


# ---- NMI --------------------------------------------------------------------


def test_nmi_hand_computed_2x2():
    # contingency (rows truth, cols clusters): [[1, 1], [0, 2]], n = 4
    y = np.array([0, 0, 1, 1])
    pred = np.array([0, 1, 1, 1])
    h_true = math.log(2)
    h_pred = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    h_pred_given_true = 0.5 * math.log(2) + 0.5 * 0.0  # class 0 split 1/1, class 1 pure
    mi = h_pred - h_pred_given_true
    assert nmi(y, pred) == pytest.approx(mi / ((h_true + h_pred) / 2))
    assert nmi_max(y, pred) == pytest.approx(mi / max(h_true, h_pred))


def test_nmi_identical_and_independent():
    y = np.array([0, 0, 1, 1])
    assert nmi(y, 1 - y) == pytest.approx(1.0)
    assert nmi_max(y, 1 - y) == pytest.approx(1.0)
    # each class split evenly over both clusters: independent, MI = 0
    assert nmi(y, np.array([0, 1, 0, 1])) == pytest.approx(0.0, abs=1e-12)
    assert nmi_max(y, np.array([0, 1, 0, 1])) == pytest.approx(0.0, abs=1e-12)


def test_nmi_max_never_exceeds_arithmetic():
    rng = np.random.default_rng(3)
    for _ in range(20):
        y = rng.integers(0, 3, 30)
        p = rng.integers(0, 4, 30)
        assert nmi_max(y, p) <= nmi(y, p) + 1e-12


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        (np.array([0, 1]), np.array([0, 1, 1]), "same length"),
        (np.array([]), np.array([]), "non-empty"),
        (np.zeros((2, 2)), np.zeros((2, 2)), "1-d"),
    ],
)
def test_metric_bad_inputs(a, b, match):
    with pytest.raises(ValueError, match=match):
        nmi(a, b)
    with pytest.raises(ValueError, match=match):
        clustering_accuracy(a, b)


# ---- leave-one-out 1-NN -------------------------------------------------------


def test_loo_1nn_toy_line():
    # nearest others: 0->1 ok, 1->0 ok, 3->1 (b vs a) wrong, 10->11 ok, 11->10 ok, 20->11 (a vs b) wrong
    X = np.array([[0.0], [1.0], [3.0], [10.0], [11.0], [20.0]])
    y = np.array(["a", "a", "b", "b", "b", "a"])
    assert loo_1nn_accuracy(X, y) == pytest.approx(4 / 6)


def test_loo_1nn_ties_go_to_lowest_index():
    # sample 1 is equidistant from 0 (label x) and 2 (label y): lowest index -> correct
    X = np.array([[0.0], [1.0], [2.0]])
    y = np.array(["x", "x", "y"])
    assert loo_1nn_accuracy(X, y) == pytest.approx(2 / 3)


def test_loo_1nn_excludes_self_even_with_duplicates():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0]])
    y = np.array([0, 1, 0])
    # 0 -> 1 wrong, 1 -> 0 wrong, 2 -> 0 (tie with 1, lowest index) right
    assert loo_1nn_accuracy(X, y) == pytest.approx(1 / 3)


def test_loo_1nn_label_length_checked():
    with pytest.raises(ValueError, match="length 3"):
        loo_1nn_accuracy(np.zeros((3, 2)), [0, 1])


# ---- clustering -------------------------------------------------------------


def _blobs(n_per=20, centres=((0, 0), (10, 0), (0, 10)), sd=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(c, sd, size=(n_per, 2)) for c in centres])
    y = np.repeat(np.arange(len(centres)), n_per)
    return X, y


def test_spectral_recovers_separated_blobs():
    X, y = _blobs()
    lab = spectral_cluster(X, 3, n_neighbors=5, random_state=1)
    assert clustering_accuracy(y, lab) == 1.0


def test_kmeans_recovers_separated_blobs():
    X, y = _blobs()
    assert clustering_accuracy(y, kmeans_best_of(X, 3, random_state=0)) == 1.0


def test_spectral_n_clusters_validated():
    X, _ = _blobs(n_per=2)
    with pytest.raises(ValueError, match="n_clusters"):
        spectral_cluster(X, 1)


def test_run_seeds_deterministic_and_distinct():
    a = run_seeds(7, 10)
    assert np.array_equal(a, run_seeds(7, 10))
    assert np.unique(a).size == 10
    assert not np.array_equal(a, run_seeds(8, 10))


def test_resolve_feature_grid():
    assert resolve_feature_grid([5, "all", 500, 50], 100) == [5, 50, 100]
    with pytest.raises(ValueError, match="feature_grid"):
        resolve_feature_grid([0], 10)
    with pytest.raises(ValueError, match="feature_grid"):
        resolve_feature_grid(["most"], 10)


def _planted(seed=0, n_per=15, n_noise=30):
    """Three groups separated by the first two genes; the rest pure noise."""
    X2, y = _blobs(n_per=n_per, seed=seed, sd=0.5)
    rng = np.random.default_rng(seed + 100)
    X = np.hstack([X2, rng.normal(0, 3.0, size=(X2.shape[0], n_noise))])
    return X, y


def test_evaluate_ranking_prefers_the_informative_genes():
    X, y = _planted()
    d = X.shape[1]
    good = np.arange(d)  # informative genes 0, 1 first
    bad = np.arange(d)[::-1]  # informative genes last
    kw = {"feature_grid": [2], "n_runs": 3, "affinity_neighbors": 5, "random_state": 0}
    rg = evaluate_ranking(X, y, good, **kw)
    rb = evaluate_ranking(X, y, bad, **kw)
    assert len(rg) == 3
    assert {r["n_features"] for r in rg} == {2}
    assert min(r["nmi"] for r in rg) == pytest.approx(1.0)
    assert min(r["kmeans_acc"] for r in rg) == 1.0
    assert rg[0]["loo_1nn_acc"] == 1.0
    assert max(r["nmi"] for r in rb) < 0.5
    assert rb[0]["loo_1nn_acc"] < 0.8


def test_evaluate_ranking_is_deterministic_and_all_means_every_gene():
    X, y = _planted(n_noise=5)
    kw = {"feature_grid": [3, "all"], "n_runs": 2, "affinity_neighbors": 5, "random_state": 4}
    a = evaluate_ranking(X, y, np.arange(X.shape[1]), **kw)
    b = evaluate_ranking(X, y, np.arange(X.shape[1]), **kw)
    assert a == b
    assert sorted({r["n_features"] for r in a}) == [3, X.shape[1]]


def test_evaluate_ranking_depends_on_the_gene_set_and_the_cache_evaluates_each_set_once(monkeypatch):
    """Two rankings with the same top-3 set in another order and the same genes in all: equal records there
    (the top-k genes are taken in index order); with one cache the shared sets are clustered once."""
    from glfs.evaluate import _clustering as clustering

    X, y = _planted(n_noise=5)
    d = X.shape[1]
    kw = {"feature_grid": [2, 3, "all"], "n_runs": 2, "affinity_neighbors": 5, "random_state": 4}
    first = np.arange(d)
    second = np.r_[[2, 0, 1], np.arange(3, d)[::-1]]  # top-2 {0, 2} differs, top-3 and all equal as sets
    a, b = evaluate_ranking(X, y, first, **kw), evaluate_ranking(X, y, second, **kw)
    same = [r for r in a if r["n_features"] != 2]
    assert same == [r for r in b if r["n_features"] != 2]
    calls = []
    real = clustering._records_at_k
    monkeypatch.setattr(clustering, "_records_at_k", lambda Xk, *args: calls.append(Xk.shape[1]) or real(Xk, *args))
    cache = {}
    assert evaluate_ranking(X, y, first, cache=cache, **kw) == a
    assert evaluate_ranking(X, y, second, cache=cache, **kw) == b
    assert sorted(calls) == [2, 2, 3, d]  # top-2 twice (different sets), top-3 and all genes once
    # other settings are other entries of the same cache
    assert evaluate_ranking(X, y, first, cache=cache, **{**kw, "random_state": 5}) != a
    assert len(calls) == 7


def test_evaluate_ranking_kmeans_is_one_best_of_restarts_per_gene_count():
    """He et al. 2011, Sec. 7.2: one k-means (best of 10 by inertia) per test, not one per spectral run."""
    X, y = _planted(n_noise=6)
    kw = {"feature_grid": [2, 5], "n_runs": 3, "affinity_neighbors": 5, "random_state": 7}
    recs = evaluate_ranking(X, y, np.arange(X.shape[1]), **kw)
    first_seed = run_seeds(7, 3)[0]
    for k in (2, 5):
        rows = [r for r in recs if r["n_features"] == k]
        assert len({(r["kmeans_acc"], r["kmeans_nmi"]) for r in rows}) == 1
        km = kmeans_best_of(X[:, :k], 3, n_init=10, random_state=first_seed)
        assert rows[0]["kmeans_acc"] == pytest.approx(clustering_accuracy(y, km))
        assert rows[0]["kmeans_nmi"] == pytest.approx(sklearn.metrics.normalized_mutual_info_score(y, km))


def test_evaluate_ranking_rejects_bad_ranking():
    X, y = _planted(n_noise=2)
    with pytest.raises(ValueError, match="permutation"):
        evaluate_ranking(X, y, np.zeros(X.shape[1], dtype=int))


# ---- classification protocol ------------------------------------------------------

from glfs.evaluate import (  # noqa: E402
    ElasticNetClassifier,
    baseline_classifiers,
    cv_splitter,
    evaluate_classifier,
    n_genes_used,
)


def _two_class(seed=0, n=40, d=30, shift=4.0):
    rng = np.random.default_rng(seed)
    y = np.array(["ALL", "AML"] * (n // 2))
    X = rng.normal(size=(n, d))
    X[:, :3] += shift * (y == "AML")[:, None]  # genes 0-2 informative
    return X, y


def test_elastic_net_classifier_thresholds_a_zero_one_fit():
    X, y = _two_class()
    clf = ElasticNetClassifier(alpha=0.05, l1_ratio=0.9).fit(X, y)
    assert list(clf.classes_) == ["ALL", "AML"]
    assert np.mean(clf.predict(X) == y) == 1.0
    # the l1 part keeps the informative genes and drops most of the noise
    assert set(np.flatnonzero(clf.coef_)) >= {0, 1, 2}
    assert n_genes_used(clf, X.shape[1]) < 15


def test_n_genes_used_nearest_centroid_counts_unshrunk_genes():
    from sklearn.neighbors import NearestCentroid

    X, y = _two_class(shift=6.0)
    nc = NearestCentroid(shrink_threshold=2.0).fit(X, y)
    used = n_genes_used(nc, X.shape[1])
    assert 3 <= used < X.shape[1]
    assert n_genes_used(NearestCentroid().fit(X, y), X.shape[1]) == X.shape[1]


def test_cv_splitter_caps_folds_at_smallest_class():
    y = np.array([0] * 10 + [1] * 4)
    assert cv_splitter(y, 10).get_n_splits() == 4
    assert cv_splitter(np.array([0, 1] * 20), 10).get_n_splits() == 10


def test_evaluate_classifier_separable_data_makes_no_errors():
    X, y = _two_class(n=40, shift=8.0)
    tr, te = np.arange(24), np.arange(24, 40)
    cv = cv_splitter(y[tr], 5, random_state=0)
    for name, est in baseline_classifiers(cv).items():
        r = evaluate_classifier(est, X[tr], y[tr], X[te], y[te], cv=cv)
        assert (r["cv_n"], r["test_n"]) == (24, 16), name
        assert r["test_errors"] == 0, name
        assert r["cv_errors"] <= 1, name
        assert 1 <= r["n_genes"] <= X.shape[1]


def test_search_cv_errors_equal_a_refit_cross_validation():
    """A grid search's own fold fits give the CV errors at its chosen hyper-parameters: the same count as
    cross_val_predict of the frozen estimator on the same folds (what evaluate_classifier counted before)."""
    from sklearn.model_selection import cross_val_predict

    from glfs.evaluate._classify import _fixed_estimator, _search_cv_errors

    X, y = _two_class(n=40, d=12, shift=0.8, seed=3)  # overlapping classes: some CV errors
    cv = cv_splitter(y, 5, random_state=0)
    counts = []
    for name, est in baseline_classifiers(cv).items():
        fitted = est.fit(X, y)
        refit = int(np.sum(cross_val_predict(_fixed_estimator(fitted), X, y, cv=cv) != y))
        assert _search_cv_errors(fitted, cv, X, y) == refit, name
        counts.append(refit)
    assert max(counts) > 0  # the check compares non-trivial counts
    # another splitter than the search's: no shortcut
    assert _search_cv_errors(fitted, cv_splitter(y, 5, random_state=1), X, y) is None


def test_evaluate_classifier_counts_errors_of_a_constant_predictor():
    from sklearn.dummy import DummyClassifier

    X, y = _two_class(n=20)
    y_test = np.array(["ALL"] * 3 + ["AML"] * 7)
    r = evaluate_classifier(
        DummyClassifier(strategy="constant", constant="ALL"), X[:10], y[:10], X[10:], y_test, cv=cv_splitter(y[:10], 5)
    )
    assert r["test_errors"] == 7
    assert r["cv_errors"] == 5  # half of the 10 training samples are AML


def test_elastic_net_classifier_three_classes_one_vs_rest():
    rng = np.random.default_rng(1)
    y = np.repeat(["a", "b", "c"], 10)
    X = rng.normal(size=(30, 8))
    for k, c in enumerate("abc"):
        X[y == c, k] += 5.0
    clf = ElasticNetClassifier(alpha=0.05, l1_ratio=0.5).fit(X, y)
    assert clf.coef_.shape == (3, 8)
    assert np.mean(clf.predict(X) == y) == 1.0


def test_ties_go_to_the_strongest_regularisation():
    # 3 genes shifted by 20 sd: every shrink threshold classifies perfectly, so the
    # tie must resolve to the largest threshold (fewest genes), not to no shrinkage.
    X, y = _two_class(n=30, shift=20.0)
    cv = cv_splitter(y, 5, random_state=0)
    nsc = baseline_classifiers(cv)["nearest_shrunken_centroids"].fit(X, y)
    assert nsc.best_params_["shrink_threshold"] == 6.0
    assert n_genes_used(nsc, X.shape[1]) == 3


def test_evaluate_classifier_uses_an_estimators_own_cv_errors():
    from sklearn.dummy import DummyClassifier

    class TunesLam(DummyClassifier):
        def fit(self, X, y):
            super().fit(X, y)
            self.lams_ = np.array([1.0, 0.5, 0.1])
            self.lam_ = 0.5
            self.cv_errors_ = np.array([9, 4, 7])
            return self

    X, y = _two_class(n=20)
    r = evaluate_classifier(
        TunesLam(strategy="most_frequent"), X[:10], y[:10], X[10:], y[10:], cv=cv_splitter(y[:10], 5)
    )
    assert r["cv_errors"] == 4
    assert r["params"] == {"lam": 0.5}


# ---------------------------------------------------------------- scale: affinity once, approximate 1-NN, subsample
def _blobs_big(n=300, d=6, k=3, seed=31):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) + 6.0 * np.eye(k, d)[y]
    return X, y


def test_knn_affinity_equals_scikit_learns_nearest_neighbors_affinity():
    from sklearn.cluster import SpectralClustering

    from glfs.evaluate import knn_affinity

    X, _ = _blobs_big()
    ref = SpectralClustering(n_clusters=3, affinity="nearest_neighbors", n_neighbors=10).fit(X).affinity_matrix_
    A = knn_affinity(X, 10)
    assert abs(A - ref).max() == 0


@pytest.mark.parametrize("seed", [0, 7])
def test_precomputed_affinity_gives_the_labels_of_the_old_call(seed):
    """spectral_cluster (affinity built once) equals SpectralClustering(affinity="nearest_neighbors") per seed."""
    from sklearn.cluster import SpectralClustering

    from glfs.evaluate import knn_affinity

    rng = np.random.default_rng(32)
    X = rng.normal(size=(120, 5)) + 1.5 * np.eye(4, 5)[rng.integers(0, 4, 120)]  # overlapping: labels depend on details
    old = SpectralClustering(
        n_clusters=4, affinity="nearest_neighbors", n_neighbors=10, assign_labels="kmeans", random_state=seed, n_init=10
    ).fit_predict(X)
    new = spectral_cluster(X, 4, random_state=seed, affinity=knn_affinity(X, 10))
    np.testing.assert_array_equal(new, old)
    np.testing.assert_array_equal(spectral_cluster(X, 4, random_state=seed), old)


def test_loo_1nn_uses_the_principal_component_search_for_many_samples(monkeypatch):
    import glfs.graph._neighbors as nb

    X, y = _blobs_big(n=400, d=60)
    exact = loo_1nn_accuracy(X, y)
    calls = []
    real = (
        nb._knn_brute32
    )  # at scale: exact search on APPROX_N_PCS components (glfs.graph._neighbors.choose_neighbor_method)
    monkeypatch.setattr(nb, "_knn_brute32", lambda *a, **k: calls.append(a[0].shape) or real(*a, **k))
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 100)
    approx = loo_1nn_accuracy(X, y)
    assert calls == [(400, nb.APPROX_N_PCS)]
    assert exact == 1.0  # separated blobs: every nearest neighbour is in the same class
    assert approx >= 0.99  # the approximate neighbour may miss a few


def test_stratified_subsample():
    from glfs.evaluate import stratified_subsample

    y = np.repeat(["a", "b", "c"], [700, 250, 50])
    idx = stratified_subsample(y, 100, random_state=3)
    assert idx.size == 100 and np.all(np.diff(idx) > 0)
    _, counts = np.unique(y[idx], return_counts=True)
    assert counts.tolist() == [70, 25, 5]
    np.testing.assert_array_equal(idx, stratified_subsample(y, 100, random_state=3))
    assert not np.array_equal(idx, stratified_subsample(y, 100, random_state=4))
    np.testing.assert_array_equal(stratified_subsample(y, 5000), np.arange(1000))
    with pytest.raises(ValueError, match=r"max_samples must be an integer >= 2; got 1"):
        stratified_subsample(y, 1)


def test_evaluate_ranking_max_samples_evaluates_the_subsample():
    from glfs.evaluate import stratified_subsample

    X, y = _blobs_big(n=200, d=8)
    ranking = np.arange(8)
    kw = dict(feature_grid=[3, "all"], n_runs=2, random_state=5)
    sub = evaluate_ranking(X, y, ranking, max_samples=90, **kw)
    keep = stratified_subsample(y, 90, 5)
    direct = evaluate_ranking(X[keep], y[keep], ranking, **kw)
    assert sub == direct
    assert evaluate_ranking(X, y, ranking, max_samples=500, **kw) == evaluate_ranking(X, y, ranking, **kw)


# ---- shared spectral embedding (spectral_cluster_runs) --------------------------------


def _mixture(n=150, d=20, shift=0.8, k=4, seed=5):
    """k overlapping Gaussian groups: spectral clustering finds several local k-means optima."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return rng.normal(size=(n, d)) + shift * np.eye(k, d)[y], y


def test_nmi_pair_equals_scikit_learns_nmi():
    """The one-contingency NMI pair equals scikit-learn's normalized_mutual_info_score (independent code)."""
    from sklearn.metrics import normalized_mutual_info_score
    from sklearn.metrics.cluster import contingency_matrix

    from glfs.evaluate._clustering import _nmi_pair

    rng = np.random.default_rng(11)
    cases = [(rng.integers(0, 4, 60), rng.integers(0, 5, 60)) for _ in range(30)]
    y = rng.integers(0, 3, 40)
    cases += [(y, y), (y, 2 - y), (np.zeros(7, int), np.zeros(7, int)), (y, np.zeros(40, int)), (np.zeros(40, int), y)]
    for a, b in cases:
        got = _nmi_pair(contingency_matrix(a, b))
        want = (
            normalized_mutual_info_score(a, b, average_method="arithmetic"),
            normalized_mutual_info_score(a, b, average_method="max"),
        )
        assert got == pytest.approx(want, abs=1e-12)


def test_spectral_embedding_does_not_depend_on_the_seed():
    """The premise of the shared embedding: the seed only starts the eigensolver (sign fixed, machine precision)."""
    from sklearn.manifold import spectral_embedding

    from glfs.evaluate import knn_affinity

    X, _ = _mixture()
    A = knn_affinity(X, 10)
    E = [spectral_embedding(A, n_components=4, random_state=int(s), drop_first=False) for s in run_seeds(1, 5)]
    for e in E[1:]:
        np.testing.assert_allclose(e, E[0], atol=1e-10)


def test_spectral_cluster_runs_recovers_planted_clusters():
    from glfs.evaluate import knn_affinity, spectral_cluster_runs

    X, y = _blobs(n_per=25, centres=((0, 0), (10, 0), (0, 10), (10, 10)), sd=0.5, seed=3)
    labels = spectral_cluster_runs(knn_affinity(X, 10), 4, run_seeds(0, 5))
    assert labels.shape == (5, X.shape[0])
    assert all(nmi(y, lab) == pytest.approx(1.0) for lab in labels)


def test_spectral_cluster_runs_matches_the_per_run_form_in_distribution():
    """Shared embedding vs scikit-learn SpectralClustering per seed: runs vary, mean NMI agrees.

    On overlapping groups k-means on the embedding reaches several local optima, so individual
    runs of the two forms differ (their k-means draws differ); the protocol's quantity, the mean
    NMI over runs, must agree within four standard errors of the difference of the two means.
    """
    from glfs.evaluate._clustering import _spectral_labels, knn_affinity, spectral_cluster_runs

    X, y = _mixture()
    A = knn_affinity(X, 10)
    seeds = run_seeds(1, 40)
    fast = spectral_cluster_runs(A, 4, seeds)
    slow = np.vstack([_spectral_labels(A, 4, s) for s in seeds])
    a = np.array([nmi(y, lab) for lab in slow])
    b = np.array([nmi(y, lab) for lab in fast])
    assert len({tuple(lab) for lab in fast}) > 5  # the run seeds still vary the partition
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) <= 4 * se + 1e-12


def test_spectral_cluster_runs_keeps_per_run_embeddings_when_components_exceed_clusters():
    """More components than clusters: the eigensolver's start picks the basis, so each run keeps its own."""
    import scipy.sparse as sp

    from glfs.evaluate._clustering import _spectral_labels, spectral_cluster_runs

    blocks = [np.ones((8, 8)) - np.eye(8)] * 6  # six disconnected cliques, 4 clusters wanted
    A = sp.csr_matrix(sp.block_diag(blocks))
    seeds = run_seeds(2, 6)
    got = spectral_cluster_runs(A, 4, seeds)
    np.testing.assert_array_equal(got, np.vstack([_spectral_labels(A, 4, s) for s in seeds]))


@pytest.mark.parametrize(
    ("affinity", "n_clusters", "seeds", "match"),
    [
        (np.eye(5), 2, [0], "square scipy.sparse"),
        (None, 1, [0], r"n_clusters must be an integer in \[2, 9\]; got 1"),
        (None, 10, [0], r"n_clusters must be an integer in \[2, 9\]; got 10"),
        (None, 2, [], "at least one seed"),
    ],
)
def test_spectral_cluster_runs_bad_inputs(affinity, n_clusters, seeds, match):
    from glfs.evaluate import knn_affinity, spectral_cluster_runs

    if affinity is None:
        affinity = knn_affinity(np.random.default_rng(0).normal(size=(10, 3)), 4)
    with pytest.raises(ValueError, match=match):
        spectral_cluster_runs(affinity, n_clusters, seeds)


def test_nmi_pair_of_identical_partitions_is_at_most_one():
    """Identical partitions of sizes 25, 20, 11, 13, 2: MI / H rounds to 1 + 2.2e-16 unclipped
    (found by a search over diagonal tables); the reported NMI must stay in [0, 1]."""
    from glfs.evaluate._clustering import _nmi_pair

    a, b = _nmi_pair(np.diag([25, 20, 11, 13, 2]))
    assert a == 1.0 and b == 1.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda X: run_seeds(0, 0), r"n_runs must be a positive integer; got 0"),
        (lambda X: run_seeds(0, 2.5), r"n_runs must be a positive integer; got 2\.5"),
        (lambda X: run_seeds(0, True), r"n_runs must be a positive integer; got True"),
        (lambda X: knn_affinity(X, 2.5), r"n_neighbors must be a positive integer; got 2\.5"),  # was accepted as 2
        (lambda X: knn_affinity(X, 0), r"n_neighbors must be a positive integer; got 0"),
        (lambda X: spectral_cluster(X, 1), r"n_clusters must be an integer in \[2, 44\]; got 1"),
        (lambda X: spectral_cluster(X, 3.0), r"n_clusters must be an integer in \[2, 44\]; got 3\.0"),
        (lambda X: stratified_subsample(np.zeros(45), 1), r"max_samples must be an integer >= 2; got 1"),
        (lambda X: stratified_subsample(np.zeros(45), 10.0), r"max_samples must be an integer >= 2; got 10\.0"),
        (lambda X: spectral_cluster(X, 3, eigen_solver="amg"), r"eigen_solver must be one of .*; got 'amg'"),
        (
            lambda X: evaluate_ranking(X, np.arange(45) % 3, np.arange(X.shape[1]), eigen_solver="ARPACK"),
            r"eigen_solver must be one of .*; got 'ARPACK'",
        ),
    ],
)
def test_bad_scalars_of_the_evaluation(call, match):
    X, _ = _planted(n_noise=3)  # 45 samples
    with pytest.raises(ValueError, match=match):
        call(X)


def test_subsample_of_string_labels_equals_evaluate_rankings_own():
    """The random floor subsamples string labels itself; evaluate_ranking subsamples the label codes:
    the same seed must give the same cells, or the floor and the methods are scored on different samples."""
    labels = np.random.default_rng(1).choice(["b", "a", "CD4", "z"], size=3000)
    X = np.random.default_rng(2).normal(size=(3000, 6))
    keep = stratified_subsample(labels, 500, 7)
    direct = evaluate_ranking(X[keep], labels[keep], np.arange(6), feature_grid=[3], n_runs=1, random_state=7)
    inside = evaluate_ranking(X, labels, np.arange(6), feature_grid=[3], n_runs=1, random_state=7, max_samples=500)
    assert direct == inside


# ---- eigensolver of the spectral embedding (ARPACK below 2000 samples, LOBPCG from there) ----


def test_auto_eigen_solver_switches_at_the_documented_size():
    from glfs.evaluate import ARPACK_MAX_SAMPLES, resolve_eigen_solver

    assert ARPACK_MAX_SAMPLES == 2000  # the bound docs/methods/evaluation.md states
    assert resolve_eigen_solver("auto", 1999) == "arpack"
    assert resolve_eigen_solver("auto", 2000) == "lobpcg"
    assert resolve_eigen_solver("arpack", 50_000) == "arpack"
    assert resolve_eigen_solver("lobpcg", 10) == "lobpcg"


def test_lobpcg_embedding_equals_arpacks_above_the_switch():
    """2,400 samples in 4 planted groups: the LOBPCG embedding spans ARPACK's eigenvectors
    (largest principal angle below 1e-4 degrees) and every run gives the same partition."""
    import scipy.linalg as sla
    from sklearn.manifold import spectral_embedding

    from glfs.evaluate._clustering import knn_affinity, spectral_cluster_runs
    from glfs.evaluate._spectral import _solver_kwargs

    X, y = _mixture(n=2400, d=6, shift=3.0, seed=8)
    A = knn_affinity(X, 10)
    U_arpack = spectral_embedding(A, n_components=4, random_state=0, drop_first=False, **_solver_kwargs("arpack"))
    U_lobpcg = spectral_embedding(A, n_components=4, random_state=0, drop_first=False, **_solver_kwargs("lobpcg"))
    assert np.degrees(sla.subspace_angles(U_arpack, U_lobpcg).max()) < 1e-4
    seeds = run_seeds(3, 4)
    auto = spectral_cluster_runs(A, 4, seeds)  # 2400 >= 2000: LOBPCG
    exact = spectral_cluster_runs(A, 4, seeds, eigen_solver="arpack")
    assert all(nmi(a, b) == pytest.approx(1.0) for a, b in zip(auto, exact))
    assert nmi(y, auto[0]) > 0.8  # the planted groups are found, so the agreement is not between two failures


def test_lobpcg_that_misses_its_tolerance_is_flagged(monkeypatch, caplog):
    """An eigensolver answer is a result only when it converged: an unreachable tolerance must give
    one ConvergenceWarning and a log line, not a silent embedding."""
    import logging

    from sklearn.exceptions import ConvergenceWarning

    import glfs.evaluate._clustering as ev
    import glfs.evaluate._spectral as spectral  # EIGEN_TOL is read where the spectral embedding lives

    X, _ = _mixture(n=120, d=6, shift=3.0, seed=8)
    A = ev.knn_affinity(X, 10)
    monkeypatch.setattr(spectral, "EIGEN_TOL", 1e-30)
    with (
        caplog.at_level(logging.WARNING, logger="glfs.evaluate._spectral"),
        pytest.warns(ConvergenceWarning, match="did not reach eigen_tol=1e-30"),
    ):
        ev.spectral_cluster_runs(A, 4, run_seeds(0, 2), eigen_solver="lobpcg")
    assert any("LOBPCG did not reach" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(spectral, "EIGEN_TOL", 1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ev.spectral_cluster_runs(A, 4, run_seeds(0, 2), eigen_solver="lobpcg")  # the default tolerance is reached


# ---- the random-genes floor (evaluate_random_floor) and the configuration mappings -----------


def test_random_floor_is_random_orders_scored_by_the_methods_protocol():
    """Spectral floor, written out: draw i = (s_i, order_i) of random_gene_orders(d, n, seed), scored by
    evaluate_ranking with one run and master seed s_i on the methods' max_samples subsample (seeded by
    the master seed), each record tagged draw = i."""
    from glfs.evaluate import evaluate_random_floor, random_gene_orders

    X, y = _mixture(n=150, d=12, seed=3)
    y = np.array(["a", "b", "c", "d"])[y]
    kw = {
        "feature_grid": [2, 5],
        "n_clusters": None,
        "n_runs": 7,
        "affinity_neighbors": 8,
        "random_state": 11,
        "max_samples": 100,
        "eigen_solver": "auto",
    }
    got = evaluate_random_floor(X, y, n_draws=3, protocol="spectral", **kw)
    keep = stratified_subsample(y, 100, 11)
    want = []
    for i, (s, order) in enumerate(random_gene_orders(12, 3, 11)):
        recs = evaluate_ranking(
            X[keep], y[keep], order, feature_grid=[2, 5], n_runs=1, affinity_neighbors=8, random_state=s
        )
        want += [{**r, "draw": i} for r in recs]
    assert got == want
    assert len(got) == 3 * 2 and {r["draw"] for r in got} == {0, 1, 2}
    # the subsample is the methods' one: the same cells as evaluate_ranking(max_samples=100, random_state=11)
    one = evaluate_ranking(
        X, y, random_gene_orders(12, 1, 11)[0][1], feature_grid=[5], n_runs=1, random_state=11, max_samples=100
    )
    assert one == evaluate_ranking(
        X[keep], y[keep], random_gene_orders(12, 1, 11)[0][1], feature_grid=[5], n_runs=1, random_state=11
    )


def test_random_floor_bad_inputs():
    from glfs.evaluate import evaluate_random_floor

    X, y = _mixture(n=40, d=6)
    with pytest.raises(ValueError, match=r"protocol must be 'spectral' or 'leiden'; got 'umap'"):
        evaluate_random_floor(X, y, n_draws=2, protocol="umap")
    with pytest.raises(ValueError, match=r"n_draws"):
        evaluate_random_floor(X, y, n_draws=0)
