"""ARPACK against LOBPCG for the spectral embedding of the clustering evaluation.

    python benchmarks/spectral_solvers.py [--sizes 1000 3000 10000] [--genes 10 50 200]

On the scaling benchmark's simulated single-cell data (``bench.simulated.simulate_lognorm``,
2,000 genes, 8 clusters) the cells are the stratified subsamples the
evaluation would take.  The genes are the top 10, 50 and 200 by the Laplacian
score on the default graph.  For each size and gene count, it builds the kNN
affinity of the evaluation (``glfs.evaluate.knn_affinity``) and computes the
embedding with:
- ARPACK (scikit-learn's default, shift-invert);
- LOBPCG at scipy's default tolerance;
- LOBPCG at ``glfs.evaluate.EIGEN_TOL``.

For each solver it writes the time, the largest principal angle to the ARPACK
subspace, and the mean and sd of NMI to the clusters over the 10 k-means seeds
of a clustering run.  Results: ``benchmarks/results/spectral_solvers.tsv`` and
``.md``, with the machine's load.  ARPACK at 10,000 cells takes minutes per
case.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.simulated import simulate_lognorm

RESULTS = Path(__file__).resolve().parent / "results"


def _case(A, y, solver, tol, seeds):
    import numpy as np
    from sklearn.cluster import k_means
    from sklearn.manifold import spectral_embedding

    from glfs.evaluate import nmi

    kw = {"eigen_solver": solver} if tol is None else {"eigen_solver": solver, "eigen_tol": tol}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.perf_counter()
        U = spectral_embedding(A, n_components=8, random_state=0, drop_first=False, **kw)
        dt = time.perf_counter() - t
    missed = any("not reaching the requested tolerance" in str(w.message) for w in caught)
    scores = [nmi(y, k_means(U, 8, random_state=int(s), n_init=10)[1]) for s in seeds]
    return U, dt, float(np.mean(scores)), float(np.std(scores)), missed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 3000, 10000])
    ap.add_argument("--genes", type=int, nargs="*", default=[10, 50, 200])
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    import numpy as np
    import pandas as pd
    import scipy.linalg as sla

    import glfs
    from glfs.evaluate import EIGEN_TOL, knn_affinity, run_seeds, stratified_subsample

    load_start = os.getloadavg()
    X, labels, _ = simulate_lognorm(max(args.sizes), 2000, seed=0)
    seeds = run_seeds(0, 10)
    rows = []
    for n in args.sizes:
        keep = stratified_subsample(labels, n, 0) if n < X.shape[0] else np.arange(X.shape[0])
        Xn, yn = np.asarray(X[keep], dtype=np.float64), labels[keep]
        order = np.argsort(glfs.laplacian_score(Xn, glfs.similarity_graph(Xn)), kind="stable")
        for k in args.genes:
            A = knn_affinity(Xn[:, order[:k]], 10)
            ref = None
            for name, solver, tol in [
                ("arpack", "arpack", None),
                ("lobpcg_scipy_tol", "lobpcg", None),
                ("lobpcg_eigen_tol", "lobpcg", EIGEN_TOL),
            ]:
                U, dt, m, sd, missed = _case(A, yn, solver, tol, seeds)
                ref = U if ref is None else ref
                angle = float(np.degrees(sla.subspace_angles(ref, U).max()))
                rows.append(
                    {
                        "n_cells": n,
                        "top_genes": k,
                        "solver": name,
                        "time_s": round(dt, 2),
                        "max_angle_deg": angle,
                        "nmi_mean": round(m, 4),
                        "nmi_sd": round(sd, 4),
                        "missed_tol": missed,
                        "load1": os.getloadavg()[0],
                    }
                )
                print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "spectral_solvers.tsv", sep="\t", index=False)
    head = (
        f"Load (1 min) at start {load_start[0]:.2f}, at end {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs. "
        f"EIGEN_TOL = {EIGEN_TOL:g}. Angles are to the ARPACK subspace; NMI is the mean over 10 k-means seeds."
    )
    text = [
        "# Spectral embedding: ARPACK vs LOBPCG (`benchmarks/spectral_solvers.py`)",
        "",
        head,
        "",
        df.drop(columns="load1").to_markdown(index=False, floatfmt=".3g"),
        "",
    ]
    (args.out / "spectral_solvers.md").write_text("\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
