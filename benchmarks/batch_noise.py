"""How much the batch benchmark's numbers move (issue 29): replicates of the data, selection seeds, evaluation seeds.

    nice -n 10 python benchmarks/batch_noise.py --datasets kang --n 500 --replicates 0 1 2 3
    nice -n 10 python benchmarks/batch_noise.py --datasets sim --sim-batch-loc 0.1 0.2 --replicates 0 1 2 3
    nice -n 10 python benchmarks/batch_noise.py --datasets kang --replicates 0 --selection-seeds 0 1 --eval-seeds 0 1
    python benchmarks/batch_noise.py --summary-only        # batch_noise.md from batch_noise.tsv

The comparison of benchmarks/batch_selection.py (graph_moran with batches, by the rank rule, by
``minus_batch_share`` and by the default ``minus_global_local_share``, and random genes, against scanpy's seurat_v3
with ``batch_key``) repeated over:

- replicates of the data: simulated sets drawn with seeds 0, 1, ... (the same Splat parameters); the Kang donors
  as a whole (replicate 0) and seeded 80 % subsamples of the cells (stratified by cell type, replicates 1, ...);
- selection seeds (``--selection-seeds``: graph_moran's random_state, the PCA of its graphs);
- evaluation seeds (``--eval-seeds``: the Leiden protocol's random_state, its PCA and its runs).

Every method is run on the same replicate, so differences between methods are paired.  Rows are appended to
benchmarks/results/batch_noise.tsv (rows of the same dataset, n, replicate, method and seeds are replaced) and batch_noise.md
is written from the whole table: per method the mean and range over the replicates, the paired difference
against seurat_v3 with batch_key, and the spread over selection and evaluation seeds.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_selection import OUT, evaluate, load_kang, lognorm, simulate  # noqa: E402

#: (row name, method, extra glfs.select parameters); graph_moran's rows take the selection seed.
CASES = [
    ("graph_moran", "graph_moran", {"batch_rule": "nbatches"}),
    ("graph_moran minus_batch_share", "graph_moran", {"batch_rule": "minus_batch_share"}),
    ("graph_moran minus_global_local_share", "graph_moran", {"batch_rule": "minus_global_local_share"}),
    ("hvg_seurat_v3", "hvg_seurat_v3", {}),
    ("random genes", "random", {}),
]
REFERENCE = "hvg_seurat_v3"


def replicates(name, args):
    """[(dataset, replicate, counts, labels, batches)] of one --datasets entry."""
    if name == "kang":
        from glfs.evaluate._clustering import stratified_subsample

        counts, labels, batches = load_kang()
        out = [("kang", 0, counts, labels, batches)] if 0 in args.replicates else []
        for r in (r for r in args.replicates if r > 0):
            keep = stratified_subsample(labels, int(0.8 * labels.size), random_state=r)
            out.append(("kang", r, counts[keep], labels[keep], batches[keep]))
        return out
    return [
        (f"sim_batch_loc{loc}", r, *simulate(args.sim_cells, args.sim_genes, 4, loc, 0.1, seed=r))
        for loc in args.sim_batch_loc
        for r in args.replicates
    ]


def run_replicate(dataset, rep, counts, labels, batches, args):
    import glfs

    X = lognorm(counts)
    rows = []
    for n in args.n:
        for case, method, extra in CASES:
            if args.cases and case not in args.cases:
                continue
            seeds = args.selection_seeds if method == "graph_moran" else [0]
            for s in seeds:
                kw = {"counts": counts} if method == "hvg_seurat_v3" else {}
                load = os.getloadavg()[0]
                t = time.perf_counter()
                sel = (
                    random_genes(X.shape[1], n, rep)
                    if method == "random"
                    else glfs.select(X, method, n_features_to_select=n, batches=batches, random_state=s, **kw, **extra)
                )
                sec = time.perf_counter() - t
                for e in args.eval_seeds:
                    scores = evaluate_with_seed(X, labels, sel, n, batches, args.runs, e)
                    row = {
                        "dataset": dataset,
                        "replicate": rep,
                        "n_cells": X.shape[0],
                        "n_genes": X.shape[1],
                        "n_genes_selected": n,
                        "method": case,
                        "selection_seed": s,
                        "eval_seed": e,
                        "seconds": round(sec, 2),
                        "load1": round(load, 1),
                        **{k: round(v, 4) for k, v in scores.items()},
                    }
                    rows.append(row)
                    print(pd.DataFrame([row]).to_string(index=False, header=len(rows) == 1), flush=True)
    return rows


def random_genes(d, n, seed):
    """n genes drawn uniformly (seeded by the replicate), as a Selection-like object (ranking, selected)."""
    from types import SimpleNamespace

    ranking = np.random.default_rng(seed).permutation(d)
    selected = np.zeros(d, dtype=bool)
    selected[ranking[:n]] = True
    return SimpleNamespace(ranking=ranking, selected=selected)


def evaluate_with_seed(X, labels, sel, n, batches, runs, seed):
    """batch_selection.evaluate with the protocol's random_state ``seed``."""
    import batch_selection

    from glfs.evaluate import evaluate_ranking_leiden

    if seed == 0:
        return evaluate(X, labels, sel, n, batches, runs)
    recs = evaluate_ranking_leiden(
        X, labels, sel.ranking, feature_grid=[n], n_runs=runs, batches=batches, random_state=seed
    )
    share_type, share_batch = batch_selection.variance_shares(X, labels, batches, np.flatnonzero(sel.selected))
    return {
        "ari": float(np.mean([r["ari"] for r in recs])),
        "ari_nlabels": float(np.mean([r["ari_nlabels"] for r in recs])),
        "batch_mixing": recs[0]["batch_mixing"],
        "var_type": share_type,
        "var_batch": share_batch,
    }


def _range(s):
    return f"{s.mean():.3f} [{s.min():.3f}, {s.max():.3f}]"


def summary(df) -> list[str]:
    """Markdown tables: replicate spread, paired differences against seurat_v3, seed spreads."""
    md = []
    base = df[(df.selection_seed == 0) & (df.eval_seed == 0)]
    for (ds, n), g in base.groupby(["dataset", "n_genes_selected"], sort=False):
        reps = sorted(g.replicate.unique())
        md += [
            f"## {ds}, {n} genes ({len(reps)} replicates: {', '.join(map(str, reps))})",
            "",
            "| method | ARI (labels' count) mean [min, max] | mixing mean [min, max] | ARI - seurat_v3 | "
            "mixing - seurat_v3 | var_batch |",
            "|---|---|---|---|---|---|",
        ]
        ref = g[g.method == REFERENCE].set_index("replicate")
        for m, h in g.groupby("method", sort=False):
            h = h.set_index("replicate")
            common = h.index.intersection(ref.index)
            dari = h.loc[common, "ari_nlabels"] - ref.loc[common, "ari_nlabels"]
            dmix = h.loc[common, "batch_mixing"] - ref.loc[common, "batch_mixing"]
            paired = (m != REFERENCE) and len(common)
            md.append(
                f"| {m} | {_range(h.ari_nlabels)} | {_range(h.batch_mixing)} | "
                f"{_range(dari) if paired else '-'} | {_range(dmix) if paired else '-'} | "
                f"{h.var_batch.mean():.4f} |"
            )
        md.append("")
    seeds = []
    for key, other in (("selection_seed", "eval_seed"), ("eval_seed", "selection_seed")):
        sub = df[df[other] == 0]
        for (ds, n, m, rep), g in sub.groupby(["dataset", "n_genes_selected", "method", "replicate"], sort=False):
            if g[key].nunique() > 1:
                seeds.append(
                    {
                        "seed": key,
                        "dataset": ds,
                        "n": n,
                        "method": m,
                        "replicate": rep,
                        "seeds": g[key].nunique(),
                        "ari_range": round(g.ari_nlabels.max() - g.ari_nlabels.min(), 4),
                        "mixing_range": round(g.batch_mixing.max() - g.batch_mixing.min(), 4),
                    }
                )
    if seeds:
        md += [
            "## Spread over seeds (max - min within one replicate)",
            "",
            pd.DataFrame(seeds).to_markdown(index=False),
            "",
        ]
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["kang", "sim"])
    ap.add_argument("--cases", nargs="+", default=None, help="row names of CASES to run (default: all)")
    ap.add_argument("--n", type=int, nargs="+", default=[500])
    ap.add_argument("--replicates", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--selection-seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--eval-seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--sim-cells", type=int, default=4000)
    ap.add_argument("--sim-genes", type=int, default=2000)
    ap.add_argument("--sim-batch-loc", type=float, nargs="+", default=[0.1, 0.2])
    ap.add_argument("--summary-only", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    tsv = OUT / "batch_noise.tsv"
    old = pd.read_csv(tsv, sep="\t") if tsv.exists() else pd.DataFrame()
    if not args.summary_only:
        load0, t0 = os.getloadavg()[0], time.time()
        rows = []
        for name in args.datasets:
            for dataset, rep, *data in replicates(name, args):
                rows += run_replicate(dataset, rep, *data, args)
        new = pd.DataFrame(rows)
        old = pd.read_csv(tsv, sep="\t") if tsv.exists() else pd.DataFrame()  # read now: other runs may have added rows
        if len(old):
            key = ["dataset", "n_genes_selected", "replicate", "method", "selection_seed", "eval_seed"]
            drop = old.set_index(key).index.isin(new.set_index(key).index)
            old = old[~drop]
        old = pd.concat([old, new], ignore_index=True)
        old.to_csv(tsv, sep="\t", index=False)
        print(f"{' '.join(sys.argv[1:])}: {time.time() - t0:.0f} s, load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    md = [
        f"# Noise of the batch benchmark ({time.strftime('%Y-%m-%d %H:%M')} UTC; rows of batch_noise.tsv, "
        "each run's command, wall time and load in docs/methods.md)",
        "",
        "ARI at the labels' cluster count (Leiden protocol, 2 runs), batch mixing (kNN batch entropy within types), "
        "500 or 2,000 genes. Paired: each replicate's value less seurat_v3's (with batch_key) on the same "
        "replicate. Replicates: simulated sets of seeds 0, 1, ...; Kang: all cells (0) and stratified 80 % "
        "subsamples (1, ...).",
        "",
    ]
    (OUT / "batch_noise.md").write_text("\n".join(md + summary(old)))


if __name__ == "__main__":
    main()
