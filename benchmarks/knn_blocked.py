"""The IVF search of the whole kNN graph in dense blocks against faiss' IVF scans, on the same PCs, in one run.

What: ``glfs.graph.ivf_blocks`` (the library's search from ``IVF_BLOCKED_MIN_SAMPLES`` on: for each
inverted list, all the queries probing it against its samples as one float32 matrix product, the
pairs below each query's bound kept) against faiss' IndexIVFFlat (the library's search below that
size) and IndexIVFPQFastScan with 4-bit residual codes and 100 candidates re-ranked (the library's
search at a million cells from 2026-11-28 07:58 until this script's run), all with nlist = sqrt(n)
and nprobe = ``glfs.graph.neighbors.ivf_nprobe`` (32), k + 5 candidates, 2 threads.

How: the cached 50 principal components and ground truth of ``benchmarks/knn_backends.py``
(``pcs_{n}.npy``, ``truth_{n}_10000.npz`` in ``--work``: the exact 15 nearest other cells of 10,000
seeded cells, ordered by float64 distance).  The blocked search runs on every cell; the faiss scans,
slower, on ``--queries`` cells (the 10,000 truth cells and seeded others, in list order as the library
searches), their search seconds scaled to all cells (marked in the note).  recall@k over the 10,000
truth cells, each cell's candidates refined by float64 distances as the library does.  Wall and CPU
seconds (``time.process_time``, all threads) of build (k-means + lists / index) and search; the
1-minute load average before and after each step.  Rows appended to results/knn_blocked.tsv.

    python benchmarks/knn_blocked.py --cells 1000000 [--work /tmp/glfs_atlas] [--queries 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from knn_backends import recall  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
K, KS = 15, 20


def _load():
    return os.getloadavg()[0]


def _timed(fn):
    l0, t0, c0 = _load(), time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0, f"{l0:.2f}-{_load():.2f}"


def _queries(n, truth_q, m):
    """The truth cells and seeded other cells, m in all (sorted)."""
    rest = np.setdiff1d(np.arange(n), truth_q)
    extra = np.random.default_rng(0).choice(rest, max(0, min(n, m) - truth_q.size), replace=False)
    return np.sort(np.concatenate([truth_q, extra]))


def _fastscan(Z, nlist):
    """IndexIVFPQFastScan (one 4-bit code per component of the residual) + IndexRefineFlat re-ranking 100,
    as glfs.graph.neighbors._ivf_index built it with k_factor until this script's run."""
    import faiss

    p = Z.shape[1]
    seed = int(np.random.RandomState(0).randint(2**31 - 1))
    base = faiss.IndexIVFPQFastScan(faiss.IndexFlatL2(p), p, nlist, p, 4)
    base.by_residual = True
    base.pq.cp.seed = seed
    base.cp.seed = seed
    base.cp.min_points_per_centroid = 1
    base.train(Z)
    index = faiss.IndexRefineFlat(base)
    index.k_factor = 100 / KS
    index.add(Z)
    return index, base


def _scan(index, base, Z, qs, nprobe, step):
    base.nprobe = nprobe
    _, cell = base.quantizer.search(Z[qs], 1)
    order = qs[np.argsort(cell.ravel(), kind="stable")]
    ind = np.full((Z.shape[0], KS), -1, np.int64)
    for a in range(0, order.size, step):
        ind[order[a : a + step]] = index.search(Z[order[a : a + step]], KS)[1]
    return ind


def run(n, work, m_queries, which):
    import faiss

    import glfs.graph.neighbors as nb
    from glfs.graph.sharded import ivf_search

    faiss.omp_set_num_threads(2)
    Z = np.load(work / f"pcs_{n}.npy")
    t = np.load(work / f"truth_{n}_10000.npz")
    tq, truth = t["queries"], t["neighbors"]
    nlist = max(1, round(nb.IVF_NLIST_PER_SQRT_N * np.sqrt(n)))
    nprobe = nb.ivf_nprobe(nlist)
    qs = _queries(n, tq, m_queries)
    rows = []

    def row(setting, build, search, ind, note, scale=1.0):
        r = {"cells": n, "setting": setting, "nlist": nlist, "nprobe": nprobe,
             "recall@15": recall(ind, tq, truth, 15, Z), "recall@5": recall(ind, tq, truth, 5, Z),
             "build_s": build[1], "build_cpu_s": build[2], "search_s": search[1] * scale,
             "search_cpu_s": search[2] * scale, "load": f"{build[3]}; {search[3]}", "note": note,
             "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
        print(json.dumps(r), flush=True)
        rows.append(r)

    if "blocked" in which:
        b = _timed(lambda: nb._ivf_index(Z, nlist, 0, blocked=True))
        s = _timed(lambda: ivf_search(b[0], Z, KS, nprobe))
        row("blocked (glfs.graph.ivf_blocks)", b, s, s[0], "all cells searched")
        del b, s
    scale = n / qs.size
    note = f"{qs.size:,} of {n:,} cells searched, search s and CPU s x {scale:.3g}" if qs.size < n else "all cells searched"
    if "ivfflat" in which:
        b = _timed(lambda: nb._ivf_index(Z, nlist, 0))
        s = _timed(lambda: _scan(b[0], b[0], Z, qs, nprobe, qs.size))
        row("IndexIVFFlat", b, s, s[0], note, scale)
        del b, s
    if "fastscan" in which:
        b = _timed(lambda: _fastscan(Z, nlist))
        s = _timed(lambda: _scan(*b[0], Z, qs, nprobe, 16384))
        row("IndexIVFPQFastScan 4-bit residual + 100 re-ranked", b, s, s[0], note, scale)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--work", type=Path, default=Path("/tmp/glfs_atlas"))
    ap.add_argument("--queries", type=int, default=50_000)
    ap.add_argument("--which", nargs="+", default=["blocked", "ivfflat", "fastscan"])
    args = ap.parse_args(argv)
    tsv = RESULTS / "knn_blocked.tsv"
    for n in args.cells:
        for r in run(n, args.work, args.queries, args.which):
            new = not tsv.exists()
            with tsv.open("a") as f:
                if new:
                    f.write("\t".join(r) + "\n")
                f.write("\t".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in r.values()) + "\n")


if __name__ == "__main__":
    main()
