"""Batch-aware gene selection (issue 29): each method with and without batches, against cell types and batch mixing.

    nice -n 10 python benchmarks/batch_selection.py                      # Kang 2018 PBMC + simulated batches
    nice -n 10 python benchmarks/batch_selection.py --datasets kang --n 500 1000

Data: the panel's Kang 2018 PBMC (8,684 cells, 2,511 genes, 4 cell types, obs "batch" = 5 donors) and counts
simulated by glfs.simulation._scsim.simulate_counts with Splat batch effects (``--sim-batch-loc/--sim-batch-scale``,
4 batches).  Each method runs as a scanpy user would: ``glfs.select`` on normalize_total + log1p, the counts for
the count methods, once without and once with ``batches=`` (the batch labels: scanpy's batch_key); graph_moran
also with the rule of scanpy's seurat_v3 (median rank first, ``--rules median_rank``) and with a PCA and graphs of
each batch's own (``per_batch_pca``, the form before the shared embedding; ``--no-per-batch-pca`` leaves it out).  Judged by the Leiden protocol
(``glfs.evaluate.evaluate_ranking_leiden`` at the selected genes, ``--runs`` runs): ARI at the best resolution and
at the labels' cluster count, and ``batch_mixing`` (glfs.evaluate._mixing.knn_batch_mixing on the protocol's kNN
graph: 1 = neighbourhoods within a cell type as mixed as its batches).  Cost: the selection's wall time with
batches over without (same process, one after the other; the load is written beside it).
Writes benchmarks/results/batch_selection.tsv and .md.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "results"
KANG = Path("/work/shared/data/singlecell/kang2018_pbmc_5donors_2511g.h5ad")
METHODS = ["graph_moran", "laplacian_score", "deviance", "hvg_seurat_v3", "hvg_pearson_residuals"]
COUNT_METHODS = {"deviance", "hvg_seurat_v3", "hvg_pearson_residuals"}


def load_kang(path=KANG):
    import anndata as ad

    a = ad.read_h5ad(path)
    return a.X.tocsr(), a.obs["label"].to_numpy(), a.obs["batch"].astype(str).to_numpy()


def simulate(n_cells, n_genes, n_batches, loc, scale, seed=0):
    from glfs.simulation._scsim import simulate_counts

    per = [n_cells // n_batches] * n_batches
    per[-1] += n_cells - sum(per)
    sim = simulate_counts(
        n_cells,
        n_genes,
        group_prob=(1 / 6,) * 6,
        de_prob=0.1,
        de_fac_loc=0.3,
        lib_loc=8.0,
        batch_cells=per,
        batch_fac_loc=loc,
        batch_fac_scale=scale,
        random_state=seed,
    )
    return sim.counts.tocsr().astype(np.float32), sim.groups, sim.batches.astype(str)


def lognorm(counts):
    import scipy.sparse as sp

    C = sp.csr_matrix(counts, dtype=np.float64)
    tot = np.asarray(C.sum(axis=1)).ravel()
    target = np.median(tot[tot > 0])
    L = sp.diags(target / np.maximum(tot, 1)) @ C
    L = L.tocsr()
    L.data = np.log1p(L.data)
    L.sort_indices()  # canonical CSR, as scanpy's normalize_total + log1p leave it
    return L


def per_batch_pca(X, batches, n):
    """graph_moran as it was before the shared embedding: each batch alone, its own two PCAs and graphs
    (refined on the batch's own top genes), the batches combined by the same rule."""
    from glfs.scores._batches import graph_min_cells, select_by_batch
    from glfs.scores._moran import CELL_GRAPH_NEIGHBORS, select_graph_moran

    def one(rows):
        sel = select_graph_moran(X[rows], None, n_features=n)
        return sel, sel.extra["graph"], rows

    k, why = graph_min_cells(CELL_GRAPH_NEIGHBORS)
    return select_by_batch(
        one, batches, method="graph_moran", n_features=n, higher_is_better=True, min_cells=k, why_min=why
    )


def run_one(X, counts, method, n, batches, rule):
    import glfs
    from glfs.api import method_info
    from glfs.scores._batches import run_by_batch

    kw = {"counts": counts} if method in COUNT_METHODS else {}
    t = time.perf_counter()
    if (
        batches is not None
        and method == "graph_moran"
        and rule in ("nbatches", "median_rank", "minus_batch_share", "minus_global_local_share")
    ):
        sel = run_by_batch(method_info(method), X, batches, n_features=n, rule=rule)
    elif rule == "per_batch_pca":
        sel = per_batch_pca(X, batches, n)
    else:
        sel = glfs.select(X, method, n_features_to_select=n, batches=batches, **kw)
    return sel, time.perf_counter() - t


def variance_shares(X, labels, batches, genes):
    """(between-label, between-batch) variance of the genes, each summed over them, as shares of their total
    variance (log-normalised X): how much of what the selected genes vary by is cell type, and how much batch."""
    Z = X[:, np.sort(genes)].toarray()
    total = Z.var(axis=0).sum()

    def between(groups):
        means = pd.DataFrame(Z).groupby(np.asarray(groups)).transform("mean").to_numpy()
        return means.var(axis=0).sum() / total

    return between(labels), between(batches)


def evaluate(X, labels, sel, n, batches, runs):
    from glfs.evaluate import evaluate_ranking_leiden

    recs = evaluate_ranking_leiden(X, labels, sel.ranking, feature_grid=[n], n_runs=runs, batches=batches)
    share_type, share_batch = variance_shares(X, labels, batches, np.flatnonzero(sel.selected))
    return {
        "ari": float(np.mean([r["ari"] for r in recs])),
        "ari_nlabels": float(np.mean([r["ari_nlabels"] for r in recs])),
        "batch_mixing": recs[0]["batch_mixing"],
        "var_type": share_type,
        "var_batch": share_batch,
    }


def bench(name, counts, labels, batches, methods, ns, runs, rules, per_batch=True):
    X = lognorm(counts)
    rows = []
    warm = np.arange(min(600, X.shape[0]))  # numba's first-call compilation kept out of the timings
    for method in methods:
        for b in (None, batches[warm]):
            run_one(X[warm], counts[warm], method, min(ns), b, "nbatches")
    for n in ns:
        for method in methods:
            cases = [("none", None), ("nbatches", batches)]
            if method == "graph_moran":
                cases += [(r, batches) for r in rules if r != "nbatches"]
                cases += [("per_batch_pca", batches)] if per_batch else []
            seconds = {}
            for rule, b in cases:
                load = os.getloadavg()[0]
                sel, sec = run_one(X, counts, method, n, b, rule)
                seconds[rule] = sec
                scores = evaluate(X, labels, sel, n, batches, runs)
                row = {
                    "dataset": name,
                    "n_genes_selected": n,
                    "method": method,
                    "batches": "no" if b is None else f"yes ({rule})",
                    "seconds": round(sec, 2),
                    "cost_ratio": round(sec / seconds["none"], 2) if rule != "none" else 1.0,
                    "load1": round(load, 1),
                    **{k: round(v, 4) for k, v in scores.items()},
                    "left_out": ",".join(map(str, sel.params.get("batches_left_out", []))),
                }
                rows.append(row)
                print(pd.DataFrame([row]).to_string(index=False, header=len(rows) == 1), flush=True)
    return rows


def cost(name, counts, labels, batches, methods, n, repeats):
    """The selection's time without and with batches, alternating, best and median of ``repeats`` each."""
    X = lognorm(counts)
    rows = []
    for method in methods:
        run_one(X, counts, method, n, None, "none")  # compilation and imports out of the timings
        t = {"no": [], "yes": []}
        for _ in range(repeats):
            for key, b in (("no", None), ("yes", batches)):
                t[key].append(run_one(X, counts, method, n, b, "default")[1])  # each method's default rule
        row = {
            "dataset": name,
            "method": method,
            "n_genes_selected": n,
            "repeats": repeats,
            "best_without_s": round(min(t["no"]), 2),
            "best_with_s": round(min(t["yes"]), 2),
            "ratio_best": round(min(t["yes"]) / min(t["no"]), 2),
            "ratio_median": round(float(np.median(t["yes"]) / np.median(t["no"])), 2),
            "load1": round(os.getloadavg()[0], 1),
        }
        rows.append(row)
        print(pd.DataFrame([row]).to_string(index=False, header=len(rows) == 1), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["kang", "sim"])
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--n", type=int, nargs="+", default=[500])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument(
        "--rules",
        nargs="+",
        default=["nbatches"],
        help="graph_moran's combination rules: median_rank (scanpy's seurat_v3 rule) or minus_batch_share "
        "(mean within-batch Moran's I less the between-batch share of variance) also run it with that",
    )
    ap.add_argument(
        "--no-per-batch-pca",
        action="store_true",
        help="leave out graph_moran with a PCA and graphs of each batch's own (the form before the shared embedding)",
    )
    ap.add_argument("--sim-cells", type=int, default=6000)
    ap.add_argument("--sim-genes", type=int, default=3000)
    ap.add_argument("--sim-batches", type=int, default=4)
    ap.add_argument(
        "--sim-batch-loc",
        type=float,
        nargs="+",
        default=[0.1, 0.2],
        help="one simulated set per value (splatter's default batch.facLoc is 0.1)",
    )
    ap.add_argument("--sim-batch-scale", type=float, default=0.1)
    ap.add_argument("--out", default="batch_selection")
    ap.add_argument(
        "--cost-only",
        action="store_true",
        help="only the selection times, alternating without/with batches (--repeats each)",
    )
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    load0 = os.getloadavg()
    rows = []
    for ds in args.datasets:
        sets = (
            [("kang", load_kang())]
            if ds == "kang"
            else [
                (
                    f"sim_batch_loc{loc}",
                    simulate(args.sim_cells, args.sim_genes, args.sim_batches, loc, args.sim_batch_scale),
                )
                for loc in args.sim_batch_loc
            ]
        )
        for name, data in sets:
            if args.cost_only:
                rows += cost(name, *data, args.methods, args.n[0], args.repeats)
            else:
                rows += bench(name, *data, args.methods, args.n, args.runs, args.rules, not args.no_per_batch_pca)
    load1 = os.getloadavg()
    df = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    df.to_csv(OUT / f"{args.out}.tsv", sep="\t", index=False)
    md = [
        f"# Batch-aware selection ({time.strftime('%Y-%m-%d %H:%M')} UTC, 2 shared cores, load {load0[0]:.1f} before, "
        f"{load1[0]:.1f} after)",
        "",
        f"`python benchmarks/batch_selection.py {' '.join(os.sys.argv[1:])}`; simulated: {args.sim_cells} cells x "
        f"{args.sim_genes} genes, 6 groups (DE probability 0.1), {args.sim_batches} batches, Splat batch factor loc "
        f"{args.sim_batch_loc} (one set each), scale {args.sim_batch_scale}.  "
        + (
            f"Selection times without and with batches, alternating, {args.repeats} each (after one untimed call); "
            "ratio_best: best with / best without; ratio_median likewise."
            if args.cost_only
            else f"ARI: Leiden at the best resolution / at the labels' cluster count, mean of {args.runs} runs; "
            "batch_mixing: kNN batch entropy within cell types on the protocol's graph (higher = better mixed); "
            "var_type / var_batch: the selected genes' between-type / between-batch variance as shares of their "
            "total variance (log-normalised, summed over the genes); "
            "cost_ratio: the selection's time with batches over without, one call each (see the cost run).  "
            "graph_moran 'yes (per_batch_pca)': each batch alone with its own PCAs and graphs (the form before the "
            "shared embedding), combined by the same rule."
        ),
        "",
        df.to_markdown(index=False),
        "",
    ]
    (OUT / f"{args.out}.md").write_text("\n".join(md))


if __name__ == "__main__":
    main()
