"""The neighbour search without faiss (the base install): exact brute force or pynndescent, by cell count.

What: without faiss-cpu (``pip install glfs[scale]``) the library's graph searches 50 principal
components either exactly (scikit-learn's brute force, ``glfs.graph._neighbors._knn_brute32(...,
backend="sklearn")``, O(n^2)) or with pynndescent's NN-descent (``glfs.graph._neighbors._knn_approx``:
one thread, its numba functions compiled in every fresh Python process).  This script times both
as a user meets them, each in a fresh process (numba compilation included, as the first call of a
session pays it), on the first n rows of one set of components, and measures the recall@5 of
pynndescent against the exact graph where the exact search ran.  ``method="auto"`` switches from
the exact search to pynndescent where the second is the faster (``AUTO_NNDESCENT_MIN_SAMPLES``).

Data: the 50 principal components of ``benchmarks/atlas_scale.py``'s million simulated cells
(``--pcs``, float32 (n, 50) .npy, e.g. written by ``benchmarks/knn_backends.py --pcs``); the
first n rows are an n-cell sample of the same simulation.  The exact search is skipped above
``--exact-max`` cells (its O(n^2) time).

    python benchmarks/knn_without_faiss.py --pcs /tmp/atlas/pcs_1000000.npy \\
        --cells 30000 60000 100000 300000 1000000 --exact-max 100000

Writes ``results/knn_without_faiss.tsv`` (one row per process) and ``.md``.
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
from bench.procfs import vm_hwm_gb  # benchmarks/ is the script's directory, so on sys.path

RESULTS = Path(__file__).resolve().parent / "results"
K = 5


def worker(search: str, n: int, pcs: Path, out: Path) -> dict:
    """One search in this (fresh) process; the graph's (rows, cols) saved to ``out``."""
    import glfs.graph._neighbors as nb

    Z = np.load(pcs, mmap_mode="r")[:n].astype(np.float32)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    if search == "sklearn_exact":
        rows, cols, _ = nb._knn_brute32(Z, K, backend="sklearn")
    else:
        rows, cols, _ = nb._knn_approx(Z, K, 0)
    dt = time.perf_counter() - t0
    np.save(out, cols.reshape(n, K))
    return {
        "search": search,
        "n": n,
        "seconds": dt,
        "peak_gb": vm_hwm_gb(),
        "load_before": load0,
        "load_after": os.getloadavg()[0],
    }


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each cell's exact K neighbours that the search found."""
    hits = sum(len(set(a) & set(b)) for a, b in zip(found, truth))
    return hits / truth.size


def render(tsv: Path, md: Path) -> None:
    import pandas as pd

    t = pd.read_csv(tsv, sep="\t")
    lines = [
        "# The neighbour search without faiss: exact brute force or pynndescent",
        "",
        "Written by `benchmarks/knn_without_faiss.py` (see its docstring). Each row is one fresh process "
        "(numba compilation included, as a session's first call pays it); 5 neighbours on 50 principal "
        "components of the simulated counts of `atlas_scale.py` (the first n cells); 2 shared cores; "
        "peak = VmHWM of the process (the components included); load = 1-minute load average before/after. "
        "recall@5 = share of the exact search's 5 neighbours that pynndescent found, over all n cells "
        "(where the exact search ran). x exact = pynndescent time / exact time at the same n.",
        "",
        "| date | cells | search | seconds | x exact | peak GB | recall@5 | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in t.iterrows():
        ex = t[(t["n"] == r["n"]) & (t["search"] == "sklearn_exact")]
        ratio = f"{r['seconds'] / ex['seconds'].iloc[-1]:.2f}" if len(ex) and r["search"] != "sklearn_exact" else ""
        rec = "" if pd.isna(r["recall"]) else f"{r['recall']:.4f}"
        lines.append(
            f"| {r['date']} | {int(r['n']):,} | {r['search']} | {r['seconds']:.1f} | {ratio} | "
            f"{r['peak_gb']:.2f} | {rec} | {r['load_before']:.2f}-{r['load_after']:.2f} |"
        )
    md.write_text("\n".join(lines) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pcs", type=Path, required=True, help="float32 (n, 50) components, .npy")
    ap.add_argument("--cells", type=int, nargs="+", default=[30_000, 60_000, 100_000])
    ap.add_argument("--exact-max", type=int, default=100_000, help="largest n searched exactly")
    ap.add_argument("--work", type=Path, default=Path("/tmp/glfs_knn_nofaiss"))
    ap.add_argument("--worker", nargs=3, metavar=("SEARCH", "N", "OUT"))
    args = ap.parse_args(argv)
    if args.worker:
        search, n, out = args.worker
        print(json.dumps(worker(search, int(n), args.pcs, Path(out))))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    tsv = RESULTS / "knn_without_faiss.tsv"
    for n in args.cells:
        graphs = {}
        for search in ("sklearn_exact", "pynndescent"):
            if search == "sklearn_exact" and n > args.exact_max:
                continue
            out = args.work / f"{search}_{n}.npy"
            res = subprocess.run(
                [sys.executable, __file__, "--pcs", str(args.pcs), "--worker", search, str(n), str(out)],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(res.stdout.strip().splitlines()[-1])
            graphs[search] = np.load(out)
            row["recall"] = (
                recall(graphs[search], graphs["sklearn_exact"])
                if search == "pynndescent" and "sklearn_exact" in graphs
                else None
            )
            row = {"date": time.strftime("%Y-%m-%d %H:%M"), **row}
            print(json.dumps(row), flush=True)
            new = not tsv.exists()
            with tsv.open("a") as f:
                if new:
                    f.write("\t".join(row) + "\n")
                f.write("\t".join("" if v is None else str(v) for v in row.values()) + "\n")
            render(tsv, RESULTS / "knn_without_faiss.md")


if __name__ == "__main__":
    main()
