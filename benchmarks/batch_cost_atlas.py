"""graph_moran with and without batches at a million cells, end to end (issue 29's cost goal at 10^6).

The goal: ``glfs.select(X, "graph_moran", n, batches=b)`` at most 1.5 x the same call without
``batches``, on the same data.  benchmarks/batch_local_share_cost.py measured it at 20,000 and 100,000
simulated cells (Splat batch effects, 2,000 genes); at 10^6 its simulator does not fit this machine's
time, so this script takes the stored simulated atlas of ``benchmarks/dask_cluster.py`` (``--store``:
20 shards of 50,000 cells x 2,000 genes, log-normalised, written by ``bench.atlas_store``), read into
memory as one CSR matrix, and makes batches of whole shards, as atlases are published: ``--batches``
batches of consecutive shards (default 5 of 200,000 cells, like five donors).  The cells of every
shard come from the same model, so the batches carry no batch effect: this measures cost, not
selection.  One process; the calls alternate (without, with, ...) ``--repeats`` times; wall and CPU
seconds (all threads) of each, the 1-minute load before and after, the process's peak resident memory
after each call (VmHWM, monotone over the run).  Rows appended to results/batch_cost_atlas.tsv;
results/batch_cost_atlas.md rendered from it.

    flock /work/tools/mem7.lock nice -n 19 python benchmarks/batch_cost_atlas.py --store /work/scale-data/atlas_1000000x2000_5.3
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).resolve().parent / "results"
COLUMNS = ["date", "cells", "genes", "batches", "call", "seconds", "CPU s", "peak GB", "load", "top500 overlap", "note"]


def _peak_gb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


def _read(store: Path, n_batches: int):
    import anndata as ad
    import scipy.sparse as sp

    files = sorted(store.glob("shard_*.h5ad"))
    parts = [sp.csr_matrix(ad.read_h5ad(p).X) for p in files]
    sizes = np.array([p.shape[0] for p in parts])
    per = -(-len(files) // n_batches)
    batches = np.repeat(np.arange(len(files)) // per, sizes)
    return sp.vstack(parts, format="csr"), batches


def run(args):
    import glfs
    from glfs.graph._neighbors import IVF_BLOCKED_MIN_SAMPLES

    X, batches = _read(args.store, args.batches)
    note = f"IVF_BLOCKED_MIN_SAMPLES {IVF_BLOCKED_MIN_SAMPLES:,}"
    n, d = X.shape
    out, tops = [], {}
    for rep in range(args.repeats):
        for call in ("without batches", "with batches"):
            kw = {"batches": batches} if call == "with batches" else {}
            l0, t0, c0 = os.getloadavg()[0], time.perf_counter(), time.process_time()
            sel = glfs.select(X, "graph_moran", n_features_to_select=args.n, **kw)
            row = {
                "date": time.strftime("%Y-%m-%d %H:%M"),
                "cells": n,
                "genes": d,
                "batches": int(batches.max()) + 1,
                "call": call,
                "seconds": time.perf_counter() - t0,
                "CPU s": time.process_time() - c0,
                "peak GB": _peak_gb(),
                "load": f"{l0:.1f}-{os.getloadavg()[0]:.1f}",
                "note": f"repeat {rep + 1}; {note}",
            }
            tops[call] = set(sel.indices.tolist())
            if len(tops) == 2:
                row["top500 overlap"] = len(tops["without batches"] & tops["with batches"]) / args.n
            out.append(row)
            print(row, flush=True)
    return out


def _write(rows, tsv, md):
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS)
    if tsv.exists():
        df = pd.concat([t for t in (pd.read_csv(tsv, sep="\t"), df) if len(t)], ignore_index=True)
    df.to_csv(tsv, sep="\t", index=False, float_format="%.6g")
    ratio = ""  # each call with batches against the call without them just before it
    for prev, row in zip(df.to_dict("records"), df.to_dict("records")[1:]):
        if prev["call"] == "without batches" and row["call"] == "with batches":
            ratio += (
                f"- {row['date']} ({row['note']}): with / without = {row['seconds'] / prev['seconds']:.2f} x wall, "
                f"{row['CPU s'] / prev['CPU s']:.2f} x CPU\n"
            )
    md.write_text(
        "# graph_moran with and without batches at a million cells\n\nWritten by "
        "`benchmarks/batch_cost_atlas.py` (its docstring says how) from `batch_cost_atlas.tsv`.\n\n"
        f"{df.dropna(axis=1, how='all').to_markdown(index=False, floatfmt='.4g')}\n\n{ratio}"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path("/work/scale-data/atlas_1000000x2000_5.3"))
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--render", action="store_true", help="only write the .md from the .tsv")
    args = ap.parse_args()
    _write([] if args.render else run(args), RESULTS / "batch_cost_atlas.tsv", RESULTS / "batch_cost_atlas.md")


if __name__ == "__main__":
    main()
