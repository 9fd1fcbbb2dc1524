"""GLFSClassifier: GLFS selection + LapRLS (Wang & Goldenberg 2013, Eq. 11) as a scikit-learn estimator."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

import glfs
from glfs.simulation._simulate import make_planted


def _two_class(seed=0, n=40, n_noise=36, sigma=0.3):
    rng = np.random.default_rng(seed)
    X, informative, clusters = make_planted(n, n_noise, sigma, n_informative=4, random_state=seed)
    y = np.where(clusters < 2, "ALL", "AML")  # two classes made of two clusters each
    return X, y, informative, rng


FAST = {"n_lams": 5, "max_iter": 80}  # published variants (objective="exact")


def test_planted_two_class_problem_is_classified():
    X, y, _, _ = _two_class(seed=1)
    Xte, yte, _, _ = _two_class(seed=1)  # same generator, same clusters -> same structure
    clf = glfs.GLFSClassifier(objective="exact", cv=4, glfs_params=FAST).fit(X, y)
    assert list(clf.classes_) == ["ALL", "AML"]
    assert clf.n_genes_ >= 1
    assert clf.cv_errors_.shape == clf.lams_.shape
    assert np.mean(clf.predict(X) == y) >= 0.95
    rng = np.random.default_rng(5)
    noisy = Xte + rng.normal(0, 0.05, size=Xte.shape)
    assert np.mean(clf.predict(noisy) == yte) >= 0.9


def test_label_graph_variant_and_decision_scale():
    X, y, _, _ = _two_class(seed=2)
    clf = glfs.GLFSClassifier(objective="exact", graph="labels", cv=3, glfs_params=FAST).fit(X, y)
    s = clf.decision_function(X)
    assert s.shape == (X.shape[0],)
    pred = clf.predict(X)
    np.testing.assert_array_equal(pred == "AML", s >= 0)  # decision_function = LapRLS output - 0.5


def test_cross_val_score_and_pipeline_work():
    X, y, _, _ = _two_class(seed=3)
    clf = glfs.GLFSClassifier(objective="exact", cv=3, glfs_params=FAST)
    scores = cross_val_score(clf, X, y, cv=3)
    assert scores.shape == (3,)
    assert np.all((scores >= 0) & (scores <= 1))
    pipe = Pipeline([("id", FunctionTransformer()), ("clf", clf)])
    bare = clone(clf).fit(X, y)
    assert pipe.fit(X, y).score(X, y) == bare.score(X, y)
    assert bare.score(X, y) > 0.6  # far better than chance (0.5) on the planted two-class problem


def test_sklearn_basics_clone_params_and_errors():
    clf = glfs.GLFSClassifier(objective="paper", cv=5)
    c2 = clone(clf)
    assert c2.get_params()["objective"] == "paper"
    assert c2.get_params()["cv"] == 5
    X, y, _, _ = _two_class(seed=4)
    with pytest.raises(ValueError, match="exactly 2 classes"):
        glfs.GLFSClassifier(cv=3).fit(X, np.arange(X.shape[0]) % 3)
    with pytest.raises(ValueError, match="graph must be 'knn' or 'labels'"):
        glfs.GLFSClassifier(graph="bad", cv=3).fit(X, y)
    fitted = glfs.GLFSClassifier(objective="exact", cv=3, glfs_params=FAST).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :5])


def test_intercept_is_unpenalised_shift():
    # adding a constant to every gene must not change the predictions (centring = free intercept)
    X, y, _, _ = _two_class(seed=6)
    a = glfs.GLFSClassifier(objective="exact", cv=3, glfs_params={**FAST, "center": True}).fit(X, y)
    b = glfs.GLFSClassifier(objective="exact", cv=3, glfs_params={**FAST, "center": True}).fit(X + 7.0, y)
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X + 7.0), atol=1e-8)


# ---------------------------------------------------------------- the well-posed GLFS ("design", the default)
def test_design_classifier_supervised_on_planted_problem():
    X, y, informative, _ = _two_class(seed=1, n=60, n_noise=200)
    clf = glfs.GLFSClassifier(graph="labels", cv=4, n_genes_grid=(1, 2, 4, 8)).fit(X, y)
    assert clf.selection_converged_
    assert clf.lams_.tolist() == [1.0, 2.0, 4.0, 8.0] and clf.grid_sizes_.tolist() == [1, 2, 4, 8]
    assert clf.n_genes_ == int(clf.lam_)
    Xte, yte, _, _ = _two_class(seed=1, n=60, n_noise=200)
    noisy = Xte + np.random.default_rng(3).normal(0, 0.05, size=Xte.shape)
    assert np.mean(clf.predict(noisy) == yte) >= 0.9


def test_graph_params_reach_the_knn_graph(monkeypatch):
    """graph_params are passed to similarity_graph for every graph the classifier builds (whole set and folds)."""
    import glfs.sklearn as graph_module  # where GLFSClassifier looks similarity_graph up

    X, y, _, _ = _two_class(seed=1, n=40, n_noise=20)
    seen = []
    real = graph_module.similarity_graph

    def spy(X, **kw):
        seen.append(kw)
        return real(X, **kw)

    monkeypatch.setattr(graph_module, "similarity_graph", spy)
    glfs.GLFSClassifier(cv=3, n_genes_grid=(2, 4), graph_params={"t": 0.7, "method": "exact"}).fit(X, y)
    assert len(seen) == 4  # the whole training set and 3 folds
    assert all(kw == {"n_neighbors": 5, "kernel": "heat", "t": 0.7, "method": "exact"} for kw in seen), seen
    # and the width changes the fit: the graph is really used
    a = glfs.GLFSClassifier(cv=3, n_genes_grid=(4,), graph_params={"t": 0.01}).fit(X, y).coef_
    b = glfs.GLFSClassifier(cv=3, n_genes_grid=(4,), graph_params={"t": 100.0}).fit(X, y).coef_
    assert not np.allclose(a, b)


def test_design_cv_ties_go_to_the_smallest_gene_set():
    X, y, _, _ = _two_class(seed=2, n=60, n_noise=50, sigma=0.1)
    clf = glfs.GLFSClassifier(cv=3, n_genes_grid=(2, 4, 8, 16)).fit(X, y)
    best = clf.cv_errors_.min()
    tied = np.flatnonzero(clf.cv_errors_ == best)
    assert clf.n_genes_ == clf.grid_sizes_[tied].min()


def test_published_path_cv_ties_go_to_the_smallest_support():
    X, y, _, _ = _two_class(seed=3)
    clf = glfs.GLFSClassifier(objective="exact", cv=3, glfs_params=FAST).fit(X, y)
    tied = np.flatnonzero(clf.cv_errors_ == clf.cv_errors_.min())
    assert clf.n_genes_ == clf.grid_sizes_[tied].min()


def test_selection_inside_each_fold_never_sees_held_out_labels(monkeypatch):
    from sklearn.model_selection import StratifiedKFold

    X, y, _, _ = _two_class(seed=4, n=40, n_noise=30)
    calls = []
    orig = glfs.GLFSClassifier._supports

    def spy(self, Xa, ya, grid=None):
        calls.append((Xa.copy(), ya.copy()))
        return orig(self, Xa, ya, grid)

    monkeypatch.setattr(glfs.GLFSClassifier, "_supports", spy)
    glfs.GLFSClassifier(graph="labels", cv=4, n_genes_grid=(2, 4), random_state=7).fit(X, y)
    codes = (y == "AML").astype(int)
    folds = list(StratifiedKFold(n_splits=4, shuffle=True, random_state=7).split(X, codes))
    assert len(calls) == 1 + len(folds)
    for (Xa, ya), (tr, _te) in zip(calls[1:], folds):
        np.testing.assert_array_equal(Xa, X[tr])  # only the fold's training samples ...
        np.testing.assert_array_equal(ya, codes[tr].astype(float))  # ... and only their labels
    # and the fold's selection is a function of those alone: changing held-out labels leaves it unchanged
    tr, te = folds[0]
    y2 = codes.astype(float).copy()
    y2[te] = 1 - y2[te]
    clf = glfs.GLFSClassifier(graph="labels", cv=4, n_genes_grid=(2, 4))
    a = orig(clf, X[tr], codes[tr].astype(float), [2, 4])[2]
    b = orig(clf, X[tr], y2[tr], [2, 4])[2]
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"objective": "bad"}, "objective must be one of"),
        ({"cv": 1}, "cv must be an integer >= 2"),
        ({"n_genes_grid": ()}, "n_genes_grid must be a non-empty"),
        ({"n_genes_grid": (0, 2)}, "n_genes_grid must be a non-empty"),
        ({"n_genes_grid": (1.5,)}, "n_genes_grid must be a non-empty"),
        ({"graph_params": {"n_neighbors": 3}}, "graph_params must be a dict of further"),
        ({"graph_params": {"kernel": "binary"}}, "graph_params must be a dict of further"),
        ({"graph_params": [("t", 1.0)]}, "graph_params must be a dict of further"),
    ],
)
def test_bad_parameters(kwargs, match):
    X, y, _, _ = _two_class(seed=5)
    with pytest.raises(ValueError, match=match):
        glfs.GLFSClassifier(**kwargs).fit(X, y)


def test_too_many_neighbours_are_refused_not_capped():
    """n_neighbors >= the samples of a graph (all of X or a CV training fold) is refused, as similarity_graph
    refuses it; it was capped at n - 1 before, a different graph than the one asked for."""
    X, y, _, _ = _two_class(seed=5)
    X, y = X[:8], np.tile([0, 1], 4)
    with pytest.raises(
        ValueError,
        match=r"n_neighbors must be smaller than the number of samples the graph is built "
        r"on \(\d+: all of X, or a training fold of the cv=2 folds\); got 7",
    ):
        glfs.GLFSClassifier(n_neighbors=7, cv=2, n_genes_grid=(2,)).fit(X, y)
    glfs.GLFSClassifier(n_neighbors=3, cv=2, n_genes_grid=(2,)).fit(X, y)  # 4 samples per training fold: runs


def _shifted_classes(shift, seed=0, n=60, d=20):
    rng = np.random.default_rng(seed)
    y = np.array(["ALL"] * (n // 2) + ["AML"] * (n // 2))
    X = rng.normal(size=(n, d)) + shift * (y == "AML")[:, None]
    train = np.zeros(n, bool)
    train[rng.permutation(n)[: n // 2]] = True
    return X, y, train


def test_laprls_random_floor_separable_and_noise():
    """The random-genes floor of the classification table (glfs.evaluate._classify.laprls_random_floor): on
    classes 4 sd apart in every gene any random genes classify perfectly; on pure noise the test
    errors are near chance; the medians lie in the reported ranges and the draws are seeded."""
    from glfs.evaluate import cv_splitter, laprls_random_floor

    X, y, train = _shifted_classes(4.0)
    cv = cv_splitter(y[train], 5, random_state=0)
    r = laprls_random_floor(X, y, train, cv, 3, draws=5, random_state=0, reference="glfs_supervised")
    assert (r["cv_errors"], r["test_errors"], r["n_genes"]) == (0, 0, 3)
    assert (r["cv_n"], r["test_n"]) == (train.sum(), (~train).sum())
    assert r["params"]["n_genes_as"] == "glfs_supervised"

    X, y, train = _shifted_classes(0.0, seed=1, n=200)
    cv = cv_splitter(y[train], 5, random_state=0)
    r = laprls_random_floor(X, y, train, cv, 5, draws=7, random_state=3)
    assert 0.3 * r["test_n"] < r["test_errors"] < 0.7 * r["test_n"]
    lo, hi = r["params"]["test_errors_range"]
    assert lo <= r["test_errors"] <= hi and lo < hi  # the draws differ
    assert laprls_random_floor(X, y, train, cv, 5, draws=7, random_state=3) == r


def test_laprls_random_floor_is_the_supervised_classifier_on_those_genes():
    """With every gene drawn (n_genes = d), each draw is LapRLS with the class graph of the training
    labels on all genes: its test errors equal the ones of laprls_fit written out here."""
    from glfs.designs._gradient import laprls_fit
    from glfs.evaluate import cv_splitter, laprls_random_floor

    X, y, train = _shifted_classes(0.6, seed=2, n=80, d=6)
    cv = cv_splitter(y[train], 4, random_state=0)
    r = laprls_random_floor(X, y, train, cv, X.shape[1], draws=3, random_state=0)
    y01 = (y == "AML").astype(float)
    Xtr, mx, my = X[train], X[train].mean(axis=0), y01[train].mean()
    coef = laprls_fit(Xtr - mx, y01[train] - my, glfs.label_graph(y01[train]), 0.01, 0.01)
    pred = ((X[~train] - mx) @ coef + my >= 0.5).astype(float)
    assert r["test_errors"] == int(np.sum(pred != y01[~train]))
    assert r["params"]["test_errors_range"][0] == r["params"]["test_errors_range"][1]
