"""Cost of graph_moran's local between-batch share: the library's search against the old brute force (issue 29).

    flock /work/tools/mem7.lock nice -n 19 python benchmarks/batch_local_share_cost.py --cells 20000 100000
    ... --cells 1000000 --old-max 0            # the new search only, against plain graph_moran at that size

Simulated counts with Splat batch effects (benchmarks/batch_selection.py's ``simulate``: 6 groups, ``--batches``
batches, batch factor loc ``--loc``), log-normalised; the principal components as graph_moran computes them
(glfs.graph._neighbors._pca_in_memory, 50).  Per size, in one process:
- ``local_batch_share`` with ``method="auto"`` (exact below 30,000 cells, faiss' IVF above) and, up to
  ``--old-max`` cells, with the old search (scikit-learn's brute force of every cell in each batch,
  ``method="exact"`` on the sklearn backend): times, their ratio, the recall of the neighbourhoods (each cell's
  group in each batch) against the exact ones, and the share's agreement (Pearson r, largest difference);
- ``glfs.select(X, "graph_moran", 500)`` without and with ``batches`` (default rule), alternating: the
  issue's goal is the second at most 1.5x the first; the top-500 overlap of the default score recomputed with
  the exact local share instead (same per-batch Moran's I and global share).
Writes benchmarks/results/batch_local_share_cost.tsv and .md (appending rows per size) with the load beside.

``--search-only`` (e.g. at 10^6 cells, where neither the old brute force nor a simulated X of 2,000 genes fits
the time and memory here): 50 Gaussian components of 30 cell states with a shift per batch, no X; the
neighbourhoods' search (``batch_neighbourhoods``) against the plain graph's search on the same components
(``glfs.graph._neighbors.nearest_neighbors(Z, 15)``: faiss' IVF, in dense blocks from 500,000 cells), the
search the plain graph_moran runs twice, and the recall of the neighbourhoods on 2,000 cells' exact groups.
Writes batch_local_share_cost_search.tsv and .md.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd
from bench.settings import RESULTS as OUT
from bench.timing import uptime


def groups_recall(exact, approx, n, K):
    """Share of the exact groups' cells found in the approximate groups (same group sizes), over all groups."""
    (re, ce), (ra, ca) = exact, approx
    key_e = np.unique(re.astype(np.int64) * n + ce)
    key_a = np.unique(ra.astype(np.int64) * n + ca)
    return float(np.isin(key_e, key_a, assume_unique=True).mean())


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def one_size(n_cells, args):
    from batch_selection import lognorm, simulate

    import glfs
    from glfs.graph import _neighbors as nb
    from glfs.scores._batches import batch_neighbourhoods, local_batch_share, plan_batches, scored_codes

    counts, _, batches = simulate(n_cells, args.genes, args.batches, args.loc, 0.1)
    X = lognorm(counts)
    del counts
    codes = scored_codes(plan_batches(batches, X.shape[0], method="graph_moran"))
    per = max(2, -(-15 // args.batches))
    row = {"cells": n_cells, "genes": args.genes, "batches": args.batches, "n_per_batch": per, "load_before": uptime()}
    Z, row["pca_s"] = timed(lambda: nb._pca_in_memory(X, 50, 0))
    new, row["share_new_s"] = timed(lambda: local_batch_share(X, codes, Z, per, random_state=0))
    row["search"] = nb.choose_neighbor_method(n_cells, 50, "auto", 50)[0]
    nbh_new, row["search_new_s"] = timed(lambda: batch_neighbourhoods(Z, codes, per, random_state=0))
    if args.centres_check:  # the share on a seeded draw of centres against every cell's neighbourhood
        m = args.centres_check
        part, row[f"share_{m}_centres_s"] = timed(
            lambda: local_batch_share(X, codes, Z, per, random_state=0, max_centres=m)
        )
        ok = ~(np.isnan(new) | np.isnan(part))
        row[f"share_{m}_centres_r"] = round(float(np.corrcoef(new[ok], part[ok])[0, 1]), 5)
        row[f"share_{m}_centres_max_abs_diff"] = float(np.max(np.abs(new[ok] - part[ok])))
    old = None
    if n_cells <= args.old_max:
        real = nb.exact_backend
        nb.exact_backend = lambda: "sklearn"  # the old path: scikit-learn's brute force of every cell in each batch
        try:
            old, row["share_old_s"] = timed(lambda: local_batch_share(X, codes, Z, per, method="exact"))
            nbh_old, row["search_old_s"] = timed(lambda: batch_neighbourhoods(Z, codes, per, method="exact"))
        finally:
            nb.exact_backend = real
        row["share_new_over_old"] = round(row["share_new_s"] / row["share_old_s"], 3)
        row["recall_groups"] = round(groups_recall(nbh_old, nbh_new, n_cells, args.batches), 4)
        ok = ~(np.isnan(new) | np.isnan(old))
        row["share_r"] = round(float(np.corrcoef(new[ok], old[ok])[0, 1]), 5)
        row["share_max_abs_diff"] = float(np.max(np.abs(new[ok] - old[ok])))
    if not args.no_moran:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            glfs.select(
                X[:2000], "graph_moran", n_features_to_select=args.n
            )  # imports and compilation out of the timings
            t = {"no": [], "yes": []}
            for _ in range(args.repeats):
                for key, b in (("no", None), ("yes", batches)):
                    sel, s = timed(lambda: glfs.select(X, "graph_moran", n_features_to_select=args.n, batches=b))
                    t[key].append(s)
                    if b is not None:
                        with_b = sel
        row["moran_without_s"], row["moran_with_s"] = round(min(t["no"]), 1), round(min(t["yes"]), 1)
        row["with_over_without"] = round(min(t["yes"]) / min(t["no"]), 3)
        base = with_b.extra["mean_moran_i"] - np.nan_to_num(with_b.extra["between_batch_share"])
        top = lambda s: set(np.argsort(-np.nan_to_num(base - np.nan_to_num(s), nan=-np.inf))[: args.n])  # noqa: E731
        if old is not None:
            row[f"top{args.n}_overlap_exact_vs_new"] = len(top(old) & top(new)) / args.n
        if args.centres_check:
            row[f"top{args.n}_overlap_{args.centres_check}_centres_vs_all"] = len(top(part) & top(new)) / args.n
    row["load_after"] = uptime()
    for key in ("pca_s", "share_new_s", "search_new_s", "share_old_s", "search_old_s"):
        if key in row:
            row[key] = round(row[key], 2)
    return row


def search_only(n_cells, args):
    from glfs.graph import _neighbors as nb
    from glfs.scores._batches import LOCAL_SHARE_CENTRES, batch_neighbourhoods

    rng = np.random.default_rng(0)
    K, per = args.batches, max(2, -(-15 // args.batches))
    centres, shifts = rng.normal(scale=3.0, size=(30, 50)), rng.normal(scale=0.5, size=(K, 50))
    codes = rng.integers(0, K, n_cells)
    Z = (centres[rng.integers(0, 30, n_cells)] + shifts[codes] + rng.normal(size=(n_cells, 50))).astype(np.float32)
    row = {"cells": n_cells, "batches": K, "n_per_batch": per, "load_before": uptime()}
    if n_cells > LOCAL_SHARE_CENTRES:  # what local_batch_share searches: the neighbourhoods of a seeded draw
        centres = np.sort(np.random.default_rng(0).choice(n_cells, LOCAL_SHARE_CENTRES, replace=False))
        _, row["centres_neighbourhoods_s"] = timed(
            lambda: batch_neighbourhoods(Z, codes, per, random_state=0, centres=centres)
        )
    if args.no_all_centres:
        nbh = None
    else:
        nbh, row["neighbourhoods_s"] = timed(lambda: batch_neighbourhoods(Z, codes, per, random_state=0))
    _, row["graph_search_s"] = timed(lambda: nb.nearest_neighbors(Z, 15, random_state=0))
    for key in ("neighbourhoods_s", "centres_neighbourhoods_s"):
        if key in row:
            row[key.replace("_s", "_over_graph_search")] = round(row[key] / row["graph_search_s"], 3)
    if nbh is None:
        row["load_after"] = uptime()
        return {k: round(v, 1) if k.endswith("_s") else v for k, v in row.items()}
    probe = np.sort(rng.choice(n_cells, 2000, replace=False))  # exact groups of 2,000 cells, by brute force
    found, (rows, cols) = 0, nbh
    assert rows.size == n_cells * K * per  # every batch larger than its group: batch b's block holds cell i at i per
    for b in range(K):
        ref = np.flatnonzero(codes == b)
        R = Z[ref].astype(np.float64)
        r2 = (R * R).sum(axis=1)
        for lo in range(0, probe.size, 100):
            q = probe[lo : lo + 100]
            Q = Z[q].astype(np.float64)
            dist = (Q * Q).sum(axis=1)[:, None] + r2[None] - 2.0 * Q @ R.T  # (100, n_b): 200 MB at a million cells
            own = codes[q] == b
            dist[own, np.searchsorted(ref, q[own])] = -1.0  # the cell itself first in its own batch
            near = np.argpartition(dist, per, axis=1)[:, :per]  # the per nearest (a full sort took 10 min at 10^6)
            exact = ref[near]
            for i, cell in enumerate(q):
                at = (b * n_cells + cell) * per
                found += np.isin(exact[i], cols[at : at + per]).sum()
    row["recall_groups_2000_cells"] = round(found / (probe.size * K * per), 4)
    row["load_after"] = uptime()
    for key in ("neighbourhoods_s", "graph_search_s", "centres_neighbourhoods_s"):
        if key in row:
            row[key] = round(row[key], 1)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--genes", type=int, default=2000)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--loc", type=float, default=0.1)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--old-max", type=int, default=100_000, help="the old brute force up to this many cells")
    ap.add_argument("--no-moran", action="store_true")
    ap.add_argument("--centres-check", type=int, default=0, help="also the share on a draw of this many centres")
    ap.add_argument("--search-only", action="store_true", help="the search alone on simulated components (docstring)")
    ap.add_argument("--no-all-centres", action="store_true", help="--search-only: not every cell's neighbourhoods")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("glfs.scores._moran").setLevel(logging.WARNING)
    stem = "batch_local_share_cost_search" if args.search_only else "batch_local_share_cost"
    tsv = os.path.join(OUT, f"{stem}.tsv")
    for n_cells in args.cells:
        row = search_only(n_cells, args) if args.search_only else one_size(n_cells, args)
        print(pd.Series(row).to_string(), flush=True)
        old = pd.read_csv(tsv, sep="\t") if os.path.exists(tsv) else pd.DataFrame()
        table = pd.concat([old, pd.DataFrame([row])], ignore_index=True)
        table.to_csv(tsv, sep="\t", index=False)
        with open(os.path.join(OUT, f"{stem}.md"), "w") as fh:
            fh.write(
                f"# Cost of the local between-batch share{' search' if args.search_only else ''} (last run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
                f"`python benchmarks/batch_local_share_cost.py {' '.join(sys.argv[1:])}` (one row per size and run; "
                "the load before and after in each row; the script's docstring says what each column is).\n\n"
            )
            fh.write(table.T.to_markdown() + "\n")


if __name__ == "__main__":
    main()
