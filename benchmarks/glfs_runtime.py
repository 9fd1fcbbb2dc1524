"""Wall time of GLFS on random data of the real datasets' shapes (samples x genes).

For each shape and objective: glfs_path (default grid, what select_glfs runs
with n_features) and glfs(lam=None) (halving search + path).  Random
log-normal-like data, 5-NN heat graph.  Also GLFSClassifier.fit on 38 x 7129.

Run:  python benchmarks/glfs_runtime.py > benchmarks/results/glfs_runtime.txt
"""

import os
import time
import warnings

import numpy as np

import glfs


def main():
    print(f"# cores available: {os.cpu_count()}; BLAS threads: {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    print("shape\tobjective\tcall\tseconds\tn_selected\tconverged_points")
    for n, d in ((173, 1740), (72, 7129)):
        rng = np.random.default_rng(0)
        X = np.exp(rng.normal(2.0, 0.5, size=(n, d)))
        W = glfs.similarity_graph(X, n_neighbors=5)
        for objective in ("exact", "paper", "printed"):
            for call in ("path", "glfs_lam_search"):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if call == "path":
                        res = glfs.glfs_path(X, W, objective=objective)
                    else:
                        res = glfs.glfs(X, W, objective=objective)
                dt = time.perf_counter() - t
                print(f"{n}x{d}\t{objective}\t{call}\t{dt:.1f}\t{res.n_selected}\t{sum(res.converged)}/{len(res.converged)}", flush=True)
    rng = np.random.default_rng(1)
    X = np.exp(rng.normal(2.0, 0.5, size=(38, 7129)))
    y = np.r_[np.zeros(27), np.ones(11)]
    X[y == 1, :20] += 3.0
    t = time.perf_counter()
    clf = glfs.GLFSClassifier().fit(X, y)
    print(f"38x7129\texact\tGLFSClassifier.fit(cv=10)\t{time.perf_counter() - t:.1f}\t{clf.n_genes_}\t-")


if __name__ == "__main__":
    main()
