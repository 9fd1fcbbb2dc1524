"""Single-cell steps shared by the benchmark scripts: scanpy's normalisation and graph, one selection
run as a scanpy user would, and the library versions (singlecell_selection.py, sim_calibration.py)."""

from __future__ import annotations

import platform
import time

import numpy as np
import scipy.sparse as sp


def lognorm(counts):
    """scanpy's normalize_total (median total) + log1p of raw counts (cells x genes), sparse CSR float32."""
    import anndata as ad
    import scanpy as sc

    a = ad.AnnData(sp.csr_matrix(counts, dtype=np.float32, copy=True))
    sc.pp.normalize_total(a)
    sc.pp.log1p(a)
    return sp.csr_matrix(a.X)


def scanpy_graph(X_lognorm, seed: int):
    """The graph a scanpy user has: HVG seurat (2,000) -> PCA 50 -> 15-NN connectivities; (AnnData, seconds)."""
    import anndata as ad
    import scanpy as sc

    t = time.perf_counter()
    a = ad.AnnData(X_lognorm.copy())
    sc.pp.highly_variable_genes(a, n_top_genes=min(2000, a.n_vars))
    sc.pp.pca(a, n_comps=50, mask_var="highly_variable", random_state=seed)
    sc.pp.neighbors(a, n_neighbors=15, random_state=seed)
    return a, time.perf_counter() - t


def run_selection(method, X_lognorm, counts, k, seed, adata_graph=None):
    """(ranking, seconds) of one method, run as a scanpy user would."""
    import glfs

    t = time.perf_counter()
    if adata_graph is not None:
        a = adata_graph.copy()
        a.layers["counts"] = counts
        out = glfs.tl.select(a, method, n_features_to_select=k, obsp="connectivities", random_state=seed, inplace=False)
        rank = np.asarray(out["rank"])  # 1 = best
        ranking = np.argsort(rank, kind="stable")
    else:
        sel = glfs.select(X_lognorm, method, n_features_to_select=k, counts=counts, random_state=seed)
        ranking = np.asarray(sel.ranking)
    return ranking, time.perf_counter() - t


def versions() -> str:
    """The versions of Python and of the libraries a single-cell benchmark uses, on one line."""
    from importlib.metadata import PackageNotFoundError, version

    out = [f"python {platform.python_version()}"]
    for p in ("numpy", "scipy", "scikit-learn", "scanpy", "anndata", "leidenalg", "igraph", "scikit-misc", "glfs"):
        try:
            out.append(f"{p} {version(p)}")
        except PackageNotFoundError:
            out.append(f"{p} -")
    return ", ".join(out)
