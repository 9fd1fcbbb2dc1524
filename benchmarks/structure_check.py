"""Cost of the structural check of a sparse X against one Laplacian-score pass (issue 30, item 1).

    nice -n 10 python benchmarks/structure_check.py                      # 1,000,000 cells x 2,000 genes, 5 %
    nice -n 10 python benchmarks/structure_check.py --cells 200000       # smaller

A simulated CSR X (float32 values, int32 indices, each row's non-zeros one per stripe of d/k genes, so
sorted and without duplicates) and a graph of 10 neighbours per cell (cell i to i+1..i+5 and back,
symmetric).  Timed in the same process, best of ``--repeats``:
- the check ``glfs.check_X`` runs on every sparse X: ``glfs.core._structure.check_sparse_structure``
  (indptr and indices), scipy's ``has_canonical_format`` (on a fresh object, so not cached) and
  ``check_stored_values`` (NaN/inf);
- one ``glfs.laplacian_score(X, W)`` (the peer; it includes the check);
- for scale, scipy's own ``check_format(full_check=True)``, which checks the same index ranges.
Writes benchmarks/results/structure_check.tsv and .md with the load before and after.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import pandas as pd
import scipy.sparse as sp
from bench.settings import RESULTS as OUT  # benchmarks/ is the script's directory, so on sys.path
from bench.timing import best_of


def simulated(n, d, k, seed=0, block=100_000):
    """(n, d) CSR, k non-zeros per row, one in each stripe of d // k genes (sorted, no duplicates)."""
    rng = np.random.default_rng(seed)
    stripe = d // k
    indices = np.empty(n * k, np.int32)
    data = np.empty(n * k, np.float32)
    for r in range(0, n, block):
        m = min(block, n - r)
        cols = rng.integers(0, stripe, size=(m, k), dtype=np.int32) + (np.arange(k, dtype=np.int32) * stripe)
        indices[r * k : (r + m) * k] = cols.ravel()
        data[r * k : (r + m) * k] = np.log1p(rng.poisson(2.0, m * k) + 1).astype(np.float32)
    indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
    return sp.csr_matrix((data, indices, indptr), shape=(n, d))


def ring_graph(n, half=5):
    """Cell i joined to i+1..i+half (mod n) and back: 2 * half neighbours each, symmetric CSR."""
    rows = np.repeat(np.arange(n), half)
    cols = (rows + np.tile(np.arange(1, half + 1), n)) % n
    A = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    return (A + A.T).tocsr()


def the_check(X):
    from glfs.core._structure import check_sparse_structure, check_stored_values

    fresh = sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)  # has_canonical_format not cached
    check_sparse_structure(fresh)
    assert fresh.has_canonical_format
    check_stored_values(fresh)


def main():
    import glfs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=1_000_000)
    ap.add_argument("--genes", type=int, default=2_000)
    ap.add_argument("--per-cell", type=int, default=100, help="non-zeros per cell (100 of 2,000: 5 %%)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    load0 = os.getloadavg()
    X = simulated(args.cells, args.genes, args.per_cell)
    W = ring_graph(args.cells)
    glfs.laplacian_score(X[:2000], W[:2000, :2000])  # compile the kernels first
    t_check = best_of(lambda: the_check(X), args.repeats)
    t_scipy = best_of(
        lambda: sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape).check_format(full_check=True), args.repeats
    )
    t_ls = best_of(lambda: glfs.laplacian_score(X, W), max(1, args.repeats - 1))
    load1 = os.getloadavg()
    row = {
        "n_cells": args.cells,
        "n_genes": args.genes,
        "nnz": X.nnz,
        "check_s": round(t_check, 3),
        "scipy_full_check_s": round(t_scipy, 3),
        "laplacian_score_s": round(t_ls, 3),
        "check_over_score": round(t_check / t_ls, 4),
        "load_before": round(load0[0], 1),
        "load_after": round(load1[0], 1),
        "cpus": os.cpu_count(),
    }
    OUT.mkdir(exist_ok=True)
    pd.DataFrame([row]).to_csv(OUT / "structure_check.tsv", sep="\t", index=False)
    text = (
        "# Structural check of a sparse X against one Laplacian-score pass\n\n"
        f"{args.cells:,} cells x {args.genes:,} genes, {X.nnz:,} non-zeros (float32, int32 indices), "
        f"graph of 10 neighbours per cell; {os.cpu_count()} CPUs, load {load0[0]:.1f} before, {load1[0]:.1f} after.\n\n"
        f"| step | best time (s) |\n|---|---|\n| the check (indptr, indices, canonical form, NaN) | {t_check:.3f} |\n"
        f"| scipy `check_format(full_check=True)` | {t_scipy:.3f} |\n| `glfs.laplacian_score(X, W)` (includes the check) | {t_ls:.3f} |\n\n"
        f"The check costs {100 * t_check / t_ls:.1f} % of one Laplacian-score pass.\n"
    )
    (OUT / "structure_check.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
