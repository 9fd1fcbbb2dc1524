"""The well-posed GLFS against greedy LapAOFS on the same criterion, on the vendored data sets.

For k = 10, 25, 50, 100: Tr(H_S^-1) (He et al. 2011 Eq. 12; lower is better) of
the greedy selection (LapAOFS's greedy steps) and of ``glfs`` (greedy start +
exchange to a 1-swap local optimum), both on the same centred/scaled X and the
same lambdas (the ``glfs`` defaults), plus the median over 20 random k-sets (the
floor).  Evaluation only: nothing here chooses a default.

Run (after the workflow has prepared the data, e.g. `snakemake --cores 2`):
    python benchmarks/glfs_vs_greedy.py results > benchmarks/results/glfs_vs_greedy.tsv
"""

import os
import sys
import time
from pathlib import Path

import anndata as ad
import numpy as np
import scipy.sparse as sp

from glfs.designs._budgeted import DEFAULT_CENTER, glfs_design, standardise, trace_criterion

KS = (10, 25, 50, 100)
DATASETS = ("golub", "tcga_gbm", "tcga_gbm_clanc840")


def main(results):
    print(f"# load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        "dataset\tn_samples\tn_genes\tk\tgreedy\tglfs\tglfs_vs_greedy_pct\trandom_median\tn_swaps\tconverged\tseconds"
    )
    for name in DATASETS:
        p = Path(results) / name
        if not (p / "prepared.h5ad").exists():
            continue
        adata = ad.read_h5ad(p / "prepared.h5ad")
        X = np.asarray(adata.X.toarray() if sp.issparse(adata.X) else adata.X, dtype=np.float64)
        W = sp.load_npz(p / "graph.npz")
        n, d = X.shape
        Xs = standardise(X, DEFAULT_CENTER)
        rng = np.random.default_rng(0)
        for k in KS:
            t = time.perf_counter()
            r = glfs_design(X, W, k)
            secs = time.perf_counter() - t
            l1, l2 = r.params["lambda1"], r.params["lambda2"]
            rand = np.median(
                [trace_criterion(Xs, W, rng.choice(d, k, replace=False), lambda1=l1, lambda2=l2) for _ in range(20)]
            )
            pct = 100.0 * (r.greedy_criterion - r.criterion) / r.greedy_criterion
            print(
                f"{name}\t{n}\t{d}\t{k}\t{r.greedy_criterion:.6g}\t{r.criterion:.6g}\t{pct:.3f}\t{rand:.6g}\t{r.n_swaps}\t{r.converged}\t{secs:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results")
