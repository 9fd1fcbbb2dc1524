"""GLFS (Wang & Goldenberg 2013): objectives, gradients, solver, path, selection."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
from glfs import ConstantFeatureWarning
from glfs.gradient import _exact_lowrank, _m_matrix, glfs_objective
from glfs.graph import laplacian
from glfs.simulate import make_planted, recovery_score


def _toy(seed, n=8, d=11):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = glfs.similarity_graph(X, n_neighbors=3)
    return rng, X, W


def _naive(beta, X, W, lambda1, lambda2):
    """Dense textbook evaluation of Eq. 7 and of the exact trace, straight from the definitions."""
    n = X.shape[0]
    L = laplacian(W)[0].toarray()
    M = lambda2 * np.linalg.inv(np.eye(n) + lambda1 * L)
    A = X @ np.diag(beta) @ X.T
    inv = np.linalg.inv(M + A)
    eq7 = np.trace(A @ inv @ inv @ M @ M)
    exact = np.trace(A @ (inv @ M) @ (inv @ M))
    return eq7, exact


def _fd(fun, beta, h):
    g = np.empty_like(beta)
    for i in range(beta.size):
        e = np.zeros_like(beta)
        e[i] = h
        g[i] = (fun(beta + e) - fun(beta - e)) / (2 * h)
    return g


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("objective", ["paper", "exact"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_matches_central_differences(objective, seed):
    rng, X, W = _toy(seed)
    beta = rng.uniform(0.05, 1.0, size=X.shape[1])
    beta[rng.choice(X.shape[1], 3, replace=False)] = 0.0  # also at the boundary (one-sided in beta)
    kw = {"lambda1": 0.3, "lambda2": 0.5, "objective": objective, "lam": 0.1}
    _, g = glfs_objective(beta, X, W, **kw)
    # central differences around an interior shifted point keep beta >= 0
    b = beta + 1e-3
    _, g = glfs_objective(b, X, W, **kw)
    num = _fd(lambda x: glfs_objective(x, X, W, **kw)[0], b, 1e-6)
    assert np.max(np.abs(num - g)) <= 1e-6 * np.max(np.abs(g))


def test_gradient_at_zero_is_squared_norm():
    _, X, W = _toy(3)
    for objective in ("paper", "exact", "printed"):
        _, g = glfs_objective(np.zeros(X.shape[1]), X, W, objective=objective)
        np.testing.assert_allclose(g, np.sum(X**2, axis=0), rtol=1e-10)


def test_lowrank_exact_equals_dense():
    rng, X, W = _toy(4, n=20, d=30)
    lambda1, lambda2 = 0.2, 0.05
    beta = np.zeros(30)
    beta[rng.choice(30, 6, replace=False)] = rng.uniform(0.1, 2.0, 6)
    value, grad = glfs_objective(beta, X, W, lambda1=lambda1, lambda2=lambda2, objective="exact")
    P = sp.identity(20, format="csr") + lambda1 * laplacian(W)[0]
    v2, g2 = _exact_lowrank(X, beta, P, lambda2, np.sum(X**2, axis=0))
    assert v2 == pytest.approx(value, rel=1e-9)
    np.testing.assert_allclose(g2, grad, rtol=1e-7, atol=1e-10 * np.max(np.abs(grad)))


# ---------------------------------------------------------------- objectives against naive formulas
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_equals_feature_space_trace(seed):
    # for 0/1 beta: exact = lambda2^2 Tr(Z^-1 X_G X_G' Z^-1), Z = X_G (I + lambda1 L) X_G' + lambda2 I
    rng, X, W = _toy(seed, n=9, d=12)
    lambda1, lambda2 = 0.4, 0.3
    beta = (rng.random(12) < 0.5).astype(float)
    beta[0] = 1.0
    XG = X[:, beta > 0].T  # d_G x n, the paper's orientation
    L = laplacian(W)[0].toarray()
    Z = XG @ (np.eye(9) + lambda1 * L) @ XG.T + lambda2 * np.eye(XG.shape[0])
    Zi = np.linalg.inv(Z)
    direct = np.trace(Zi @ XG @ XG.T @ Zi)
    value, _ = glfs_objective(beta, X, W, lambda1=lambda1, lambda2=lambda2, objective="exact")
    assert value == pytest.approx(lambda2**2 * direct, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 5])
def test_paper_and_exact_equal_naive_dense(seed):
    rng, X, W = _toy(seed)
    beta = rng.uniform(0, 2, size=X.shape[1])
    eq7, exact = _naive(beta, X, W, 0.3, 0.2)
    assert glfs_objective(beta, X, W, lambda1=0.3, lambda2=0.2, objective="paper")[0] == pytest.approx(eq7, rel=1e-9)
    assert glfs_objective(beta, X, W, lambda1=0.3, lambda2=0.2, objective="printed")[0] == pytest.approx(eq7, rel=1e-9)
    assert glfs_objective(beta, X, W, lambda1=0.3, lambda2=0.2, objective="exact")[0] == pytest.approx(exact, rel=1e-9)


def test_eq7_can_be_negative_while_exact_is_not():
    # search for a (beta, graph) where the published Eq. 7 is negative; the exact trace never is
    found = None
    exact_values = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(6, 4))
        W = glfs.similarity_graph(X, n_neighbors=2)
        beta = rng.exponential(size=4) * 10.0 ** rng.uniform(-2, 2)
        kw = {"lambda1": 10.0 ** rng.uniform(-1, 1.5), "lambda2": 10.0 ** rng.uniform(-2, 1)}
        q = glfs_objective(beta, X, W, objective="paper", **kw)[0]
        e = glfs_objective(beta, X, W, objective="exact", **kw)[0]
        exact_values.append(e)
        if q < 0 and found is None:
            found = (q, e, _naive(beta, X, W, kw["lambda1"], kw["lambda2"])[0])
    assert found is not None, "no negative Eq. 7 value found"
    q, e, naive = found
    assert naive == pytest.approx(q, rel=1e-8)  # it is Eq. 7 itself that is negative
    assert e >= 0
    assert min(exact_values) >= 0


def test_printed_direction_is_not_the_gradient_in_general():
    rng, X, W = _toy(6)
    beta = rng.uniform(0.2, 1.0, size=X.shape[1])
    kw = {"lambda1": 0.5, "lambda2": 0.3}
    _, g_true = glfs_objective(beta, X, W, objective="paper", **kw)
    _, g_printed = glfs_objective(beta, X, W, objective="printed", **kw)
    assert np.max(np.abs(g_true - g_printed)) > 1e-3 * np.max(np.abs(g_true))


def test_printed_equals_gradient_when_M_and_A_commute():
    # lambda1 = 0 makes M = lambda2 I, which commutes with every A: then Eq. 9 is the gradient of
    # Eq. 7, and Eq. 7 equals the exact trace (the erratum step of Eq. 6 becomes valid).
    rng, X, W = _toy(7)
    beta = rng.uniform(0.2, 1.0, size=X.shape[1])
    kw = {"lambda1": 0.0, "lambda2": 0.3}
    q, g_true = glfs_objective(beta, X, W, objective="paper", **kw)
    q2, g_printed = glfs_objective(beta, X, W, objective="printed", **kw)
    e, g_exact = glfs_objective(beta, X, W, objective="exact", **kw)
    np.testing.assert_allclose(g_printed, g_true, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(g_exact, g_true, rtol=1e-8, atol=1e-12)
    assert q == pytest.approx(e, rel=1e-10)


# ---------------------------------------------------------------- solver
def _small_problem(seed=0, n=40, d=30, sigma=0.15):
    X, informative, _ = make_planted(n, d - 4, sigma, random_state=seed)
    W = glfs.similarity_graph(X, n_neighbors=5)
    return X, W, informative


@pytest.mark.parametrize("objective", ["exact", "paper"])
def test_lbfgsb_solution_satisfies_kkt(objective):
    X, W, _ = _small_problem()
    res = glfs.glfs(X, W, objective=objective, n_features=4, n_lams=6, max_iter=2000)
    # KKT at every path point, in the preprocessed units the solver used
    Xp = X / np.sqrt(np.mean(X**2))  # default preprocessing: no centring, global "unit" scale
    kw = {"lambda1": 0.01, "lambda2": 0.01, "objective": objective}
    for (lam, k, _), beta in zip(res.path, res.path_weights):
        if k == 0:
            continue
        _, g = glfs_objective(beta, Xp, W, lam=lam, **kw)  # gradient incl. lam
        scale = np.max(np.abs(g - lam)) + lam
        on = beta > 0
        assert np.all(g[~on] >= -1e-4 * scale)
        assert np.max(np.abs(g[on])) <= 1e-3 * scale


@pytest.mark.parametrize("seed", [0, 1])
def test_planted_recovery_exact(seed):
    # easy setting with more genes than samples (the expression-data regime); with d < n the
    # default start level can fail (docs/methods.md records it)
    X, W, informative = _small_problem(seed=seed, n=100, d=204, sigma=0.2)
    res = glfs.glfs(X, W, objective="exact", n_features=4)
    assert recovery_score(res.ranking, informative) == 1.0
    assert set(np.flatnonzero(res.selected)) == set(informative)


def test_path_lams_decrease_and_support_grows_for_exact():
    X, W, _ = _small_problem(seed=2)
    res = glfs.glfs_path(X, W, objective="exact", n_lams=8)
    lams = [p[0] for p in res.path]
    counts = [p[1] for p in res.path]
    assert all(a > b for a, b in zip(lams, lams[1:]))
    # monotone here (warm starts, genes only enter); docs/methods.md says where it need not hold
    assert all(a <= b for a, b in zip(counts, counts[1:]))
    assert counts[-1] > 0


def test_ranking_is_entry_order_along_path():
    X, W, _ = _small_problem(seed=3)
    res = glfs.glfs_path(X, W, objective="exact", n_lams=8)
    entry_step = np.full(X.shape[1], len(res.path))
    for k, b in reversed(list(enumerate(res.path_weights))):
        entry_step[b > 0] = k
    steps = entry_step[res.ranking]
    assert np.all(np.diff(steps) >= 0)
    # never-selected genes are ordered by -gradient (most negative gradient first)
    never = res.ranking[steps == len(res.path)]
    assert np.all(np.diff(res.entry_lam[never]) <= 0)
    np.testing.assert_array_equal(np.sort(res.ranking), np.arange(X.shape[1]))


def test_printed_runs_and_records_solver_status():
    X, W, _ = _small_problem(seed=4)
    res = glfs.glfs(X, W, objective="printed", n_features=4, n_lams=5, max_iter=50)
    assert len(res.converged) == len(res.path)
    assert res.ranking.shape == (X.shape[1],)


def test_halving_search_gives_nonempty_support():
    X, W, _ = _small_problem(seed=5)
    res = glfs.glfs(X, W, objective="exact", n_lams=4)
    assert res.n_selected >= 1
    assert len(res.search) >= 2
    tried_nonempty = [lam for lam, k in res.search if k > 0]
    assert res.lam == pytest.approx(max(tried_nonempty))


# ---------------------------------------------------------------- properties
def test_dense_and_sparse_input_agree():
    X, W, _ = _small_problem(seed=6)
    a = glfs.glfs(X, W, objective="exact", n_features=5, n_lams=5)
    b = glfs.glfs(sp.csr_matrix(X), W, objective="exact", n_features=5, n_lams=5)
    np.testing.assert_array_equal(a.ranking, b.ranking)
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-8, atol=1e-12)


def test_permuting_genes_permutes_results():
    X, W, _ = _small_problem(seed=7)
    perm = np.random.default_rng(0).permutation(X.shape[1])
    a = glfs.glfs(X, W, objective="exact", n_features=5, n_lams=5)
    b = glfs.glfs(X[:, perm], W, objective="exact", n_features=5, n_lams=5)
    np.testing.assert_allclose(b.weights, a.weights[perm], rtol=1e-6, atol=1e-9 * a.weights.max())
    np.testing.assert_array_equal(b.selected, a.selected[perm])
    # the objective/gradient are exactly equivariant
    beta = np.random.default_rng(1).uniform(0, 1, X.shape[1])
    _, g = glfs_objective(beta, X, W)
    _, gp = glfs_objective(beta[perm], X[:, perm], W)
    np.testing.assert_allclose(gp, g[perm], rtol=1e-10)


def test_constant_genes_never_selected_and_warned():
    X, W, _ = _small_problem(seed=8)
    X = X.copy()
    X[:, [2, 5]] = 3.0
    with pytest.warns(ConstantFeatureWarning):
        sel = glfs.select(X, method="glfs_exact", graph=W, n_features=X.shape[1] - 2, n_lams=4)
    assert not sel.selected[[2, 5]].any()
    assert np.isnan(sel.scores[[2, 5]]).all()
    assert set(sel.ranking[-2:]) == {2, 5}
    assert sel.weights[[2, 5]].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("method", ["glfs_exact", "glfs_paper", "glfs_printed"])  # "glfs" is glfs.design now
def test_select_registry_returns_selection(method):
    X, W, _ = _small_problem(seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sel = glfs.select(X, method=method, graph=W, n_features=4, n_lams=4, max_iter=60)
    assert sel.selected.sum() == 4
    assert sel.higher_is_better
    np.testing.assert_array_equal(sel.indices, sel.ranking[:4])
    assert "path" in sel.extra
    expected = {"glfs_exact": "exact", "glfs_paper": "paper", "glfs_printed": "printed"}[method]
    assert sel.params["objective"] == expected


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"beta": -np.ones(11)}, "beta must be non-negative"),
        ({"beta": np.ones(5)}, r"beta must have shape \(11,\)"),
        ({"objective": "nope"}, "objective must be one of"),
        ({"lambda2": 0.0}, "lambda2 must be a positive"),
        ({"lambda1": -1.0}, "lambda1 must be a non-negative"),
        ({"lam": -0.5}, "lam must be a non-negative"),
    ],
)
def test_objective_bad_input(kwargs, match):
    _, X, W = _toy(0)
    args = {"beta": np.ones(11), **kwargs}
    beta = args.pop("beta")
    with pytest.raises(ValueError, match=match):
        glfs_objective(beta, X, W, **args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_features": 0}, r"n_features must be an integer in \[1, 30\]"),
        ({"n_features": 31}, r"n_features must be an integer in \[1, 30\]"),
        ({"objective": "fast"}, "objective must be one of"),
        ({"scale": "weird"}, "scale must be one of"),
        ({"beta_init": -1.0}, "beta_init must be a positive"),
        ({"lam": -1.0}, "lam must be a non-negative"),
        ({"lam_ratio": 2.0}, r"lam_ratio must be in \(0, 1\)"),
    ],
)
def test_glfs_bad_input(kwargs, match):
    X, W, _ = _small_problem()
    with pytest.raises(ValueError, match=match):
        glfs.glfs(X, W, **kwargs)


def test_glfs_wrong_graph_size():
    X, _, _ = _small_problem()
    with pytest.raises(ValueError, match="graph must have shape"):
        glfs.glfs(X, sp.identity(5, format="csr"))


# ---------------------------------------------------------------- LapRLS
def test_laprls_closed_form_minimises_eq2():
    rng = np.random.default_rng(0)
    n, k = 25, 6
    X = rng.normal(size=(n, k))
    y = (rng.random(n) < 0.5).astype(float)
    W = glfs.similarity_graph(X, n_neighbors=4)
    lambda1, lambda2 = 0.7, 0.2
    w = glfs.laprls_fit(X, y, W, lambda1, lambda2)
    Wd = W.toarray()

    def J(w):  # Eq. 2 written out with the double sum
        p = X @ w
        return np.sum((p - y) ** 2) + lambda1 / 2 * np.sum(Wd * (p[:, None] - p[None, :]) ** 2) + lambda2 * w @ w

    grad = _fd(J, w, 1e-6)
    assert np.max(np.abs(grad)) < 1e-5
    for _ in range(5):
        assert J(w + 1e-3 * rng.normal(size=k)) > J(w)
    # dual (k > n) branch agrees with the primal formula
    X2 = rng.normal(size=(8, 20))
    W2 = glfs.similarity_graph(X2, n_neighbors=3)
    y2 = rng.normal(size=8)
    L2 = laplacian(W2)[0].toarray()
    direct = np.linalg.solve(X2.T @ X2 + lambda1 * X2.T @ L2 @ X2 + lambda2 * np.eye(20), X2.T @ y2)
    np.testing.assert_allclose(glfs.laprls_fit(X2, y2, W2, lambda1, lambda2), direct, rtol=1e-8, atol=1e-10)


def test_m_matrix_is_the_definition():
    _, X, W = _toy(2)
    M = _m_matrix(W, X.shape[0], 0.3, 0.2)
    L = laplacian(W)[0].toarray()
    np.testing.assert_allclose(M, 0.2 * np.linalg.inv(np.eye(X.shape[0]) + 0.3 * L), rtol=1e-10)
