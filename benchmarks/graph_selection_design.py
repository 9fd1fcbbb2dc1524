"""Design study of the graph-based single-cell selection (issue 18), on simulated counts only.

Which graph and which per-gene score make a graph-based selection beat scanpy's highly
variable genes?  Every candidate (graph x score) is run on counts from
``glfs.simulation._scsim.simulate_counts`` (the Splat model: programmes of varied strength and size,
rare groups, library-size variation, overdispersion), beside scanpy's HVG flavours, the
binomial deviance, the variance and random genes, and judged by

- the downstream single-cell evaluation (``glfs.evaluate.evaluate_ranking_leiden``: Leiden
  ARI at the cluster count of the labels, and at the best resolution), at 500 and 2,000 genes;
- planted-gene precision at k (fraction of the top k that are programme genes).

No real data set is used here: the defaults of the method come from this table
(docs/methods.md, "The graph-based single-cell selection").

    python benchmarks/graph_selection_design.py            # the grid below (about 30-60 min on 2 cores)
    python benchmarks/graph_selection_design.py --quick    # one small setting, for a smoke test

Writes benchmarks/results/graph_selection_design.tsv (one row per data set x selection x k x run)
and graph_selection_design.md (means by setting).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

import glfs
from glfs.evaluate import evaluate_ranking_leiden, random_gene_orders
from glfs.scores._moran import graph_autocorrelation
from glfs.simulation._scsim import simulate_counts

OUT = Path(__file__).resolve().parent / "results"

# Settings: programme strength (weak / strong), group structure (balanced / rare groups),
# library size (10x-like ~3,000 / deep ~20,000 counts per cell).  First principles, not data.
SETTINGS = {
    "weak_balanced": {"de_fac_loc": 0.1, "de_prob": 0.05, "group_prob": (0.2,) * 5, "lib_loc": 8.0},
    "strong_balanced": {"de_fac_loc": 0.4, "de_prob": 0.05, "group_prob": (0.2,) * 5, "lib_loc": 8.0},
    "weak_rare": {"de_fac_loc": 0.2, "de_prob": 0.05, "group_prob": (0.35, 0.3, 0.2, 0.1, 0.05), "lib_loc": 8.0},
    "strong_rare_deep": {
        "de_fac_loc": 0.4,
        "de_prob": 0.03,
        "group_prob": (0.4, 0.3, 0.2, 0.07, 0.03),
        "lib_loc": 10.0,
    },
}
QUICK = {"quick": {"de_fac_loc": 0.3, "de_prob": 0.05, "group_prob": (0.3, 0.3, 0.2, 0.15, 0.05), "lib_loc": 8.0}}
BASELINES = ["hvg_seurat", "hvg_cell_ranger", "hvg_seurat_v3", "hvg_pearson_residuals", "deviance", "variance"]


def lognorm(counts):
    """scanpy's normalize_total (median total) + log1p, sparse."""
    import anndata as ad
    import scanpy as sc

    a = ad.AnnData(counts.copy())
    sc.pp.normalize_total(a)
    sc.pp.log1p(a)
    return sp.csr_matrix(a.X)


def pearson_residuals(counts):
    """scanpy's analytic Pearson residuals (theta 100, clipped at sqrt(n)), dense."""
    import anndata as ad
    import scanpy as sc

    a = ad.AnnData(counts.copy())
    sc.experimental.pp.normalize_pearson_residuals(a)
    return np.asarray(a.X)


def knn_graph(X, genes, n_pcs=50, k=15, seed=0):
    """Binary symmetric 15-NN graph on the principal components of X[:, genes] (scanpy-like)."""
    return glfs.similarity_graph(
        X[:, genes], n_neighbors=k, kernel="binary", n_pcs=n_pcs, method="exact", random_state=seed
    )


def top(scores, k, higher=True):
    s = np.where(np.isnan(scores), -np.inf if higher else np.inf, scores)
    return np.argsort(-s if higher else s, kind="stable")[:k]


def candidate_scores(Xl, R, W, v3):
    """Per-gene scores of the candidates on graph W (higher = better)."""
    ga = graph_autocorrelation(Xl, W)
    var_l = np.asarray(Xl.multiply(Xl).mean(axis=0)).ravel() - np.asarray(Xl.mean(axis=0)).ravel() ** 2
    gr = graph_autocorrelation(R, W)
    var_r = R.var(axis=0)
    # Left out after the quick run (2026-11-25, 800 cells): moran_z (ranks as moran_i but for kurtotic
    # genes), shared_var = var(log-norm) x I (below moran_i at both k), and the deviance-PCA graph (the
    # same role as pca_hvg); see the .md of the quick run.
    del var_l
    with np.errstate(invalid="ignore"):
        return {
            "laplacian": -glfs.laplacian_score(Xl, W),
            "moran_i": ga.moran_i,
            "v3_x_i": v3 * np.clip(ga.moran_i, 0, None),
            "residual_shared_var": var_r * gr.moran_i,
            "residual_moran_i": gr.moran_i,
        }


def run_setting(name, params, seed, n_cells, n_genes, ks, n_runs, log):
    t0 = time.perf_counter()
    sim = simulate_counts(n_cells, n_genes, random_state=seed, **params)
    counts = sim.counts
    keep = np.asarray((counts > 0).sum(axis=0)).ravel() >= 3  # scanpy users' filter_genes(min_cells=3)
    counts = counts[:, keep]
    programme = sim.programme.any(axis=0)[keep]
    labels = sim.groups.astype(str)
    Xl = lognorm(counts)
    R = pearson_residuals(counts)
    d = Xl.shape[1]
    rankings = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in BASELINES:
            kw = {"counts": counts} if glfs.METHODS[m].needs_counts else {}
            rankings[m] = glfs.select(Xl, m, n_features_to_select=min(2000, d), **kw).ranking
        v3 = glfs.select(Xl, "hvg_seurat_v3", n_features_to_select=min(2000, d), counts=counts).scores
        graphs = {
            "default": glfs.similarity_graph(Xl),  # the library's graph: heat 5-NN on all genes
            "pca_all": knn_graph(Xl, np.arange(d)),
            "pca_hvg": knn_graph(Xl, rankings["hvg_seurat_v3"][:2000]),
        }
        scored = {g: candidate_scores(Xl, R, W, v3) for g, W in graphs.items()}
        # one self-iteration: the graph from the top 2,000 genes of each score on pca_all
        for s, v in scored["pca_all"].items():
            W = knn_graph(Xl, top(v, min(2000, d)))
            scored.setdefault("iter", {})[s] = candidate_scores(Xl, R, W, v3)[s]
    for g, sc_ in scored.items():
        for s, v in sc_.items():
            rankings[f"{s}@{g}"] = top(v, d)
    for i, (_, order) in enumerate(random_gene_orders(d, 2, seed)):
        rankings[f"random_{i}"] = order
    rows = []
    for m, ranking in rankings.items():
        for k in ks:
            prec = float(programme[ranking[:k]].mean())
            rec = float(programme[ranking[:k]].sum() / max(programme.sum(), 1))
            recs = evaluate_ranking_leiden(Xl, labels, ranking, feature_grid=[k], n_runs=n_runs, random_state=seed)
            for r in recs:
                rows.append(
                    {
                        "setting": name,
                        "seed": seed,
                        "selection": m,
                        "n_features": k,
                        "run": r["run"],
                        "ari": r["ari"],
                        "ari_nlabels": r["ari_nlabels"],
                        "precision": prec,
                        "recall": rec,
                        "n_genes": d,
                        "n_programme": int(programme.sum()),
                    }
                )
    log(
        f"{name} seed {seed}: {d} genes ({int(programme.sum())} programme), {len(rankings)} rankings, {time.perf_counter() - t0:.0f} s"
    )
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--cells", type=int, default=2000)
    ap.add_argument("--genes", type=int, default=5000)
    args = ap.parse_args()
    settings = QUICK if args.quick else SETTINGS
    ks = [200, 500] if args.quick else [500, 2000]
    seeds = [0] if args.quick else list(range(args.seeds))
    n_cells, n_genes = (800, 1500) if args.quick else (args.cells, args.genes)
    started = time.strftime("%Y-%m-%d %H:%M")
    load0 = os.getloadavg()[0]

    def log(msg):
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    rows = []
    tag = "_quick" if args.quick else ""
    OUT.mkdir(exist_ok=True)
    for seed in seeds:
        for name, params in settings.items():
            rows += run_setting(name, params, seed, n_cells, n_genes, ks, 2, log)
            pd.DataFrame(rows).to_csv(
                OUT / f"graph_selection_design{tag}.tsv", sep="\t", index=False
            )  # partial results kept
    df = pd.DataFrame(rows)
    df["selection"] = df["selection"].str.replace(r"random_\d", "random", regex=True)
    mean = df.groupby(["setting", "selection", "n_features"])[["ari_nlabels", "ari", "precision"]].mean().reset_index()
    lines = [
        f"# Graph-based selection design study ({started}; {n_cells} cells x {n_genes} genes simulated, "
        f"seeds {seeds}, 2 Leiden runs; load {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end)",
        "",
        "Mean Leiden ARI at the labels' cluster count (ari_nlabels), at the best resolution (ari), and",
        "planted-gene precision at k.  Selection `score@graph`; graphs: default (library heat 5-NN, all",
        "genes), pca_all / pca_hvg (15-NN on 50 PCs of all genes / of the top 2,000 seurat_v3 genes),",
        "iter (15-NN on 50 PCs of the score's own top 2,000 on pca_all).",
        "",
    ]
    for k in ks:
        piv = mean[mean.n_features == k].pivot_table(index="selection", columns="setting", values="ari_nlabels")
        piv["mean"] = piv.mean(axis=1)
        prec = mean[mean.n_features == k].groupby("selection")["precision"].mean()
        piv["precision"] = prec
        lines += [
            f"## {k} genes: ari_nlabels by setting (and mean precision)",
            "",
            piv.sort_values("mean", ascending=False).round(3).to_markdown(),
            "",
        ]
    (OUT / f"graph_selection_design{tag}.md").write_text("\n".join(lines) + "\n")
    log("wrote " + str(OUT / f"graph_selection_design{tag}.md"))


if __name__ == "__main__":
    main()
