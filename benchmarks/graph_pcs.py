"""How many principal components the library's own graph needs (issue 31): 20 (``APPROX_N_PCS`` since 2026-12-05)
against 50 (scanpy's number, the default before).

    nice -n 10 python benchmarks/graph_pcs.py --panel   # the real panel, evaluation seeds 0 and 1
    python benchmarks/graph_pcs.py --atlas              # 10^6 cells: the defaults against 50 PCs, seurat_v3, recall
    python benchmarks/graph_pcs.py --atlas-probes       # the run before the change: 20 PCs with 16 and 32 probes
    python benchmarks/graph_pcs.py --recall-sweep       # recall@15 by components and probes, 50,000-10^6 cells
    python benchmarks/graph_pcs.py --render             # only graph_pcs.md from the TSVs

The panel: the Laplacian score on a 5-NN heat graph of n components, found exactly
(``glfs.similarity_graph(X, method="exact", n_pcs=n)``), beside ``laplacian_score`` as registered (exact on
all genes below 8,192 cells; in the committed table of 2026-12-05 04:22, run before the change, on 50 components
for Kang and Stoeckius) and scanpy's seurat_v3 and cell_ranger flavours, through ``real_panel.py``'s
protocol and cache (Leiden, 200-2,000 genes, the score the mean of three ARIs).

The atlas: ``atlas_scale.py``'s stored 10^6 x 20,000 cells (make them with ``atlas_scale.py --cells 1000000``).
Each step is a fresh process: ``glfs.tl.select(adata, "laplacian_score", 2000, graph_params={"n_pcs": n})`` in
memory (the file read before the clock starts, as for seurat_v3) or from the file opened with ``backed="r"`` (the
reads inside the clock: two passes), with ``glfs.graph._neighbors.ivf_nprobe`` replaced by the row's nprobe, and scanpy's
seurat_v3 on the counts between the calls.  Recall@15: 5,000 seeded cells, the library's blocked IVF search (nlist 1,000) on the first
n of the stored 50 components (``knn_backends.py --pcs``) against faiss' exact search in the same components.

Writes benchmarks/results/graph_pcs_panel.tsv, graph_pcs_atlas.tsv, graph_pcs_atlas_probes.tsv,
graph_pcs_recall.tsv and graph_pcs.md.
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
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench.simulated import atlas_files  # noqa: E402
from bench.timing import log_stamps  # noqa: E402

RESULTS = HERE / "results"
WORK = Path("/tmp/glfs_atlas")
N_CELLS, LIB_LOC = 1_000_000, 6.3
# (step, n_pcs, nprobe or None for the library's rule), in the order they run
# (the library's defaults: n_pcs None; 50 components and their probes, the defaults until 2026-12-05)
ATLAS_STEPS = [
    ("hvg", None, None),
    ("ls", None, None),
    ("hvg", None, None),
    ("ls_backed", None, None),
    ("hvg", None, None),
    ("ls", 50, None),
    ("hvg", None, None),
    ("ls_backed", 50, None),
    ("hvg", None, None),
]
# the run before the change (2026-12-05 04:29-04:41, main at 7507833: 50 components and max(32, sqrt(nlist)) probes
# at every dimension), kept as graph_pcs_atlas_probes.tsv: 20 components with 16 and 32 probes against 50 with 32
PROBE_STEPS = [
    ("hvg", None, None),
    ("ls", 20, 16),
    ("hvg", None, None),
    ("ls_backed", 20, 16),
    ("hvg", None, None),
    ("ls", 50, None),
    ("hvg", None, None),
    ("ls_backed", 50, None),
    ("hvg", None, None),
    ("ls", 20, 32),
    ("hvg", None, None),
]
RECALL = [(50, 32), (20, 13)]  # the rule's probes (ivf_nprobe) on 50 and on 20 components of a million cells
PROBE_RECALL = [(50, 32), (20, 32), (20, 24), (20, 16)]
SWEEP_CELLS, SWEEP_PCS, SWEEP_RATIOS = (50_000, 200_000, 1_000_000), (10, 20, 30, 50), (0.25, 0.5, 0.75, 1.0, 1.5)


def panel(seeds=(0, 1)) -> pd.DataFrame:
    import real_panel as rp

    import glfs

    def on_pcs(n):
        def scores(p):
            W = glfs.similarity_graph(p.X, method="exact", n_pcs=n, random_state=0)
            sel = glfs.select(
                p.X, "laplacian_score", graph=W, n_features_to_select=min(max(rp.FEATURE_GRID), p.X.shape[1])
            )
            pos = np.empty(p.X.shape[1])
            pos[np.asarray(sel.ranking)] = np.arange(p.X.shape[1])
            return -pos  # higher = better, as real_panel's candidates

        return scores

    rows = []
    for seed in seeds:
        rp.EVAL_SEED = seed
        for name in rp.FILES:
            p = rp.Panel(name, rp.CACHE)
            labels = [lab for lab, (s, _, _) in rp.LABELS.items() if s == name]
            got = rp.run_set(
                p,
                labels,
                ["laplacian_score", "hvg_seurat_v3", "hvg_cell_ranger"],
                {"ls_pcs50": on_pcs(50), "ls_pcs20": on_pcs(20)},
                n_random=0,
                floors=False,
            )
            rows += [{**r, "eval_seed": seed} for r in got]
    return pd.DataFrame(rows)


def worker(step: str, n_pcs: int | None, nprobe: int | None) -> dict:
    """One atlas step in this process: seconds, CPU seconds, load before and after."""
    import anndata as ad

    import glfs
    import glfs.graph._neighbors as nb

    counts, lognorm, _ = atlas_files(WORK, N_CELLS, LIB_LOC)
    a = ad.read_h5ad(counts if step == "hvg" else lognorm, backed="r" if step == "ls_backed" else None)
    if nprobe is not None:
        nb.ivf_nprobe = lambda nlist, n_dims=None: min(nlist, int(nprobe))  # these probes on any components
    stamps = log_stamps("glfs.graph._neighbors", "glfs.graph._similarity")
    l0, t, c = os.getloadavg()[0], time.perf_counter(), time.process_time()
    if step == "hvg":
        import scanpy as sc

        sc.pp.highly_variable_genes(a, flavor="seurat_v3", n_top_genes=2000)
    else:
        glfs.tl.select(a, "laplacian_score", 2000, **({} if n_pcs is None else {"graph_params": {"n_pcs": int(n_pcs)}}))
    end = time.perf_counter()
    at = [next((s for s, m in stamps if key in m), None) for key in ("PCA to", "similarity_graph:")]
    split = {"pca_s": at[0] - t, "neighbours_s": at[1] - at[0], "score_s": end - at[1]} if all(at) else {}
    return {
        "seconds": end - t,
        "cpu_s": time.process_time() - c,
        **split,
        "load_before": l0,
        "load_after": os.getloadavg()[0],
    }


def recall(
    d: int, nprobe: int, n_queries: int = 5000, k: int = 15, n: int = N_CELLS, nlist: int = 1000, lists=None
) -> float:
    """Recall@k of the library's blocked IVF search (``nlist`` cells, ``nprobe`` probed) on the first d stored
    components of n seeded cells of the million (all of them at n = N_CELLS), against faiss' exact search."""
    import faiss

    from glfs.graph._ivf_blocks import ivf_lists, search_lists

    Z = cells(n, d)
    q = np.sort(np.random.default_rng(0).choice(Z.shape[0], n_queries, replace=False))
    flat = faiss.IndexFlatL2(d)
    flat.add(Z)
    _, truth = flat.search(Z[q], k + 1)
    ind = search_lists(lists or ivf_lists(Z, nlist, 0), Z[q], k + 6, nprobe, n_threads=2)
    hits = []
    for i in range(n_queries):
        c = ind[i][(ind[i] >= 0) & (ind[i] != q[i])]
        dist = ((Z[c].astype(np.float64) - Z[q[i]].astype(np.float64)) ** 2).sum(1)  # the library re-ranks in float64
        found = set(c[np.argsort(dist, kind="stable")[:k]])
        hits.append(len(set(truth[i][truth[i] != q[i]][:k]) & found) / k)
    return float(np.mean(hits))


def cells(n: int, d: int) -> np.ndarray:
    """The first d stored components of n seeded cells of the million (float32, C order)."""
    Z = np.load(WORK / f"pcs_{N_CELLS}.npy", mmap_mode="r")
    rows = slice(None) if n >= Z.shape[0] else np.sort(np.random.default_rng(1).choice(Z.shape[0], n, replace=False))
    return np.ascontiguousarray(Z[rows, :d], dtype=np.float32)


def recall_sweep() -> pd.DataFrame:
    """Recall@15 against components d and probes per sqrt(nlist) (and ``ivf_nprobe``'s), nlist = the library's sqrt(n), at 3 sizes."""
    from glfs.graph._ivf_blocks import ivf_lists
    from glfs.graph._neighbors import ivf_nprobe

    rows = []
    for n in SWEEP_CELLS:
        nlist = int(max(1, round(np.sqrt(n))))
        for d in SWEEP_PCS:
            t = time.perf_counter()
            lists = ivf_lists(cells(n, d), nlist, 0)
            probes = [(r, int(min(nlist, np.ceil(r * np.sqrt(nlist))))) for r in SWEEP_RATIOS]
            for ratio, nprobe in probes + [("rule", ivf_nprobe(nlist, d))]:  # and the library's rule for d
                rows.append(
                    {
                        "n_cells": n,
                        "n_pcs": d,
                        "nlist": nlist,
                        "nprobe": nprobe,
                        "per_sqrt_nlist": ratio,
                        "recall@15": recall(d, nprobe, n=n, nlist=nlist, lists=lists),
                    }
                )
                print(rows[-1], f"{time.perf_counter() - t:.0f} s", flush=True)
    return pd.DataFrame(rows)


def atlas(steps=ATLAS_STEPS, recalls=RECALL) -> pd.DataFrame:
    rows = []
    for step, n_pcs, nprobe in steps:
        args = [sys.executable, __file__, "--worker", step, str(n_pcs), str(nprobe)]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        ls = step != "hvg"
        rows.append(
            {
                "step": step,
                "n_pcs": (n_pcs or "default") if ls else "",
                "nprobe": (nprobe or "rule") if ls else "",
                **json.loads(out),
            }
        )
        print(rows[-1], flush=True)
    for d, nprobe in recalls:
        rows.append({"step": "recall@15", "n_pcs": d, "nprobe": nprobe, "recall": recall(d, nprobe)})
        print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def render() -> None:
    lines = ["# The own graph on 20 or 50 principal components (benchmarks/graph_pcs.py)", ""]
    p = RESULTS / "graph_pcs_panel.tsv"
    if p.exists():
        df = pd.read_csv(p, sep="\t")
        per = df.groupby(["eval_seed", "labels", "method"])["score"].mean().unstack("method")
        lines += [
            "## The panel: mean score over 200-2,000 genes, per label set and evaluation seed",
            "",
            per.round(3).to_markdown(),
            "",
            "Panel mean per evaluation seed:",
            "",
            per.groupby(level=0).mean().round(3).to_markdown(),
            "",
        ]
    for name, title in (
        ("graph_pcs_atlas.tsv", "the library's defaults against 50 components"),
        ("graph_pcs_atlas_probes.tsv", "before the change: 20 components, 16 or 32 probes"),
    ):
        if (RESULTS / name).exists():
            lines += [
                f"## 10^6 cells x 20,000 genes, {title} (`{name}`; each step a fresh process, in this order)",
                "",
                "x seurat_v3: the step's seconds over the mean of the seurat_v3 runs just before and after it.",
                "",
                with_ratio(pd.read_csv(RESULTS / name, sep="\t")).to_markdown(index=False, floatfmt=".3g"),
                "",
            ]
    r = RESULTS / "graph_pcs_recall.tsv"
    if r.exists():
        df = pd.read_csv(r, sep="\t")
        df["nprobe (probes per sqrt(nlist))"] = [f"{p} ({q})" for p, q in zip(df["nprobe"], df["per_sqrt_nlist"])]
        lines += [
            "## Recall@15 of the IVF search by components and probes (`graph_pcs_recall.tsv`)",
            "",
            "Seeded cells of the million (all of them at 10^6), the first n_pcs of its 50 stored components; "
            "'rule': `ivf_nprobe(nlist, n_pcs)`.",
            "",
            df.pivot_table(index=["n_cells", "n_pcs"], columns="per_sqrt_nlist", values="recall@15", aggfunc="first")
            .round(3)
            .to_markdown(),
            "",
        ]
    (RESULTS / "graph_pcs.md").write_text("\n".join(lines))


def with_ratio(df: pd.DataFrame) -> pd.DataFrame:
    """The atlas table with "x seurat_v3" for each Laplacian-score step (the seurat_v3 runs beside it)."""
    df = df.copy()
    hvg = df["seconds"].where(df["step"] == "hvg")
    peer = (hvg.ffill() + hvg.bfill()) / 2
    df.insert(4, "x seurat_v3", (df["seconds"] / peer).where(df["step"].str.startswith("ls")).round(2))
    return df


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panel", action="store_true")
    ap.add_argument("--atlas", action="store_true")
    ap.add_argument("--atlas-probes", action="store_true", help="the run before the change (PROBE_STEPS)")
    ap.add_argument("--recall-sweep", action="store_true", help="recall@15 by components and probes at 3 sizes")
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--worker", nargs=3, metavar=("STEP", "N_PCS", "NPROBE"))
    args = ap.parse_args(argv)
    if args.worker:
        step, n, probe = args.worker
        print(json.dumps(worker(step, None if n == "None" else int(n), None if probe == "None" else int(probe))))
        return 0
    if args.panel:
        panel().to_csv(RESULTS / "graph_pcs_panel.tsv", sep="\t", index=False)
    if args.atlas:
        atlas().to_csv(RESULTS / "graph_pcs_atlas.tsv", sep="\t", index=False)
    if args.atlas_probes:
        atlas(PROBE_STEPS, PROBE_RECALL).to_csv(RESULTS / "graph_pcs_atlas_probes.tsv", sep="\t", index=False)
    if args.recall_sweep:
        recall_sweep().to_csv(RESULTS / "graph_pcs_recall.tsv", sep="\t", index=False)
    render()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
