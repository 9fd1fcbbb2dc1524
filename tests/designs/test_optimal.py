"""LapAOFS / LapDOFS (He et al., TPAMI 2011): greedy steps against brute force."""

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
from glfs.designs._optimal import lapaofs, lapdofs, optimal_design_greedy, select_lapaofs, select_lapdofs
from glfs.simulation._simulate import make_planted


def _problem(n=12, d=9, seed=0, scale=3.0, shift=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale + shift
    W = glfs.similarity_graph(X, n_neighbors=4)
    return X, W


def _H(X, W, S, l1, l2):
    L = glfs.laplacian(W)[0].toarray()
    P = np.eye(X.shape[0]) + l1 * L
    XS = X[:, S]
    return XS.T @ P @ XS + l2 * np.eye(len(S))


def _brute_force(X, W, k, l1, l2, criterion):
    """Greedy by direct evaluation of Tr(H^-1) (Eq. 12) or det(H) (Eq. 13) with dense inverses."""
    S = []
    for _ in range(k):
        cand = [j for j in range(X.shape[1]) if j not in S]
        if criterion == "A":
            vals = [np.trace(np.linalg.inv(_H(X, W, S + [j], l1, l2))) for j in cand]
            S.append(cand[int(np.argmin(vals))])
        else:
            vals = [np.linalg.slogdet(_H(X, W, S + [j], l1, l2))[1] for j in cand]
            S.append(cand[int(np.argmax(vals))])
    return S


@pytest.mark.parametrize("criterion", ["A", "D"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("l1", "l2"), [(0.01, 0.01), (0.5, 0.3), (2.0, 5.0)])
def test_greedy_steps_equal_brute_force(criterion, seed, l1, l2):
    X, W = _problem(seed=seed)
    res = optimal_design_greedy(X, W, 7, criterion=criterion, lambda1=l1, lambda2=l2)
    assert res["order"].tolist() == _brute_force(X, W, 7, l1, l2, criterion)


@pytest.mark.parametrize("criterion", ["A", "D"])
def test_path_equals_direct_trace_and_logdet(criterion):
    X, W = _problem(seed=3)
    l1, l2 = 0.3, 0.2
    res = optimal_design_greedy(X, W, 6, criterion=criterion, lambda1=l1, lambda2=l2)
    for k in range(1, 7):
        H = _H(X, W, list(res["order"][:k]), l1, l2)
        if criterion == "A":
            assert res["trace"][k - 1] == pytest.approx(np.trace(np.linalg.inv(H)), rel=1e-10)
        else:
            assert res["logdet"][k - 1] == pytest.approx(np.linalg.slogdet(H)[1], rel=1e-10)


@pytest.mark.parametrize("criterion", ["A", "D"])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_criterion_values_equal_paper_equations_with_dense_inverse(criterion, k):
    """After k steps, every gene's criterion equals Eq. 20 / Eq. 29 computed with
    A_k = M + X_S X_S', M = lambda2 (I + lambda1 L)^-1, inverted directly (n x n)."""
    X, W = _problem(seed=4)
    l1, l2 = 0.4, 0.25
    res = optimal_design_greedy(X, W, k, criterion=criterion, lambda1=l1, lambda2=l2)
    n = X.shape[0]
    L = glfs.laplacian(W)[0].toarray()
    M = l2 * np.linalg.inv(np.eye(n) + l1 * L)
    S = res["order"]
    Ai = np.linalg.inv(M + X[:, S] @ X[:, S].T)
    AiG = Ai @ X
    q = np.einsum("ij,ij->j", X, AiG)
    expect = np.einsum("ij,ij->j", AiG, M @ AiG) / (1 + q) if criterion == "A" else q
    free = np.setdiff1d(np.arange(X.shape[1]), S)
    np.testing.assert_allclose(res["next_value"][free], expect[free], rtol=1e-9)
    assert np.all(np.isnan(res["next_value"][S]))


def test_incremental_inverse_after_k_steps_equals_direct_inverse():
    """The updated state w_j = H_S^-1 h_j and s_j = eta_j - h_j'H_S^-1 h_j, and the
    A_k^-1 it implies by Woodbury, equal direct inverses after k steps."""
    X, W = _problem(n=15, d=20, seed=5)
    l1, l2 = 0.2, 0.1
    k = 8
    res = optimal_design_greedy(X, W, k, criterion="A", lambda1=l1, lambda2=l2)
    S = list(res["order"])
    n = X.shape[0]
    L = glfs.laplacian(W)[0].toarray()
    P = np.eye(n) + l1 * L
    H = X[:, S].T @ P @ X[:, S] + l2 * np.eye(k)
    Hh = X[:, S].T @ P @ X  # (k, d): h_j
    Wdir = np.linalg.solve(H, Hh)
    np.testing.assert_allclose(res["_W"], Wdir, rtol=1e-8, atol=1e-10)
    eta = np.einsum("ij,ij->j", X, P @ X) + l2
    s_dir = eta - np.einsum("ij,ij->j", Hh, Wdir)
    free = np.setdiff1d(np.arange(X.shape[1]), S)
    np.testing.assert_allclose(res["_s"][free], s_dir[free], rtol=1e-8)
    # Woodbury: A_k^-1 = M^-1 - M^-1 X_S (lambda2 H^-1) X_S' M^-1 with M^-1 = P / lambda2
    Minv = P / l2
    Ak_inv = Minv - Minv @ X[:, S] @ (l2 * np.linalg.inv(H)) @ X[:, S].T @ Minv
    M = l2 * np.linalg.inv(P)
    np.testing.assert_allclose(Ak_inv, np.linalg.inv(M + X[:, S] @ X[:, S].T), rtol=1e-8, atol=1e-8)


def test_raw_expression_scale_matches_brute_force():
    """Raw-scale values (hundreds to thousands) with the paper's small lambdas."""
    rng = np.random.default_rng(6)
    X = np.exp(rng.normal(6, 1, size=(20, 15)))
    W = glfs.similarity_graph(X, n_neighbors=4)
    for crit in "AD":
        res = optimal_design_greedy(X, W, 6, criterion=crit)
        assert res["order"].tolist() == _brute_force(X, W, 6, 0.01, 0.01, crit)


def test_first_step_is_same_for_a_and_d():
    # At k = 0 both criteria are monotone in g' M^-1 g (Eq. 20 = q / (1 + q)).
    X, W = _problem(seed=7, d=30)
    assert lapaofs(X, W, n_features=1)[0] == lapdofs(X, W, n_features=1)[0]


def test_selection_object_ranking_scores():
    X, W = _problem(n=20, d=25, seed=8)
    sel = select_lapaofs(X, W, n_features=5)
    order = lapaofs(X, W, n_features=5)
    assert sel.ranking[:5].tolist() == order.tolist()
    assert sel.selected.sum() == 5 and set(np.flatnonzero(sel.selected)) == set(order)
    assert sel.higher_is_better
    # the genes after the greedy part are ordered by the criterion at step 6: the 6th
    # ranked gene is the 6th greedy pick
    assert sel.ranking[5] == lapaofs(X, W, n_features=6)[5]
    assert sorted(sel.ranking.tolist()) == list(range(25))
    selD = select_lapdofs(X, W, n_features=5)
    assert selD.ranking[:5].tolist() == lapdofs(X, W, n_features=5).tolist()
    assert "logdet" in selD.extra and "trace" in sel.extra


def test_registry_and_select_entry_point():
    X, W = _problem(n=20, d=25, seed=9)
    a = glfs.select(X, method="lapaofs", graph=W, n_features_to_select=4)
    assert a.indices.tolist() == lapaofs(X, W, n_features=4).tolist()
    b = glfs.select(X, method="lapdofs", graph=W, n_features_to_select=4, lambda1=0.1)
    assert b.params["lambda1"] == 0.1


def test_constant_genes_never_selected_and_nan():
    X, W = _problem(n=15, d=10, seed=10)
    X[:, 2] = 5.0
    X[:, 7] = 0.0
    with pytest.warns(glfs.ConstantFeatureWarning, match="2 constant"):
        sel = select_lapaofs(X, W, n_features=8)
    assert not sel.selected[[2, 7]].any()
    assert np.isnan(sel.scores[[2, 7]]).all()
    assert set(sel.ranking[-2:]) == {2, 7}
    assert sel.selected.sum() == 8
    with pytest.warns(glfs.ConstantFeatureWarning):
        order = lapdofs(X, W, n_features=10)  # more than the 8 non-constant genes
    assert len(order) == 8 and not {2, 7} & set(order.tolist())


def test_dense_and_sparse_give_same_result():
    X, W = _problem(n=15, d=12, seed=11)
    X[X < 0] = 0
    for f in (lapaofs, lapdofs):
        np.testing.assert_array_equal(f(X, W, n_features=6), f(sp.csr_matrix(X), W, n_features=6))


def test_permuting_genes_permutes_result():
    X, W = _problem(n=15, d=12, seed=12)
    perm = np.random.default_rng(0).permutation(12)
    for f in (select_lapaofs, select_lapdofs):
        a = f(X, W, n_features=5)
        b = f(X[:, perm], W, n_features=5)
        np.testing.assert_array_equal(perm[b.ranking], a.ranking)
        np.testing.assert_allclose(b.scores, a.scores[perm], rtol=1e-10)


def test_planted_signal_recovered():
    """4 cluster-indicator genes among 200 noise genes of small sd: the informative
    genes have the largest projections on the smooth (graph) directions."""
    X, informative, _ = make_planted(n_samples=120, n_noise=200, sigma=0.05, random_state=1)
    W = glfs.similarity_graph(X, n_neighbors=4)
    for f in (lapaofs, lapdofs):
        assert set(f(X, W, n_features=4).tolist()) == set(informative.tolist())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_features": 0}, "n_features must be an integer in"),
        ({"n_features": 99}, "n_features must be an integer in"),
        ({"n_features": 2.5}, "n_features must be an integer in"),
        ({"n_features": 2, "lambda1": 0}, "lambda1 must be a positive number"),
        ({"n_features": 2, "lambda2": -1.0}, "lambda2 must be a positive number"),
        ({"n_features": 2, "lambda2": float("nan")}, "lambda2 must be a positive number"),
    ],
)
def test_bad_input(kwargs, match):
    X, W = _problem()
    with pytest.raises(ValueError, match=match):
        lapaofs(X, W, **kwargs)


def test_bad_graph_and_params():
    X, W = _problem()
    with pytest.raises(ValueError, match="graph must have shape"):
        lapdofs(X, sp.eye(5, format="csr"), n_features=2)
    with pytest.raises(ValueError, match="parameter 'gamma' is not a parameter of method 'lapaofs'"):
        glfs.select(X, "lapaofs", graph=W, n_features_to_select=2, gamma=1.0)
    with pytest.raises(ValueError, match="criterion must be"):
        optimal_design_greedy(X, W, 2, criterion="E")
