"""Graphs, Laplacian/Fisher/variance scores, the select() entry point."""

import dataclasses
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
from glfs import ConstantFeatureWarning


def path_graph_3():
    W = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    return W


# ---------------------------------------------------------------- Laplacian score
def test_laplacian_score_hand_computed_path_graph():
    # Path 0-1-2, binary weights, D = diag(1, 2, 1).
    # f = (0, 1, 2): f'D1/1'D1 = 4/4 = 1, f~ = (-1, 0, 1), f~'Df~ = 2, f~'Lf~ = 1 + 1 = 2 -> 1.
    # g = (0, 1, 0): mean 2/4, g~ = (-.5, .5, -.5), g~'Dg~ = 1, g~'Lg~ = 1 + 1 = 2 -> 2.
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]])
    s = glfs.laplacian_score(X, path_graph_3())
    np.testing.assert_allclose(s, [1.0, 2.0])


def test_laplacian_score_zero_for_feature_constant_on_components():
    # Two components {0,1}, {2,3}: a feature constant on each component has f~'Lf~ = 0.
    W = sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 2], [0, 0, 2, 0]], dtype=float))
    X = np.array([[0.0, 1.0], [0.0, 2.0], [5.0, 1.0], [5.0, 2.0]])
    s = glfs.laplacian_score(X, W)
    assert s[0] == pytest.approx(0.0, abs=1e-12)
    assert s[1] > 1.0  # alternates across every edge


def test_laplacian_score_affine_invariance(planted):
    X, _ = planted
    W = glfs.similarity_graph(X, n_neighbors=5)
    s = glfs.laplacian_score(X, W)
    a = np.linspace(-3, 5, X.shape[1])
    a[a == 0] = 1.0
    s2 = glfs.laplacian_score(X * a + 7.0, W)
    np.testing.assert_allclose(s, s2, rtol=1e-9)


def test_laplacian_score_matches_naive_dense_formula(planted):
    X, _ = planted
    W = glfs.similarity_graph(X, n_neighbors=4, kernel="heat")
    Wd = W.toarray()
    D = np.diag(Wd.sum(1))
    L = D - Wd
    one = np.ones(X.shape[0])
    expected = []
    for f in X.T:
        ft = f - (f @ D @ one) / (one @ D @ one) * one
        expected.append(ft @ L @ ft / (ft @ D @ ft))
    np.testing.assert_allclose(glfs.laplacian_score(X, W), expected, rtol=1e-10)


def test_laplacian_score_ranks_planted_genes_first(planted):
    X, _ = planted
    sel = glfs.select(X, "laplacian_score", n_features_to_select=3)
    assert set(sel.indices) == {0, 1, 2}


def test_supervised_graph_gives_fisher_identity(planted):
    X, groups = planted
    Ls = glfs.laplacian_score(X, glfs.label_graph(groups))
    F = glfs.fisher_score(X, groups)
    np.testing.assert_allclose(Ls, 1.0 / (1.0 + F), rtol=1e-9)


def test_fisher_score_hand_computed():
    # classes {0,1}: x = (0, 2 | 4, 6); mu = 3, class means 1 and 5, biased vars 1 and 1.
    # between = 2*(1-3)^2 + 2*(5-3)^2 = 16; within = 2*1 + 2*1 = 4 -> F = 4.
    X = np.array([[0.0], [2.0], [4.0], [6.0]])
    assert glfs.fisher_score(X, [0, 0, 1, 1])[0] == pytest.approx(4.0)


def test_constant_gene_nan_one_warning_never_selected(planted):
    X, _ = planted
    X = X.copy()
    X[:, 5] = 3.3
    X[:, 7] = 0.0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sel = glfs.select(X, "laplacian_score", n_features_to_select=X.shape[1] - 2)
    const_warnings = [w for w in rec if issubclass(w.category, ConstantFeatureWarning)]
    assert len(const_warnings) == 1
    assert "2 constant" in str(const_warnings[0].message)
    assert np.isnan(sel.scores[[5, 7]]).all()
    assert not sel.selected[[5, 7]].any()
    assert set(sel.ranking[-2:]) == {5, 7}
    # asking for every gene: 2 cannot be scored, so the selection is refused, not filled in gene order (issue 30)
    with pytest.raises(ValueError, match=r"scores are NaN for 2 of \d+ genes \(e.g. columns \[5, 7\]\)"):
        glfs.select(X, "laplacian_score", n_features_to_select=X.shape[1])


def test_dense_and_sparse_inputs_agree(planted):
    X, _ = planted
    X = np.where(np.abs(X) < 0.5, 0.0, X)
    W = glfs.similarity_graph(X, n_neighbors=5)
    Ws = glfs.similarity_graph(sp.csr_matrix(X), n_neighbors=5)
    assert abs(W - Ws).max() < 1e-12
    for m in ["laplacian_score", "variance"]:
        a = glfs.select(X, m, graph=W, n_features_to_select=5)
        b = glfs.select(sp.csr_matrix(X), m, graph=W, n_features_to_select=5)
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-10)
        np.testing.assert_array_equal(a.ranking, b.ranking)


@pytest.mark.parametrize("method", ["laplacian_score", "variance", "fisher_score"])
def test_permuting_genes_permutes_results(planted, method):
    X, groups = planted
    rng = np.random.default_rng(1)
    perm = rng.permutation(X.shape[1])
    W = glfs.similarity_graph(X, n_neighbors=5)
    a = glfs.select(X, method, graph=W, n_features_to_select=4, labels=groups)
    b = glfs.select(X[:, perm], method, graph=W, n_features_to_select=4, labels=groups)
    np.testing.assert_allclose(b.scores, a.scores[perm], rtol=1e-10)
    np.testing.assert_array_equal(b.selected, a.selected[perm])


def test_input_is_not_mutated(planted):
    X, groups = planted
    X0 = X.copy()
    W = glfs.similarity_graph(X, n_neighbors=5)
    W0 = W.copy()
    glfs.select(X, "laplacian_score", graph=W, n_features_to_select=3)
    glfs.select(X, "fisher_score", labels=groups, n_features_to_select=3)
    np.testing.assert_array_equal(X, X0)
    assert abs(W - W0).max() == 0


def test_selection_is_frozen(planted):
    X, _ = planted
    sel = glfs.select(X, "variance", n_features_to_select=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sel.method = "x"
    with pytest.raises(ValueError):
        sel.scores[0] = 1.0
    assert sel.rank[sel.ranking[0]] == 1


def test_ties_broken_by_index():
    X = np.tile(np.array([[0.0], [1.0], [2.0], [3.0]]), (1, 4))  # four identical genes
    sel = glfs.select(X, "variance", n_features_to_select=2)
    np.testing.assert_array_equal(sel.ranking, [0, 1, 2, 3])


# ---------------------------------------------------------------- graphs
@pytest.mark.parametrize("kernel", ["heat", "binary", "cosine", "snf"])
def test_graph_is_sparse_symmetric_nonnegative_knn(planted, kernel):
    X, _ = planted
    k = 5
    W = glfs.similarity_graph(X, n_neighbors=k, kernel=kernel)
    assert sp.isspmatrix_csr(W) or isinstance(W, sp.csr_array)
    assert W.shape == (60, 60)
    assert abs(W - W.T).max() < 1e-12
    assert W.data.min() > 0
    assert W.diagonal().max() == 0
    deg = np.diff(W.indptr)
    assert deg.min() >= k and W.nnz <= 2 * k * 60
    if kernel == "binary":
        assert set(np.unique(W.data)) == {1.0}
    else:
        assert W.data.max() <= 1.0


def test_knn_graph_symmetrised_by_union():
    # 1-D points 0, 1, 10: with k=1, 0<->1 are mutual, 10's neighbour is 1 but 1's is 0.
    X = np.array([[0.0], [1.0], [10.0]])
    W = glfs.similarity_graph(X, n_neighbors=1, kernel="binary").toarray()
    np.testing.assert_array_equal(W, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])


def test_heat_kernel_weights_and_default_t():
    X = np.array([[0.0], [1.0], [3.0]])
    # k=1 edges: 0-1 (d=1), 1-0 (d=1), 2-1 (d=2); default t = mean(d^2) = (1+1+4)/3 = 2
    W = glfs.similarity_graph(X, n_neighbors=1, kernel="heat").toarray()
    assert W[0, 1] == pytest.approx(np.exp(-1 / 2))
    assert W[1, 2] == pytest.approx(np.exp(-4 / 2))
    W = glfs.similarity_graph(X, n_neighbors=1, kernel="heat", t=4.0).toarray()
    assert W[1, 2] == pytest.approx(np.exp(-1.0))


def test_snf_kernel_formula():
    X = np.array([[0.0], [1.0], [3.0], [6.0]])
    W = glfs.similarity_graph(X, n_neighbors=1, kernel="snf", mu=0.5).toarray()
    # nearest-neighbour distances: 0->1:1, 1->0:1, 2->1:2, 3->2:3; eps_01 = (1 + 1 + 1)/3 = 1
    assert W[0, 1] == pytest.approx(np.exp(-1 / (0.5 * 1.0)))
    eps_23 = (2 + 3 + 3) / 3
    assert W[2, 3] == pytest.approx(np.exp(-9 / (0.5 * eps_23)))


def test_graph_on_principal_components():
    rng = np.random.default_rng(3)
    # 3 groups in a 2-D subspace of 50 genes plus small noise: 2 PCs keep the neighbourhoods
    groups = np.repeat(np.arange(3), 20)
    centres = rng.normal(0, 5, size=(3, 2)) @ rng.normal(size=(2, 50))
    X = centres[groups] + rng.normal(0, 0.05, size=(60, 50))
    W_all = glfs.similarity_graph(X, n_neighbors=5, kernel="binary", n_pcs=50)
    W_exact = glfs.similarity_graph(X, n_neighbors=5, kernel="binary")
    assert abs(W_all - W_exact).max() == 0  # all components: the same distances
    W2 = glfs.similarity_graph(X, n_neighbors=5, kernel="binary", n_pcs=2)
    i, j = W2.nonzero()
    assert np.all(groups[i] == groups[j])  # neighbours stay within groups


def test_precomputed_graph_accepted(planted):
    X, _ = planted
    W = glfs.similarity_graph(X, n_neighbors=5, kernel="binary")
    a = glfs.select(X, "laplacian_score", graph=W, n_features_to_select=3)
    b = glfs.select(X, "laplacian_score", graph=W.toarray(), n_features_to_select=3)
    np.testing.assert_allclose(a.scores, b.scores)


# ---------------------------------------------------------------- bad input
def _X():
    return np.random.default_rng(0).normal(size=(10, 6))


def _W(n=10):
    return glfs.similarity_graph(np.random.default_rng(0).normal(size=(n, 6)), n_neighbors=3)


BAD = [
    (
        "nan",
        lambda: glfs.select(np.where(np.eye(10, 6) > 0, np.nan, _X()), "variance", n_features_to_select=2),
        r"X must contain only finite values.*NaN",
    ),
    (
        "inf",
        lambda: glfs.select(np.where(np.eye(10, 6) > 0, np.inf, _X()), "variance", n_features_to_select=2),
        r"X must contain only finite",
    ),
    ("1-D X", lambda: glfs.select(np.arange(5.0), "variance", n_features_to_select=1), r"X must be 2-D.*\(5,\)"),
    ("text X", lambda: glfs.select([["a", "b"], ["c", "d"]], "variance", n_features_to_select=1), r"X must be numeric"),
    ("one sample", lambda: glfs.select(np.ones((1, 4)), "variance", n_features_to_select=1), r"at least 2 samples"),
    (
        "n_features 0",
        lambda: glfs.select(_X(), "variance", n_features_to_select=0),
        r"n_features_to_select must be an integer in \[1, 6\]; got 0",
    ),
    (
        "n_features > d",
        lambda: glfs.select(_X(), "variance", n_features_to_select=7),
        r"n_features_to_select must be an integer in \[1, 6\]; got 7",
    ),
    (
        "n_features float",
        lambda: glfs.select(_X(), "variance", n_features_to_select=2.5),
        r"n_features_to_select must be an integer.*2.5",
    ),
    ("n_features None", lambda: glfs.select(_X(), "variance"), r"n_features_to_select must be an integer.*got None"),
    ("unknown method", lambda: glfs.select(_X(), "magic", n_features_to_select=2), r"method must be one of .*'magic'"),
    (
        "neighbours >= n",
        lambda: glfs.similarity_graph(_X(), n_neighbors=10),
        r"n_neighbors must be smaller than the number of samples \(10\); got 10",
    ),
    (
        "neighbours 0",
        lambda: glfs.similarity_graph(_X(), n_neighbors=0),
        r"n_neighbors must be a positive integer; got 0",
    ),
    ("unknown kernel", lambda: glfs.similarity_graph(_X(), kernel="rbf"), r"kernel must be one of .*'rbf'"),
    (
        "bad t",
        lambda: glfs.similarity_graph(_X(), t=-1.0),
        r"t \(heat-kernel width\) must be a positive number; got -1.0",
    ),
    ("n_pcs too large", lambda: glfs.similarity_graph(_X(), n_pcs=7), r"n_pcs must be an integer in \[1, 6\].*got 7"),
    (
        "graph not square",
        lambda: glfs.laplacian_score(_X(), sp.csr_matrix(np.ones((10, 9)))),
        r"W must be square.*\(10, 9\)",
    ),
    ("graph wrong size", lambda: glfs.laplacian_score(_X(), _W(8)), r"W must have shape \(10, 10\).*\(8, 8\)"),
    (
        "graph asymmetric",
        lambda: glfs.laplacian_score(_X(), sp.csr_matrix(np.triu(np.ones((10, 10)), 1))),
        r"W must be symmetric",
    ),
    (
        "graph negative",
        lambda: glfs.laplacian_score(_X(), -_W()),
        r"W must be non-negative; got a minimum weight of -",
    ),
    (
        "graph nan",
        lambda: glfs.laplacian_score(_X(), sp.csr_matrix(np.full((10, 10), np.nan))),
        r"W must contain only finite",
    ),
    ("labels wrong length", lambda: glfs.fisher_score(_X(), [0, 1] * 4), r"labels must have length 10 .*got length 8"),
    ("labels missing", lambda: glfs.select(_X(), "fisher_score", n_features_to_select=2), r"labels must be given"),
    ("labels one class", lambda: glfs.fisher_score(_X(), [0] * 10), r"labels must contain at least 2 classes"),
    (
        "labels with NaN",
        lambda: glfs.fisher_score(_X(), [0.0] * 5 + [1.0] * 4 + [np.nan]),
        r"labels must not contain missing values",
    ),
    (
        "method params",
        lambda: glfs.select(_X(), "variance", n_features_to_select=2, foo=1),
        r"parameter 'foo' is not a parameter of method 'variance'; it takes none",
    ),
]


@pytest.mark.parametrize("case,call,match", BAD, ids=[b[0] for b in BAD])
def test_bad_input(case, call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_isolated_sample_rejected_for_laplacian_score():
    X = _X()
    W = sp.lil_matrix((10, 10))
    W[0, 1] = W[1, 0] = 1.0
    with pytest.raises(ValueError, match="isolated sample"):
        glfs.laplacian_score(X, W.tocsr())


# ---------------------------------------------------------------- issue 19 item 6: extreme scales
SCALES = [1e-200, 1e-160, 1e-100, 1e-30, 3.7, 1e30, 1e100, 1e154, 1e200]


@pytest.mark.parametrize("a", SCALES)
def test_laplacian_score_is_scale_free_at_any_scale(planted, a):
    X, _ = planted
    W = glfs.similarity_graph(X, n_neighbors=5)
    ref = glfs.laplacian_score(X, W)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow/underflow/invalid-value warning
        got = glfs.laplacian_score(a * X, W)
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    # a constant gene stays the only NaN, whatever the scale
    Xc = X.copy()
    Xc[:, 3] = 7.0
    with pytest.warns(ConstantFeatureWarning):
        got = glfs.laplacian_score(a * Xc, W)
    assert np.flatnonzero(np.isnan(got)).tolist() == [3]
    np.testing.assert_array_equal(glfs.core._validation.constant_features(a * Xc), np.arange(X.shape[1]) == 3)


@pytest.mark.parametrize("a", SCALES)
def test_fisher_score_is_scale_free_at_any_scale(planted, a):
    X, y = planted
    ref = glfs.fisher_score(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = glfs.fisher_score(a * X, y)
    np.testing.assert_allclose(got, ref, rtol=1e-10)


@pytest.mark.parametrize("a", [1e-200, 1e200])
def test_genes_of_very_different_scales_in_one_matrix(planted, a):
    """Each gene is scaled on its own: one gene at 1e-200 next to genes near 1 keeps its score."""
    X, _ = planted
    W = glfs.similarity_graph(X, n_neighbors=5)
    Xm = X.copy()
    Xm[:, 0] *= a
    np.testing.assert_allclose(glfs.laplacian_score(Xm, W), glfs.laplacian_score(X, W), rtol=1e-10)


def test_registry_objective_is_the_one_each_glfs_function_uses():
    """MethodInfo.objective (what the classifier script passes to GLFSClassifier) is the objective the
    registered function solves: the published readings equal glfs.designs._gradient.select_glfs with it, and the
    well-posed one is the classifier's "design" objective; no other method has one."""
    import scipy.sparse as sp

    from glfs.api import METHODS, methods_of
    from glfs.designs._gradient import select_glfs
    from glfs.sklearn import GLFSClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 8))
    W = sp.csr_matrix(np.exp(-np.square(X[:, None, :2] - X[None, :, :2]).sum(-1)))
    for name in methods_of("glfs_published"):
        info = METHODS[name]
        a = info.fn(X, W, n_features=3)
        b = select_glfs(X, W, n_features=3, objective=info.objective)
        assert np.array_equal(a.ranking, b.ranking) and np.allclose(a.scores, b.scores, equal_nan=True), name
    assert METHODS["glfs"].objective == "design"
    GLFSClassifier(objective=METHODS["glfs"].objective)  # accepted by the classifier
    assert {m for m, i in METHODS.items() if i.objective} == set(methods_of("glfs", "glfs_published"))
