"""Sparse PCA and Q-alpha baselines."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.decomposition import PCA, SparsePCA

import glfs
from glfs.scores._baselines import q_alpha, select_q_alpha, select_spca, spca_score
from glfs.simulation._simulate import make_planted, recovery_score


def _subspace_gap(A, B):
    """Largest principal-angle sine between the row spaces of A and B (k x d)."""
    Qa, _ = np.linalg.qr(A.T)
    Qb, _ = np.linalg.qr(B.T)
    return np.linalg.norm(Qa - Qb @ (Qb.T @ Qa), 2)


def test_spca_without_thresholding_is_pca():
    """lambda1 = 0 (all loadings kept): the fixed point spans the leading principal axes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 15)) @ np.diag(np.linspace(3, 0.5, 15))
    _, V = spca_score(X, n_components=3, n_nonzero=15, return_components=True, tol=1e-12, max_iter=2000)
    pcs = PCA(n_components=3).fit(X).components_
    assert _subspace_gap(V, pcs) < 1e-5


def test_spca_components_have_n_nonzero_loadings_and_unit_norm():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 60))
    s, V = spca_score(X, n_components=3, n_nonzero=7, return_components=True)
    assert ((V != 0).sum(axis=1) == 7).all()
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0)
    np.testing.assert_allclose(s, np.abs(V).sum(axis=0))


def test_spca_sklearn_solver_matches_sparsepca_directly():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(25, 12))
    s = spca_score(X, n_components=2, solver="sklearn", alpha=0.5, random_state=0)
    Xc = X - X.mean(0)
    V = (
        SparsePCA(n_components=2, alpha=0.5, random_state=0, max_iter=200, tol=1e-6)
        .fit(Xc / np.sqrt(Xc.var(0).mean()))
        .components_
    )
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    norms[norms == 0] = 1
    np.testing.assert_allclose(s, np.abs(V / norms).sum(0), rtol=1e-8, atol=1e-12)


def test_spca_recovers_planted_genes():
    X, informative, _ = make_planted(n_samples=200, n_noise=500, sigma=0.3, random_state=3)
    sel = select_spca(X, n_features=4)
    assert recovery_score(sel.ranking, informative) == 1.0
    assert glfs.select(X, method="spca", n_features_to_select=4).indices.tolist() == sel.indices.tolist()


def test_spca_ties_broken_by_variance():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 40)) * np.linspace(0.5, 2, 40)
    sel = select_spca(X, n_features=5, n_components=1, n_nonzero=3)
    zero = np.flatnonzero(sel.scores == 0)
    tail = sel.ranking[3:]
    assert set(tail) == set(zero)
    v = X.var(0)[tail]
    assert np.all(np.diff(v) <= 0)


def test_q_alpha_is_leading_eigenvector_of_explicit_G():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20, 12))
    a, info = q_alpha(X, n_clusters=3, return_info=True, init="random")
    M = X - X.mean(0)
    M /= np.linalg.norm(M, axis=0)
    Q = info["Q"]
    G = (M.T @ M) * (M.T @ Q @ Q.T @ M)  # G_ij = (m_i'm_j)(m_i'QQ'm_j)
    w, V = np.linalg.eigh(G)
    v = V[:, -1] * np.sign(V[:, -1].sum())
    np.testing.assert_allclose(a, v, atol=1e-7)
    assert a.sum() >= 0 and np.linalg.norm(a) == pytest.approx(1.0)


def test_q_alpha_pca_start_recovers_planted_and_random_start_is_seeded():
    X, informative, _ = make_planted(n_samples=200, n_noise=50, sigma=0.2, random_state=0)
    sel = select_q_alpha(X, n_features=4)
    assert set(sel.indices) == set(informative)
    a = q_alpha(X, init="random", random_state=1)
    b = q_alpha(X, init="random", random_state=1)
    np.testing.assert_array_equal(a, b)


def test_properties_dense_sparse_permutation_constant():
    rng = np.random.default_rng(6)
    X = np.maximum(rng.normal(size=(30, 25)), 0)
    X[:, 4] = 1.0
    perm = rng.permutation(25)
    for f in (select_spca, select_q_alpha):
        with pytest.warns(glfs.ConstantFeatureWarning, match="1 constant"):
            a = f(X, n_features=5)
        with pytest.warns(glfs.ConstantFeatureWarning):
            b = f(sp.csr_matrix(X), n_features=5)
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-8, equal_nan=True)
        assert np.isnan(a.scores[4]) and a.ranking[-1] == 4 and not a.selected[4]
        with pytest.warns(glfs.ConstantFeatureWarning):
            c = f(X[:, perm], n_features=5)
        # iterative solvers stop at tol: agreement to that tolerance, same top genes
        np.testing.assert_allclose(c.scores, a.scores[perm], rtol=1e-4, atol=1e-6, equal_nan=True)
        np.testing.assert_array_equal(perm[c.ranking[:5]], a.ranking[:5])


@pytest.mark.parametrize(
    ("fn", "kwargs", "match"),
    [
        (spca_score, {"n_components": 0}, r"n_components must be an integer in \[1, 8\]; got 0"),
        (spca_score, {"n_components": 50}, "n_components must be an integer in"),
        (spca_score, {"n_nonzero": 0}, "n_nonzero must be a positive integer"),
        (spca_score, {"solver": "lars"}, "solver must be"),
        (spca_score, {"solver": "sklearn", "alpha": -1.0}, "alpha must be a positive number"),
        (q_alpha, {"n_clusters": 0}, r"n_clusters must be an integer in \[1, 9\]; got 0"),
        (q_alpha, {"n_clusters": 10}, "n_clusters must be an integer in"),
        (q_alpha, {"init": "kmeans"}, "init must be"),
        (q_alpha, {"max_iter": 0}, "max_iter must be a positive integer"),
    ],
)
def test_bad_input(fn, kwargs, match):
    X = np.random.default_rng(7).normal(size=(10, 8))
    with pytest.raises(ValueError, match=match):
        fn(X, **kwargs)


def test_bad_params_in_select():
    X = np.random.default_rng(8).normal(size=(10, 8))
    with pytest.raises(ValueError, match="parameter 'ridge' is not a parameter of method 'spca'; its parameters are"):
        glfs.select(X, "spca", n_features_to_select=2, ridge=1)
    with pytest.raises(ValueError, match="parameter 'lambda1' is not a parameter of method 'q_alpha'"):
        glfs.select(X, "q_alpha", n_features_to_select=2, lambda1=1)


# ---- convergence is recorded and reaches the AnnData (an unconverged answer is flagged) ----


@pytest.mark.parametrize("solver", ["zou", "sklearn"])
def test_spca_records_whether_it_converged(solver, caplog):
    import logging

    X, _, _ = make_planted(n_samples=60, n_noise=40, sigma=0.5, random_state=0)
    _, info = spca_score(X, solver=solver, return_info=True)
    assert info["converged"] and info["n_iter"] >= 1
    with caplog.at_level(logging.WARNING, logger="glfs.scores._baselines"):
        _, info = spca_score(X, solver=solver, max_iter=1, tol=1e-14, return_info=True)
    assert info == {"n_iter": 1, "converged": False}
    assert any("did not converge in 1 iterations" in r.getMessage() for r in caplog.records)
    sel = select_spca(X, n_features=5, max_iter=1, tol=1e-14, solver=solver)
    assert sel.extra["converged"] is False and sel.extra["n_iter"] == 1


@pytest.mark.parametrize(
    ("method", "params"), [("q_alpha", {"max_iter": 1, "tol": 1e-14}), ("spca", {"max_iter": 1, "tol": 1e-14})]
)
def test_unconverged_iterative_methods_are_flagged_in_the_anndata(method, params):
    """tl.select and the workflow's annotate step (from the JSON sidecar) both put converged/n_iter
    into uns[method]["params"]; a converged solve says so too."""
    import anndata

    from glfs_workflow.tables import annotate_selection, selection_meta, selection_table

    X, _, _ = make_planted(n_samples=60, n_noise=40, sigma=0.5, random_state=0)
    a = anndata.AnnData(X)
    glfs.tl.select(a, method=method, n_top_genes=5, **params)
    assert a.uns[method]["params"]["converged"] is False and a.uns[method]["params"]["n_iter"] == 1
    sel = glfs.select(X, method=method, n_features_to_select=5, **params)
    meta = json.loads(json.dumps(selection_meta(sel, n_features=5, graph="none")))  # as the sidecar is read back
    b = anndata.AnnData(X)
    annotate_selection(b, selection_table(sel, b.var_names), meta)
    assert b.uns[method]["params"]["converged"] is False and b.uns[method]["params"]["n_iter"] == 1
    c = anndata.AnnData(X)
    glfs.tl.select(c, method=method, n_top_genes=5, max_iter=500)  # q_alpha needs 48 iterations here
    assert c.uns[method]["params"]["converged"] is True and c.uns[method]["params"]["n_iter"] < 500


@pytest.mark.parametrize(
    ("fn", "what"),
    [
        (lambda X: q_alpha(X, max_iter=4, tol=1e-14), "q_alpha"),
        (lambda X: spca_score(X, max_iter=4, tol=1e-14), "spca (zou)"),
    ],
)
def test_long_iterations_log_progress(fn, what, monkeypatch, caplog):
    """Long loops (q_alpha took 254 s on 50,000 cells) log their iteration; here every iteration is 'long'."""
    import logging

    import glfs.core._progress

    monkeypatch.setattr(glfs.core._progress, "PROGRESS_EVERY_S", 0.0)
    X, _, _ = make_planted(n_samples=60, n_noise=40, sigma=0.5, random_state=0)
    with caplog.at_level(logging.INFO, logger="glfs.scores._baselines"):
        fn(X)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"{what}: iteration")]
    assert [line.split(",")[0] for line in lines] == [f"{what}: iteration {i} of 4" for i in range(1, 5)]
    assert "change" in lines[-1] and "(tol 1e-14)" in lines[-1]


@pytest.mark.parametrize("n", [2, 3])
def test_spca_on_fewer_samples_than_components_says_which_parameter(n):
    """Issue 30 (low): spca on 2-3 cells named only its internal n_components; now the method and the way out."""
    X = np.random.default_rng(0).normal(size=(n, 10))
    with pytest.raises(
        ValueError,
        match=rf"spca: X has {n} samples x 10 genes; sparse PCA with 4 components \(the default\) "
        rf"needs at least 4 of each. Pass n_components={n} or fewer",
    ):
        glfs.select(X, method="spca", n_features_to_select=3)
    assert glfs.select(X, method="spca", n_features_to_select=3, n_components=n).indices.size == 3
