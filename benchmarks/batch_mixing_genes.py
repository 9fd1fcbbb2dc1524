"""Why the batch-aware graph_moran mixes the batches worse than scanpy's seurat_v3 with batch_key (issue 29).

    nice -n 19 python benchmarks/batch_mixing_genes.py --datasets kang sim0.1 sim0.2

For each set (the Kang donors; the simulated batches of benchmarks/batch_selection.py, seed 0): the selections of
graph_moran with batches (the default rule and others), scanpy's seurat_v3 with batch_key and random genes; the genes
that differ between graph_moran's and seurat_v3's selections; and for every gene, as a diagnostic from the labels
only, its **within-type donor share**: the variance of its batch means within each cell type over its variance
within the cell types (summed over the types; a one-way ANOVA by batch nested in type).  Each selection's mixing
is measured on the evaluation's graph (PCA 50 + 15-NN, as benchmarks/batch_mixing_bias.py) at several evaluation
seeds.  Writes benchmarks/results/batch_mixing_genes.{tsv,md}.
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
from batch_mixing_bias import graph_stats  # noqa: E402
from batch_selection import OUT, load_kang, lognorm, simulate, variance_shares  # noqa: E402


def within_type_donor_share(X, labels, batches):
    """Per gene: sum over types of the between-batch sum of squares within the type over the within-type sum of squares."""
    Z = X.toarray() if sp.issparse(X) else np.asarray(X)
    bss = np.zeros(Z.shape[1])
    wss = np.zeros(Z.shape[1])
    for t in np.unique(labels):
        it = labels == t
        Zt = Z[it]
        mt = Zt.mean(axis=0)
        wss += ((Zt - mt) ** 2).sum(axis=0)
        for b in np.unique(batches[it]):
            ib = batches[it] == b
            bss += ib.sum() * (Zt[ib].mean(axis=0) - mt) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(wss > 0, bss / wss, np.nan)


def load(name, seed=0):
    if name == "kang":
        return load_kang()
    loc = float(name.removeprefix("sim"))
    return simulate(4000, 2000, 4, loc, 0.1, seed=seed)


def selections(X, counts, batches, n, seeds):
    import glfs

    out = {}
    for s in seeds:
        for rule in ("minus_batch_share", "nbatches"):
            out[(f"graph_moran {rule}", s)] = glfs.select(
                X, "graph_moran", n_features_to_select=n, batches=batches, batch_rule=rule, random_state=s
            )
    out[("hvg_seurat_v3", 0)] = glfs.select(X, "hvg_seurat_v3", n_features_to_select=n, batches=batches, counts=counts)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["kang", "sim0.1", "sim0.2"])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--selection-seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--eval-seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    t0, load0 = time.time(), os.getloadavg()[0]
    rows, genes = [], []
    for name in args.datasets:
        counts, labels, batches = load(name)
        X = lognorm(counts)
        w = within_type_donor_share(X, labels, batches)
        mean = np.asarray(counts.mean(axis=0)).ravel()
        sels = selections(X, counts, batches, args.n, args.selection_seeds)
        rng = np.random.default_rng(0)
        picks = {k: np.flatnonzero(v.selected) for k, v in sels.items()}
        for d in range(2):
            picks[("random", d)] = rng.choice(X.shape[1], args.n, replace=False)
        for (case, s), pick in picks.items():
            vt, vb = variance_shares(X, labels, batches, pick)
            for e in args.eval_seeds:
                mix, purity = graph_stats(X, labels, batches, pick, seed=e)
                rows.append(
                    {
                        "dataset": name,
                        "selection": case,
                        "selection_seed": s,
                        "eval_seed": e,
                        "batch_mixing": round(mix, 4),
                        "type_purity": round(purity, 4),
                        "var_type": round(vt, 4),
                        "var_batch": round(vb, 4),
                        "within_type_donor_share_mean": round(float(np.nanmean(w[pick])), 4),
                        "median_mean_count": round(float(np.median(mean[pick])), 3),
                        "load1": round(os.getloadavg()[0], 1),
                    }
                )
                print(pd.DataFrame([rows[-1]]).to_string(index=False, header=len(rows) == 1), flush=True)
        a = set(picks[("graph_moran minus_batch_share", args.selection_seeds[0])])
        b = set(picks[("hvg_seurat_v3", 0)])
        for part, g in (("both", a & b), ("graph_moran only", a - b), ("seurat_v3 only", b - a)):
            g = np.array(sorted(g), dtype=int)
            wg = w[g]
            genes.append(
                {
                    "dataset": name,
                    "genes": part,
                    "n": g.size,
                    "within_type_donor_share_mean": round(float(np.nanmean(wg)), 4),
                    "median": round(float(np.nanmedian(wg)), 4),
                    "q90": round(float(np.nanquantile(wg, 0.9)), 4),
                    "share_over_0.05": round(float(np.nanmean(wg > 0.05)), 3),
                    "median_mean_count": round(float(np.median(mean[g])), 3),
                }
            )
        allw = pd.Series(w)
        genes.append(
            {
                "dataset": name,
                "genes": "all genes",
                "n": int(allw.notna().sum()),
                "within_type_donor_share_mean": round(float(allw.mean()), 4),
                "median": round(float(allw.median()), 4),
                "q90": round(float(allw.quantile(0.9)), 4),
                "share_over_0.05": round(float((allw > 0.05).mean()), 3),
                "median_mean_count": round(float(np.median(mean)), 3),
            }
        )
        print(pd.DataFrame(genes).to_string(index=False), flush=True)
    df, gf = pd.DataFrame(rows), pd.DataFrame(genes)
    df.to_csv(OUT / "batch_mixing_genes.tsv", sep="\t", index=False)
    gf.to_csv(OUT / "batch_mixing_genes_sets.tsv", sep="\t", index=False)
    stamp = (
        f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {time.time() - t0:.0f} s, nice -n 19, 2 shared cores, "
        f"load {load0:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    summ = df.groupby(["dataset", "selection"], sort=False)[
        ["batch_mixing", "within_type_donor_share_mean", "var_batch"]
    ]
    md = [
        "# Which genes keep graph_moran's batch mixing below seurat_v3's",
        "",
        f"`python benchmarks/batch_mixing_genes.py {' '.join(sys.argv[1:])}` ({stamp})",
        "",
        "## Genes of the two selections (graph_moran default rule, seed 0)",
        "",
        gf.to_markdown(index=False),
        "",
        "## Mixing over selection and evaluation seeds",
        "",
        summ.agg(["mean", "min", "max"]).round(4).to_markdown(),
        "",
        "## Every row",
        "",
        df.to_markdown(index=False),
        "",
    ]
    (OUT / "batch_mixing_genes.md").write_text("\n".join(md))


if __name__ == "__main__":
    main()
