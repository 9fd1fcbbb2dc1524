"""Cost of graph_moran against scanpy's seurat_v3 HVG, in the same process (issue 18, goal 3).

    python benchmarks/graph_moran_cost.py                 # 50,000 cells x 2,000 genes (and x 10,000)
    python benchmarks/graph_moran_cost.py --cells 20000   # smaller
    python benchmarks/graph_moran_cost.py --method graph_moran_binned   # another graph method (its own result files)

Simulated counts (glfs.simulation._scsim, the Splat model, 8 groups, ~3,000 counts per cell), scanpy's
normalize_total + log1p, then, each timed (best of --repeats, fresh data each time):
- ``sc.pp.highly_variable_genes(flavor="seurat_v3")`` on the counts (the peer);
- scanpy's graph: ``sc.pp.pca`` + ``sc.pp.neighbors`` (what a user has computed already);
- ``glfs.tl.select(adata, "graph_moran", 2000, obsp="connectivities")``: on scanpy's graph (goal: at
  most 2x the HVG time);
- ``glfs.tl.select(adata, "graph_moran", 2000)``: with its own graph (goal: at most 30 s at
  50,000 x 2,000 on 2 cores).
Writes benchmarks/results/graph_moran_cost.tsv and .md with the load before and after
(graph_moran_cost_<method>.* for another ``--method``; ``--no-own-graph`` skips the own-graph step).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import pandas as pd
from bench.settings import RESULTS as OUT  # benchmarks/ is the script's directory, so on sys.path
from bench.timing import best_of


def main():
    import anndata as ad
    import scanpy as sc

    import glfs
    from glfs.simulation._scsim import simulate_counts

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=50_000)
    ap.add_argument("--genes", type=int, nargs="+", default=[2000, 10000])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--method", default="graph_moran")
    ap.add_argument("--no-own-graph", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    load0 = os.getloadavg()
    for d in args.genes:
        sim = simulate_counts(
            args.cells,
            d,
            group_prob=(1 / 8,) * 8,
            de_prob=0.05,
            de_fac_loc=0.3,
            lib_loc=8.0,
            random_state=0,
            block_cells=10_000,
        )
        base = ad.AnnData(sim.counts)
        base.layers["counts"] = sim.counts.copy()
        sc.pp.normalize_total(base)
        sc.pp.log1p(base)
        nnz = base.X.nnz

        def hvg():
            a = base.copy()
            sc.pp.highly_variable_genes(a, flavor="seurat_v3", layer="counts", n_top_genes=2000)

        def scanpy_graph():
            a = base.copy()
            sc.pp.pca(a, n_comps=50, random_state=0)
            sc.pp.neighbors(a, random_state=0)
            return a

        with_graph = scanpy_graph()
        with_graph.var = with_graph.var[[]]

        def on_scanpy_graph():
            a = with_graph.copy()
            glfs.tl.select(a, args.method, min(2000, d), obsp="connectivities")

        def own_graph():
            a = base.copy()
            glfs.tl.select(a, args.method, min(2000, d))

        t = {
            "hvg_seurat_v3": best_of(hvg, args.repeats),
            "scanpy_pca_neighbors": best_of(scanpy_graph, 1),
            f"{args.method}_on_scanpy_graph": best_of(on_scanpy_graph, args.repeats),
        }
        if not args.no_own_graph:
            t[f"{args.method}_own_graph"] = best_of(own_graph, args.repeats)
        for step, sec in t.items():
            rows.append(
                {
                    "n_cells": args.cells,
                    "n_genes": d,
                    "nnz": nnz,
                    "step": step,
                    "seconds": round(sec, 2),
                    "ratio_to_hvg": round(sec / t["hvg_seurat_v3"], 2),
                }
            )
        print(pd.DataFrame(rows).tail(len(t)).to_string(index=False), flush=True)
    load1 = os.getloadavg()
    df = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    stem = "graph_moran_cost" if args.method == "graph_moran" else f"graph_moran_cost_{args.method}"
    df.to_csv(OUT / f"{stem}.tsv", sep="\t", index=False)
    md = [
        f"# {args.method} cost against scanpy's seurat_v3 HVG ({time.strftime('%Y-%m-%d %H:%M')}, 2 cores, "
        f"load {load0[0]:.1f} before, {load1[0]:.1f} after; best of {args.repeats} except scanpy's graph)",
        "",
        df.to_markdown(index=False),
        "",
    ]
    (OUT / f"{stem}.md").write_text("\n".join(md))


if __name__ == "__main__":
    main()
