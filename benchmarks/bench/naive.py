"""Naive references and the scikit-feature peer the benchmarks compare glfs against.

X is always (n_samples, n_features).  These functions build dense n x n
matrices on purpose: they are the formulas as printed, to time and to check
glfs against, never to use.
"""

from __future__ import annotations

import math

import numpy as np

from bench.settings import LAPAOFS_LAMBDA, N_NEIGHBORS


def naive_dense_laplacian_score(X, W):
    """He et al. 2005, Eq. 1 as printed: dense W, D, L and a loop over features.

    L_r = f~' L f~ / f~' D f~,  f~ = f - (f' D 1 / 1' D 1) 1 (lower is better).
    Cost: three dense n x n float64 matrices, O(n^2 d) time.
    X is (n_samples, n_features); W is the (n_samples, n_samples) graph,
    sparse or dense.  Returns (n_features,) scores, NaN for a constant gene.
    """
    Wd = W.toarray() if hasattr(W, "toarray") else np.asarray(W)
    D = np.diag(Wd.sum(axis=1))
    L = D - Wd
    ones = np.ones(Wd.shape[0])
    D1 = D @ ones
    one_D_one = ones @ D1
    out = np.empty(X.shape[1])
    for r in range(X.shape[1]):
        f = X[:, r]
        ft = f - (f @ D1) / one_D_one * ones
        den = ft @ (D @ ft)
        out[r] = (ft @ (L @ ft)) / den if den > 0 else np.nan
    return out


def naive_lapaofs(X, W, n_features, lambda1=LAPAOFS_LAMBDA, lambda2=LAPAOFS_LAMBDA):
    """LapAOFS (He et al. 2011, Eq. 17) by brute force.

    For every candidate gene g, invert A_k + g g' directly and evaluate
    Tr((A_k + g g')^{-1} M) (lower is better), M = lambda2 (I + lambda1 L)^{-1},
    A_0 = M.  X is (n_samples, n_features), W the (n_samples, n_samples)
    sparse graph.  Returns the indices of the ``n_features`` genes chosen, in
    order.  Cost: dense n x n matrices, O(k d n^3) time.
    """
    n, d = X.shape
    Wd = W.toarray()
    L = np.diag(Wd.sum(axis=1)) - Wd
    M = lambda2 * np.linalg.inv(np.eye(n) + lambda1 * L)
    A = M.copy()
    chosen = []
    avail = np.ones(d, dtype=bool)
    avail[np.ptp(X, axis=0) == 0] = False
    for _ in range(n_features):
        best, best_val = -1, np.inf
        for j in np.flatnonzero(avail):
            g = X[:, j]
            inv = np.linalg.inv(A + np.outer(g, g))
            val = np.sum(inv * M.T)  # Tr(inv @ M)
            if val < best_val:
                best, best_val = j, val
        chosen.append(best)
        avail[best] = False
        g = X[:, best]
        A = A + np.outer(g, g)
    return np.array(chosen)


def heat_t(X, k=N_NEIGHBORS):
    """glfs' default heat-kernel width: mean squared distance over the kNN edges.

    X is (n_samples, n_features); exactly k non-self neighbours per sample.
    """
    from sklearn.neighbors import NearestNeighbors

    dist, ind = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    self_ = ind == np.arange(X.shape[0])[:, None]
    d2 = np.where(self_, np.nan, dist**2)
    d2 = np.sort(d2, axis=1)[:, :k]
    return float(np.nanmean(d2))


def skfeature_width(t_glfs):
    """scikit-feature's heat width giving glfs' edge weights: t_sk = sqrt(t_glfs / 2).

    skfeature weights kNN edges with exp(-||xi-xj||^2 / (2 t^2)), glfs with
    exp(-||xi-xj||^2 / t).
    """
    return math.sqrt(t_glfs / 2)


def skfeature_graph(X, t_glfs):
    """skfeature's ``construct_W`` with the heat kernel matched to glfs' width.

    skfeature also keeps each sample as its own neighbour (k + 1 columns
    including self), so its W = W_glfs + I.
    """
    from skfeature.utility.construct_W import construct_W

    return construct_W(
        X,
        metric="euclidean",
        neighbor_mode="knn",
        weight_mode="heat_kernel",
        k=N_NEIGHBORS,
        t=skfeature_width(t_glfs),
    )
