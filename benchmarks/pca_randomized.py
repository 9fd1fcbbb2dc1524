"""The PCA fit on a subsample of a million cells: ARPACK against randomized subspace iteration (issue 31).

What: above ``PCA_FIT_SAMPLES`` cells the library fits the components on a seeded subsample of
100,000 cells (scikit-learn's ARPACK: one matrix-vector product after another, on one thread) and
projects every cell.  Would randomized subspace iteration on the same subsample (scikit-learn's
solver for a dense X of this shape, written out below with the block products on every core) be
faster, and would it change the graph more than the subsample itself does?  And the projection of
every cell on every core (``glfs.core._sparse_kernels.times_dense``) against scipy's product.

How, on the simulated log-normalised counts of ``benchmarks/atlas_scale.py`` (``--work``, in memory,
CSR float32), one process, 2 threads:
- ARPACK on the subsample of seed 0 (the library's draw) and of seed 1, randomized on seed 0: wall
  and CPU seconds (all threads) of each fit;
- subspaces: cosines of the principal angles between the 50 components (min and mean), and the
  variance of the seed-0 subsample (centred) each set of components captures, relative to ARPACK's;
  ARPACK on the other subsample is the size of the change the subsample already makes;
- the projection of every cell: scipy's ``X @ V`` against ``times_dense`` (wall, CPU, bit-equal?);
- the graph: ``glfs.similarity_graph(X, random_state=0)`` with the randomized fit (``--old-graph``
  given: at the commit of the 2026-11-28 17:00 row the library used it) against the ARPACK graph of
  the same call (an .npz written by atlas_scale.py at an earlier commit): the share of edges kept,
  and the Laplacian scores on both graphs (top-2,000 overlap, Spearman).
Rows appended to results/pca_randomized.tsv; results/pca_randomized.md rendered from it.

    python benchmarks/pca_randomized.py --cells 1000000 --old-graph /tmp/glfs_atlas/graph_backed_1000000_6.3.npz
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).resolve().parent / "results"
N_PCS = 50


# ---- the alternative measured (randomized subspace iteration, implicitly centred); not in the library ----
# Halko, Martinsson and Tropp (SIAM Rev. 53:217, 2011), Algorithm 4.4, with scikit-learn's settings for its
# randomized PCA solver: 10 oversamples, 7 power iterations (n_pcs < a tenth of the smaller side), LU
# normalisation between iterations, QR at the end; float32 for float32 data, the mean summed in float64.


def _t_times_dense_kernel():
    import numba

    @numba.njit(parallel=True, cache=True)
    def kernel(indptr, indices, data, P, part):  # part[q] = (rows of part q)' P[those rows]
        n, n_parts, c = indptr.size - 1, part.shape[0], P.shape[1]
        step = (n + n_parts - 1) // n_parts
        for q in numba.prange(n_parts):
            acc = part[q]
            for i in range(q * step, min(n, (q + 1) * step)):
                for t in range(indptr[i], indptr[i + 1]):
                    for j in range(c):
                        acc[indices[t], j] += data[t] * P[i, j]
        return part

    return kernel


def _t_times_dense(S, P, kernel, max_parts=8):
    n_parts = int(min(max_parts, max(1, S.nnz // max(1, S.shape[1] * P.shape[1]))))
    part = kernel(
        S.indptr, S.indices, S.data, np.ascontiguousarray(P), np.zeros((n_parts, S.shape[1], P.shape[1]), P.dtype)
    )
    return part.sum(axis=0)


def randomized_components(S, n_pcs, random_state):
    """(V (d, n_pcs) float64, column means) of the sparse CSR S by randomized subspace iteration."""
    import scipy.linalg as la

    from glfs.graph._sharded import project_block

    n, d = S.shape
    dtype = np.float32 if S.dtype == np.float32 else np.float64
    mean = np.bincount(S.indices, weights=S.data.astype(np.float64), minlength=d) / n
    mu, kernel = mean.astype(dtype), _t_times_dense_kernel()
    times = lambda P: project_block(S, P) - mu @ P  # noqa: E731  (float32 data, as measured)
    times_t = lambda P: _t_times_dense(S, P, kernel) - np.outer(mu, P.sum(axis=0))  # noqa: E731
    Q = np.random.default_rng(random_state).standard_normal((d, min(n_pcs + 10, n, d)), dtype=dtype)
    for _ in range(7 if n_pcs < 0.1 * min(n, d) else 4):
        Q = la.lu(times(Q), permute_l=True, overwrite_a=True, check_finite=False)[0]
        Q = la.lu(times_t(Q), permute_l=True, overwrite_a=True, check_finite=False)[0]
    Q = la.qr(times(Q), mode="economic", overwrite_a=True, check_finite=False)[0]
    _, _, Vt = la.svd(times_t(Q).T, full_matrices=False, overwrite_a=True, check_finite=False)
    return Vt[:n_pcs].T.astype(np.float64), mean


def _timed(fn):
    l0, t0, c0 = os.getloadavg()[0], time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0, f"{l0:.1f}-{os.getloadavg()[0]:.1f}"


def _angles(A, B):
    c = np.linalg.svd(A.T @ B, compute_uv=False)
    return float(c.min()), float(c.mean())


def _captured(S, mean, V):
    """||(S - 1 mean') V||_F^2 of the sparse S."""
    P = S @ V.astype(np.float64) - (mean @ V)[None, :]
    return float(np.sum(P**2))


def _edge_share(new, old):
    a, b = sp.triu(new, 1).tocsr(), sp.triu(old, 1).tocsr()
    a.data[:], b.data[:] = 1.0, 1.0
    return float(a.multiply(b).sum() / b.sum())


def run(args):
    import anndata as ad
    from sklearn.decomposition import PCA

    import glfs
    from glfs.graph import _neighbors as nb
    from glfs.graph._sharded import project_block

    n = args.cells
    X = ad.read_h5ad(args.work / f"lognorm_{n}_{args.lib_loc}.h5ad").X
    rows0 = nb._fit_sample(n, N_PCS, 0)
    S0 = X[rows0]
    base = {"date": time.strftime("%Y-%m-%d %H:%M"), "cells": n, "fit cells": rows0.size, "genes": X.shape[1]}
    out = []

    def arpack(S):
        p = PCA(n_components=N_PCS, svd_solver="arpack", random_state=0).fit(S)
        return p.components_.T.astype(np.float64), p.mean_

    (Va, ma), ta, ca, la = _timed(lambda: arpack(S0))
    (Vr, mr), tr, cr, lr = _timed(lambda: randomized_components(S0, N_PCS, 0))
    S1 = X[nb._fit_sample(n, N_PCS, 1)]
    (V1, _), t1, c1, l1 = _timed(lambda: arpack(S1))
    del S1
    ref = _captured(S0, ma, Va)
    for name, V, t, c, ld in (
        ("ARPACK, subsample seed 0 (the library)", Va, ta, ca, la),
        ("randomized, subsample seed 0", Vr, tr, cr, lr),
        ("ARPACK, subsample seed 1", V1, t1, c1, l1),
    ):
        lo, mean_cos = _angles(Va, V)
        out.append(
            {
                **base,
                "step": f"fit: {name}",
                "seconds": t,
                "CPU s": c,
                "load": ld,
                "min cos vs ARPACK": lo,
                "mean cos vs ARPACK": mean_cos,
                "variance captured vs ARPACK": _captured(S0, ma, V) / ref,
            }
        )
    V32 = Vr.astype(np.float32)
    Zs, ts, cs, ls = _timed(lambda: np.asarray(X @ V32))
    Zn, tn, cn, ln = _timed(lambda: project_block(X, V32))
    equal = bool(np.array_equal(Zs, Zn))
    del Zs, Zn
    out.append({**base, "step": "projection: scipy X @ V", "seconds": ts, "CPU s": cs, "load": ls})
    out.append(
        {
            **base,
            "step": "projection: times_dense",
            "seconds": tn,
            "CPU s": cn,
            "load": ln,
            "note": f"bit-equal to scipy: {equal}",
        }
    )
    if args.old_graph:

        def fit(S, n_pcs, random_state):  # the library's _fit_components with the randomized solver
            V, mean = randomized_components(sp.csr_matrix(S), n_pcs, random_state)
            return V.astype(np.float32), (mean @ V).astype(np.float32)

        arpack_fit, nb._fit_components = nb._fit_components, fit
        try:
            W, tg, cg, lg = _timed(lambda: glfs.similarity_graph(X, random_state=0))
        finally:
            nb._fit_components = arpack_fit
        old = sp.load_npz(args.old_graph)
        s_new = glfs.laplacian_score(X, W)
        s_old = glfs.laplacian_score(X, old)
        from scipy.stats import spearmanr

        top = len(set(np.argsort(s_new)[:2000]) & set(np.argsort(s_old)[:2000])) / 2000
        out.append(
            {
                **base,
                "step": "graph: similarity_graph(X) with the randomized fit",
                "seconds": tg,
                "CPU s": cg,
                "load": lg,
                "edge share vs ARPACK": _edge_share(W, old),
                "top2000 vs ARPACK": top,
                "spearman vs ARPACK": float(spearmanr(s_new, s_old)[0]),
                "note": f"ARPACK graph: {args.old_graph.name}",
            }
        )
    return out


COLUMNS = [
    "date",
    "cells",
    "fit cells",
    "genes",
    "step",
    "seconds",
    "CPU s",
    "load",
    "min cos vs ARPACK",
    "mean cos vs ARPACK",
    "variance captured vs ARPACK",
    "edge share vs ARPACK",
    "top2000 vs ARPACK",
    "spearman vs ARPACK",
    "note",
]


def _write(rows, tsv, md):
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS)
    if tsv.exists():
        df = pd.concat([d for d in (pd.read_csv(tsv, sep="\t"), df) if len(d)], ignore_index=True)
    df.to_csv(tsv, sep="\t", index=False, float_format="%.6g")
    body = df.dropna(axis=1, how="all").to_markdown(index=False, floatfmt=".4g")
    md.write_text(
        f"# The PCA fit on a subsample: ARPACK against randomized subspace iteration\n\nWritten by "
        f"`benchmarks/pca_randomized.py` (its docstring says how) from `pca_randomized.tsv`.\n\n{body}\n"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, default=1_000_000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/glfs_atlas"))
    ap.add_argument("--lib-loc", type=float, default=6.3)
    ap.add_argument("--old-graph", type=Path)
    ap.add_argument("--render", action="store_true", help="only write the .md from the .tsv")
    args = ap.parse_args()
    tsv = RESULTS / "pca_randomized.tsv"
    _write([] if args.render else run(args), tsv, RESULTS / "pca_randomized.md")


if __name__ == "__main__":
    main()
