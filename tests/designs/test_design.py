"""The well-posed GLFS (``method="glfs"``, glfs.designs._budgeted): brute force, finite differences, planted truth."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
from glfs.designs._budgeted import (
    glfs_design,
    relaxed_criterion,
    scale_free_lambdas,
    standardise,
    trace_criterion,
)
from glfs.designs._optimal import optimal_design_greedy
from glfs.simulation._simulate import make_planted, recovery_score


def _toy(n=24, d=9, seed=0):
    rng = np.random.default_rng(seed)
    # correlated genes, so that greedy is not trivially optimal
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d)
    W = glfs.similarity_graph(X, n_neighbors=4)
    return X, W


def _direct(X, W, genes, r, center=False):
    Xs = standardise(X, center)
    return trace_criterion(Xs, W, genes, lambda1=r.params["lambda1"], lambda2=r.params["lambda2"])


def _trace_naive(Xs, W, genes, lambda1, lambda2):
    """Tr(H_S^-1) from its definition with a dense Laplacian (independent of the library's code)."""
    Wd = W.toarray()
    L = np.diag(Wd.sum(1)) - Wd
    XS = Xs[:, list(genes)]
    H = XS.T @ (np.eye(Xs.shape[0]) + lambda1 * L) @ XS + lambda2 * np.eye(len(genes))
    return float(np.trace(np.linalg.inv(H)))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_is_one_swap_local_optimum_by_brute_force(seed, k):
    X, W = _toy(seed=seed)
    r = glfs_design(X, W, k, graph_weight=1.0)
    Xs = standardise(X, False)
    l1, l2 = r.params["lambda1"], r.params["lambda2"]
    S = set(r.selected.tolist())
    here = _trace_naive(Xs, W, S, l1, l2)
    assert r.converged
    assert r.criterion == pytest.approx(here, rel=1e-10)
    for i, j in itertools.product(S, set(range(X.shape[1])) - S):
        assert _trace_naive(Xs, W, (S - {i}) | {j}, l1, l2) >= here * (1 - 1e-9)
    # never worse than the greedy start, and the greedy value is the greedy set's criterion
    g = optimal_design_greedy(Xs, W, k, criterion="A", lambda1=l1, lambda2=l2)["order"]
    assert r.greedy_criterion == pytest.approx(_trace_naive(Xs, W, g, l1, l2), rel=1e-10)
    assert r.criterion <= r.greedy_criterion * (1 + 1e-12)


def test_swap_deltas_match_direct_traces():
    X, W = _toy(n=30, d=12, seed=3)
    r = glfs_design(X, W, 4, max_swaps=0, graph_weight=1.0)
    Xs = standardise(X, False)
    l1, l2 = r.params["lambda1"], r.params["lambda2"]
    from glfs.designs._budgeted import _Exchange

    L, _ = glfs.laplacian(W)
    P = sp.identity(30) + l1 * L
    q = np.einsum("ij,ij->j", Xs, P @ Xs)
    ex = _Exchange(Xs, lambda idx: (P @ Xs[:, idx]).T @ Xs, q, l2, [0, 3, 5, 7], np.zeros(12, bool))
    D = ex.deltas()
    base = _trace_naive(Xs, W, [0, 3, 5, 7], l1, l2)
    assert ex.trace == pytest.approx(base, rel=1e-10)
    for p, _i in enumerate(ex.S):
        for j in range(12):
            S2 = list(ex.S)
            if j in S2:
                assert np.isinf(D[p, j])
                continue
            S2[p] = j
            assert D[p, j] == pytest.approx(_trace_naive(Xs, W, S2, l1, l2) - base, rel=1e-7, abs=1e-12)


def test_exchange_can_beat_greedy_and_reaches_best_subset_on_small_case():
    # across seeds, the exchange must find the brute-force optimum at least as often as greedy,
    # and strictly improve on greedy somewhere (otherwise the exchange would be dead code)
    better, opt_ex, opt_gr = 0, 0, 0
    for seed in range(12):
        X, W = _toy(n=20, d=10, seed=seed)
        r = glfs_design(X, W, 3, graph_weight=1.0)
        Xs = standardise(X, False)
        l1, l2 = r.params["lambda1"], r.params["lambda2"]
        best = min(_trace_naive(Xs, W, c, l1, l2) for c in itertools.combinations(range(10), 3))
        better += r.criterion < r.greedy_criterion * (1 - 1e-9)
        opt_ex += r.criterion <= best * (1 + 1e-9)
        opt_gr += r.greedy_criterion <= best * (1 + 1e-9)
    assert opt_ex >= opt_gr
    assert better >= 1


def test_relaxed_criterion_equals_trace_at_vertices_and_gradient_by_finite_differences():
    X, W = _toy(n=20, d=8, seed=4)
    l1, l2 = 0.3, 2.0
    beta = np.array([1, 0, 1, 0, 0, 1, 0, 0], float)
    c, _ = relaxed_criterion(beta, X, W, lambda1=l1, lambda2=l2)
    assert c == pytest.approx(_trace_naive(X, W, [0, 2, 5], l1, l2), rel=1e-10)
    rng = np.random.default_rng(0)
    b = rng.uniform(0.2, 0.9, size=8)
    b[[1, 6]] = 0.0
    _, g = relaxed_criterion(b, X, W, lambda1=l1, lambda2=l2)
    for i in range(8):
        h = 1e-6
        e = np.zeros(8)
        e[i] = h
        if b[i] > 0:
            fd = (
                relaxed_criterion(b + e, X, W, lambda1=l1, lambda2=l2)[0]
                - relaxed_criterion(b - e, X, W, lambda1=l1, lambda2=l2)[0]
            ) / (2 * h)
        else:  # one-sided at the boundary
            fd = (
                relaxed_criterion(b + e, X, W, lambda1=l1, lambda2=l2)[0]
                - relaxed_criterion(b, X, W, lambda1=l1, lambda2=l2)[0]
            ) / h
        assert g[i] == pytest.approx(fd, rel=1e-4)


def test_relaxation_is_concave_and_every_vertex_is_first_order_stationary():
    # the two facts docs/methods/glfs-design.md gives for why the continuous solver is replaced by exchange
    X, W = _toy(n=20, d=8, seed=5)
    l1, l2 = 0.3, 0.5
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = rng.uniform(0.05, 1, size=(2, 8))
        ca = relaxed_criterion(a, X, W, lambda1=l1, lambda2=l2)[0]
        cb = relaxed_criterion(b, X, W, lambda1=l1, lambda2=l2)[0]
        cm = relaxed_criterion(0.5 * (a + b), X, W, lambda1=l1, lambda2=l2)[0]
        assert cm >= 0.5 * (ca + cb) - 1e-12
    for S in itertools.combinations(range(8), 3):
        beta = np.zeros(8)
        beta[list(S)] = 1.0
        _, g = relaxed_criterion(beta, X, W, lambda1=l1, lambda2=l2)
        inside, outside = g[list(S)], np.delete(g, list(S))
        assert inside.max() <= 1 / l2 + 1e-12 <= outside.min() + 2e-12  # KKT of the capped simplex holds


def test_planted_genes_recovered():
    X, informative, _ = make_planted(200, 500, 0.3, random_state=7)
    W = glfs.similarity_graph(X, n_neighbors=5)
    sel = glfs.select(X, "glfs", graph=W, n_features_to_select=4)
    assert set(sel.indices.tolist()) == set(informative.tolist())
    assert recovery_score(sel.ranking, informative) == 1.0
    assert sel.params["converged"] is True


def test_selection_contract_and_determinism():
    X, W = _toy(n=40, d=30, seed=8)
    a = glfs.select(X, "glfs", graph=W, n_features_to_select=5)
    b = glfs.select(X, "glfs", graph=W, n_features_to_select=5)
    assert np.array_equal(a.ranking, b.ranking)
    assert a.selected.sum() == 5 and set(a.ranking[:5]) == set(np.flatnonzero(a.selected))
    assert np.all(a.weights[a.selected] == 1.0) and np.all(a.weights[~a.selected] == 0.0)
    # scores: selected genes (cost of best replacement) >= others (minus cost of bringing them in)
    assert a.scores[a.selected].min() >= a.scores[~a.selected].max() - 1e-9
    assert a.params["criterion"] <= a.params["greedy_criterion"]
    # permuting genes permutes the selection
    perm = np.random.default_rng(0).permutation(30)
    c = glfs.select(X[:, perm], "glfs", graph=W, n_features_to_select=5)
    assert set(perm[c.indices].tolist()) == set(a.indices.tolist())


def test_not_converged_is_flagged():
    X, W = _toy(n=20, d=10, seed=0)
    # find a case where greedy is not a local optimum, then forbid swaps
    for seed in range(30):
        X, W = _toy(n=20, d=10, seed=seed)
        r = glfs_design(X, W, 3, graph_weight=1.0)
        if r.n_swaps:
            break
    else:
        pytest.skip("no case with a swap")
    r0 = glfs_design(X, W, 3, graph_weight=1.0, max_swaps=0)
    assert not r0.converged and r0.best_swap < 0
    assert r0.criterion == pytest.approx(r.greedy_criterion)


def test_scale_free_lambdas_do_not_depend_on_units():
    X, W = _toy(n=30, d=15, seed=9)
    a = glfs.select(X, "glfs", graph=W, n_features_to_select=4)
    b = glfs.select(1000.0 * X + 5.0, "glfs", graph=3.0 * W, n_features_to_select=4, center=True)
    c = glfs.select(X, "glfs", graph=W, n_features_to_select=4, center=True)
    assert np.array_equal(b.ranking, c.ranking)
    l1, l2 = scale_free_lambdas(W, 30, graph_weight=2.0, ridge=0.5)
    assert l1 == pytest.approx(2.0 * 30 / W.sum()) and l2 == pytest.approx(15.0)
    assert a.params["lambda1"] == pytest.approx(0.1 * 30 / W.sum())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"graph_weight": -1.0}, "graph_weight must be a non-negative"),
        ({"ridge": 0.0}, "ridge must be a positive"),
        ({"ridge": float("nan")}, "ridge must be a positive"),
        ({"tol": -1}, "tol must be a non-negative"),
        ({"max_swaps": -1}, "max_swaps must be a non-negative integer"),
        ({"max_swaps": 1.5}, "max_swaps must be a non-negative integer"),
        ({"start": [0, 0, 1]}, "start must hold 3 distinct"),
        ({"start": [0, 1]}, "start must hold 3 distinct"),
        ({"start": [0, 1, 99]}, "start must hold 3 distinct"),
        ({"order": "weights"}, r"order must be one of \('greedy', 'essentiality'\); got 'weights'"),
    ],
)
def test_bad_inputs(kwargs, match):
    X, W = _toy(n=20, d=10, seed=0)
    with pytest.raises(ValueError, match=match):
        glfs_design(X, W, 3, **kwargs)


def test_bad_inputs_through_select():
    X, W = _toy(n=20, d=10, seed=0)
    with pytest.raises(ValueError, match="parameter 'lam' is not a parameter of method 'glfs'"):
        glfs.select(X, "glfs", graph=W, n_features_to_select=3, lam=0.1)
    with pytest.raises(
        ValueError, match=r"n_features_to_select must be an integer in \[1, 10\] for method 'glfs' .*; got None"
    ):
        glfs.select(X, "glfs", graph=W)


def test_constant_genes_never_selected():
    X, W = _toy(n=20, d=10, seed=0)
    X[:, 2] = 3.0
    with pytest.warns(glfs.ConstantFeatureWarning):
        sel = glfs.select(X, "glfs", graph=W, n_features_to_select=9)
    assert not sel.selected[2] and np.isnan(sel.scores[2]) and sel.ranking[-1] == 2


# ---- order of the selected genes in the ranking (nested greedy order) ----


@pytest.mark.parametrize("start", [None, [8, 6, 4, 2, 0]])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_greedy_order_is_the_greedy_step_by_brute_force(seed, start):
    """Each prefix of the ranking adds, among the answer's remaining genes, the one with the smallest
    Tr(H^-1) of the enlarged prefix (direct traces from the definition, dense Laplacian).  With the
    greedy start and no swap the start's own order is used; a given start makes the order be recomputed."""
    X, W = _toy(n=24, d=9, seed=seed)
    r = glfs_design(X, W, 5, graph_weight=1.0, start=start)
    if start is not None:
        assert r.n_swaps > 0  # the recomputed order is the one checked
    Xs = standardise(X, False)
    l1, l2 = r.params["lambda1"], r.params["lambda2"]
    prefix, left = [], set(r.selected.tolist())
    for g in r.ranking[:5]:
        costs = {j: _trace_naive(Xs, W, [*prefix, j], l1, l2) for j in left}
        assert costs[int(g)] == pytest.approx(min(costs.values()), rel=1e-9)
        prefix.append(int(g))
        left.remove(int(g))
    assert set(r.ranking[:5].tolist()) == set(r.selected.tolist())


def test_greedy_order_equals_the_greedy_start_without_swaps():
    X, W = _toy(n=40, d=30, seed=8)
    r = glfs_design(X, W, 6)
    assert r.n_swaps == 0
    Xs = standardise(X, False)
    g = optimal_design_greedy(Xs, W, 6, criterion="A", lambda1=r.params["lambda1"], lambda2=r.params["lambda2"])
    np.testing.assert_array_equal(r.ranking[:6], np.asarray(g["order"][:6]))


@pytest.mark.parametrize("n_features", [99, 100])
def test_greedy_order_ranks_planted_genes_first_when_k_approaches_n(n_features):
    """100 samples, 4 planted + 9,996 noise genes (sigma 0.2), k = 99 or 100 genes: every set of about n genes
    spans the samples, so the cost of a replacement says little; the old essentiality order put the planted
    genes at ranks 19, 10, 53, 6 (k = 99) and 60, 4, 76, 61 (k = 100) of the 4 needed on top."""
    X, informative, _ = make_planted(100, 9996, 0.2, random_state=0)
    W = glfs.similarity_graph(X, n_neighbors=5)
    greedy = glfs.select(X, "glfs", graph=W, n_features_to_select=n_features)
    assert set(informative.tolist()) <= set(greedy.indices.tolist())
    assert recovery_score(greedy.ranking, informative) == 1.0
    assert greedy.params["order"] == "greedy"
    ess = glfs.select(X, "glfs", graph=W, n_features_to_select=n_features, order="essentiality")
    assert recovery_score(ess.ranking, informative) < 0.5  # the failure the greedy order fixes
    assert set(ess.indices.tolist()) == set(greedy.indices.tolist())  # same answer, other order
