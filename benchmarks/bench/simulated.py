"""Simulated data shared by the benchmark scripts (nothing here measures anything).

- :func:`simulate_lognorm`: dense single-cell-like log-normalised counts with planted clusters
  (scaling.py, graph_at_scale.py, spectral_solvers.py, workflow_50k.py);
- :func:`simulate_atlas`: sparse counts written in cell blocks to two .h5ad files, never the whole
  matrix in memory (atlas_scale.py, pca_sketch.py; knn_* read its files); :func:`atlas_model` and
  :func:`atlas_block` its gene programme and cells (also bench.atlas_store's shards, dask_cluster.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

N_CLUSTERS = 8  # simulate_lognorm's cell clusters
MARKERS_PER_CLUSTER = 25  # and marker genes per cluster (fewer when d < 2 * 8 * 25)
ATLAS_GROUPS = 10  # simulate_atlas's cell groups
ATLAS_BLOCK = 20_000  # cells per block written


def n_markers(d):
    """Marker genes per cluster of :func:`simulate_lognorm` at d genes."""
    return min(MARKERS_PER_CLUSTER, d // (2 * N_CLUSTERS))


def planted_genes(d):
    """The planted (marker) gene indices of :func:`simulate_lognorm` at d genes: the first ones."""
    return np.arange(N_CLUSTERS * n_markers(d))


def simulate_lognorm(n, d, seed=0):
    """Single-cell-like log-normalised counts with planted clusters.

    Gene means are log-normal; each of 8 clusters raises 25 marker genes
    (genes 0-199 at d = 2,000, fewer columns scale down) fourfold; counts are
    negative binomial (Poisson-gamma, shape 2) times a log-normal library
    size; then counts / library * median library, log1p, float32 (what
    ``sc.pp.normalize_total`` + ``sc.pp.log1p`` give).  Returns X (n, d),
    cluster labels (n,) and the planted gene indices.
    """
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, N_CLUSTERS, n)
    n_mark = n_markers(d)
    base = rng.lognormal(-1.0, 1.0, d).astype(np.float32)
    lib = rng.lognormal(0.0, 0.4, n).astype(np.float32)
    X = np.empty((n, d), dtype=np.float32)
    planted = planted_genes(d)
    step = 5000
    for s in range(0, n, step):  # in blocks: keeps the float64 temporaries small
        sl = slice(s, min(n, s + step))
        mu = np.outer(lib[sl], base)
        for c in range(N_CLUSTERS):
            rows = labels[sl] == c
            cols = planted[c * n_mark : (c + 1) * n_mark]
            mu[np.ix_(rows, cols)] *= 4.0
        counts = rng.poisson(mu * rng.gamma(2.0, 0.5, size=mu.shape))
        total = counts.sum(axis=1, keepdims=True)
        X[sl] = np.log1p(counts / np.maximum(total, 1) * 1000.0)
    return X, labels, planted


def atlas_files(work: Path, n: int, lib_loc: float):
    """The counts and log-normalised .h5ad files of n cells at ``lib_loc`` in ``work``, and their tag."""
    tag = f"{n}_{lib_loc:g}"
    return work / f"counts_{tag}.h5ad", work / f"lognorm_{tag}.h5ad", tag


def atlas_model(n_genes: int, seed: int = 0):
    """The seeded stream after the atlas' gene programme, and each group's cumulative gene proportions."""
    rng = np.random.default_rng(seed)
    base = rng.gamma(0.35, 1.0, n_genes) + 1e-4
    cdfs = []
    for _ in range(ATLAS_GROUPS):
        p = base.copy()
        de = rng.choice(n_genes, int(0.03 * n_genes), replace=False)
        p[de] *= np.exp(rng.normal(1.0, 0.4, de.size))
        cdfs.append(np.cumsum(p / p.sum()))
    return rng, cdfs


def atlas_block(rng, groups, lib, cdfs, n_genes: int):
    """The counts and log-normalised counts (CSR float32) of cells of ``groups`` with ``lib`` reads each."""
    import scipy.sparse as sp

    rows, cols = [], []
    for g in range(ATLAS_GROUPS):
        idx = np.flatnonzero(groups == g)
        if not idx.size:
            continue
        reads = lib[idx]
        u = rng.random(int(reads.sum()))
        cols.append(np.minimum(np.searchsorted(cdfs[g], u), n_genes - 1).astype(np.int32))
        rows.append(np.repeat(idx, reads).astype(np.int32))
    r, c = np.concatenate(rows), np.concatenate(cols)
    C = sp.csr_matrix((np.ones(r.size, np.float32), (r, c)), shape=(groups.size, n_genes))
    C.sum_duplicates()
    L = C.copy()
    tot = np.asarray(L.sum(axis=1)).ravel()
    L.data *= np.repeat((1e4 / tot).astype(np.float32), np.diff(L.indptr))
    np.log1p(L.data, out=L.data)
    return C, L


def simulate_atlas(n_cells: int, n_genes: int, work: Path, lib_loc: float, seed: int = 0) -> dict:
    """Write the counts and log-normalised .h5ad files in blocks of ATLAS_BLOCK cells; return the facts."""
    import anndata as ad
    import h5py
    import pandas as pd

    counts_f, log_f, _ = atlas_files(work, n_cells, lib_loc)
    if counts_f.exists() and log_f.exists():
        with h5py.File(counts_f) as f:
            nnz = int(f["X"]["data"].shape[0])
        return {"n_cells": n_cells, "n_genes": n_genes, "nnz": nnz, "seconds": None}
    t0 = time.perf_counter()
    rng, cdfs = atlas_model(n_genes, seed)
    groups = rng.integers(0, ATLAS_GROUPS, n_cells)
    lib = np.maximum(1, np.round(np.exp(rng.normal(lib_loc, 0.4, n_cells)))).astype(np.int64)
    obs = pd.DataFrame({"group": pd.Categorical(groups.astype(str))}, index=[f"c{i}" for i in range(n_cells)])
    var = pd.DataFrame(index=[f"g{j}" for j in range(n_genes)])
    nnz = 0
    for path in (counts_f, log_f):
        ad.AnnData(obs=obs, var=var).write_h5ad(path)
    fc, fl = h5py.File(counts_f, "a"), h5py.File(log_f, "a")
    try:
        xc = xl = None
        for b0 in range(0, n_cells, ATLAS_BLOCK):
            cells = np.arange(b0, min(n_cells, b0 + ATLAS_BLOCK))
            C, L = atlas_block(rng, groups[cells], lib[cells], cdfs, n_genes)
            nnz += C.nnz
            if xc is None:
                for f, M in ((fc, C), (fl, L)):
                    if "X" in f:
                        del f["X"]
                    ad.io.write_elem(f, "X", M)
                xc, xl = ad.io.sparse_dataset(fc["X"]), ad.io.sparse_dataset(fl["X"])
            else:
                xc.append(C)
                xl.append(L)
    finally:
        fc.close()
        fl.close()
    return {"n_cells": n_cells, "n_genes": n_genes, "nnz": nnz, "seconds": time.perf_counter() - t0}
