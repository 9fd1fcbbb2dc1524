"""The shared-embedding spectral clustering of glfs.evaluate against the per-run form.

glfs.evaluate.evaluate_ranking clusters the top-k genes in ``n_runs`` runs.  The
per-run form (scikit-learn SpectralClustering with each run's seed, what the
workflow did before) solves the same eigenproblem in every run; the fast form
(glfs.evaluate.spectral_cluster_runs) solves it once and repeats only the
k-means with each run's seed.  This script runs both on the prepared data and
the selection tables of a finished workflow run, for a few rankings, and writes

  benchmarks/results/evaluation_fast_path.tsv   one row per (dataset, ranking, k):
      mean/sd NMI of both forms over the runs, runs with identical labels,
      connected components of the affinity, CPU seconds of both forms
  benchmarks/results/evaluation_fast_path.txt   summary (largest |mean difference|, CPU ratio, load)

Usage (after `snakemake --cores 2` in DIR):
  python benchmarks/evaluation_fast_path.py DIR [--methods laplacian_score variance glfs] [--random 2]
Nothing is asserted; tests/test_evaluate.py holds the tests.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import anndata
import numpy as np
import pandas as pd
from scipy.sparse.csgraph import connected_components

from glfs.evaluate import (
    knn_affinity,
    nmi,
    resolve_feature_grid,
    run_seeds,
    spectral_cluster,
    spectral_cluster_runs,
)

OUT = Path(__file__).resolve().parent / "results"


def _nmis(y, labels):
    return np.array([nmi(y, lab) for lab in labels])


def compare(X, y, ranking, grid, n_clusters, seeds, n_neighbors=10):
    rows = []
    for k in resolve_feature_grid(grid, X.shape[1]):
        Xk = X[:, ranking[:k]]
        A = knn_affinity(Xk, n_neighbors)
        t = time.process_time()
        # the per-run form: scikit-learn SpectralClustering on A with each run's seed (ARPACK, 10 k-means starts)
        slow = np.vstack(
            [spectral_cluster(Xk, n_clusters, random_state=s, affinity=A, eigen_solver="arpack") for s in seeds]
        )
        t_slow = time.process_time() - t
        t = time.process_time()
        fast = spectral_cluster_runs(A, n_clusters, seeds)
        t_fast = time.process_time() - t
        a, b = _nmis(y, slow), _nmis(y, fast)
        same = sum(nmi(s_, f_) > 1 - 1e-12 for s_, f_ in zip(slow, fast))
        rows.append(
            {
                "k": k,
                "components": int(connected_components(A, directed=False)[0]),
                "n_clusters": n_clusters,
                "nmi_per_run_mean": a.mean(),
                "nmi_per_run_sd": a.std(ddof=1),
                "nmi_shared_mean": b.mean(),
                "nmi_shared_sd": b.std(ddof=1),
                "diff_mean": b.mean() - a.mean(),
                "runs_identical_partition": int(same),
                "cpu_per_run_s": t_slow,
                "cpu_shared_s": t_fast,
            }
        )
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path, help="directory of a finished workflow run (holds results/)")
    ap.add_argument("--methods", nargs="+", default=["laplacian_score", "variance", "glfs"])
    ap.add_argument("--random", type=int, default=2, help="random gene orders per dataset")
    ap.add_argument("--grid", nargs="+", default=["5", "10", "15", "20", "25", "50", "75", "100", "150", "200", "all"])
    ap.add_argument("--n-runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    grid = [g if g == "all" else int(g) for g in args.grid]
    seeds = run_seeds(args.seed, args.n_runs)
    rows = []
    load0 = os.getloadavg()
    for prepared in sorted((args.run_dir / "results").glob("*/prepared.h5ad")):
        ds = prepared.parent.name
        ad = anndata.read_h5ad(prepared)
        if "label" not in ad.obs:
            continue
        X = np.asarray(ad.X.toarray() if hasattr(ad.X, "toarray") else ad.X, dtype=np.float64)
        y = np.asarray(ad.obs["label"].astype(str))
        n_clusters = int(np.unique(y).size)
        rankings = {}
        for m in args.methods:
            tab = prepared.parent / "selection" / f"{m}.tsv"
            if tab.exists():
                rankings[m] = np.argsort(pd.read_csv(tab, sep="\t")["rank"].to_numpy(), kind="stable")
        for i in range(args.random):
            rankings[f"random_{i}"] = np.random.default_rng(1000 + i).permutation(X.shape[1])
        for name, ranking in rankings.items():
            for r in compare(X, y, ranking, grid, n_clusters, seeds):
                rows.append({"dataset": ds, "ranking": name, **r})
            print(ds, name, "done", flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    df.to_csv(OUT / "evaluation_fast_path.tsv", sep="\t", index=False, float_format="%.6g")
    load1 = os.getloadavg()
    by = df.groupby("dataset").agg(
        cases=("k", "size"),
        max_abs_diff=("diff_mean", lambda v: np.abs(v).max()),
        mean_diff=("diff_mean", "mean"),
        identical_runs=("runs_identical_partition", "sum"),
        cpu_per_run=("cpu_per_run_s", "sum"),
        cpu_shared=("cpu_shared_s", "sum"),
    )
    n_clusters_note = "components > n_clusters -> per-run form in both columns"
    with open(OUT / "evaluation_fast_path.txt", "w") as fh:
        fh.write(
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load before {load0[0]:.2f}, after {load1[0]:.2f} (os.getloadavg)\n"
        )
        fh.write(f"{args.n_runs} runs per (dataset, ranking, k); rankings {list(rankings)}; {n_clusters_note}\n")
        fh.write(
            f"mean NMI difference shared - per-run: overall max |diff| {np.abs(df['diff_mean']).max():.4f}, "
            f"mean {df['diff_mean'].mean():+.4f}, sd of the differences {df['diff_mean'].std(ddof=1):.4f}\n"
        )
        fh.write(
            f"CPU: per-run form {df['cpu_per_run_s'].sum():.1f} s, shared {df['cpu_shared_s'].sum():.1f} s "
            f"(ratio {df['cpu_per_run_s'].sum() / df['cpu_shared_s'].sum():.2f})\n\n"
        )
        fh.write(
            f"cases with more components than clusters (per-run form kept): {int((df['components'] > df['n_clusters']).sum())}\n"
        )
        fh.write(by.to_string(float_format=lambda v: f"{v:.4f}") + "\n")
    print(open(OUT / "evaluation_fast_path.txt").read())


if __name__ == "__main__":
    main()
