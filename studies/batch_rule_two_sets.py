"""One-off: graph_moran's batch rule on the two real multi-batch sets (Kang 2018, OneK1K), scIB-style.

    nice -n 10 python studies/batch_rule_two_sets.py [--sets kang onek1k] [--out studies/batch_rule_two_sets.tsv]

For each set: raw counts -> scanpy normalize_total + log1p; each candidate selects on all cells with the
donors as batches (graph_moran with each rule of glfs.scores MORAN_BATCH_RULES; scanpy's seurat_v3 and
cell_ranger with batch_key) and without batches (references).  Each ranking's top k genes are evaluated on
a stratified subsample of 2,100 cells (seed 0): glfs.evaluate.evaluate_ranking_leiden (one run: ARIs,
rare-type F1, batch mixing within types on its kNN graph), and on the same PCA (scanpy, 50 comps) the
scIB silhouettes: cell-type ASW ((s + 1) / 2 of the labels) and batch ASW (per type, 1 - |s| of the
batches, averaged over cells then types).  bio = mean(ari, ari_nlabels, kmeans_ari, celltype_asw),
batch = mean(batch_asw, batch_mixing), overall = 0.6 bio + 0.4 batch (scIB's weights).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import anndata as ad
import numpy as np
import pandas as pd
import scanpy as sc
import scipy.sparse as sp
from sklearn.metrics import silhouette_samples

import glfs
from glfs.evaluate import evaluate_ranking_leiden, stratified_subsample

DATA = "/work/shared/data/singlecell/"
SETS = {
    "kang": ("kang2018_pbmc_5donors_2511g.h5ad", (500, 2000)),
    "onek1k": ("onek1k2022_pbmc_40donors_1000g.h5ad", (200, 500)),
}
RULES = ("minus_global_local_share", "minus_batch_share", "nbatches", "median_rank")
MAX_CELLS = 2100


def candidates(counts, X, batches, K):
    """name -> callable returning a Selection (or raising); each selects K genes (the largest of the grid)."""
    out = {}
    for rule in RULES:
        out[f"graph_moran[{rule}]"] = lambda r=rule: glfs.select(
            X, "graph_moran", n_features_to_select=K, batches=batches, batch_rule=r, random_state=0
        )
    out["graph_moran[no batches]"] = lambda: glfs.select(X, "graph_moran", n_features_to_select=K, random_state=0)
    out["hvg_seurat_v3[batch_key]"] = lambda: glfs.select(
        X, "hvg_seurat_v3", n_features_to_select=K, counts=counts, batches=batches
    )
    out["hvg_seurat_v3[batch_key, span=0.8]"] = lambda: glfs.select(
        X, "hvg_seurat_v3", n_features_to_select=K, counts=counts, batches=batches, span=0.8
    )
    out["hvg_seurat_v3[no batches]"] = lambda: glfs.select(X, "hvg_seurat_v3", n_features_to_select=K, counts=counts)
    out["hvg_cell_ranger[batch_key]"] = lambda: glfs.select(
        X, "hvg_cell_ranger", n_features_to_select=K, batches=batches
    )
    out["hvg_cell_ranger[no batches]"] = lambda: glfs.select(X, "hvg_cell_ranger", n_features_to_select=K)
    return out


def asws(Xs, cols, y, b):
    """(cell-type ASW, batch ASW) scIB-style on scanpy's 50-component PCA of the genes ``cols``."""
    a = ad.AnnData(sp.csr_matrix(Xs[:, np.sort(cols)]))
    sc.pp.pca(a, n_comps=min(50, len(cols) - 1), svd_solver="arpack", random_state=0)
    Z = a.obsm["X_pca"]
    ct = float((silhouette_samples(Z, y).mean() + 1) / 2)
    per_type = []
    for t in np.unique(y):
        m = y == t
        if np.unique(b[m]).size < 2:
            continue
        per_type.append(float(np.mean(1 - np.abs(silhouette_samples(Z[m], b[m])))))
    return ct, float(np.mean(per_type))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=list(SETS))
    p.add_argument("--out", default="studies/batch_rule_two_sets.tsv")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    warnings.simplefilter("ignore")
    rows = []
    for name in args.sets:
        file, grid = SETS[name]
        a = ad.read_h5ad(DATA + file)
        counts = sp.csr_matrix(a.X, dtype=np.float32)
        y = a.obs["label"].astype(str).to_numpy()
        b = a.obs["batch"].astype(str).to_numpy()
        n = ad.AnnData(counts.copy())
        sc.pp.normalize_total(n)
        sc.pp.log1p(n)
        X = sp.csr_matrix(n.X)
        keep = stratified_subsample(np.unique(y, return_inverse=True)[1], MAX_CELLS, 0)
        for cand, run in candidates(counts, X, b, max(grid)).items():
            t0 = time.perf_counter()
            try:
                sel = run()
            except ValueError as exc:
                print(f"{name} {cand}: refused: {str(exc)[:300]}", flush=True)
                rows.append({"set": name, "candidate": cand, "refused": str(exc)[:300]})
                continue
            secs = time.perf_counter() - t0
            recs = evaluate_ranking_leiden(
                X[keep], y[keep], sel.ranking, feature_grid=grid, n_runs=1, random_state=0, batches=b[keep]
            )
            for r in recs:
                ct, ba = asws(X[keep], sel.ranking[: r["n_features"]], y[keep], b[keep])
                row = {
                    "set": name,
                    "candidate": cand,
                    "n_features": r["n_features"],
                    **{k: r[k] for k in ("ari", "ari_nlabels", "kmeans_ari", "rare_f1_nlabels", "batch_mixing")},
                    "celltype_asw": ct,
                    "batch_asw": ba,
                    "select_seconds": secs,
                    "left_out": ",".join(sel.params.get("batches_left_out", [])),
                }
                row["bio"] = np.mean([row["ari"], row["ari_nlabels"], row["kmeans_ari"], ct])
                row["batch"] = np.mean([ba, row["batch_mixing"]])
                row["overall"] = 0.6 * row["bio"] + 0.4 * row["batch"]
                rows.append(row)
                print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
            pd.DataFrame(rows).to_csv(args.out, sep="\t", index=False)
    pd.DataFrame(rows).to_csv(args.out, sep="\t", index=False)


if __name__ == "__main__":
    main()
