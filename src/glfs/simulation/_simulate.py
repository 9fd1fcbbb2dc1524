"""Planted-feature simulation of Wang & Goldenberg (ICML 2013), Sec. 3.1, Figure 1.

The paper says only: 400 samples, 4 significant features, N Gaussian noise
features with standard deviation sigma.  It does not say how the significant
features are generated.  Our choice (documented in docs/methods/simulation.md): the
samples fall into 4 equal clusters; informative feature j is the indicator of
cluster j plus N(0, signal_sd^2) jitter, so each informative gene separates one
cluster from the rest and the four together identify every cluster.  Noise
features are N(0, sigma^2), independent of the clusters.

X has shape (n_samples, n_informative + n_noise); the informative features are
placed at random column positions so that index order carries no information
(stable tie breaking would otherwise favour them).
"""

from __future__ import annotations

import numpy as np

from glfs.api import method_info, select
from glfs.core._validation import check_int, check_real
from glfs.graph._similarity import DEFAULT_GRAPH_PARAMS, similarity_graph

__all__ = ["make_planted", "recovery_score", "simulation_grid", "point_seed", "recovery_experiment"]


def make_planted(
    n_samples: int = 400,
    n_noise: int = 1000,
    sigma: float = 0.2,
    *,
    n_informative: int = 4,
    signal_sd: float = 0.1,
    random_state=0,
):
    """Simulated expression matrix with planted informative features.

    Returns
    -------
    X : ndarray of shape (n_samples, n_informative + n_noise)
    informative : ndarray of shape (n_informative,)
        Column indices of the informative features.
    clusters : ndarray of shape (n_samples,)
        Cluster of each sample (0..n_informative-1).
    """
    n_samples = check_int(n_samples, "n_samples", min_val=2 * n_informative)
    n_noise = check_int(n_noise, "n_noise", min_val=0)
    sigma = check_real(sigma, "sigma", min_val=0, include_boundaries="neither")
    rng = np.random.default_rng(random_state)
    clusters = np.arange(n_samples) % n_informative
    rng.shuffle(clusters)
    signal = (clusters[:, None] == np.arange(n_informative)[None, :]).astype(float)
    signal += rng.normal(0.0, signal_sd, size=signal.shape)
    noise = rng.normal(0.0, sigma, size=(n_samples, n_noise))
    d = n_informative + n_noise
    perm = rng.permutation(d)
    X = np.empty((n_samples, d))
    informative = np.sort(perm[:n_informative])
    X[:, informative] = signal[:, np.argsort(np.argsort(perm[:n_informative]))]
    X[:, np.setdiff1d(np.arange(d), informative)] = noise
    return X, informative, clusters


def recovery_score(ranking, informative) -> float:
    """Score = 1/4 sum_i 1 / (max(4, I(f_i)) - 3), I = 1-based rank (Wang & Goldenberg 2013, Sec. 3.1).

    Generalised to k informative features: 1/k sum 1 / (max(k, I) - (k - 1)).
    1.0 when the informative features occupy the top k ranks.
    """
    ranking = np.asarray(ranking)
    informative = np.asarray(informative)
    k = informative.size
    pos = np.empty(ranking.size, dtype=np.int64)
    pos[ranking] = np.arange(1, ranking.size + 1)
    I = pos[informative]  # noqa: E741 (the paper's I(f_i))
    return float(np.mean(1.0 / (np.maximum(k, I) - (k - 1))))


def simulation_grid(sigma_grid, n_noise_at_sigma, n_noise_grid, sigma_at_n_noise) -> list[tuple[float, int]]:
    """Grid points (sigma, n_noise) of Figure 1: panel A (sigma varies at fixed N) and
    panel B (N varies at fixed sigma); a point in both panels appears once."""
    pts = [(float(s), int(n_noise_at_sigma)) for s in sigma_grid]
    pts += [(float(sigma_at_n_noise), int(n)) for n in n_noise_grid]
    return list(dict.fromkeys(pts))


def point_seed(random_state, sigma: float, n_noise: int, replicate: int) -> int:
    """Seed of one simulated data set; the same for every method, so methods see identical data."""
    base = 0 if random_state is None else int(random_state)
    ss = np.random.SeedSequence([base, int(replicate), int(n_noise), int(round(float(sigma) * 1e6))])
    return int(ss.generate_state(1)[0])


def recovery_experiment(
    method: str,
    points,
    *,
    replicates: int = 3,
    n_samples: int = 400,
    n_informative: int = 4,
    graph_params: dict | None = None,
    method_params: dict | None = None,
    random_state=0,
) -> list[dict]:
    """Recovery Score of one method over simulation grid points (Wang & Goldenberg 2013, Figure 1).

    For each (sigma, n_noise) in ``points`` and each replicate: draw
    :func:`make_planted` data (seed from :func:`point_seed`, identical for
    every method), build the kNN graph with ``graph_params``
    (:func:`glfs.similarity_graph`), rank all features with
    :func:`glfs.select` (``n_features = n_informative``) and score the ranking
    with :func:`recovery_score` (1 = the informative features on top; higher
    is better).

    X of each data set has shape (n_samples, n_informative + n_noise); the
    cost is that of the method on that matrix, times the number of points and
    replicates.

    Returns
    -------
    list of dict
        Records ``method, sigma, n_noise, replicate, score``.
    """
    replicates = check_int(replicates, "replicates", min_val=1)
    gp = {**DEFAULT_GRAPH_PARAMS, **(graph_params or {})}
    out = []
    for sigma, n_noise in points:
        for rep in range(int(replicates)):
            seed = point_seed(random_state, sigma, n_noise, rep)
            X, informative, _ = make_planted(n_samples, n_noise, sigma, n_informative=n_informative, random_state=seed)
            W = similarity_graph(X, **gp) if method_info(method).needs_graph else None
            sel = select(
                X,
                method=method,
                graph=W,
                n_features_to_select=n_informative,
                random_state=seed,
                **(method_params or {}),
            )
            out.append(
                {
                    "method": method,
                    "sigma": float(sigma),
                    "n_noise": int(n_noise),
                    "replicate": rep,
                    "score": recovery_score(sel.ranking, informative),
                }
            )
    return out
