"""GLFS (Wang & Goldenberg 2013): objectives, gradients, solver, path, selection."""

import warnings
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.designs._gradient_model as gradient_model
import glfs.designs._gradient_path as gradient_path
from glfs import ConstantFeatureWarning
from glfs.designs._gradient import KKT_TOL, GLFSConvergenceWarning, glfs_objective
from glfs.designs._gradient_model import _m_matrix
from glfs.graph._similarity import laplacian
from glfs.simulation._simulate import make_planted, recovery_score


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


def _forms(X, W, beta, lambda1, lambda2, objective):
    """(dense state, low-rank state) of the same point, both forms forced."""
    P = gradient_model._p_matrix(W, X.shape[0], lambda1)
    model = gradient_model._Model(X, P, lambda2, objective)
    idx = np.flatnonzero(beta > 0)
    return gradient_model._DenseState(model, beta, idx), gradient_model._LowRankState(model, beta, idx)


@pytest.mark.parametrize("objective", ["exact", "paper", "printed"])
@pytest.mark.parametrize(("seed", "k"), [(4, 1), (5, 6), (6, 6), (7, 25)])
def test_lowrank_equals_dense(objective, seed, k):
    # the Woodbury form (no n x n matrix) against the dense n x n form, small random support (k = 25 > n too)
    rng, X, W = _toy(seed, n=20, d=30)
    beta = np.zeros(30)
    beta[rng.choice(30, k, replace=False)] = rng.uniform(0.1, 2.0, k)
    dense, low = _forms(X, W, beta, 0.2, 0.05, objective)
    assert low.value == pytest.approx(dense.value, rel=1e-8)
    gd, gl = dense.grad(), low.grad()
    np.testing.assert_allclose(gl, gd, rtol=1e-8, atol=1e-8 * np.max(np.abs(gd)))
    cols = np.array([3, 0, 17])
    np.testing.assert_allclose(low.grad(cols), gd[cols], rtol=1e-8, atol=1e-8 * np.max(np.abs(gd)))


@pytest.mark.parametrize("objective", ["exact", "paper", "printed"])
def test_single_gene_closed_form(objective):
    # one gene of weight b: A = b f f'.  With t = b f'Pf / lambda2 the exact trace is
    # V = lambda2 t / (1 + t)^2 * (f'f / f'Pf) and dV/db = f'f (1 - t) / (1 + t)^3 (the hump at t = 1,
    # the largest -dV/db = f'f / 27 at t = 2); Eq. 7 for one gene: Q = b s/D - b^2 mu nu / D^2 with
    # D = 1 + b f'M^{-1}f, mu = f'Mf, nu = f'M^{-2}f (Sherman-Morrison), dQ/db = (s D - 2 b mu nu) / D^3.
    rng, X, W = _toy(8, n=15, d=5)
    lambda1, lambda2 = 0.5, 0.2
    f = X[:, 2]
    P = np.eye(15) + lambda1 * laplacian(W)[0].toarray()
    M = lambda2 * np.linalg.inv(P)
    s, alpha = f @ f, f @ P @ f / lambda2
    mu, nu = f @ M @ f, f @ np.linalg.solve(M @ M, f)
    for b in (0.01, 0.3, 4.0):
        beta = np.zeros(5)
        beta[2] = b
        value, grad = glfs_objective(beta, X, W, lambda1=lambda1, lambda2=lambda2, objective=objective)
        D = 1 + b * alpha
        t = b * alpha
        if objective == "exact":
            assert value == pytest.approx(b * s / D**2, rel=1e-9)
            assert grad[2] == pytest.approx(s * (1 - t) / (1 + t) ** 3, rel=1e-8)
        else:
            assert value == pytest.approx(b * s / D - b**2 * mu * nu / D**2, rel=1e-9)
            if objective == "paper":
                assert grad[2] == pytest.approx((s * D - 2 * b * mu * nu) / D**3, rel=1e-8)


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


def _unit(X):
    """The default preprocessing of glfs (no centring, one global "unit" scale; no constant genes here)."""
    return X / np.sqrt(np.mean(X**2))


def _residual(beta, direction):
    return np.where(beta > 0, np.abs(direction), np.maximum(0.0, -direction))


@pytest.mark.parametrize("objective", ["exact", "paper", "printed"])
@pytest.mark.parametrize("seed", [0, 1])
def test_converged_points_satisfy_kkt(objective, seed):
    # recompute the gradient (Eq. 9 direction for printed) independently at every returned point
    X, W, _ = _small_problem(seed=seed, n=40, d=120, sigma=0.3)
    res = glfs.glfs_path(X, W, objective=objective, n_lams=6)
    assert all(res.converged)
    assert res.params["n_converged"] == len(res.path)
    kw = {"lambda1": 0.01, "lambda2": 0.01, "objective": objective}
    n_nonempty = 0
    for (lam, k, value), beta, kkt in zip(res.path, res.path_weights, res.kkt):
        F, g = glfs_objective(beta, _unit(X), W, lam=lam, **kw)  # gradient incl. lam
        r = _residual(beta, g).max()
        assert r <= 1.01 * KKT_TOL * lam
        assert r / lam == pytest.approx(kkt, rel=1e-3, abs=1e-3 * KKT_TOL)
        assert F == pytest.approx(value, rel=1e-9, abs=1e-12)
        n_nonempty += k > 0
    assert n_nonempty >= 3


def test_unconverged_points_are_flagged_and_warned():
    X, W, _ = _small_problem(seed=2, n=40, d=120, sigma=0.3)
    with pytest.warns(GLFSConvergenceWarning, match="did not reach the KKT tolerance"):
        res = glfs.glfs_path(X, W, objective="exact", n_lams=4, max_iter=1)
    assert not any(res.converged)
    assert all(r > KKT_TOL for r in res.kkt)
    assert res.params["n_converged"] == 0
    sel_warn = pytest.warns(GLFSConvergenceWarning)
    with sel_warn:
        sel = glfs.select(X, method="glfs_exact", graph=W, n_features_to_select=5, n_lams=4, max_iter=1)
    assert sel.params["n_converged"] == 0
    assert [row["converged"] for row in sel.extra["path"]] == [False] * 4


def test_chosen_point_and_ranking_come_from_converged_points():
    # started at a converged solution, the first two points converge within 20 steps, the last one
    # (lam 1e4 times smaller: the weights must grow a lot) does not: neither the chosen weights nor the
    # ranking may come from it
    X, W, _ = _small_problem(seed=3, n=40, d=120, sigma=0.3)
    ref = glfs.glfs_path(X, W, objective="exact", n_lams=2)
    lams = [ref.path[0][0], ref.path[1][0], 1e-4 * ref.path[1][0]]
    prob = gradient_path._Problem(
        X,
        W,
        objective="exact",
        lambda1=gradient_model.DEFAULT_LAMBDA1,
        lambda2=gradient_model.DEFAULT_LAMBDA2,
        center=gradient_model.DEFAULT_CENTER,
        scale=gradient_model.DEFAULT_SCALE,
        beta_init=ref.path_weights[1],
        max_iter=20,
    )
    lams = gradient_path._lam_grid(prob, lams, 3, gradient_model.DEFAULT_LAM_RATIO)
    with pytest.warns(GLFSConvergenceWarning, match="1 of 3 path points"):
        # pick=120: what glfs(n_features=120) asks of the path
        res = gradient_path._path_result(
            prob,
            lams,
            gradient_path._run_path(prob, lams),
            rank_by="weight",
            lam_ratio=gradient_model.DEFAULT_LAM_RATIO,
            search_C=gradient_model.DEFAULT_SEARCH_C,
            center=False,
            scale="unit",
            beta_init=ref.path_weights[1],
            pick=120,
        )
    assert res.converged == (True, True, False)
    assert res.lam == lams[1]  # no converged point has 120 genes: the last converged one
    np.testing.assert_array_equal(res.weights, res.path_weights[1])
    _, g = glfs_objective(res.path_weights[1], _unit(X), W, objective="exact")
    np.testing.assert_allclose(res.gradient, g, rtol=1e-8, atol=1e-10 * np.abs(g).max())


def _planted_background(seed=0):
    """30 x 600: planted genes on a positive log-normal background (expression-like levels).

    Seed 0 is a case where the converged support grows along the path (137 -> 151 genes when
    written); most seeds give a 1-4 gene support at every lam.
    """
    X, informative, _ = make_planted(30, 596, 0.3, random_state=seed)
    X = X + np.exp(np.random.default_rng(seed).normal(0.0, 0.5, size=(2, 30, 600))[1])
    return X, glfs.similarity_graph(X, n_neighbors=5), informative


@pytest.mark.parametrize("objective", ["exact", "paper", "printed"])
def test_support_grows_as_lam_falls_on_planted_case(objective):
    X, W, _ = _planted_background()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GLFSConvergenceWarning)  # printed: one point stalls
        res = glfs.glfs_path(X, W, objective=objective, n_lams=8)
    lams = [p[0] for p in res.path]
    assert all(a > b for a, b in zip(lams, lams[1:]))
    conv = np.flatnonzero(res.converged)
    assert conv.size >= (8 if objective != "printed" else 6)
    support = res.path_weights[conv] > 0
    for a, b in zip(support, support[1:]):  # nested: nothing leaves as lam decreases
        assert not np.any(a & ~b)
    counts = support.sum(axis=1)
    assert counts[-1] > counts[counts > 0][0] > 100  # and it does grow here
    assert res.params["monotone"] is True


def test_monotone_flag_reports_a_gene_that_leaves():
    # the flag is computed from the supports: shrink one point's support artificially
    betas = [np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0]), np.array([0.0, 1.0, 1.0])]
    assert gradient_path._nested(betas, [0, 1])
    assert not gradient_path._nested(betas, [0, 1, 2])


@pytest.mark.parametrize("seed", [0, 1])
def test_planted_recovery_exact(seed):
    # easy setting with more genes than samples (the expression-data regime); with d < n the
    # default start level can fail (docs/methods/glfs-readings.md records it)
    X, W, informative = _small_problem(seed=seed, n=100, d=204, sigma=0.2)
    res = glfs.glfs_published(X, W, objective="exact", n_features=4)
    assert recovery_score(res.ranking, informative) == 1.0
    assert set(np.flatnonzero(res.selected)) == set(informative)


def test_ranking_by_weight_of_converged_points():
    # the rule of rank_by="weight", written out: genes non-zero at some converged point first, by the
    # largest such lam, then by the weight there; then the rest by -gradient at the last converged point
    X, W, _ = _planted_background(seed=0)  # genes enter at several lams
    res = glfs.glfs_path(X, W, objective="exact", n_lams=6)
    assert res.params["rank_by"] == "weight"
    lams = np.array([p[0] for p in res.path])
    used = np.flatnonzero(res.converged)
    on = res.path_weights[used] > 0
    seen = on.any(axis=0)
    first = np.argmax(on, axis=0)
    key_lam = np.where(seen, lams[used][first], -np.inf)
    key_w = np.where(seen, res.path_weights[used][first, np.arange(X.shape[1])], 0.0)
    ranked = res.ranking[: int(seen.sum())]
    assert set(ranked) == set(np.flatnonzero(seen))
    pairs = list(zip(key_lam[ranked], key_w[ranked]))
    assert pairs == sorted(pairs, key=lambda p: (-p[0], -p[1]))
    rest = res.ranking[int(seen.sum()) :]
    assert np.all(np.diff(-res.gradient[rest]) <= 1e-12 * np.abs(res.gradient).max())
    # scores agree with the ranking
    assert np.all(np.diff(res.entry_lam[res.ranking]) <= 0)


def test_ranking_entry_rule_is_an_option():
    X, W, _ = _small_problem(seed=3)
    res = glfs.glfs_path(X, W, objective="exact", n_lams=8, rank_by="entry")
    assert res.params["rank_by"] == "entry"
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
    res = glfs.glfs_published(X, W, objective="printed", n_features=4, n_lams=5, max_iter=50)
    assert len(res.converged) == len(res.path) == len(res.kkt) == len(res.n_iter)
    assert res.ranking.shape == (X.shape[1],)


def test_halving_search_gives_nonempty_support():
    X, W, _ = _small_problem(seed=5)
    res = glfs.glfs_published(X, W, objective="exact", n_lams=4)
    assert res.n_selected >= 1
    assert len(res.search) >= 2
    tried_nonempty = [lam for lam, k in res.search if k > 0]
    assert res.lam == pytest.approx(max(tried_nonempty))


# ---------------------------------------------------------------- no n x n beyond DENSE_MAX_N
@pytest.mark.parametrize("objective", ["exact", "paper", "printed"])
def test_large_n_never_forms_dense_matrices(objective, monkeypatch):
    # with the limit lowered to 10 samples, a 40-sample problem must run on the low-rank form only
    # (the dense M constructor is made to fail) and give the same path as the unrestricted run
    X, W, _ = _small_problem(seed=6, n=40, d=120, sigma=0.3)
    ref = glfs.glfs_path(X, W, objective=objective, n_lams=4)
    monkeypatch.setattr(gradient_model, "DENSE_MAX_N", 10)

    def no_dense(*args, **kwargs):
        raise AssertionError("dense n x n matrix formed")

    monkeypatch.setattr(gradient_model, "_m_dense", no_dense)
    res = glfs.glfs_path(X, W, objective=objective, n_lams=4)
    assert res.converged == ref.converged
    np.testing.assert_array_equal(res.path_weights > 0, ref.path_weights > 0)
    np.testing.assert_allclose(res.path_weights, ref.path_weights, rtol=1e-5, atol=1e-9 * ref.path_weights.max())
    beta = ref.path_weights[-1]
    v1, g1 = glfs_objective(beta, X, W, objective=objective)
    monkeypatch.undo()
    v0, g0 = glfs_objective(beta, X, W, objective=objective)
    assert v1 == pytest.approx(v0, rel=1e-8)
    np.testing.assert_allclose(g1, g0, rtol=1e-8, atol=1e-8 * np.abs(g0).max())


def test_large_n_refuses_a_support_too_large_for_the_lowrank_form(monkeypatch):
    X, W, _ = _small_problem(seed=6, n=40, d=120, sigma=0.3)
    monkeypatch.setattr(gradient_model, "DENSE_MAX_N", 10)
    monkeypatch.setattr(gradient_model, "LOWRANK_MAX_K", 50)
    with pytest.raises(ValueError, match=r"limited to LOWRANK_MAX_K = 50 genes with beta > 0; this point has 120"):
        glfs.glfs_path(X, W, objective="exact", n_lams=2)  # the uniform start has all 120 genes
    with pytest.raises(ValueError, match=r"dense forms are limited to n_samples <= 10"):
        _m_matrix(W, 40, 0.01, 0.01)


def test_cost_rule_picks_lowrank_for_small_supports():
    X, W, _ = _small_problem(seed=6, n=40, d=120)
    for objective in ("exact", "paper", "printed"):
        model = gradient_model._Model(X, gradient_model._p_matrix(W, 40, 0.01), 0.01, objective)
        assert not model.dense_cheaper(2, 120)  # 2 genes: Woodbury
        assert model.dense_cheaper(120, 120)  # every gene (k > n): dense
        model.n = gradient_model.DENSE_MAX_N + 1
        assert not model.dense_cheaper(120, 120)  # never dense above the limit


def test_cg_solver_matches_direct_solve():
    _, X, W = _toy(9, n=30, d=5)
    P = gradient_model._p_matrix(W, 30, 3.0)
    B = np.random.default_rng(0).normal(size=(30, 4))
    sol, ok = gradient_model._cg_columns(P, B)
    assert ok
    np.testing.assert_allclose(sol, np.linalg.solve(P.toarray(), B), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- properties
def test_dense_and_sparse_input_agree():
    X, W, _ = _small_problem(seed=6)
    a = glfs.glfs_published(X, W, objective="exact", n_features=5, n_lams=5)
    b = glfs.glfs_published(sp.csr_matrix(X), W, objective="exact", n_features=5, n_lams=5)
    np.testing.assert_array_equal(a.ranking, b.ranking)
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-8, atol=1e-12)


def test_permuting_genes_permutes_results():
    X, W, _ = _small_problem(seed=7)
    perm = np.random.default_rng(0).permutation(X.shape[1])
    a = glfs.glfs_published(X, W, objective="exact", n_features=5, n_lams=5)
    b = glfs.glfs_published(X[:, perm], W, objective="exact", n_features=5, n_lams=5)
    np.testing.assert_allclose(b.weights, a.weights[perm], rtol=1e-6, atol=1e-9 * a.weights.max())
    np.testing.assert_array_equal(b.selected, a.selected[perm])
    # the objective/gradient are equivariant up to float64 rounding: permuting the genes permutes the
    # summation order of the BLAS products (1.5e-10 relative on one of 30 entries with numpy 1.24 /
    # scipy 1.10's OpenBLAS on an Intel host; any real error is orders of magnitude larger)
    beta = np.random.default_rng(1).uniform(0, 1, X.shape[1])
    _, g = glfs_objective(beta, X, W)
    _, gp = glfs_objective(beta[perm], X[:, perm], W)
    np.testing.assert_allclose(gp, g[perm], rtol=1e-8)


def test_constant_genes_never_selected_and_warned():
    X, W, _ = _small_problem(seed=8)
    X = X.copy()
    X[:, [2, 5]] = 3.0
    with pytest.warns(ConstantFeatureWarning):
        sel = glfs.select(X, method="glfs_exact", graph=W, n_features_to_select=X.shape[1] - 2, n_lams=4)
    assert not sel.selected[[2, 5]].any()
    assert np.isnan(sel.scores[[2, 5]]).all()
    assert set(sel.ranking[-2:]) == {2, 5}
    assert sel.weights[[2, 5]].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("method", ["glfs_exact", "glfs_paper", "glfs_printed"])  # "glfs" is glfs.designs._budgeted now
def test_select_registry_returns_selection(method):
    X, W, _ = _small_problem(seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sel = glfs.select(X, method=method, graph=W, n_features_to_select=4, n_lams=4, max_iter=60)
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
        ({"lam_ratio": 2.0}, r"lam_ratio must be a number in \(0, 1\); got 2.0"),
        ({"rank_by": "order"}, r"rank_by must be one of \('weight', 'entry'\)"),
        ({"max_iter": 0}, "max_iter must be a positive integer"),
    ],
)
def test_glfs_bad_input(kwargs, match):
    X, W, _ = _small_problem()
    with pytest.raises(ValueError, match=match):
        glfs.glfs_published(X, W, **kwargs)


def test_glfs_wrong_graph_size():
    X, _, _ = _small_problem()
    with pytest.raises(ValueError, match="graph must have shape"):
        glfs.glfs_published(X, sp.identity(5, format="csr"))


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


# ---------------------------------------------------------------- workflow script
def test_glfs_path_table_writes_converged_columns(tmp_path, caplog):
    """results/{dataset}/glfs_path.tsv as the selection job writes it (glfs_workflow.tables.glfs_path_frame, from the
    sidecar as written and read back): lam, n_selected, objective, then converged, kkt_residual."""
    import json

    import pandas as pd

    from glfs_workflow.files import write_tsv
    from glfs_workflow.tables import glfs_path_frame, selection_meta

    X, W, _ = _small_problem(seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GLFSConvergenceWarning)
        sel = glfs.select(X, method="glfs_exact", graph=W, n_features_to_select=4, n_lams=4, max_iter=8)
    (tmp_path / "m.json").write_text(json.dumps(selection_meta(sel, n_features=4, graph="given")))
    write_tsv(glfs_path_frame(json.loads((tmp_path / "m.json").read_text())), tmp_path / "path.tsv")
    df = pd.read_csv(tmp_path / "path.tsv", sep="\t")
    assert list(df.columns) == ["method", "lam", "n_selected", "objective", "converged", "kkt_residual"]
    rows = sel.extra["path"]
    assert df["converged"].tolist() == [r["converged"] for r in rows]
    np.testing.assert_allclose(df["kkt_residual"], [r["kkt"] for r in rows], rtol=1e-12)
    np.testing.assert_allclose(df["lam"], [r["lam"] for r in rows], rtol=1e-12)
    if not all(df["converged"]):
        assert "did not converge" in caplog.text


# ---- size limit of the published readings ------------------------------------------------


@pytest.mark.parametrize("objective", ["exact", "paper", "printed"])
def test_published_readings_refuse_above_the_size_limit_before_copying_x(objective):
    """50,000 x 2,000 is refused at once: X here is a zero-memory broadcast view, so any copy would allocate 800 MB."""
    import tracemalloc

    from glfs.designs._gradient import PATH_MAX_CELLS, glfs_path, glfs_published

    X = np.broadcast_to(np.float64(1.0), (50_000, 2_000))
    assert X.size > PATH_MAX_CELLS
    W = sp.identity(50_000, format="csr")
    tracemalloc.start()
    try:
        for call in (lambda: glfs_path(X, W, objective=objective), lambda: glfs_published(X, W, objective=objective)):
            with pytest.raises(ValueError, match=r"50000 samples x 2000 genes .*size limit of 1e\+07.*method='glfs'"):
                call()
        assert tracemalloc.get_traced_memory()[1] < 50e6  # refused before any O(n d) allocation
    finally:
        tracemalloc.stop()


def test_size_limit_applies_through_select(monkeypatch):
    X = np.random.default_rng(0).normal(size=(30, 8))
    monkeypatch.setattr(gradient_model, "PATH_MAX_CELLS", X.size - 1)
    with pytest.raises(ValueError, match="size limit"):
        glfs.select(X, "glfs_exact", n_features_to_select=2)
    monkeypatch.setattr(gradient_model, "PATH_MAX_CELLS", X.size)  # at the limit: runs
    assert glfs.select(X, "glfs_exact", n_features_to_select=2).selected.sum() == 2


def test_the_path_reads_x_without_copies_or_writes():
    """glfs.select validates and copies X once; select_glfs and the path read it as it is (issue 20:
    X was copied three times in one glfs_exact call).  The caller's X is never written to, and a float32
    X gives the float64 answer (the path converts it, as before)."""
    X, W, *_ = _small_problem(seed=3)
    X = np.ascontiguousarray(X, dtype=np.float64)
    before = X.copy()
    ref = glfs.glfs_published(X, W, objective="exact", n_features=3)
    assert np.array_equal(X, before)
    got = glfs.glfs_published(X.astype(np.float32).astype(np.float64), W, objective="exact", n_features=3)
    f32 = glfs.glfs_published(X.astype(np.float32), W, objective="exact", n_features=3)
    np.testing.assert_array_equal(f32.weights, got.weights)
    sel = glfs.select(X, "glfs_exact", graph=W, n_features_to_select=3)
    assert np.array_equal(X, before)
    np.testing.assert_array_equal(sel.weights, ref.weights)
    import glfs.api as api

    seen = {"validated": [], "read": []}
    real_input, real_pre = api._input, gradient_path._preprocess

    def spy_input(Xa):
        seen["validated"].append(real_input(Xa))
        return seen["validated"][-1]

    def spy_pre(Xp, center, scale):
        seen["read"].append(Xp)
        return real_pre(Xp, center, scale)

    with mock.patch.object(api, "_input", spy_input), mock.patch.object(gradient_path, "_preprocess", spy_pre):
        glfs.select(X, "glfs_exact", graph=W, n_features_to_select=3)
    assert len(seen["validated"]) == 1 and seen["validated"][0] is not X  # glfs.select's one copy
    assert seen["read"] and all(r is seen["validated"][0] for r in seen["read"])  # read as it is downstream
