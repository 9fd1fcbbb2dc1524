"""Atlas scale (issue 21): the gene-wise scores on sparse counts next to scanpy's seurat_v3 HVG, in the same run.

Simulated counts made in cell blocks (never the whole matrix in memory): 10 cell groups, 3 % of the genes
up-regulated per group, library sizes log-normal (``--lib-loc``: median exp(6.3) = 545 counts by default, so
about 2.8 % of the values are non-zero and a million cells hold about 5.6e8; 7.4 gives 7.4 %), reads drawn
from each group's gene proportions.  Each block is appended to two .h5ad files with
anndata's own sparse writer: the raw counts (CSR float32) and their scanpy normalisation (total 1e4 + log1p,
CSR float32).

Every step runs in a fresh Python process (``--worker``), which loads what it needs and reports its wall
time (the median of ``--repeat`` runs of the step in that process), its peak resident memory (VmHWM of
/proc/self/status: the whole process, data included; getrusage's maxrss would include the parent's, which
Linux carries over the fork) and the memory the inputs took before the step started (psutil), with the
1-minute load before and after.  Each process
runs under an address-space limit (``--mem-limit-gb``, default 16), so a step that needs more fails with
a MemoryError instead of swapping.

    python benchmarks/atlas_scale.py                      # 50,000 cells x 20,000 genes
    python benchmarks/atlas_scale.py --cells 1000000      # a million cells (about 5e8 non-zeros)

Writes benchmarks/results/atlas_scale.tsv (one row per step and size, appended) and atlas_scale.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from bench.procfs import vm_hwm_gb  # noqa: E402
from bench.simulated import atlas_files, simulate_atlas  # noqa: E402
from bench.timing import load1, log_stamps, median_of  # noqa: E402

# ---- the steps (run in a worker process) --------------------------------------------------------


def _read(path, backed=False):
    import anndata as ad

    return ad.read_h5ad(path, backed="r" if backed else None)


def _graph_file(work, tag, which):
    return work / f"graph_{which}_{tag}.npz"


def step(name: str, n: int, work: Path, lib_loc: float, repeat: int) -> dict:
    """Run one step; return {"seconds", "note"} (the worker adds memory and load)."""
    import logging
    import warnings

    import scipy.sparse as sp

    warnings.simplefilter("ignore")
    import glfs

    counts_f, log_f, tag = atlas_files(work, n, lib_loc)
    n = tag  # graph files are named by the size and the density
    note = ""
    if name == "hvg_seurat_v3":  # the peer: scanpy on the counts in memory
        import scanpy as sc

        a = _read(counts_f)
        _mark()
        return {
            "seconds": median_of(lambda: sc.pp.highly_variable_genes(a, flavor="seurat_v3", n_top_genes=2000), repeat)
        }
    if name == "scanpy_pca_neighbors":  # scanpy's graph (PCA 50 + 15 neighbours), saved for the next steps
        import scanpy as sc

        a = _read(log_f)
        _mark()
        t0 = time.perf_counter()
        sc.pp.pca(a, n_comps=50)
        t1 = time.perf_counter()
        sc.pp.neighbors(a, n_neighbors=15)
        dt = time.perf_counter() - t0
        sp.save_npz(_graph_file(work, n, "scanpy"), sp.csr_matrix(a.obsp["connectivities"]))
        return {"seconds": dt, "note": f"PCA {t1 - t0:.1f} s, neighbours {dt - (t1 - t0):.1f} s"}
    if name == "own_graph":  # the library's default graph (5-NN heat kernel on 50 PCs; faiss IVF from 30,000 cells)
        from glfs.graph._similarity import DEFAULT_GRAPH_PARAMS, similarity_graph

        a = _read(log_f)
        X = a.X
        stamps = []

        class _Stamp(logging.Handler):
            def emit(self, record):
                stamps.append((time.perf_counter(), record.getMessage()))

        lg = logging.getLogger("glfs.graph._neighbors")  # the neighbour search logs "PCA to ..."
        lg.setLevel(logging.INFO)
        lg.addHandler(_Stamp())
        _mark()
        t0 = time.perf_counter()
        W = similarity_graph(X, **DEFAULT_GRAPH_PARAMS)
        t2 = time.perf_counter()
        sp.save_npz(_graph_file(work, n, "own"), W)
        pca = [t for t, m in stamps if "PCA to" in m]
        split = f"PCA {pca[0] - t0:.1f} s, neighbours and weights {t2 - pca[0]:.1f} s" if pca else ""
        return {"seconds": t2 - t0, "note": split}
    if name in ("ls_scanpy_graph", "ls_own_graph", "ls_backed", "ls_backed_no_split", "moran_given_graph"):
        import glfs.core._out_of_core

        which = "own" if name == "ls_own_graph" or not _graph_file(work, n, "scanpy").exists() else "scanpy"
        if not _graph_file(work, n, which).exists() and _graph_file(work, n, "backed").exists():
            which = "backed"  # the graph that ls_backed_own_graph_end_to_end built from the backed file
        W = sp.load_npz(_graph_file(work, n, which))
        a = _read(log_f, backed=name.startswith("ls_backed"))
        a.obsp["connectivities"] = W
        glfs.core._out_of_core.SPILL = name != "ls_backed_no_split"  # the CSR file read once per gene block instead
        stamps = log_stamps("glfs.core._out_of_core")
        _mark()
        if name == "moran_given_graph":
            dt = median_of(lambda: glfs.select(a.X, "graph_moran", graph=W, n_features_to_select=2000), repeat)
        else:
            dt = median_of(lambda: glfs.tl.select(a, "laplacian_score", 2000, obsp="connectivities"), repeat)
        split = [m for _, m in stamps if m.startswith("split in")]
        passes = [
            m.split("read once per gene block, ")[1].split(" (")[0]
            for _, m in stamps
            if "read once per gene block, " in m
        ]
        how = f"; split into gene blocks, {split[-1]}" if split else (f"; read {passes[-1]}" if passes else "")
        return {"seconds": dt, "note": f"graph: {which}{how}"}
    if name in ("ls_own_graph_end_to_end", "ls_own_graph_end_to_end_no_faiss"):  # as a user calls it
        import sys

        if name.endswith("no_faiss"):  # the base install: `import faiss` fails as if it were not installed
            sys.modules["faiss"] = None
        stamps = log_stamps("glfs.graph._neighbors", "glfs.graph._similarity", "glfs.graph._ivf_blocks")
        a = _read(log_f)
        _mark()
        t0 = time.perf_counter()
        glfs.tl.select(a, "laplacian_score", 2000)
        t3 = time.perf_counter()
        at = {key: next((t for t, m in stamps if key in m), None) for key in ("PCA to", "similarity_graph:")}
        if all(at.values()):
            note = (
                f"neighbours: {glfs.graph._neighbors.approx_backend() if name.endswith('no_faiss') else 'faiss'}; "
                f"PCA {at['PCA to'] - t0:.1f} s, neighbours and weights {at['similarity_graph:'] - at['PCA to']:.1f} s, "
                f"score {t3 - at['similarity_graph:']:.1f} s{_search_split(stamps)}"
            )
        return {"seconds": t3 - t0, "note": note}
    if name == "ls_backed_own_graph_end_to_end":  # the same from the backed file: streamed PCA, then streamed score
        stamps = log_stamps("glfs.graph._neighbors", "glfs.graph._similarity", "glfs.graph._ivf_blocks")
        a = _read(log_f, backed=True)
        _mark()
        t0 = time.perf_counter()
        glfs.tl.select(a, "laplacian_score", 2000)
        t3 = time.perf_counter()
        sp.save_npz(_graph_file(work, n, "backed"), sp.csr_matrix(a.obsp["patient_similarity"]))
        at = {key: next((t for t, m in stamps if key in m), None) for key in ("PCA to", "similarity_graph:")}
        note = ""
        if all(at.values()):
            note = (
                f"PCA (fit on {_fit_cells(stamps)} cells + projection) {at['PCA to'] - t0:.1f} s, neighbours and "
                f"weights {at['similarity_graph:'] - at['PCA to']:.1f} s, score {t3 - at['similarity_graph:']:.1f} s"
                f"{_search_split(stamps)}"
            )
        return {"seconds": t3 - t0, "note": note}
    if name == "ls_backed_csc":  # the given graph, X stored by columns (one pass per read)
        W = sp.load_npz(_graph_file(work, n, "own" if _graph_file(work, n, "own").exists() else "backed"))
        a = ad_read_csc(work, tag)
        a.obsp["connectivities"] = W
        _mark()
        dt = median_of(lambda: glfs.tl.select(a, "laplacian_score", 2000, obsp="connectivities"), repeat)
        return {"seconds": dt}
    if name.startswith("method:"):  # any registered method, on the given graph where it needs one
        method = name.split(":", 1)[1]
        info = glfs.METHODS[method]
        a = _read(log_f)
        counts = _read(counts_f).X if info.needs_counts or info.optional_counts else None
        W = None
        if info.needs_graph:
            which = "scanpy" if _graph_file(work, n, "scanpy").exists() else "own"
            W = sp.load_npz(_graph_file(work, n, which))
            note = f"graph: {which}"
        labels = a.obs["group"].to_numpy()
        _mark()
        t0 = time.perf_counter()
        try:
            dt = median_of(
                lambda: glfs.select(a.X, method, graph=W, n_features_to_select=2000, labels=labels, counts=counts),
                repeat,
            )
        except ValueError as exc:
            return {"seconds": time.perf_counter() - t0, "note": f"refused: {exc}"[:600]}
        return {"seconds": dt, "note": note}
    msg = f"unknown step {name!r}"
    raise ValueError(msg)


def _search_split(stamps):
    """ "; of which k-means + lists X s, block search Y s" from the IVF block search's log (else "")."""
    at = [t for t, m in stamps if m.startswith("approximate search on")]
    blk = [t for t, m in stamps if m.startswith("IVF block search:")]
    return (
        f"; of which k-means + lists {blk[0] - at[0]:.1f} s, block search {blk[-1] - blk[0]:.1f} s"
        if at and len(blk) > 1
        else ""
    )


def _fit_cells(stamps) -> str:
    for _, m in stamps:
        if "PCA fitted on" in m:
            return m.split("PCA fitted on ", 1)[1].split(" of ", 1)[0]
    return "?"


def _csc_file(work: Path, tag: str) -> Path:
    return work / f"lognorm_{tag}_csc.h5ad"


def make_csc(work: Path, n: int, lib_loc: float) -> Path:
    """The log-normalised X stored by columns (CSC), written once (in memory: X twice)."""
    import anndata as ad

    _, log_f, tag = atlas_files(work, n, lib_loc)
    out = _csc_file(work, tag)
    if not out.exists():
        a = ad.read_h5ad(log_f)
        a.X = a.X.tocsc()
        a.write_h5ad(out)
    return out


def ad_read_csc(work: Path, tag: str):
    import anndata as ad

    return ad.read_h5ad(_csc_file(work, tag), backed="r")


_RSS_BEFORE = [0.0]
_CPU_AT_MARK = [None]


def _mark():
    import psutil

    _RSS_BEFORE[0] = psutil.Process().memory_info().rss / 2**30
    _CPU_AT_MARK[0] = time.process_time()


def worker(name: str, n: int, work: Path, mem_limit_gb: float, lib_loc: float, repeat: int) -> None:
    limit = int(mem_limit_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    load0 = load1()
    try:
        out = step(name, n, work, lib_loc, repeat)
    except MemoryError as exc:
        out = {"seconds": None, "note": f"MemoryError under the {mem_limit_gb:g} GB address-space limit: {exc}"[:300]}
    peak = vm_hwm_gb()
    if (
        _CPU_AT_MARK[0] is not None and out.get("seconds") is not None
    ):  # CPU s of the step, all threads (loaded machines)
        out["note"] = "; ".join(x for x in (out.get("note"), f"CPU {time.process_time() - _CPU_AT_MARK[0]:.1f} s") if x)
    out.update({"peak_rss_gb": peak, "rss_before_gb": _RSS_BEFORE[0], "load_before": load0, "load_after": load1()})
    print("RESULT " + json.dumps(out))


def run_step(name, n, work, mem_limit_gb, timeout, lib_loc, repeat):
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        name,
        "--cells",
        str(n),
        "--work",
        str(work),
        "--mem-limit-gb",
        str(mem_limit_gb),
        "--lib-loc",
        str(lib_loc),
        "--repeat",
        str(repeat),
    ]
    t0 = time.perf_counter()
    load0 = load1()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {
            "step": name,
            "seconds": None,
            "note": f"stopped after {timeout} s",
            "load_before": load0,
            "load_after": load1(),
            "peak_rss_gb": None,
            "rss_before_gb": None,
        }
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {
            "step": name,
            "seconds": None,
            "note": f"failed (exit {p.returncode}): {tail}"[:300],
            "load_before": load0,
            "load_after": load1(),
            "peak_rss_gb": None,
            "rss_before_gb": None,
            "wall": time.perf_counter() - t0,
        }
    out = json.loads(lines[-1][7:])
    out["step"] = name
    return out


STEPS_50K = [
    "hvg_seurat_v3",
    "scanpy_pca_neighbors",
    "ls_scanpy_graph",
    "own_graph",
    "ls_own_graph",
    "ls_own_graph_end_to_end",
    "ls_backed",
    "moran_given_graph",
    "method:variance",
    "method:fisher_score",
    "method:deviance",
]
STEPS_1M = ["hvg_seurat_v3", "own_graph", "ls_own_graph", "ls_backed", "moran_given_graph"]


STEP_TEXT = {
    "hvg_seurat_v3": "scanpy `highly_variable_genes(flavor='seurat_v3')` on the counts (the peer)",
    "scanpy_pca_neighbors": "scanpy `pp.pca` (50, ARPACK) + `pp.neighbors` (15)",
    "ls_scanpy_graph": "`glfs.tl.select(adata, 'laplacian_score', 2000, obsp='connectivities')` (scanpy's graph)",
    "own_graph": "`glfs.similarity_graph` (the library's default: 5-NN heat kernel, 50 PCs)",
    "ls_own_graph": "Laplacian score on the library's own graph (given)",
    "ls_own_graph_end_to_end": "`glfs.tl.select(adata, 'laplacian_score', 2000)`: own graph + score",
    "ls_own_graph_end_to_end_no_faiss": "the same without faiss-cpu (the base install)",
    "ls_backed": "Laplacian score from the backed .h5ad (`backed='r'`), graph given",
    "ls_backed_no_split": "the same with `glfs.core._out_of_core.SPILL = False` (the CSR file read once per gene block)",
    "moran_given_graph": "`graph_moran` (Moran's I) on the given graph",
    "ls_backed_own_graph_end_to_end": "`glfs.tl.select(backed, 'laplacian_score', 2000)` from the backed .h5ad: "
    "own graph (streamed PCA) + score",
    "ls_backed_csc": "Laplacian score from a backed CSC .h5ad (`backed='r'`), graph given",
}


def render(tsv: Path, md: Path) -> None:
    """atlas_scale.md from the TSV: one table per size, each time next to the peer's of the same run."""
    import pandas as pd

    t = pd.read_csv(tsv, sep="\t")
    out = [
        "# Atlas scale: sparse counts, as scanpy users hold them (issue 21)",
        "",
        "Written by `benchmarks/atlas_scale.py` from `atlas_scale.tsv`. Times are wall seconds (median of the "
        "`repeat` runs in one process); peak = VmHWM of the step's process (its data included), data = the "
        "resident memory after loading the inputs, before the step; load = 1-minute load average before/after "
        "(2 cores shared with other work). x HVG = time / the seurat_v3 time of the same run (the HVG row above it).",
        "",
    ]
    for (n, d, nnz), g in t.groupby(["n_cells", "n_genes", "nnz"], sort=True):
        out += [
            f"## {n:,} cells x {d:,} genes, {nnz:,} non-zeros ({nnz / (n * d):.1%})",
            "",
            "| step | seconds | x HVG | peak GB | data GB | load | note |",
            "|---|---|---|---|---|---|---|",
        ]
        ref = None
        for _, r in g.iterrows():  # file order: each run starts with its own HVG, the peer of the rows after it
            sec = r["seconds"]
            if r["step"] == "hvg_seurat_v3":
                ref = float(sec) if pd.notna(sec) else None
            ratio = f"{sec / ref:.1f}" if ref and pd.notna(sec) else ""
            text = STEP_TEXT.get(r["step"], f"`glfs.select(..., {r['step'].split(':', 1)[-1]!r})`")
            note = "" if pd.isna(r["note"]) else str(r["note"]).replace("|", "/")
            fmt = lambda v: "" if pd.isna(v) else f"{v:.3g}"
            out.append(
                f"| {text} | {fmt(sec)} | {ratio} | {fmt(r['peak_rss_gb'])} | {fmt(r['rss_before_gb'])} | "
                f"{fmt(r['load_before'])}-{fmt(r['load_after'])} | {note} |"
            )
        out.append("")
    md.write_text("\n".join(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, nargs="+", default=[50_000])
    ap.add_argument("--genes", type=int, default=20_000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/glfs_atlas"))
    ap.add_argument("--steps", nargs="*", help="steps to run (default: the list for the size)")
    ap.add_argument("--all-methods", action="store_true", help="also every registered method (time or refusal)")
    ap.add_argument("--mem-limit-gb", type=float, default=16.0)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per step")
    ap.add_argument("--lib-loc", type=float, default=6.3, help="log of the median library size")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each step in its process (median time)")
    ap.add_argument("--worker")
    ap.add_argument("--render", action="store_true", help="only write atlas_scale.md from the TSV")
    args = ap.parse_args(argv)
    if args.render:
        render(RESULTS / "atlas_scale.tsv", RESULTS / "atlas_scale.md")
        return
    if args.worker:
        worker(args.worker, args.cells[0], args.work, args.mem_limit_gb, args.lib_loc, args.repeat)
        return
    import glfs

    args.work.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    tsv = RESULTS / "atlas_scale.tsv"
    for n in args.cells:
        facts = simulate_atlas(n, args.genes, args.work, args.lib_loc)
        print(
            f"{n} cells x {args.genes} genes: {facts['nnz']} non-zeros "
            f"({facts['nnz'] / (n * args.genes):.1%}); simulated in {facts['seconds'] or 0:.0f} s",
            flush=True,
        )
        steps = args.steps or (STEPS_50K if n <= 100_000 else STEPS_1M)
        if args.all_methods:
            done = {s.split(":", 1)[-1] for s in steps} | {"laplacian_score", "graph_moran"}
            steps = steps + [f"method:{m}" for m in glfs.METHODS if m not in done]
        if "ls_backed_csc" in steps:
            make_csc(args.work, n, args.lib_loc)
        for name in steps:
            r = run_step(
                name,
                n,
                args.work,
                args.mem_limit_gb,
                args.timeout,
                args.lib_loc,
                1
                if name
                in (
                    "own_graph",
                    "scanpy_pca_neighbors",
                    "ls_own_graph_end_to_end",
                    "ls_own_graph_end_to_end_no_faiss",
                    "ls_backed_own_graph_end_to_end",
                )
                else args.repeat,
            )
            row = {
                "date": time.strftime("%Y-%m-%d %H:%M"),
                "n_cells": n,
                "n_genes": args.genes,
                "nnz": facts["nnz"],
                "repeat": args.repeat,
                **{
                    k: r.get(k)
                    for k in ("step", "seconds", "peak_rss_gb", "rss_before_gb", "load_before", "load_after", "note")
                },
            }
            print(json.dumps(row), flush=True)
            new = not tsv.exists()
            with tsv.open("a") as f:
                if new:
                    f.write("\t".join(row) + "\n")
                f.write(
                    "\t".join(
                        ""
                        if v is None
                        else (f"{v:.3g}" if isinstance(v, float) else str(v)).replace("\t", " ").replace("\n", " ")
                        for v in row.values()
                    )
                    + "\n"
                )
            render(tsv, RESULTS / "atlas_scale.md")


if __name__ == "__main__":
    main()
