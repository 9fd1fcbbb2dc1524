"""The PCA of an out-of-core X, fitted on a subsample (issue 21): how many cells the fit needs.

``glfs.similarity_graph`` on a backed .h5ad or a dask array (and, since 2026-11-27, on any X above
that many cells) fits its principal components on a seeded uniform subsample of at most ``glfs.graph._neighbors.PCA_FIT_SAMPLES`` cells (one pass), then projects every
cell (a second pass).  This benchmark chooses that number on simulated counts (atlas_scale.py's
simulation: 10 cell groups, 3 % of the genes up-regulated per group, log-normalised), never on the
evaluated data: for each fit size m it builds the graph from the backed file and compares it with the
graph of the in-memory X (the PCA fitted on every cell, the same search):

- ``edge_share``: the share of the full-fit graph's edges that the subsample-fit graph has too;
- ``purity``: the share of edges that join cells of one simulated group;
- ``top2000``: the overlap of the 2,000 best genes by the Laplacian score on each graph, and
  ``spearman``, the rank correlation of all scores;
- the time and the peak resident memory of the graph (VmHWM, each m in a fresh process).

    python benchmarks/pca_sketch.py --cells 200000 --fits 10000 25000 50000 100000

Writes benchmarks/results/pca_sketch.tsv (appended) and pca_sketch.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from bench.procfs import vm_hwm_gb  # noqa: E402
from bench.simulated import atlas_files, simulate_atlas  # noqa: E402


def worker(args):
    """One graph in this process: the in-memory full fit (m = 0) or the backed file with a fit on m cells."""
    import anndata as ad
    import scipy.sparse as sp

    import glfs
    import glfs.graph._neighbors as nb

    _, log_f, tag = atlas_files(Path(args.work), args.cells, args.lib_loc)
    load0 = os.getloadavg()[0]
    if args.fit == 0:  # the reference: the PCA fitted on every cell (in memory, no subsample since 2026-11-27)
        X = ad.read_h5ad(log_f).X
        nb.PCA_FIT_SAMPLES = X.shape[0]
    else:
        nb.PCA_FIT_SAMPLES = args.fit
        X = ad.read_h5ad(log_f, backed="r").X
    t0 = time.perf_counter()
    W = glfs.similarity_graph(X, random_state=args.seed)
    seconds = time.perf_counter() - t0
    out = Path(args.work) / f"sketch_graph_{tag}_{args.fit}_{args.seed}.npz"
    sp.save_npz(out, W)
    rec = json.dumps(
        {
            "fit": args.fit,
            "seed": args.seed,
            "seconds": seconds,
            "peak_gb": vm_hwm_gb(),
            "load": [load0, os.getloadavg()[0]],
            "graph": str(out),
        }
    )
    out.with_suffix(".json").write_text(rec)
    print(rec)


def compare(args, runs):
    """Agreement of every subsample-fit graph with the full-fit graph (m = 0)."""
    import warnings

    import anndata as ad
    import h5py
    import scipy.sparse as sp
    from scipy.stats import spearmanr

    import glfs

    _, log_f, tag = atlas_files(Path(args.work), args.cells, args.lib_loc)
    X = ad.read_h5ad(log_f).X
    with h5py.File(log_f) as f:
        groups = ad.io.read_elem(f["obs"])["group"].to_numpy()
    graphs = {(r["fit"], r["seed"]): sp.load_npz(r["graph"]).tocsr() for r in runs}
    full = graphs[0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = {m: glfs.laplacian_score(X, W) for m, W in graphs.items()}
    top = {m: set(np.argsort(np.nan_to_num(s, nan=np.inf))[:2000]) for m, s in scores.items()}
    rows = []
    for r in runs:
        key = (r["fit"], r["seed"])
        W = graphs[key]
        a, b = full != 0, W != 0
        i, j = W.nonzero()
        ok = np.isfinite(scores[0, 0]) & np.isfinite(scores[key])
        rows.append(
            {
                **r,
                "cells": args.cells,
                "edge_share": a.multiply(b).nnz / a.nnz,
                "purity": float(np.mean(groups[i] == groups[j])),
                "top2000": len(top[0, 0] & top[key]) / 2000,
                "spearman": float(spearmanr(scores[0, 0][ok], scores[key][ok]).statistic),
            }
        )
    return rows


def write(rows):
    import pandas as pd

    RESULTS.mkdir(exist_ok=True)
    df = pd.DataFrame(rows)
    df["date"] = time.strftime("%Y-%m-%d %H:%M")
    tsv = RESULTS / "pca_sketch.tsv"
    df.to_csv(tsv, sep="\t", index=False, mode="a", header=not tsv.exists())
    allrows = pd.read_csv(tsv, sep="\t")
    lines = [
        "# The PCA of an out-of-core X fitted on a subsample (issue 21)",
        "",
        "Written by `benchmarks/pca_sketch.py`. Simulated counts (atlas_scale.py: 10 groups, log-normalised), "
        "graph = `glfs.similarity_graph(X, random_state=0)` (5-NN heat kernel on 50 PCs, faiss IVF). fit = cells "
        "the PCA was fitted on (0: the in-memory X, every cell: the reference); the others read the backed .h5ad "
        "(fit on a seeded subsample, every cell projected). edge share = share of the reference's edges kept; "
        "purity = edges within one simulated group; top2000 = overlap of the 2,000 best Laplacian-score genes "
        "with the reference's; spearman = rank correlation of all scores. Peak = VmHWM of the graph's process "
        "(data included); load = 1-minute load average before/after (2 shared cores).",
        "",
        "| date | cells | fit | seed | seconds | peak GB | edge share | purity | top2000 | spearman | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in allrows.iterrows():
        load = json.loads(r["load"]) if isinstance(r["load"], str) else r["load"]
        seed = int(r["seed"]) if "seed" in r and r["seed"] == r["seed"] else 0
        lines.append(
            f"| {r['date']} | {int(r['cells']):,} | {'all (in memory)' if r['fit'] == 0 else f'{int(r.fit):,}'} | {seed} | "
            f"{r['seconds']:.1f} | {r['peak_gb']:.2f} | {r['edge_share']:.3f} | {r['purity']:.4f} | "
            f"{r['top2000']:.3f} | {r['spearman']:.4f} | {load[0]:.1f}-{load[1]:.1f} |"
        )
    (RESULTS / "pca_sketch.md").write_text("\n".join(lines) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=200_000)
    p.add_argument("--fits", type=int, nargs="+", default=[10_000, 25_000, 50_000, 100_000])
    p.add_argument("--lib-loc", type=float, default=6.3)
    p.add_argument("--work", default="/tmp/atlas")
    p.add_argument("--worker", action="store_true")
    p.add_argument("--fit", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rerun", action="store_true", help="rebuild graphs whose record is in --work already")
    args = p.parse_args()
    if args.worker:
        return worker(args)
    simulate_atlas(args.cells, 20_000, Path(args.work), args.lib_loc)
    runs = []
    # the reference (every cell, seed 0), the same with seed 1 (how much the graph moves with the seed of the
    # PCA and the index alone), then each subsample fit (seed 0); graphs already built are reused
    for m, seed in [(0, 0), (0, 1), *((m, 0) for m in args.fits)]:
        done = Path(args.work) / f"sketch_graph_{args.cells}_{args.lib_loc:g}_{m}_{seed}.json"
        if done.exists() and not args.rerun:
            runs.append(json.loads(done.read_text()))
        else:
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                "--fit",
                str(m),
                "--seed",
                str(seed),
                "--cells",
                str(args.cells),
                "--lib-loc",
                str(args.lib_loc),
                "--work",
                args.work,
            ]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            runs.append(json.loads(out))
        print(runs[-1], flush=True)
    write(
        [{k: (json.dumps(v) if k == "load" else v) for k, v in r.items() if k != "graph"} for r in compare(args, runs)]
    )


if __name__ == "__main__":
    main()
