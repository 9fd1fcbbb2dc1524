"""UFI (Zhang et al., TIP 2012, Algorithm 1): greedy removals against brute force."""

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.core.limits
from glfs.designs._ufi import _PrimalState, _State, select_ufi, ufi, ufi_form
from glfs.simulation._simulate import make_planted, recovery_score


def _trace(X, S, T, lam):
    """Eq. 9 evaluated directly in feature space: Tr((Z'Z + lam I_p)^-1), Z = X[T][:, S]."""
    Z = X[np.ix_(T, S)]
    return np.trace(np.linalg.inv(Z.T @ Z + lam * np.eye(len(S))))


def _brute_features(X, S, T, lam, target, removed):
    while len(S) > target:
        vals = [_trace(X, [s for s in S if s != j], T, lam) if len(S) > 1 else 0.0 for j in S]
        j = S[int(np.argmin(vals))]
        removed.append(j)
        S.remove(j)


def _brute_instances(X, S, T, lam, target, removed):
    while len(T) > target:
        vals = [_trace(X, S, [t for t in T if t != i], lam) for i in T]
        i = T[int(np.argmin(vals))]
        removed.append(i)
        T.remove(i)


@pytest.mark.parametrize("form", ["dual", "primal"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_feature_only_equals_brute_force_backward_elimination(seed, form):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(10, 8)) + 0.5
    lam = 0.3
    order = []
    _brute_features(X, list(range(8)), list(range(10)), lam, 0, order)
    res = ufi(X, n_features=1, ridge=lam, relative_ridge=False, full_ranking=True, form=form)
    assert res.removed_features.tolist() == order
    assert res.features.tolist() == [order[-1]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_joint_feature_and_instance_removal_equals_brute_force(seed):
    """Two iterations of Algorithm 1 with the schedule round(total - i (total - keep) / t)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(10, 8)) + 0.5
    lam = 0.3
    res = ufi(X, n_features=4, n_instances=5, n_iter=2, ridge=lam, relative_ridge=False)
    S, T, rf, ri = list(range(8)), list(range(10)), [], []
    objective = []
    for nf, ni in [(6, 8), (4, 5)]:  # 8 -> 6 -> 4 genes, 10 -> 8 (round(7.5)) -> 5 samples
        _brute_features(X, S, T, lam, nf, rf)
        _brute_instances(X, S, T, lam, ni, ri)
        objective.append(_trace(X, S, T, lam))
    assert res.removed_features.tolist() == rf
    assert res.removed_instances.tolist() == ri
    assert res.features.tolist() == sorted(S) and res.instances.tolist() == sorted(T)
    np.testing.assert_allclose(res.objective, objective, rtol=1e-10)


def test_paper_eq16_feature_space_instance_criterion_agrees_with_dual():
    """Eq. 16 in the paper's (feature-space) form, N = (GG' + lam I)^-1, picks the same instance
    as our dual argmax (P^2)_ii / P_ii."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(9, 6))
    lam = 0.2
    N = np.linalg.inv(X.T @ X + lam * np.eye(6))  # paper: G (features x instances), GG' = X'X here
    crit = np.array([x @ N @ N @ x / (1 - x @ N @ x) for x in X])
    P = np.linalg.inv(X @ X.T + lam * np.eye(9))
    dual = np.einsum("ij,ij->j", P, P) / np.diag(P)
    assert np.argmin(crit) == np.argmax(dual)
    # and the trace change agrees exactly: Tr after removal (primal) = const - dual + ...
    tr_after = np.array([_trace(X, list(range(6)), [t for t in range(9) if t != i], lam) for i in range(9)])
    np.testing.assert_allclose(tr_after - tr_after.min(), crit - crit.min(), rtol=1e-8, atol=1e-10)


def test_sherman_morrison_and_block_updates_equal_direct_inverse():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 30))
    lam = 0.05
    st = _State(X, lam, np.arange(12), np.arange(30))
    for _ in range(20):
        st.remove_feature(int(np.argmin(st.criterion())))
    Z = X[:, st.cols]
    P = np.linalg.inv(Z @ Z.T + lam * np.eye(12))
    np.testing.assert_allclose(st.P, P, rtol=1e-9, atol=1e-12)
    live = st.live
    Zc = st.Z[:, live]
    np.testing.assert_allclose(st.q1[live], np.einsum("ij,ij->j", Zc, P @ Zc), rtol=1e-9)
    np.testing.assert_allclose(st.q2[live], np.einsum("ij,ij->j", P @ Zc, P @ Zc), rtol=1e-9)
    for i in (3, 0, 7):
        st.remove_instance(i)
    Z = X[np.ix_(st.rows, st.cols)]
    np.testing.assert_allclose(st.P, np.linalg.inv(Z @ Z.T + lam * np.eye(st.rows.size)), rtol=1e-9, atol=1e-12)


def test_all_instances_kept_is_a_feature_selector_independent_of_n_iter():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(15, 40))
    a = ufi(X, n_features=10, n_iter=1)
    b = ufi(X, n_features=10, n_iter=20)
    c = ufi(X, n_features=10, n_instances=15, n_iter=7)
    assert a.features.tolist() == b.features.tolist() == c.features.tolist()
    assert a.removed_features.tolist() == b.removed_features.tolist()
    assert a.instances.tolist() == list(range(15)) and a.removed_instances.size == 0


def test_selection_ranking_is_reverse_removal_and_top_is_kept_set():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(15, 40))
    sel = select_ufi(X, n_features=10)
    res = ufi(X, n_features=10)
    assert set(sel.ranking[:10].tolist()) == set(res.features.tolist())
    assert set(np.flatnonzero(sel.selected)) == set(res.features.tolist())
    full = ufi(X, n_features=1, full_ranking=True)
    assert sel.ranking.tolist() == full.removed_features[::-1].tolist()
    assert sel.higher_is_better and np.all(np.isfinite(sel.scores))
    g = glfs.select(X, method="ufi", n_features_to_select=10)
    np.testing.assert_array_equal(g.ranking, sel.ranking)


def test_relative_ridge_makes_selection_scale_free():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(15, 30))
    a = ufi(X, n_features=5, full_ranking=True)
    b = ufi(250.0 * X, n_features=5, full_ranking=True)
    assert a.removed_features.tolist() == b.removed_features.tolist()
    assert b.ridge == pytest.approx(250.0**2 * a.ridge)


def test_planted_signal_recovered_at_low_noise():
    X, informative, _ = make_planted(n_samples=120, n_noise=300, sigma=0.2, random_state=1)
    sel = select_ufi(X, n_features=4)
    assert recovery_score(sel.ranking, informative) == 1.0


def test_constant_genes_ranked_last_never_selected():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(12, 10))
    X[:, [1, 6]] = 3.0
    with pytest.warns(glfs.ConstantFeatureWarning, match="2 constant"):
        sel = select_ufi(X, n_features=8)
    assert set(sel.ranking[-2:].tolist()) == {1, 6}
    assert np.isnan(sel.scores[[1, 6]]).all() and not sel.selected[[1, 6]].any()
    assert sel.selected.sum() == 8


def test_dense_sparse_and_permutation():
    rng = np.random.default_rng(10)
    X = np.maximum(rng.normal(size=(12, 20)), 0)
    a = select_ufi(X, n_features=5)
    b = select_ufi(sp.csr_matrix(X), n_features=5)
    np.testing.assert_array_equal(a.ranking, b.ranking)
    perm = rng.permutation(20)
    c = select_ufi(X[:, perm], n_features=5)
    np.testing.assert_array_equal(perm[c.ranking], a.ranking)
    np.testing.assert_allclose(c.scores, a.scores[perm], rtol=1e-8)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_features": 0}, "n_features must be an integer in"),
        ({"n_features": 11}, "n_features must be an integer in"),
        ({"n_features": 2, "n_instances": 9}, "n_instances must be an integer in"),
        ({"n_features": 2, "n_instances": 0}, "n_instances must be an integer in"),
        ({"n_features": 2, "n_iter": 0}, "n_iter must be a positive integer"),
        ({"n_features": 2, "ridge": -1.0}, "ridge must be a positive number"),
    ],
)
def test_bad_input(kwargs, match):
    X = np.random.default_rng(11).normal(size=(8, 10))
    with pytest.raises(ValueError, match=match):
        ufi(X, **kwargs)


def test_bad_params_in_select():
    X = np.random.default_rng(12).normal(size=(8, 10))
    with pytest.raises(ValueError, match="parameter 'lambda1' is not a parameter of method 'ufi'"):
        glfs.select(X, "ufi", n_features_to_select=2, lambda1=1.0)


# ---------------------------------------------------------------- primal form and size limits
@pytest.mark.parametrize("shape", [(40, 15), (25, 25), (12, 30)])
@pytest.mark.parametrize("scale", [1.0, 600.0])
def test_primal_equals_dual(shape, scale):
    """The gene-space (primal) removals equal the instance-space (dual) ones, values to 1e-8."""
    rng = np.random.default_rng(13)
    X = scale * (rng.normal(size=shape) + rng.uniform(0, 2, size=shape[1]))
    d = ufi(X, n_features=3, full_ranking=True, form="dual", refresh_every=7)
    p = ufi(X, n_features=3, full_ranking=True, form="primal", refresh_every=7)
    np.testing.assert_array_equal(p.removed_features, d.removed_features)
    np.testing.assert_array_equal(p.features, d.features)
    np.testing.assert_allclose(p.removal_criterion, d.removal_criterion, rtol=1e-8)
    # Eq. 9 after each iteration, directly: the primal value is exact; the dual one,
    # (p - q)/lam + Tr(P), cancels when q > p, so it is only compared loosely
    from glfs.designs._ufi import _schedule

    lam = p.ridge
    direct = []
    for count in _schedule(shape[1], 3, 20)[1:]:
        kept = np.setdiff1d(np.arange(shape[1]), p.removed_features[: shape[1] - count])
        direct.append(_trace(X, list(kept), list(range(shape[0])), lam))
    np.testing.assert_allclose(p.objective, direct, rtol=1e-9)
    np.testing.assert_allclose(d.objective, direct, rtol=1e-5)


def test_primal_updates_equal_direct_inverse():
    rng = np.random.default_rng(14)
    X = rng.normal(size=(50, 20))
    lam = 0.05
    st = _PrimalState(X, lam, np.arange(20))
    for _ in range(9):
        st.remove_feature(int(np.argmin(st.criterion())))
    cols = st.cols
    G = np.linalg.inv(X[:, cols].T @ X[:, cols] + lam * np.eye(cols.size))
    live = st.live
    np.testing.assert_allclose(st.Ginv[np.ix_(live, live)], G, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(st.g[live], np.diag(G), rtol=1e-9)
    np.testing.assert_allclose(st.s[live], np.diag(G @ G), rtol=1e-9)
    # the criterion is the dual Eq. 12 value f'P^2 f / (1 - f'Pf)
    Z = X[:, cols]
    P = np.linalg.inv(Z @ Z.T + lam * np.eye(50))
    dual = np.array([f @ P @ P @ f / (1 - f @ P @ f) for f in Z.T])
    np.testing.assert_allclose(st.criterion()[live], dual, rtol=1e-8)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((173, 1740, None), "dual"),  # bulk: more genes than samples
        ((50000, 2000, None), "primal"),  # single-cell, feature selection: 2000 x 2000
        ((50000, 2000, 50000), "primal"),  # n_instances = all
        ((5000, 2000, 100), "dual"),  # instance removal needs the dual: 5000^2 fits
    ],
)
def test_form_rule(args, expected):
    assert ufi_form(*args) == expected


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (
            (50000, 2000, 1000),
            {},
            r"ufi: the dual inverse P \(50000 x 50000\) would need 55\.9 GB, above the size limit of 4 GB.*n_instances=None.*primal form over the genes \(2000 x 2000\)",
        ),
        ((50000, 60000, None), {}, r"ufi: the dual inverse P \(50000 x 50000\).*size limit.*form='auto'"),
        ((200, 12000, None), {"form": "primal"}, None),
        (
            (100000, 30000, None),
            {},
            r"ufi: the primal inverse \(30000 x 30000\) would need 20\.\d GB.*size limit.*Pre-filter the genes",
        ),
        ((300, 200, None), {"limit_gb": 1e-4}, r"ufi: the primal inverse \(200 x 200\).*size limit of 0\.0001 GB"),
        ((300, 200, 100), {"form": "primal"}, r"form='primal' supports feature selection only"),
        ((300, 200, None), {"form": "fast"}, r"form must be 'auto', 'primal' or 'dual'; got 'fast'"),
    ],
)
def test_form_size_limit_refusals(args, kwargs, match):
    if match is None:
        assert ufi_form(*args, **kwargs) == "primal"
        return
    with pytest.raises(ValueError, match=match):
        ufi_form(*args, **kwargs)


def test_refuses_before_allocating(monkeypatch):
    """Through ufi() and glfs.select with a tiny limit: the error comes before any n x n allocation."""
    monkeypatch.setattr(glfs.core.limits, "DENSE_LIMIT_GB", 1e-6)
    X = np.random.default_rng(15).normal(size=(40, 10))
    with pytest.raises(ValueError, match=r"ufi: the dual inverse P \(40 x 40\).*size limit"):
        ufi(X, n_features=2, n_instances=20)
    with pytest.raises(ValueError, match=r"ufi: the primal inverse \(10 x 10\).*size limit"):
        glfs.select(X, method="ufi", n_features_to_select=2)
