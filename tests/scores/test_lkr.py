"""LKR score (Cheung & Zeng, TKDE 2009, Eq. 16) against an independent kernel-ridge fit."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.kernel_ridge import KernelRidge

import glfs
from glfs.scores._lkr import lkr_coefficients, lkr_score, select_lkr_score, select_lkr_score_supervised
from glfs.simulation._simulate import make_planted, recovery_score


def _naive(X, nbrs, deg, h, ridge, center=False):
    """Eq. 12-16 with scikit-learn's KernelRidge (same (K + lambda I)^-1 t solution, Eq. 3)."""
    n, d = X.shape
    pred = np.zeros((n, d))
    for i in range(n):
        kr = KernelRidge(alpha=ridge, kernel="rbf", gamma=1.0 / h)
        nb = nbrs[i]
        mu = deg @ X / deg.sum()
        F = X - mu if center else X
        kr.fit(X[nb], F[nb])
        pred[i] = kr.predict(X[i : i + 1])[0]
    mu = deg @ X / deg.sum()
    F = X - mu if center else X
    num = (deg[:, None] * (F - pred) ** 2).sum(0)
    den = (deg[:, None] * (X - mu) ** 2).sum(0)
    return num / den


@pytest.mark.parametrize("center", [False, True])
def test_unsupervised_equals_naive_kernel_ridge(center):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 6)) + 2.0
    W = glfs.similarity_graph(X, n_neighbors=4)
    Wd = W.toarray()
    nbrs = [np.flatnonzero(Wd[i]) for i in range(25)]
    h, ridge = 3.0, 0.2
    got = lkr_score(X, W, h=h, ridge=ridge, center=center)
    np.testing.assert_allclose(got, _naive(X, nbrs, Wd.sum(1), h, ridge, center), rtol=1e-8)


def test_supervised_equals_naive_leave_one_out_kernel_ridge():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(18, 5))
    y = np.repeat(["a", "b", "c"], [5, 6, 7])
    nbrs = [np.flatnonzero((y == y[i]) & (np.arange(18) != i)) for i in range(18)]
    got = lkr_score(X, labels=y, h=4.0, ridge=0.1)
    np.testing.assert_allclose(got, _naive(X, nbrs, np.ones(18), 4.0, 0.1), rtol=1e-8)


def test_default_graph_uses_gaussian_knn_and_same_h():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 4))
    # default: 10-NN symmetrised graph (Eq. 5) with weights exp(-d^2/h), h = mean edge d^2
    A = glfs.similarity_graph(X, n_neighbors=10, kernel="binary").tocoo()
    d2 = ((X[A.row] - X[A.col]) ** 2).sum(1)
    h = d2.mean()
    W = sp.csr_matrix((np.exp(-d2 / h), (A.row, A.col)), shape=(30, 30))
    np.testing.assert_allclose(lkr_score(X), lkr_score(X, W, h=h), rtol=1e-10)


def test_coefficients_rows_are_neighbourhoods():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 3))
    W = glfs.similarity_graph(X, n_neighbors=3)
    B, _ = lkr_coefficients(X, W, h=2.0)
    assert B.diagonal().sum() == 0
    assert (abs(B).toarray() > 0).sum() <= W.nnz
    assert set(zip(*B.nonzero())) <= set(zip(*W.nonzero()))


def test_planted_genes_recovered_unsupervised_and_supervised():
    X, informative, clusters = make_planted(n_samples=160, n_noise=300, sigma=0.3, random_state=4)
    s = lkr_score(X)
    assert recovery_score(np.argsort(s), informative) == 1.0
    s_sup = lkr_score(X, labels=clusters)
    assert recovery_score(np.argsort(s_sup), informative) == 1.0


def test_supervised_prefers_class_separating_genes():
    """Gene 0 follows the classes, gene 1 an unrelated grouping of the same size;
    the kernel is dominated by 30 noise genes.  Within a class gene 0 is constant
    (well predicted by class-mates), gene 1 is not: the supervised score ranks
    gene 0 first and far ahead of gene 1."""
    rng = np.random.default_rng(5)
    n = 80
    y = np.repeat([0, 1], n // 2)
    z = rng.permutation(y)  # a second grouping, unrelated to y
    X = np.column_stack([y + rng.normal(0, 0.1, n), z + rng.normal(0, 0.1, n), rng.normal(0, 1, (n, 30))])
    s_sup = lkr_score(X, labels=y)
    assert np.argmin(s_sup) == 0
    assert s_sup[0] < 0.2 * s_sup[1]
    s_swapped = lkr_score(X, labels=z)
    assert np.argmin(s_swapped) == 1


def test_scale_invariance_and_centering():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 8))
    W = glfs.similarity_graph(X, n_neighbors=4)
    a = np.linspace(0.5, 4, 8)
    base = lkr_score(X, W, h=2.0)
    # X -> c X with h -> c^2 h leaves the kernel, hence beta, unchanged; Eq. 16 is a ratio of quadratics
    c = 7.0
    np.testing.assert_allclose(lkr_score(c * X, W, h=2.0 * c**2), base, rtol=1e-9)
    # centred score is invariant to per-gene shifts (the kernel only sees differences)
    np.testing.assert_allclose(
        lkr_score(X + 3 * a, W, h=2.0, center=True), lkr_score(X, W, h=2.0, center=True), rtol=1e-9
    )
    # the printed (uncentred) score is not: ridge shrinkage penalises the offset
    assert np.all(lkr_score(X + 3 * a, W, h=2.0) > base)


def test_dense_and_sparse_same():
    rng = np.random.default_rng(7)
    X = np.maximum(rng.normal(size=(30, 12)), 0)
    W = glfs.similarity_graph(X, n_neighbors=4)
    np.testing.assert_allclose(lkr_score(sp.csr_matrix(X), W), lkr_score(X, W), rtol=1e-10)
    y = np.arange(30) % 3
    np.testing.assert_allclose(lkr_score(sp.csr_matrix(X), labels=y), lkr_score(X, labels=y), rtol=1e-10)


def test_permuting_genes_permutes_scores():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(30, 12))
    W = glfs.similarity_graph(X, n_neighbors=4)
    perm = rng.permutation(12)
    np.testing.assert_allclose(lkr_score(X[:, perm], W), lkr_score(X, W)[perm], rtol=1e-10)


def test_constant_genes_nan_and_warn():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(20, 6))
    X[:, 3] = 2.0
    with pytest.warns(glfs.ConstantFeatureWarning, match="1 constant"):
        sel = select_lkr_score(X, glfs.similarity_graph(X, n_neighbors=4), n_features=5)
    assert np.isnan(sel.scores[3]) and not sel.selected[3] and sel.ranking[-1] == 3
    assert not sel.higher_is_better


def test_select_entry_points():
    X, informative, clusters = make_planted(n_samples=80, n_noise=40, sigma=0.2, random_state=10)
    a = glfs.select(X, method="lkr_score", n_features_to_select=4)
    assert set(a.indices) == set(informative)
    b = glfs.select(X, method="lkr_score_supervised", n_features_to_select=4, labels=clusters, ridge=0.5)
    assert set(b.indices) == set(informative) and b.params["ridge"] == 0.5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"labels": np.arange(5)}, "labels must have length 20"),
        ({"labels": np.zeros(20)}, "labels must contain at least 2 classes"),
        ({"labels": np.r_[np.zeros(19), 1]}, "every class needs at least 2 samples"),
        ({"h": -1.0}, "h must be a positive number"),
        ({"ridge": 0.0}, "ridge must be a positive number"),
        ({"n_neighbors": 0}, "n_neighbors must be a positive integer"),
        ({"n_neighbors": 25}, "n_neighbors must be smaller"),
    ],
)
def test_bad_input(kwargs, match):
    X = np.random.default_rng(11).normal(size=(20, 4))
    with pytest.raises(ValueError, match=match):
        lkr_score(X, **kwargs)


def test_bad_input_combinations():
    X = np.random.default_rng(12).normal(size=(20, 4))
    W = glfs.similarity_graph(X, n_neighbors=3)
    with pytest.raises(ValueError, match="either W"):
        lkr_score(X, W, labels=np.arange(20) % 2)
    with pytest.raises(ValueError, match="W must have shape"):
        lkr_score(X, sp.eye(4, format="csr"))
    with pytest.raises(ValueError, match="labels must be given"):
        select_lkr_score_supervised(X, None, n_features=2)
    with pytest.raises(ValueError, match="parameter 'kernel' is not a parameter of method 'lkr_score'"):
        glfs.select(X, "lkr_score", graph=W, n_features_to_select=2, kernel="x")


# ---------------------------------------------------------------- scale: no stored sum_l N_l^2 coefficients
def _dense_form(X, B, deg, center):
    """The score as it was computed before: R = F - B F with the full coefficient matrix B."""
    mu = deg @ X / deg.sum()
    F = X - mu if center else X
    R = F - B @ F
    return np.einsum("i,ij,ij->j", deg, R, R) / np.einsum("i,ij,ij->j", deg, X - mu, X - mu)


@pytest.mark.parametrize("center", [False, True])
def test_supervised_loo_residuals_equal_coefficient_form(center):
    rng = np.random.default_rng(21)
    X = rng.normal(size=(45, 12)) + rng.uniform(0, 5, size=12)
    labels = np.repeat(["a", "b", "c"], [20, 15, 10])
    B, h = lkr_coefficients(X, labels=labels)
    expected = _dense_form(X, B.toarray(), np.ones(45), center)
    np.testing.assert_allclose(lkr_score(X, labels=labels, center=center), expected, rtol=1e-8)
    # the default width, computed without the N x N distances, equals the one from them
    from glfs.scores._lkr import _class_groups, _row_sq_norms, _within_class_h

    assert _within_class_h(X, _row_sq_norms(X), _class_groups(labels, 45)) == pytest.approx(h, rel=1e-10)


def test_unsupervised_gene_blocks_equal_dense_form(monkeypatch):
    import glfs.scores._lkr as lk

    rng = np.random.default_rng(22)
    X = rng.normal(size=(60, 23)) + 3.0
    W = glfs.similarity_graph(X, n_neighbors=4)
    B, _ = lkr_coefficients(X, W)
    deg = np.asarray(W.sum(axis=1)).ravel()
    monkeypatch.setattr(lk, "_GENE_BLOCK", 5)  # 5 blocks, the last one partial
    for center in (False, True):
        np.testing.assert_allclose(lkr_score(X, W, center=center), _dense_form(X, B.toarray(), deg, center), rtol=1e-10)


@pytest.mark.parametrize(
    ("sizes", "d", "kw", "match"),
    [
        (
            [30000, 20000],
            10,
            {},
            r"lkr_score_supervised: the kernel of the largest class \(30000 x 30000, three such matrices\) would need 20\.1 GB, above the size limit of 4 GB.*unsupervised lkr_score",
        ),
        # 50,000 cells in 8 classes: the kernels fit (0.9 GB) but the work does not: 8 (6250^3 + 4 6250^2 2000) = 4.5e12
        (
            [6250] * 8,
            2000,
            {},
            r"8 classes of up to 6250 samples x 2000 genes need 4\.5e\+12 floating-point operations.*size limit of 2e\+12",
        ),
        ([2500] * 8, 2000, {}, None),  # 20,000 cells in 8 classes: 5.3e11
        ([38, 34], 7129, {}, None),  # Golub
        ([40, 30], 1, {"limit_gb": 1e-5}, r"largest class \(40 x 40.*size limit of 1e-05 GB"),
        (
            [40, 30],
            1,
            {"max_flops": 1e4},
            r"2 classes of up to 40 samples x 1 genes need 1\.0e\+05 .*size limit of 1e\+04",
        ),
    ],
)
def test_supervised_size_limit(sizes, d, kw, match):
    from glfs.scores._lkr import supervised_size_check

    if match is None:
        supervised_size_check(sizes, d, **kw)
        return
    with pytest.raises(ValueError, match=match):
        supervised_size_check(sizes, d, **kw)


def test_supervised_refuses_before_allocating(monkeypatch):
    import glfs.core.limits

    monkeypatch.setattr(glfs.core.limits, "DENSE_LIMIT_GB", 1e-6)
    X = np.random.default_rng(23).normal(size=(40, 5))
    labels = np.repeat([0, 1], 20)
    with pytest.raises(ValueError, match=r"largest class \(20 x 20.*size limit"):
        glfs.select(X, method="lkr_score_supervised", labels=labels, n_features_to_select=2)
    with pytest.raises(ValueError, match=r"largest class \(20 x 20.*size limit"):
        lkr_coefficients(X, labels=labels)


def test_batched_local_regressions_equal_per_sample_solves(monkeypatch):
    """The batched solves (grouped by neighbourhood size, several batches) equal one solve per sample."""
    import glfs.scores._lkr as lk

    rng = np.random.default_rng(24)
    X = rng.normal(size=(70, 9)) * rng.uniform(0.5, 3, size=9)
    W = glfs.similarity_graph(X, n_neighbors=4)  # union symmetrisation: neighbourhood sizes vary
    assert np.unique(np.diff(W.indptr)).size > 1
    monkeypatch.setattr(lk, "_BATCH_BYTES", 8 * 5 * 9 * 6)  # a handful of samples per batch
    B, h = lkr_coefficients(X, W, ridge=0.1)
    for i in range(70):
        nb = W.indices[W.indptr[i] : W.indptr[i + 1]]
        D2 = ((X[nb][:, None, :] - X[nb][None, :, :]) ** 2).sum(-1)
        k = np.exp(-((X[nb] - X[i]) ** 2).sum(-1) / h)
        beta = np.linalg.solve(np.exp(-D2 / h) + 0.1 * np.eye(nb.size), k)
        np.testing.assert_allclose(B[i, nb].toarray().ravel(), beta, rtol=1e-9, atol=1e-12)
