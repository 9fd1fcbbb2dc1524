"""Scaling benchmark: every method of glfs at single-cell scale, with its peers, in one run.

Simulated single-cell-like data (n cells x 2,000 genes; counts with planted
cell clusters, library-size normalised and log1p) at n = 1,000, 5,000, 20,000
and 50,000.  On the same data and the same graph (``glfs.similarity_graph``
with its defaults, built once per size), each case runs in a fresh Python
process with a wall-time limit (killed at ``--timeout``) and an address-space
limit (``RLIMIT_AS`` = ``--mem-gb`` + 2 GB for the virtual memory that numba,
LLVM and OpenBLAS reserve without touching).  Recorded per case: status
(``ok``, ``timeout``, ``memory``, ``refused`` = the method's own size check,
``skipped`` = predicted not to fit, ``error``), wall time of the call, the
time of a second call in the same process (``warm_s``: without one-off costs
such as numba compilation), peak resident memory of the process during the
call (``VmHWM`` after resetting it), the load average before the case, and how
many of the planted marker genes the method ranks in its top-|planted|.

Peers on the same data and graph:

- scikit-feature (``skfeature-chappers``): ``construct_W`` + ``lap_score``
  where its dense n x n matrices fit in memory;
- scanpy: ``sc.metrics.gearys_c`` and ``sc.metrics.morans_i`` on our graph
  (the Laplacian-score-like statistics single-cell users already have) and
  ``sc.pp.highly_variable_genes`` (what they pick instead; flavor "seurat" on
  the log data).

Also the goal case of issue 9 item 1: graph + Laplacian score on 10,000 x 500
against scikit-feature in the same run.

Usage::

    python benchmarks/scaling.py                          # full run (about 1-2 h on 2 busy cores)
    python benchmarks/scaling.py --sizes 1000 5000        # some sizes
    python benchmarks/scaling.py --cases laplacian_score hvg --sizes 20000
    python benchmarks/scaling.py --summary-only           # rewrite scaling.md from scaling.tsv

Results: ``benchmarks/results/scaling.tsv`` (rows of earlier runs for other
(size, case) pairs are kept) and ``benchmarks/results/scaling.md``.
Inputs are cached in ``$GLFS_SCALING_CACHE`` (default /tmp/glfs_scaling_cache).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench.procfs import reset_peak, status_kb  # noqa: E402
from bench.simulated import MARKERS_PER_CLUSTER, planted_genes, simulate_lognorm  # noqa: E402
from bench.timing import uptime  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CACHE = Path(os.environ.get("GLFS_SCALING_CACHE", "/tmp/glfs_scaling_cache"))

N_GENES = 2000
SIZES = [1000, 5000, 20000, 50000]
GOAL = (10000, 500)  # issue 9 item 1: graph + Laplacian score, against scikit-feature
N_SELECT = 50
N_NEIGHBORS = 5

GLFS_METHODS = [
    "laplacian_score",
    "variance",
    "fisher_score",
    "lapaofs",
    "lapdofs",
    "lkr_score",
    "lkr_score_supervised",
    "ufi",
    "spca",
    "q_alpha",
    "glfs",
    "glfs_exact",
    "glfs_paper",
    "glfs_printed",
]
PEERS = ["skfeature_graph+ls", "gearys_c", "morans_i", "hvg"]
GRAPH_CASES = ["graph", "graph+ls", "graph_exact+ls", "graph_approx+ls"]
ALL_CASES = GRAPH_CASES + PEERS + [f"select:{m}" for m in GLFS_METHODS]
COLUMNS = [
    "run_at",
    "n_cells",
    "n_genes",
    "case",
    "status",
    "time_s",
    "cpu_s",
    "warm_s",
    "peak_rss_mb",
    "rss_before_mb",
    "planted_top",
    "n_planted",
    "load1",
    "threads",
    "note",
]


# --------------------------------------------------------------------------- data
def data_paths(n, d):
    stem = CACHE / f"sc_{n}x{d}"
    return stem.with_suffix(".npy"), Path(f"{stem}.labels.npy"), Path(f"{stem}.graph.npz")


def prepare(n, d):
    import numpy as np

    xp, lp, _ = data_paths(n, d)
    if xp.exists() and lp.exists():
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    X, labels, _ = simulate_lognorm(n, d)
    for path, arr in ((xp, X), (lp, labels)):
        tmp = path.with_name(path.name + ".tmp.npy")
        np.save(tmp, arr)
        os.replace(tmp, path)


def ensure_graph(n, d):
    """Build and cache the shared graph of a size (not timed; the "graph" case times it separately)."""
    _, _, gp = data_paths(n, d)
    if gp.exists():
        return
    code = (
        "import sys, numpy as np, scipy.sparse as sp, glfs; sys.path.insert(0, sys.argv[1]); import scaling as s; "
        "xp, _, gp = s.data_paths(int(sys.argv[2]), int(sys.argv[3])); "
        "W = glfs.similarity_graph(np.load(xp), n_neighbors=s.N_NEIGHBORS, kernel='heat', random_state=0); "
        "sp.save_npz(str(gp) + '.tmp.npz', W); import os; os.replace(str(gp) + '.tmp.npz', gp)"
    )
    subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(n), str(d)], check=True)


# --------------------------------------------------------------------------- worker
def _planted_top(ranking, planted):
    import numpy as np

    top = np.asarray(ranking)[: len(planted)]
    return int(np.isin(top, planted).sum())


def _rank_scores(scores, higher_is_better):
    import numpy as np

    s = np.asarray(scores, dtype=float)
    key = np.where(np.isnan(s), np.inf, -s if higher_is_better else s)
    return np.argsort(key, kind="stable")


def worker(spec):
    import warnings

    import numpy as np
    import scipy.sparse as sp

    import glfs
    import glfs.graph._similarity

    warnings.simplefilter("ignore")
    n, d, case = spec["n"], spec["d"], spec["case"]
    xp, lp, gp = data_paths(n, d)
    X = np.load(xp)
    labels = np.load(lp)
    planted = planted_genes(d)
    W = sp.load_npz(gp).tocsr() if gp.exists() and case not in GRAPH_CASES else None
    out = {}

    def graph(**kw):
        return glfs.similarity_graph(X, n_neighbors=N_NEIGHBORS, kernel="heat", random_state=0, **kw)

    warm = True  # run a second time in the same process
    if case == "graph":

        def run():
            return graph()
    elif case == "graph+ls":

        def run():
            return glfs.laplacian_score(X, graph())
    elif case == "graph_exact+ls":  # exact search on all genes

        def run():
            return glfs.laplacian_score(X, graph(method="exact"))
    elif case == "graph_approx+ls":  # the approximate index on 50 principal components (forced)

        def run():
            return glfs.laplacian_score(X, graph(method="approx"))
    elif case == "skfeature_graph+ls":
        from skfeature.function.similarity_based.lap_score import lap_score
        from skfeature.utility.construct_W import construct_W

        # the same heat-kernel width as glfs' default (mean squared kNN distance, not timed):
        # skfeature weighs exp(-d^2 / (2 t^2)), glfs exp(-d^2 / t_glfs), so t = sqrt(t_glfs / 2)
        _, _, dist = glfs.graph._similarity.nearest_neighbors(X, N_NEIGHBORS, method="exact")
        t_sk = float(np.sqrt(np.mean(dist**2) / 2))

        def run():
            Wk = construct_W(
                X, metric="euclidean", neighbor_mode="knn", weight_mode="heat_kernel", k=N_NEIGHBORS, t=t_sk
            )
            return lap_score(X, W=Wk, mode="index")  # feature indices, best (smallest score) first
    elif case in ("gearys_c", "morans_i"):
        import scanpy as sc

        fn = getattr(sc.metrics, case)
        Xt = np.ascontiguousarray(X.T)

        def run():
            return fn(W, vals=Xt)
    elif case == "hvg":
        import anndata
        import scanpy as sc

        def run():
            ad = anndata.AnnData(X.copy())
            return sc.pp.highly_variable_genes(ad, n_top_genes=N_SELECT, flavor="seurat", inplace=False)
    elif case.startswith("select:"):
        method = case.split(":", 1)[1]
        info = glfs.METHODS[method]
        warm = False

        def run():
            return glfs.select(
                X,
                method=method,
                graph=W if info.needs_graph else None,
                n_features=N_SELECT,
                labels=labels if info.needs_labels else None,
            )
    else:
        msg = f"unknown case {case!r}"
        raise ValueError(msg)

    gc.collect()
    ok = reset_peak()
    rss0 = status_kb("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    res = run()
    out["time_s"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0  # CPU time of the process (all threads): less sensitive to load
    out["peak_rss_mb"] = status_kb("VmHWM") / 1024 if ok else float("nan")
    out["rss_before_mb"] = rss0 / 1024
    if warm:
        del res
        gc.collect()
        t0 = time.perf_counter()
        res = run()
        out["warm_s"] = time.perf_counter() - t0
    # quality: planted marker genes among the top |planted|
    if case.startswith("select:"):
        ranking = res.ranking
    elif case in ("graph+ls", "graph_exact+ls", "graph_approx+ls", "gearys_c"):
        ranking = _rank_scores(res, higher_is_better=False)
    elif case == "morans_i":
        ranking = _rank_scores(res, higher_is_better=True)
    elif case == "skfeature_graph+ls":
        ranking = np.asarray(res)
    elif case == "hvg":
        ranking = _rank_scores(res["dispersions_norm"].to_numpy(), higher_is_better=True)
    else:
        ranking = None
    if ranking is not None:
        out["planted_top"] = _planted_top(ranking, planted)
        out["n_planted"] = int(planted.size)
    out["status"] = "ok"
    return out


def worker_main(arg):
    spec = json.loads(arg)
    import resource

    cap = int((spec["mem_gb"] + 2) * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        res = worker(spec)
    except MemoryError:
        res = {"status": "memory", "note": "MemoryError under the address-space limit"}
    except ValueError as exc:
        text = str(exc)
        status = "refused" if "size limit" in text else "error"
        res = {"status": status, "note": f"{type(exc).__name__}: {text}"[:400]}
    except Exception as exc:  # record, never crash the run
        res = {"status": "error", "note": f"{type(exc).__name__}: {exc}"[:400]}
    sys.stdout.write("\n@@RESULT@@" + json.dumps(res) + "\n")


# --------------------------------------------------------------------------- driver
def predicted_skip(n, d, case, mem_gb):
    """Cases known not to fit before running them (documented in scaling.md)."""
    if case == "skfeature_graph+ls":
        # construct_W: dense n x n distances + argsort (int64) + the dense W, lap_score densifies W again
        need = 4 * 8 * n * n / 2**30
        if need > mem_gb:
            return f"skfeature needs about {need:.0f} GB of dense n x n matrices (> {mem_gb} GB)"
    if case == "graph_exact+ls" and n * n * d > 2e12:
        return f"exact kNN is O(n^2 d) = {n * n * d:.1e} operations; not run above 2e12"
    return None


def run_case(n, d, case, args):
    spec = {"n": n, "d": d, "case": case, "mem_gb": args.mem_gb}
    row = {"n_cells": n, "n_genes": d, "case": case, "threads": args.threads, "load1": round(os.getloadavg()[0], 2)}
    skip = predicted_skip(n, d, case, args.mem_gb)
    if skip:
        return {**row, "status": "skipped", "note": skip}
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = str(args.threads)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=args.timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {**row, "status": "timeout", "note": f"killed after {args.timeout:.0f} s (wall, incl. imports)"}
    parts = p.stdout.rsplit("@@RESULT@@", 1)
    if len(parts) == 2:
        res = json.loads(parts[1])
    elif p.returncode < 0:
        res = {"status": "memory" if p.returncode == -9 else "error", "note": f"killed by signal {-p.returncode}"}
    else:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        res = {"status": "memory" if "MemoryError" in tail else "error", "note": tail[:400]}
    res.setdefault("note", f"process wall {time.perf_counter() - t0:.1f} s")
    return {**row, **res}


def machine():
    import numpy
    import scipy
    import sklearn

    info = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }
    for mod in ("faiss-cpu", "pynndescent", "numba", "scanpy"):
        try:
            from importlib.metadata import version

            info[mod] = version(mod)
        except Exception:  # noqa: BLE001
            info[mod] = "not installed"
    try:
        with open("/proc/meminfo") as fh:
            info["mem_total_gb"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    return info


def read_rows(path):
    import csv

    if not path.exists():
        return []
    with open(path) as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def write_rows(path, rows):
    import csv

    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, delimiter="\t", extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r.get(k, "")) for k in COLUMNS})
    os.replace(tmp, path)


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}" if v == v else ""
    return v


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def cell(r):
    if r is None:
        return "-"
    st = r.get("status", "")
    if st != "ok":
        return st
    t, w = _num(r.get("time_s")), _num(r.get("warm_s"))
    s = f"{t:.2f} s" if t < 10 else f"{t:.0f} s"
    if w == w:
        s += f" ({w:.2f} s)" if w < 10 else f" ({w:.0f} s)"
    m = _num(r.get("peak_rss_mb"))
    if m == m:
        s += f", {m / 1024:.1f} GB" if m >= 1024 else f", {m:.0f} MB"
    return s


def summary(rows, info, up_start, up_end, args):
    by = {(int(r["n_cells"]), int(r["n_genes"]), r["case"]): r for r in rows}
    sizes = sorted(
        {(int(r["n_cells"]), int(r["n_genes"])) for r in rows if (int(r["n_cells"]), int(r["n_genes"])) != GOAL}
    )
    lines = [
        "# Scaling: every method at single-cell scale",
        "",
        "Written by `benchmarks/scaling.py` (issue 9). Simulated single-cell-like data: counts with 8",
        f"planted cell clusters, {MARKERS_PER_CLUSTER} marker genes each (200 planted genes at 2,000 genes),",
        "library-size normalised and log1p. One fresh process per case with a wall-time limit of",
        f"{args.timeout:.0f} s and an address-space limit of {args.mem_gb} + 2 GB; `{args.threads}` thread(s) for BLAS,",
        "OpenMP and numba. Cell: wall time of the call in a fresh process (includes one-off costs such",
        "as numba compilation), in brackets the same call again in the same process, then the peak",
        "resident memory of the process during the call (includes the input, about 0.4 GB float32 at",
        "50,000 x 2,000, and the imports). All methods use the same graph per size (`glfs.similarity_graph`,",
        f"{N_NEIGHBORS} neighbours, heat kernel, defaults: exact on all genes below 8192 cells, exact on 50",
        "principal components from there (float32 brute force, faiss if installed), faiss' IVF index on them",
        "from 30,000 cells when faiss is installed); `cpu_s` in the TSV is the CPU time",
        "of the call over all threads;",
        f"`select:*` rows are `glfs.select(X, method, graph=W, n_features={N_SELECT})`.",
        "",
        f"Machine: {json.dumps(info)}.",
        "",
        f"Load at start: `{up_start}`; at end: `{up_end}`. The machine is shared by several",
        "sessions, so times are pessimistic; compare rows of the same run (ratios) rather than absolute times.",
        "Rows can come from different runs: each row's start time and load average are in `scaling.tsv`",
        "(`run_at`, `load1`); `select:*` rows run on the cached graph of their run's defaults.",
        "",
    ]
    # goal case
    g = {c: by.get((*GOAL, c)) for c in ("graph+ls", "graph_exact+ls", "graph_approx+ls", "skfeature_graph+ls")}
    if any(g.values()):
        lines += [f"## Goal: graph + Laplacian score on {GOAL[0]:,} x {GOAL[1]} against scikit-feature", ""]
        lines += ["| implementation | result |", "|---|---|"]
        names = {
            "graph+ls": "glfs (default: exact kNN on 50 PCs at this size)",
            "graph_exact+ls": "glfs, exact kNN on all genes (method='exact')",
            "graph_approx+ls": "glfs, approximate index on 50 PCs (method='approx'; pynndescent in rows run before 2026-11-23T18:30, faiss IVF after)",
            "skfeature_graph+ls": "scikit-feature construct_W + lap_score",
        }
        for c, r in g.items():
            lines.append(f"| {names[c]} | {cell(r)} |")
        sk = g["skfeature_graph+ls"]
        ours = g["graph+ls"]
        if sk and ours and sk.get("status") == "ok" and ours.get("status") == "ok":
            t_sk = _num(sk["time_s"])
            lines += [
                "",
                f"Ratio scikit-feature / glfs (default): {t_sk / _num(ours['time_s']):.1f}x with glfs' first call in a "
                f"fresh process, {t_sk / _num(ours['warm_s']):.1f}x for a second call in the same process "
                "(goal: >= 10x).",
            ]
        lines.append("")
    lines += ["## Per size", ""]
    hdr = "| case | " + " | ".join(f"{n:,} x {d:,}" for n, d in sizes) + " |"
    lines += [hdr, "|---|" + "---|" * len(sizes)]
    for case in ALL_CASES:
        if not any((n, d, case) in by for n, d in sizes):
            continue
        lines.append(f"| {case} | " + " | ".join(cell(by.get((n, d, case))) for n, d in sizes) + " |")
    lines += ["", "## Planted marker genes in each method's top 200 (of 200 planted)", ""]
    lines += [hdr, "|---|" + "---|" * len(sizes)]
    for case in ALL_CASES:
        vals = [by.get((n, d, case)) for n, d in sizes]
        if not any(v and v.get("planted_top") not in (None, "") for v in vals):
            continue
        lines.append(
            f"| {case} | "
            + " | ".join(
                str(v.get("planted_top")) if v and v.get("planted_top") not in (None, "") else "-" for v in vals
            )
            + " |"
        )
    lines += ["", "## Notes on rows that did not run", ""]
    for r in rows:
        if r.get("status") not in ("ok", "") and r.get("note"):
            lines.append(f"- {int(r['n_cells']):,} x {int(r['n_genes']):,} `{r['case']}`: {r['status']}: {r['note']}")
    lines.append("")
    return "\n".join(lines)


def readme_table(rows):
    """Compact table for the README: first-call time (status) per case and size."""
    by = {(int(r["n_cells"]), int(r["n_genes"]), r["case"]): r for r in rows}
    sizes = sorted({(int(r["n_cells"]), int(r["n_genes"])) for r in rows} - {GOAL})

    def short(r):
        if r is None:
            return "-"
        if r.get("status") != "ok":
            return r.get("status", "-")
        t = _num(r.get("time_s"))
        return f"{t:.1f} s" if t < 100 else f"{t:.0f} s"

    out = ["| case | " + " | ".join(f"{n // 1000}k cells" for n, _ in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for case in ALL_CASES:
        if any((n, d, case) in by for n, d in sizes):
            out.append(f"| {case} | " + " | ".join(short(by.get((n, d, case))) for n, d in sizes) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    ap.add_argument("--genes", type=int, default=N_GENES)
    ap.add_argument(
        "--cases", nargs="*", default=None, help="subset of cases (default: all), e.g. graph hvg select:ufi"
    )
    ap.add_argument("--no-goal", action="store_true", help="skip the 10,000 x 500 goal case")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--mem-gb", type=float, default=8.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument("--readme-table", action="store_true", help="print the README's compact table from scaling.tsv")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main(args.worker)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    tsv, md, info_path = args.out / "scaling.tsv", args.out / "scaling.md", args.out / "scaling_run.json"
    rows = read_rows(tsv)
    if args.readme_table:
        print(readme_table(rows))
        return
    if args.summary_only:
        meta = json.loads(info_path.read_text())
        md.write_text(
            summary(rows, meta["machine"], meta["uptime_start"], meta["uptime_end"], argparse.Namespace(**meta["args"]))
        )
        return
    run_at = time.strftime("%Y-%m-%dT%H:%M:%S")
    up_start = uptime()
    print(f"start: {up_start}", flush=True)
    cases = args.cases or ALL_CASES
    plan = []
    if not args.no_goal and (args.cases is None or any(c in GRAPH_CASES + ["skfeature_graph+ls"] for c in cases)):
        plan += [
            (*GOAL, c) for c in ("graph+ls", "graph_exact+ls", "graph_approx+ls", "skfeature_graph+ls") if c in cases
        ]
    for n in args.sizes:
        order = ["graph"] + [c for c in cases if c != "graph"]  # the graph first: the other cases load it
        plan += [(n, args.genes, c) for c in order if c in cases or c == "graph"]
    done = set()
    for n, d, case in plan:
        if (n, d, case) in done:
            continue
        done.add((n, d, case))
        prepare(n, d)
        if (n, d) != GOAL:
            ensure_graph(n, d)
        if case == "graph" and args.cases is not None and "graph" not in args.cases:
            continue  # not asked for
        r = run_case(n, d, case, args)
        r["run_at"] = run_at
        print(json.dumps(r), flush=True)
        rows = [x for x in rows if (int(x["n_cells"]), int(x["n_genes"]), x["case"]) != (n, d, case)] + [r]
        rows.sort(key=lambda x: (int(x["n_cells"]), int(x["n_genes"]), ALL_CASES.index(x["case"])))
        write_rows(tsv, rows)
        write_summary(md, info_path, rows, up_start, uptime() + " (run in progress)", args)
    up_end = uptime()
    print(f"end: {up_end}", flush=True)
    write_summary(md, info_path, read_rows(tsv), up_start, up_end, args)


def write_summary(md, info_path, rows, up_start, up_end, args):
    meta = {
        "machine": machine(),
        "uptime_start": up_start,
        "uptime_end": up_end,
        "args": {"timeout": args.timeout, "mem_gb": args.mem_gb, "threads": args.threads},
    }
    info_path.write_text(json.dumps(meta, indent=1))
    md.write_text(summary(rows, meta["machine"], up_start, up_end, args))


if __name__ == "__main__":
    main()
