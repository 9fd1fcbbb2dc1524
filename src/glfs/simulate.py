"""Planted-feature simulation of Wang & Goldenberg (ICML 2013), Sec. 3.1, Figure 1.

The paper says only: 400 samples, 4 significant features, N Gaussian noise
features with standard deviation sigma.  It does not say how the significant
features are generated.  Our choice (documented in docs/methods.md): the
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

__all__ = ["make_planted", "recovery_score"]


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
    if n_samples < 2 * n_informative:
        msg = f"n_samples must be at least {2 * n_informative}; got {n_samples}"
        raise ValueError(msg)
    if n_noise < 0:
        msg = f"n_noise must be >= 0; got {n_noise}"
        raise ValueError(msg)
    if not sigma > 0:
        msg = f"sigma must be positive; got {sigma}"
        raise ValueError(msg)
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
    I = pos[informative]
    return float(np.mean(1.0 / (np.maximum(k, I) - (k - 1))))
