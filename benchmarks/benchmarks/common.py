"""What the suites share: the size profile, the seeded synthetic data and the naive dense formulas.

Sizes come from a profile chosen by the environment variable ``GLFS_BENCH_PROFILE``: ``fast``
(the default, what CI runs: each benchmark well under a second), ``regular`` (sizes where the
costs separate, minutes per suite) or ``large`` (atlas-like sizes, hours on two cores).

Data are made here, seeded, in the suites' ``setup_cache``: counts of a negative-binomial model
with cell groups whose marker genes are raised, and their log-normalised values (what
``sc.pp.normalize_total`` and ``sc.pp.log1p`` give).  Nothing is downloaded.

X is always (n_samples, n_features) = (cells, genes); graphs are sparse (cells, cells).
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

#: The environment variable that picks the profile, and the profile used without it.
PROFILE_VARIABLE = "GLFS_BENCH_PROFILE"
DEFAULT_PROFILE = "fast"

#: Sizes per profile.  ``cells`` x ``genes``: the data of the scores on a given graph and of the
#: single-cell peer (the dense peers, the naive formula and scikit-feature, build n x n matrices, so
#: ``cells`` stays small); ``graph_cells``: the own graph; ``by_cells`` at ``genes`` and ``by_genes``
#: at ``cells``: the scaling suites; ``ooc_cells`` x ``ooc_genes``: the out-of-core routes.
PROFILES = {
    "fast": {
        "cells": 1_000,
        "genes": 500,
        "graph_cells": 2_000,
        "by_cells": [500, 1_000, 2_000],
        "by_genes": [250, 500, 1_000],
        "ooc_cells": 2_000,
        "ooc_genes": 500,
    },
    "regular": {
        "cells": 4_000,
        "genes": 2_000,
        "graph_cells": 10_000,
        "by_cells": [2_000, 10_000, 50_000],
        "by_genes": [1_000, 4_000, 16_000],
        "ooc_cells": 50_000,
        "ooc_genes": 2_000,
    },
    "large": {
        "cells": 8_000,
        "genes": 5_000,
        "graph_cells": 50_000,
        "by_cells": [10_000, 100_000, 300_000],
        "by_genes": [2_000, 8_000, 20_000],
        "ooc_cells": 200_000,
        "ooc_genes": 5_000,
    },
}


def profile_name() -> str:
    """The profile named by ``GLFS_BENCH_PROFILE`` (default ``fast``); a ValueError for an unknown one."""
    name = os.environ.get(PROFILE_VARIABLE, DEFAULT_PROFILE).strip().lower() or DEFAULT_PROFILE
    if name not in PROFILES:
        msg = f"{PROFILE_VARIABLE} must be one of {sorted(PROFILES)}; got {name!r}"
        raise ValueError(msg)
    return name


PROFILE = profile_name()
SIZES = PROFILES[PROFILE]

#: The seed of every data set, graph and selection.
SEED = 0
#: Neighbours of the given graph (the library's default, He et al. 2005).
N_NEIGHBORS = 5
#: Cell groups of the simulated counts, and the share of genes that mark each group.
N_GROUPS = 8
MARKER_SHARE = 0.04
#: The smallest mean count of a gene (per cell of library size 1).
MIN_MEAN = 0.02
#: Negative-binomial shape (inverse dispersion) of the counts.
NB_SHAPE = 2.0
#: Values per generated block of cells (float64 temporaries of 32 MB).
BLOCK_VALUES = 2**22
#: The target sum per cell of the normalisation (scanpy's normalize_total target_sum).
TARGET_SUM = 1e4


def n_top(n_genes: int) -> int:
    """Genes to select: scanpy's usual 2,000, at most a fifth of the genes."""
    return max(1, min(2_000, n_genes // 5))


def simulate_counts(n_cells: int, n_genes: int, seed: int = SEED) -> sp.csr_matrix:
    """Seeded negative-binomial counts with marked cell groups, CSR float32 of shape (n_cells, n_genes).

    Gene means are gamma-distributed (shape 0.3: most genes low, a few high, as in droplet data)
    with a floor of :data:`MIN_MEAN`, so that no gene is all zeros at the profiles' sizes;
    each of :data:`N_GROUPS` groups raises its own :data:`MARKER_SHARE` of the genes by a log-normal
    factor around e; library sizes are log-normal.  Counts are Poisson-gamma (negative binomial
    with shape :data:`NB_SHAPE`).  Made in blocks of cells, so memory stays O(nnz + block).
    """
    rng = np.random.default_rng(seed)
    base = rng.gamma(0.3, 1.0, n_genes) + MIN_MEAN
    factors = np.ones((N_GROUPS, n_genes))
    n_mark = max(1, int(MARKER_SHARE * n_genes))
    for g in range(N_GROUPS):
        genes = rng.choice(n_genes, n_mark, replace=False)
        factors[g, genes] = np.exp(rng.normal(1.0, 0.3, n_mark))
    groups = rng.integers(0, N_GROUPS, n_cells)
    library = rng.lognormal(0.0, 0.4, n_cells)
    step = max(1, BLOCK_VALUES // n_genes)
    blocks = []
    for start in range(0, n_cells, step):
        rows = slice(start, min(n_cells, start + step))
        mu = library[rows, None] * base[None, :] * factors[groups[rows]]
        counts = rng.poisson(rng.gamma(NB_SHAPE, mu / NB_SHAPE))
        blocks.append(sp.csr_matrix(counts.astype(np.float32)))
    return sp.vstack(blocks, format="csr")


def log_normalize(counts: sp.csr_matrix) -> sp.csr_matrix:
    """log1p(counts / total * 10^4) per cell, CSR float32 (scanpy's normalize_total + log1p)."""
    totals = np.asarray(counts.sum(axis=1)).ravel()
    scale = np.divide(TARGET_SUM, totals, out=np.zeros_like(totals, dtype=np.float64), where=totals > 0)
    X = sp.csr_matrix(sp.diags(scale.astype(np.float32)) @ counts, dtype=np.float32)
    X.data = np.log1p(X.data)
    return X


def dataset(n_cells: int, n_genes: int, seed: int = SEED) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The counts and the log-normalised X of the suites, both CSR float32 (n_cells, n_genes)."""
    counts = simulate_counts(n_cells, n_genes, seed)
    return counts, log_normalize(counts)


def naive_laplacian_score(X, W) -> np.ndarray:
    """He, Cai & Niyogi (2005), Eq. 1 with dense matrices, as printed: the reference the library is timed against.

    L = D - W and D as dense (n, n) matrices; f~ = f - (f'D1 / 1'D1) 1 for every gene at once;
    score = f~'L f~ / f~'D f~ (lower is better).  O(n^2) memory and O(n^2 d) time, on purpose:
    it is the formula, not a method to use.  X dense (n, d), W sparse or dense (n, n).
    """
    Wd = W.toarray() if sp.issparse(W) else np.asarray(W, dtype=float)
    X = np.asarray(X, dtype=float)
    D = np.diag(Wd.sum(axis=1))
    L = D - Wd
    ones = np.ones(Wd.shape[0])
    d1 = D @ ones
    Xt = X - np.outer(ones, (d1 @ X) / (ones @ d1))
    num = np.einsum("ij,ij->j", Xt, L @ Xt)
    den = np.einsum("ij,ij->j", Xt, D @ Xt)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def naive_moran_i(X, W) -> np.ndarray:
    """Moran's I of every gene with a dense W (Moran 1950): I = (n / S0) z'Wz / z'z, z = f - mean(f).

    The statistic ``graph_moran`` ranks by (higher is better), without the library's permutation
    z-score.  O(n^2) memory, O(n^2 d) time.  X dense (n, d), W sparse or dense (n, n).
    """
    Wd = W.toarray() if sp.issparse(W) else np.array(W, dtype=float)
    np.fill_diagonal(Wd, 0.0)
    Z = np.asarray(X, dtype=float)
    Z = Z - Z.mean(axis=0)
    zz = np.einsum("ij,ij->j", Z, Z)
    zwz = np.einsum("ij,ij->j", Z, Wd @ Z)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(zz > 0, Z.shape[0] / Wd.sum() * zwz / zz, np.nan)


def naive_variance(X) -> np.ndarray:
    """The variance of every gene of a dense X (numpy's, ddof 0)."""
    return np.asarray(X, dtype=float).var(axis=0)


#: Per-benchmark timeout in seconds, by profile (asv's default is 60 s).
TIMEOUT = {"fast": 120, "regular": 1_800, "large": 7_200}[PROFILE]
#: The dense peers (the naive formula, scikit-feature) hold a few dense n x n float64 matrices:
#: above this many cells they are skipped (asv shows n/a), not run into the memory limit.
DENSE_PEER_MAX_CELLS = 10_000


def skip_dense_peer(n_cells: int) -> None:
    """Skip (asv's NotImplementedError in setup) a dense n x n peer above :data:`DENSE_PEER_MAX_CELLS` cells."""
    if n_cells > DENSE_PEER_MAX_CELLS:
        msg = f"the dense peer needs n x n matrices: {n_cells} cells > DENSE_PEER_MAX_CELLS {DENSE_PEER_MAX_CELLS}"
        raise NotImplementedError(msg)


def warm_up() -> None:
    """Call the library's sparse kernels once on a tiny input: numba's first call loads or compiles them.

    Called in the suites' ``setup`` (not timed), so that a benchmark times the computation, not the
    compilation that any process pays once.
    """
    import warnings

    import glfs

    _, X = dataset(200, 30, seed=SEED + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant gene of the tiny input is no news
        W = glfs.similarity_graph(X, n_neighbors=N_NEIGHBORS, random_state=SEED)
        for Xf in (X, X.tocsc()):
            glfs.laplacian_score(Xf, W)
            glfs.variance_score(Xf)
            glfs.select(Xf, "graph_moran", graph=W, n_features_to_select=5)
