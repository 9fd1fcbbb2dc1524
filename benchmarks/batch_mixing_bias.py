"""Does the batch-mixing measure depend on the genes' expression level? (issue 29)

    nice -n 10 python benchmarks/batch_mixing_bias.py

Random genes of four expression levels (quartiles of the mean count among the expressed genes), ``--draws``
draws of ``--n`` genes each, on the Kang donors and the simulated batches of benchmarks/batch_selection.py (seed
0): the evaluation's PCA and kNN graph on them (the Leiden protocol's graph, glfs.evaluate._leiden) and
``glfs.evaluate._mixing.knn_batch_mixing`` on it, beside the genes' between-type and between-batch shares of
variance (batch_selection.variance_shares) and the type purity of the graph (the share of each cell's neighbours
of its own type).  No selection: if the mixing of random genes rises as their level falls while their
between-batch share does not, the measure rewards low-count (noisy) genes for their noise.

``--variants``: the same figures (no Leiden) for batch-aware selections on seed 0 of each set: graph_moran by the
rank rule, by scanpy's seurat_v3 rule (median rank first), by ``minus_batch_share``, the two main rules also without
the refined graph (``graph_from="all_genes"``), and scanpy's seurat_v3 with ``batch_key``, with the selected
genes' median mean count.
Writes benchmarks/results/batch_mixing_bias.tsv (levels), batch_mixing_bias_variants.tsv and batch_mixing_bias.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_selection import OUT, load_kang, lognorm, simulate, variance_shares  # noqa: E402


def graph_stats(X, labels, batches, genes, seed=0):
    """(mixing, type purity) on the evaluation's PCA + 15-NN graph of the genes (``seed``; as evaluate_ranking_leiden)."""
    import anndata
    import scanpy as sc

    from glfs.evaluate._mixing import knn_batch_mixing

    adata = anndata.AnnData(sp.csr_matrix(X[:, np.sort(genes)]))
    sc.pp.pca(adata, n_comps=min(50, len(genes) - 1), mask_var=None, svd_solver="arpack", random_state=seed)
    sc.pp.neighbors(adata, n_neighbors=15, use_rep="X_pca", random_state=seed)
    D = sp.coo_matrix(adata.obsp["distances"])
    purity = float(np.mean(labels[D.row] == labels[D.col]))
    return knn_batch_mixing(adata.obsp["distances"], labels, batches)["batch_mixing"], purity


def bias(name, counts, labels, batches, n, draws):
    X = lognorm(counts)
    mean = np.asarray(counts.mean(axis=0)).ravel()
    expressed = np.flatnonzero(mean > 0)
    quart = np.array_split(expressed[np.argsort(mean[expressed], kind="stable")], 4)
    rng = np.random.default_rng(0)
    rows = []
    for q, genes in enumerate(quart):
        for draw in range(draws):
            pick = rng.choice(genes, min(n, int(0.8 * genes.size)), replace=False)
            mixing, purity = graph_stats(X, labels, batches, pick)
            vt, vb = variance_shares(X, labels, batches, pick)
            rows.append(
                {
                    "dataset": name,
                    "level": f"Q{q + 1}",
                    "draw": draw,
                    "n_genes": pick.size,
                    "median_mean_count": round(float(np.median(mean[pick])), 3),
                    "batch_mixing": round(mixing, 4),
                    "type_purity": round(purity, 4),
                    "var_type": round(vt, 4),
                    "var_batch": round(vb, 4),
                    "load1": round(os.getloadavg()[0], 1),
                }
            )
            print(pd.DataFrame([rows[-1]]).to_string(index=False, header=len(rows) == 1), flush=True)
    return rows


#: (row name, method, glfs.select parameters) of --variants
VARIANTS = [
    ("graph_moran, rank rule", "graph_moran", {"batch_rule": "nbatches"}),
    ("graph_moran, median rank first", "graph_moran", {"batch_rule": "median_rank"}),
    ("graph_moran, rank rule, no refined graph", "graph_moran", {"batch_rule": "nbatches", "graph_from": "all_genes"}),
    ("graph_moran, minus_batch_share", "graph_moran", {"batch_rule": "minus_batch_share"}),
    (
        "graph_moran, minus_batch_share, no refined graph",
        "graph_moran",
        {"batch_rule": "minus_batch_share", "graph_from": "all_genes"},
    ),
    ("hvg_seurat_v3", "hvg_seurat_v3", {}),
]


def variants(name, counts, labels, batches, n):
    import glfs

    X = lognorm(counts)
    mean = np.asarray(counts.mean(axis=0)).ravel()
    rows = []
    for case, method, kw in VARIANTS:
        extra = {"counts": counts} if method == "hvg_seurat_v3" else {}
        sel = glfs.select(X, method, n_features_to_select=n, batches=batches, **extra, **kw)
        pick = np.flatnonzero(sel.selected)
        mixing, purity = graph_stats(X, labels, batches, pick)
        vt, vb = variance_shares(X, labels, batches, pick)
        rows.append(
            {
                "dataset": name,
                "selection": case,
                "median_mean_count": round(float(np.median(mean[pick])), 3),
                "batch_mixing": round(mixing, 4),
                "type_purity": round(purity, 4),
                "var_type": round(vt, 4),
                "var_batch": round(vb, 4),
                "load1": round(os.getloadavg()[0], 1),
            }
        )
        print(pd.DataFrame([rows[-1]]).to_string(index=False, header=len(rows) == 1), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--draws", type=int, default=2)
    ap.add_argument("--sim-batch-loc", type=float, nargs="+", default=[0.1, 0.2])
    ap.add_argument("--variants", action="store_true", help="the batch-aware selections instead of random genes")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    load0, t0 = os.getloadavg()[0], time.time()
    run, tsv = (variants, "batch_mixing_bias_variants.tsv") if args.variants else (bias, "batch_mixing_bias.tsv")
    extra = () if args.variants else (args.draws,)
    rows = run("kang", *load_kang(), args.n, *extra)
    for loc in args.sim_batch_loc:
        rows += run(f"sim_batch_loc{loc}", *simulate(4000, 2000, 4, loc, 0.1), args.n, *extra)
    pd.DataFrame(rows).to_csv(OUT / tsv, sep="\t", index=False)
    stamp = (
        f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {time.time() - t0:.0f} s, 2 shared cores, load {load0:.1f} "
        f"before, {os.getloadavg()[0]:.1f} after"
    )
    (OUT / tsv.replace(".tsv", ".stamp")).write_text(
        f"`python benchmarks/batch_mixing_bias.py {' '.join(sys.argv[1:])}` ({stamp})"
    )
    write_md()


def write_md():
    """batch_mixing_bias.md from the two tables (whichever exist)."""
    md = ["# Batch mixing against the genes' expression level and the selection rule", ""]
    level, var = OUT / "batch_mixing_bias.tsv", OUT / "batch_mixing_bias_variants.tsv"
    if level.exists():
        df = pd.read_csv(level, sep="\t")
        means = (
            df.groupby(["dataset", "level"], sort=False)[
                ["n_genes", "median_mean_count", "batch_mixing", "type_purity", "var_type", "var_batch"]
            ]
            .mean()
            .round(4)
        )
        md += [
            "## Random genes by expression level",
            "",
            _stamp(level),
            "Q1 = the lowest quartile of mean count among expressed genes; mean of the draws (each in the .tsv).",
            "",
            means.reset_index().to_markdown(index=False),
            "",
        ]
    if var.exists():
        md += [
            "## Batch-aware selections (seed 0 of each set)",
            "",
            _stamp(var),
            "",
            pd.read_csv(var, sep="\t").to_markdown(index=False),
            "",
        ]
    (OUT / "batch_mixing_bias.md").write_text("\n".join(md))


def _stamp(tsv):
    stamp = tsv.with_suffix(".stamp")
    return stamp.read_text() if stamp.exists() else ""


if __name__ == "__main__":
    main()
