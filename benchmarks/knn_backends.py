"""Neighbour-search backends for the library's own cell graph at atlas scale: time, memory and recall.

What: ``glfs.similarity_graph`` searches the nearest neighbours of every cell on 50 principal
components; from 30,000 cells it uses faiss' IndexIVFFlat (nlist = sqrt(n), nprobe 32 until 2026-11-25 and
since then ``glfs.graph._similarity.ivf_nprobe``: 2 sqrt(nlist), at least 32; k + 5
candidates searched, k kept; ``glfs.graph._similarity._knn_ivf``; since commit 489dcb0 with the queries grouped
by their k-means cell, ``order=list`` here).  This script times that search against
other approximate indexes on the same components, and measures how many of the true neighbours
each one finds:

- ``ivf``: faiss IndexIVFFlat, ``nlist`` = that many times sqrt(n) cells, seeded k-means with
  ``min_points_per_centroid = 1`` as in ``_knn_ivf``, searched with ``nprobe``; ``order=list``
  searches the cells grouped by their inverted list (same result, other memory access pattern);
- ``hnsw``: faiss IndexHNSWFlat (``M``, ``efc`` = efConstruction, ``efs`` = efSearch);
- ``hnswlib`` and ``usearch`` (HNSW graphs of their own; same parameter names), imported from
  ``/tmp/knnextra`` when there (``pip install --target /tmp/knnextra hnswlib usearch``);
- ``pynndescent``: NNDescent with ``_knn_approx``'s parameters (``max(20, 2 (k + 1))``
  neighbours searched, its tree and iteration counts, low memory, compressed), ``n_jobs=2``;
  its numba compilation is timed on a tiny warm-up problem first and reported apart;
- ``flat``: the exact IndexFlatL2 search of every cell (50,000 and 100,000 cells only).

How: the components are computed once per size by the library's own route
(as ``glfs.graph._similarity.nearest_neighbors(X, n_pcs=50)`` computes them: scikit-learn's ARPACK PCA on the
sparse log-normalised counts of
``benchmarks/atlas_scale.py``'s simulation) and cached as ``pcs_{n}.npy`` (float32) beside the
counts.  The ground truth is the exact search (IndexFlatL2) of a seeded random subset of 2,000
cells against all cells (``truth_{n}.npz``).  Every index searches all n cells against all n
cells (the whole kNN graph, as the library needs it), with k + 5 candidates (pynndescent: its
own rule), 2 threads; self is dropped and the first k kept; recall@k = mean over the 2,000 cells
of |found and true k nearest other cells| / k.  Times are the backends' own calls (index build:
k-means + add, or graph construction; search: all n queries); the library's float64 distance
recomputation afterwards is the same for every backend and is not included.

Every index build runs in a fresh Python process (``--worker``) under an address-space limit
(``--mem-limit-gb``, default 18), which then runs each search setting of that build for k = 15
and k = 5 and prints one row per (setting, k): build s, search s, total s, CPU s of the process
(``time.process_time``, all threads), peak resident memory
of the process so far (VmHWM of /proc/self/status), recall, the faiss SIMD level in use, and the
1-minute load average when the process started and after the search.  ``--repeat 3`` runs each
build process 3 times (the .md shows the median).  A setting is skipped at a size when it took
more than ``--skip-above`` s (900) at a smaller size or its power-law extrapolation from the
two largest smaller sizes exceeds that.

``--simd-levels``: the faiss SIMD level experiment.  faiss 1.15 reads the environment variable
``FAISS_SIMD_LEVEL`` once when libfaiss.so loads (``unset`` = faiss' own detection); each given level
runs in fresh processes, which record ``faiss.SIMDConfig.get_level_name()``.  By default each process
runs ``simdprobe`` (``simd_probe``: single-threaded, minimum of 5 calls: the L2 kernel, an IVF and an
HNSW search of 10,000 cells); ``--settings`` runs whole searches instead.

The run behind results/knn_backends.md (about 80 min on 2 shared cores, PCA included):

    python benchmarks/knn_backends.py --pcs --cells 50000 100000 300000 1000000   # PCs, ~18 min
    python benchmarks/knn_backends.py --cells 50000 --repeat 3                    # every default setting
    python benchmarks/knn_backends.py --cells 100000
    python benchmarks/knn_backends.py --cells 100000 --k 15 --repeat 2 \\
        --simd-levels unset NONE AVX2 AVX512 AVX512_SPR --settings "ivf nlist=1 nprobe=32" "hnsw M=16 efc=40 efs=64"
    python benchmarks/knn_backends.py --cells 100000 --repeat 2 --simd-levels unset NONE AVX2 AVX512 AVX512_SPR
    python benchmarks/knn_backends.py --cells 300000 --settings "ivf nlist=1 nprobe=32" \\
        "ivf nlist=1 nprobe=32 order=list" pynndescent "hnsw M=16 efc=40 efs=128" "hnsw M=32 efc=80 efs=32,64" \\
        "hnswlib M=16 efc=100 efs=64,128" "usearch M=16 efc=128 efs=64"
    python benchmarks/knn_backends.py --cells 1000000 --k 15 --settings "ivf nlist=1 nprobe=32" \\
        "ivf nlist=1 nprobe=32 order=list" pynndescent "hnsw M=32 efc=80 efs=64"
    python benchmarks/knn_backends.py --cells 1000000 --k 15 --settings "hnsw M=32 efc=80 efs=64,128"
    python benchmarks/knn_backends.py --render

Writes benchmarks/results/knn_backends.tsv (rows appended) and knn_backends.md (``--render``
rewrites it from the TSV; the faiss SIMD section and the conclusion are computed from the rows).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from bench.procfs import vm_hwm_gb  # benchmarks/ is the script's directory, so on sys.path
from bench.timing import load1

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
EXTRA = Path("/tmp/knnextra")
N_PCS = 50
N_TRUTH = 2000
KS = (15, 5)
THREADS = 2

#: the settings run by default at every size (one build per line; the search settings after it)
DEFAULT_SETTINGS = [
    "ivf nlist=1 nprobe=32,16,8",  # nlist=1 nprobe=32 is the library's setting
    "ivf nlist=1 nprobe=32 order=list",
    "ivf nlist=4 nprobe=32,16,8",
    "ivf nlist=4 nprobe=16,8 order=list",
    "hnsw M=16 efc=40 efs=32,64,128",
    "hnsw M=32 efc=80 efs=32,64,128",
    "hnswlib M=16 efc=100 efs=32,64,128",
    "usearch M=16 efc=128 efs=32,64,128",
    "pynndescent",
    "flat",
]
FLAT_MAX_CELLS = 100_000


def _pcs_file(work: Path, n: int) -> Path:
    return work / f"pcs_{n}.npy"


def _truth_file(work: Path, n: int, m: int = N_TRUTH) -> Path:
    return work / (f"truth_{n}.npz" if m == N_TRUTH else f"truth_{n}_{m}.npz")


# ---- settings ---------------------------------------------------------------------------------


def parse_setting(text: str) -> tuple[str, dict, list[dict]]:
    """'hnsw M=16 efc=40 efs=32,64' -> ("hnsw", {"M": 16, "efc": 40}, [{"efs": 32}, {"efs": 64}])."""
    backend, *parts = text.split()
    build, search, extra = {}, {}, {}
    for p in parts:
        key, val = p.split("=", 1)
        if key in ("nprobe", "efs"):
            search[key] = [int(v) for v in val.split(",")]
        elif key == "kk":  # candidates searched per query (default k + 5), refined in float64 as the library does
            extra[key] = int(val)
        elif key == "order":
            extra[key] = val
        else:
            build[key] = float(val) if key == "nlist" else int(val)
    build.update(extra)
    searches = [{}]
    for key, vals in search.items():
        searches = [{**s, key: v} for s in searches for v in vals]
    return backend, build, searches


def setting_name(backend: str, build: dict, search: dict) -> str:
    """One row's setting as text, e.g. 'ivf nlist=1 nprobe=32'."""
    b = {k: v for k, v in build.items() if k not in ("order", "kk")}
    tail = {k: build[k] for k in ("kk", "order") if k in build}
    return " ".join(
        [backend] + [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in {**b, **search, **tail}.items()]
    )


CURRENT = "ivf nlist=1 nprobe=32"
#: what the measurements show, written after the run (the tables above it are rendered from the TSV)
FINDINGS = """
## What the measurements show (run of 2026-11-25, 04:03-05:21)

**Which SIMD level faiss uses.** The faiss-cpu 1.15.1 wheel runs its AVX-512 code on this machine: in a
fresh process without `FAISS_SIMD_LEVEL`, `faiss.SIMDConfig.get_level_name()` returns `AVX512_SPR` (the
CPU has avx512f/bw/vl and avx512_fp16), and every faiss row of the tables above records that level. The
"generic build, no AVX2 module" of the issue is the Python loader's INFO log (`No module named
'faiss.swigfaiss_avx2'` etc., then `Loading faiss.`): the wheel ships a single module, and its libfaiss.so
dispatches at run time. Forcing a level changes little (SIMD table, single-threaded minimum of 5 calls):
IVF search of 10,000 cells at 100,000 cells 0.94-0.98 s at AVX2, AVX512, AVX512_SPR and unset, 1.01-1.02 s
at NONE; HNSW search 0.56-0.64 s against 0.73-0.80 s at NONE; the L2 kernel of one vector against all
100,000 cells (`fvec_L2sqr_ny`, 20 MB of components) 0.015 s at every level, about 27 GB/s of
reading, the same at NONE: the loop is bound by reading the data, not by the width of the arithmetic.
The SIMD level does not explain the 749 s of the million-cell search.

**What does.** The IVF search reads nprobe / nlist = 32 / sqrt(n) of all cells per query: 32,000 cells
(6.4 MB) per query at a million, so its cost grows as n^1.5 and is bound by memory traffic. Searching the
queries grouped by their inverted list (`order=list`: same index, same neighbours, same recall) halved the
million-cell search in the same invocation: 148 s against 300 s wall, 290 against 596 CPU s. The library
does this since commit 489dcb0 (`_knn_ivf` sorts the queries by their k-means cell); `ivf nlist=1
nprobe=32` in these tables is the search before that commit, `ivf nlist=1 nprobe=32 order=list` the
search after it. The 749 s of `atlas_scale.md` were "neighbours and weights" at k = 5 and load 3.9-4.8:
this natural-order search plus, at that time, the float64 distance recomputation over two 4 GB
temporaries and the kernel; the natural-order search alone took 300 s here at k = 15 and load 2.1-3.0.
k does not explain the gap (at 50,000 cells the median searches took 5.6 s at k = 5 and 5.8 s at k = 15);
the load and the parts outside the search were not measured apart here.

**Recall at a fixed nprobe falls with n (the setting until `ivf_nprobe`).** With nlist = sqrt(n) and a fixed nprobe of 32, the share
of cells probed falls from 14 % (50,000 cells) to 3.2 % (a million). Recall@15: 0.972, 0.969, 0.954, 0.912
at 50,000, 100,000, 300,000 and 1,000,000 cells; recall@5: 0.980, 0.977, 0.963 (k = 5 was not run at a
million, to keep the run within its time). pynndescent with `_knn_approx`'s parameters falls too (0.980,
0.976, 0.964, 0.946 at k = 15; 0.948, 0.939, 0.909 at k = 5, where it searches only 20 neighbours), and
so do the HNSW settings at fixed efSearch.

**At a million cells (k = 15, 2 threads, load 0.7-3.0).** The only setting measured there with recall@15
>= 0.95 is faiss `IndexHNSWFlat` M 32, efConstruction 80, efSearch 64: 204 s (build 104-108 s, search
97-100 s; two fresh processes, 203.7 and 204.4 s), recall 0.950, peak 0.91 GB; 1.54 x faster than the
natural-order IVF search of the same invocation (314 s, recall 0.912) and 0.74 x the speed of the
list-order IVF search the library now runs (151 s, recall 0.912). efSearch 128 on the same index: 289 s,
recall 0.975. pynndescent (n_jobs 2): 101 s plus 10 s of numba compilation, recall 0.946, peak 2.7 GB.
hnswlib and usearch were not run at a million: at 300,000 cells they were slower than
faiss HNSW at the same recall (hnswlib M 16 efc 100 efs 128: 106 s, 0.969; usearch M 16 efc 128 efs 64:
109 s, 0.950; faiss HNSW M 32 efc 80 efs 64: 78 s, 0.971).

**nprobe against n (2026-11-25 06:34-07:09, list order, k = 15, load 0.5 at 50,000 cells rising to
3-9 at a million, beside two test-suite runs).** Recall@15 at nprobe 32 / 48 / 64 / 96: 50,000 cells
(nlist 224) 0.972 / 0.986 / 0.993 / 0.999; 100,000 (316) 0.969 / 0.984 / 0.991 / 0.997; 300,000 (548)
0.954 / 0.976 / 0.985 / 0.993; 1,000,000 (1,000) 0.912 / 0.955 / 0.972 (96 not run). Across the sizes
the recall is a function of nprobe / sqrt(nlist), not of the probed share nprobe / nlist: 1.0 -> 0.912,
1.4 -> 0.954, 1.8 -> 0.969, 2.0-2.1 -> 0.972-0.976, 2.7 -> 0.984-0.985 (at a fixed share it rises with
n). So `glfs.graph._similarity.ivf_nprobe` now probes 2 sqrt(nlist) cells, at least 32: unchanged up to 65,536
cells, 36 at 100,000, 47 at 300,000, 64 at a million (recall@15 0.972 there, the 50,000-cell figure).
Its cost: CPU seconds of the million-cell search 305 / 442 / 636 at nprobe 32 / 48 / 64, so 2.1 x the
previous setting; on quiet cores (148 s at nprobe 32) about 310 s. The wall times of this sweep
(193 / 367 / 765 s) are not comparable with each other: the load rose from 3 to 9 during it.

**At 50,000-300,000 cells** the current IVF setting already has recall >= 0.95 and every backend takes
seconds to about a minute; which is fastest changes with the load from row to row (the exact search of
50,000 cells took 2.2 to 27.5 s in three processes at loads 3.8-6.4), so differences below about 2 x at
these sizes are not reliable. The k = 5 graph, the library's default, reaches recall@5 >= 0.95 with the
current setting up to 300,000 cells.

**Memory.** Every index stayed under 1.3 GB at a million cells (the 1,000,000 x 50 float32 components
are 0.2 GB), pynndescent 2.7 GB. The million-cell PCA (ARPACK on the 5.5e8 non-zeros) took 690 s at load
6.6-7.8 and peaked at 5.1 GB.

**Installs.** hnswlib 0.8.0 (built from its source distribution with the machine's gcc: PyPI has no wheel
for it) and usearch 2.26.6 (wheel) installed into /tmp/knnextra; pip also put numpy 2.4.6, tqdm and
numkong there, so the benchmark appends /tmp/knnextra to sys.path after the venv's own packages.
"""


#: the findings of the run of 2026-11-28 (the PCs of the library's route, 10,000 truth cells): knn_backends_1m.md
FINDINGS_1M = """
## What the measurements show (rows of 2026-11-28 07:30-07:58, load 17-30)

**The machine.** Five helpers shared the 2 cores: the 1-minute load stayed at 17-30 during these rows, so
every wall time is 5-15 x what a quiet machine gives (the 50,000-cell PCA took 228 s, 12-35 s quiet).
Compare the rows of one size with each other (they ran in turn in one sitting) and by CPU seconds; not
with knn_backends.md. At a million cells 100,000 seeded cells (the 10,000 truth cells among them) were
searched and the search times scaled by 10 (`--queries`); the builds are whole. The million-cell
components were made by the same route as `--pcs` in a scratch run (read 51 s, fit on 100,000 cells
436 s, projection of every cell 47 s, peak 5.3 GB, load 15-18; 35 s + 10 s on quiet cores, 11-27).

**At a million cells, k = 15.** The library's IndexIVFFlat (nlist 1,000, nprobe 32): recall@15 0.921,
search 2,330 s scaled, 950 CPU s. IndexIVFPQFastScan on the same k-means cells and probes with 4-bit
codes of each cell's residual, one code per component, the 100 nearest by the codes re-ranked
exactly: recall@15 0.921 (recall@5 0.937), search 892 s scaled, 383 CPU s: **the same recall in 0.38 x
the wall and 0.40 x the CPU time**; its build (k-means + PQ training + codes) 80 s against 43 s. At
nprobe 48 recall@15 0.961 (recall@5 0.969) in 1,319 s (0.57 x the IVFFlat search at nprobe 32). One
code per two components, codes of the cells themselves (faiss' default) and 60 candidates: recall@15
0.754, so both the residual codes and the re-ranking depth matter. One faiss call of 10^5 queries
peaked at 4.5-5 GB (its look-up tables), so the library searches in blocks of 16,384 queries.

**Screens with a scratch script (same truth, not in the .tsv).** 4,000 cells of 250 (k-means on every
cell): nprobe 48 / 64 recall@15 0.831 / 0.879 at 0.46 / 0.56 x the CPU time of the 1,000-cell search,
and a k-means 16 x slower (685 s); 8-bit scalar codes took 4.7 x the CPU time of the float32 scan at
50,000 cells at the same recall; a BLAS search of a cell's members against the 32 cells nearest its
centre cost as much as the IVF scan of the same 32,000 candidates. faiss HNSW with a one-thread build
and pynndescent with one job (the deterministic settings) were queued but not run: at this load their
builds would have taken the rest of the session (11-25 on 2 threads: 106 s and 101 s).

**At 50,000 cells (08:16-08:22, load 19-25).** IndexIVFFlat: recall@15 0.972 (recall@5 0.980), 10.6 CPU s.
The fast-scan codes with 100 re-ranked: the same recall in 32.7 CPU s, 3 x more, and 6.1 GB in one
faiss call of 50,000 queries: at this size the lists are short and the look-up tables, not the scan,
cost; so the codes start at 500,000 samples (between 50,000 and a million the cross-over was not
measured). faiss HNSW M 16, efConstruction 40, built on one thread (deterministic insertion order) /
on two: build 27.0 / 23.3 s wall, efSearch 64 recall@15 0.945 (recall@5 0.965) in 12.5 / 13.6 CPU s,
efSearch 32 0.898: below IVFFlat's recall at about its cost, and the one-thread build costs little at
this load (both threads were contended anyway).

**The choice** (2026-11-28 07:58, glfs.graph._neighbors.IVF_PQ_MIN_SAMPLES): from 500,000 samples on the
IVF index held the fast-scan codes and re-ranked 100 candidates; below, IndexIVFFlat.  **Superseded the
same day** (10:40, `knn_blocked.md`, `benchmarks/knn_blocked.py`): from `IVF_BLOCKED_MIN_SAMPLES` (500,000)
on, the same k-means lists are searched in dense blocks (`glfs.graph._ivf_blocks`: each list against all the
queries that probe it, one float32 matrix product), the candidates of IndexIVFFlat by exact float32
distances: at a million cells the same recall@15 0.921 in 131 CPU s against 986 (IndexIVFFlat) and 322
(the fast-scan codes) in one run, 0.13 x and 0.41 x.
"""
FINDINGS_BY_STEM = {"knn_backends": FINDINGS, "knn_backends_1m": FINDINGS_1M}


# ---- the work (run in a worker process) ---------------------------------------------------------


def _threads():
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(THREADS)


def make_pcs(n: int, work: Path, lib_loc: float) -> dict:
    """The library's PCA route on the simulated log-normalised counts; cache the scores as float32.

    The route of ``glfs.graph._neighbors.nearest_neighbors(X, n_pcs=50)`` for an in-memory sparse X:
    scikit-learn's PCA, ARPACK on the implicitly centred operator, seeded; above ``PCA_FIT_SAMPLES``
    cells fitted on a seeded subsample of that many and every cell projected (``_pca_in_memory``;
    until 2026-11-28 this script fitted on every cell, which the library no longer does).
    """
    import warnings

    import anndata as ad

    warnings.simplefilter("ignore")

    from sklearn.decomposition import PCA

    from glfs.graph._neighbors import PCA_FIT_SAMPLES

    t0 = time.perf_counter()
    X = ad.read_h5ad(work / f"lognorm_{n}_{lib_loc:g}.h5ad").X
    t1 = time.perf_counter()
    # the library's route (random_state 0): ARPACK on every cell up to PCA_FIT_SAMPLES, else on a seeded
    # sorted uniform subsample of that many, and every cell projected: x V - mean V
    pca = PCA(n_components=N_PCS, svd_solver="arpack", random_state=0)
    if n <= PCA_FIT_SAMPLES:
        Z = pca.fit_transform(X)
    else:
        pca.fit(X[np.sort(np.random.default_rng(0).choice(n, PCA_FIT_SAMPLES, replace=False))])
        V = pca.components_.T.astype(np.float32)
        Z = np.asarray(X @ V, dtype=np.float32) - (pca.mean_ @ pca.components_.T).astype(np.float32)
    t2 = time.perf_counter()
    np.save(_pcs_file(work, n), np.ascontiguousarray(Z, dtype=np.float32))
    return {
        "build_s": t2 - t1,
        "search_s": 0.0,
        "total_s": t2 - t1,
        "note": f"read {t1 - t0:.1f} s; X {X.shape[0]} x {X.shape[1]} {type(X).__name__} {X.dtype}, "
        f"{X.nnz} non-zeros; PCA output {Z.dtype}",
    }


def make_truth(Z, n: int, work: Path, m: int = N_TRUTH) -> np.ndarray:
    """Exact max(KS) nearest other cells of m seeded random cells (faiss IndexFlatL2 on float32, 25
    candidates, ordered by their float64 distances as the library orders its candidates)."""
    import faiss

    path = _truth_file(work, n, m)
    if path.exists():
        f = np.load(path)
        return f["queries"], f["neighbors"]
    q = np.sort(np.random.default_rng(0).choice(n, size=min(m, n), replace=False))
    index = faiss.IndexFlatL2(Z.shape[1])
    index.add(Z)
    _, ind = index.search(Z[q], max(KS) + 10)
    nb = np.array([_refined(Z, i, row)[: max(KS)] for i, row in zip(q, ind)])
    np.savez(path, queries=q, neighbors=nb)
    return q, nb


def _refined(Z, i, row):
    """The candidates ``row`` of cell i (self and -1 dropped) ordered by float64 distance, as
    ``glfs.graph._neighbors._from_candidates`` keeps them (stable for ties)."""
    row = np.asarray([j for j in row if j != i and j >= 0], dtype=np.int64)
    d = ((Z[row].astype(np.float64) - Z[i].astype(np.float64)) ** 2).sum(axis=1)
    return row[np.argsort(d, kind="stable")]


def recall(ind: np.ndarray, q: np.ndarray, truth: np.ndarray, k: int, Z=None, pos=None) -> float:
    """Mean over the query cells q of |the k nearest of their candidates and truth[:, :k]| / k.

    The candidates (row ``pos`` of ``ind`` for each cell of q; default row q) are refined by their
    float64 distances on Z as the library refines them (without Z: in the backend's order).
    """
    hits = 0
    rows = ind[q] if pos is None else ind[pos]
    for i, row, true in zip(q, rows, truth[:, :k]):
        found = _refined(Z, i, row)[:k] if Z is not None else [j for j in row if j != i and j >= 0][:k]
        hits += len(set(np.asarray(found).tolist()) & set(true.tolist()))
    return hits / (k * q.size)


class _Timer:
    """Wall seconds (``s``) and CPU seconds of this process, all threads (``cpu``), of a block."""

    s = cpu = 0.0

    def __enter__(self):
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.s, self.cpu = time.perf_counter() - self.t0, time.process_time() - self.c0


_ZERO = _Timer()


def _grouped_search(index, Z, qs, k_search):
    """Candidates of the queries ``qs`` in an IVF index, searched grouped by their k-means cell as
    ``glfs.graph._sharded.ivf_search`` does (the rows of ``qs`` in their own order)."""
    _, cell = index.quantizer.search(Z[qs], 1)
    order = np.argsort(cell.ravel(), kind="stable")
    ind = np.empty((qs.size, k_search), dtype=np.int64)
    _, ind[order] = index.search(Z[qs[order]], k_search)
    return ind


def _ivf_train(index, Z, build):
    """Seeded k-means as ``_knn_ivf`` (random_state 0); ``mppc`` caps the training sample per cell."""
    index.cp.seed = int(np.random.RandomState(0).randint(2**31 - 1))
    index.cp.min_points_per_centroid = 1
    if "mppc" in build:
        index.cp.max_points_per_centroid = int(build["mppc"])
    index.train(Z)
    index.add(Z)


def run_build(backend: str, build: dict, searches: list[dict], Z, ks=KS, qs=None):
    """Yield (search setting, k, k_search, build timer, search timer, compile s, note, candidates) for one build.

    ``qs``: the query rows searched (default all n cells); the candidates are (qs.size, k_search).
    ``kk`` in ``build``: candidates per query (default k + 5; the library refines them in float64).
    """
    n, p = Z.shape
    qs = np.arange(n) if qs is None else qs
    kk = build.get("kk")
    if backend in ("ivf", "hnsw", "flat", "ivfpqfs", "ivfsq"):
        import faiss

        faiss.omp_set_num_threads(THREADS)
    if backend in ("ivf", "ivfpqfs", "ivfsq"):
        import faiss

        nlist = int(max(1, round(build["nlist"] * np.sqrt(n))))
        with _Timer() as tb:
            if backend == "ivf":
                index = faiss.IndexIVFFlat(faiss.IndexFlatL2(p), p, nlist)
            elif backend == "ivfsq":  # 8-bit scalar quantiser codes (a quarter of the float32 traffic)
                index = faiss.IndexIVFScalarQuantizer(
                    faiss.IndexFlatL2(p), p, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_L2, False
                )
            else:  # 4-bit product quantiser codes searched by SIMD look-up tables (fast scan)
                index = faiss.IndexIVFPQFastScan(faiss.IndexFlatL2(p), p, nlist, int(build.get("M", p // 2)), 4)
                index.by_residual = bool(build.get("res", 0))  # codes of x - its cell's centroid (faiss' default: x)
            _ivf_train(index, Z, build)
        order = None
        for s in searches:
            for k in ks:
                k_search = int(min(n, kk or k + 5))
                with _Timer() as ts:
                    index.nprobe = int(min(nlist, s["nprobe"]))
                    if build.get("order") == "list" and qs.size == n:  # grouped by list, as the library
                        if order is None:
                            inv = index.invlists
                            order = np.concatenate(
                                [
                                    faiss.rev_swig_ptr(inv.get_ids(j), inv.list_size(j)).copy()
                                    for j in range(nlist)
                                    if inv.list_size(j)
                                ]
                            )
                        ind = np.empty((n, k_search), dtype=np.int64)
                        _, ind[order] = index.search(Z[order], k_search)
                    elif build.get("order") == "list" or backend != "ivf":
                        ind = _grouped_search(index, Z, qs, k_search)
                    else:
                        _, ind = index.search(Z[qs], k_search)
                    short = np.flatnonzero((ind >= 0).sum(axis=1) < min(n, k + 1))
                    if short.size:  # as _knn_ivf: exact search for cells whose probed lists hold too few
                        flat = faiss.IndexFlatL2(p)
                        flat.add(Z)
                        _, ind[short] = flat.search(Z[qs[short]], k_search)
                yield s, k, k_search, tb, ts, None, f"nlist {nlist}; {short.size} cells searched exactly", ind
    elif backend == "hnsw":
        import faiss

        bt = int(build.get("bt", THREADS))  # build threads: 1 = deterministic insertion order
        with _Timer() as tb:
            faiss.omp_set_num_threads(bt)
            index = faiss.IndexHNSWFlat(p, build["M"])
            index.hnsw.efConstruction = build["efc"]
            index.add(Z)
            faiss.omp_set_num_threads(THREADS)
        for s in searches:
            for k in ks:
                k_search = kk or k + 5
                with _Timer() as ts:
                    index.hnsw.efSearch = s["efs"]
                    _, ind = index.search(Z[qs], k_search)
                yield s, k, k_search, tb, ts, None, f"build on {bt} thread(s)", ind
    elif backend == "hnswlib":
        from importlib.metadata import version

        import hnswlib

        with _Timer() as tb:
            index = hnswlib.Index(space="l2", dim=p)
            index.init_index(max_elements=n, ef_construction=build["efc"], M=build["M"], random_seed=0)
            index.add_items(Z, np.arange(n), num_threads=THREADS)
        for s in searches:
            for k in ks:
                k_search = kk or k + 5
                with _Timer() as ts:
                    index.set_ef(max(s["efs"], k_search))
                    ind, _ = index.knn_query(Z[qs], k=k_search, num_threads=THREADS)
                yield s, k, k_search, tb, ts, None, f"hnswlib {version('hnswlib')}", ind.astype(np.int64)
    elif backend == "usearch":
        import usearch
        from usearch.index import Index

        with _Timer() as tb:
            index = Index(ndim=p, metric="l2sq", dtype="f32", connectivity=build["M"], expansion_add=build["efc"])
            index.add(np.arange(n, dtype=np.uint64), Z, threads=THREADS)
        for s in searches:
            for k in ks:
                k_search = kk or k + 5
                with _Timer() as ts:
                    index.expansion_search = s["efs"]
                    m = index.search(Z[qs], k_search, threads=THREADS)
                    ind = np.where(
                        np.arange(k_search)[None, :] < np.asarray(m.counts)[:, None],
                        np.asarray(m.keys).astype(np.int64),
                        -1,
                    )
                yield s, k, k_search, tb, ts, None, f"usearch {usearch.__version__}", ind
    elif backend == "pynndescent":
        import pynndescent
        from pynndescent import NNDescent

        jobs = int(build.get("jobs", THREADS))

        def nnd(data, k_search):
            m = data.shape[0]
            return NNDescent(
                data,
                n_neighbors=k_search,
                metric="euclidean",
                random_state=0,
                n_trees=int(build.get("trees", min(64, 5 + int(round(m**0.5 / 20.0))))),
                n_iters=int(build.get("iters", max(5, int(round(np.log2(m)))))),
                n_jobs=jobs,
                low_memory=True,
                compressed=True,
            )

        with _Timer() as tc:  # numba compilation (and the thread pool) on a tiny problem
            nnd(np.random.default_rng(0).normal(size=(2000, p)).astype(np.float32), 20).neighbor_graph
        for k in ks:
            k_search = int(min(n, kk or max(20, 2 * (k + 1))))  # _knn_approx's rule
            with _Timer() as tb:
                ind, _ = nnd(Z, k_search).neighbor_graph
            note = f"pynndescent {pynndescent.__version__}, n_jobs {jobs}; build = whole graph"
            yield {}, k, k_search, tb, _ZERO, tc.s, note, ind[qs].astype(np.int64)
    elif backend == "flat":
        import faiss

        index = faiss.IndexFlatL2(p)
        index.add(Z)
        for k in ks:
            with _Timer() as ts:
                _, ind = index.search(Z[qs], kk or k + 5)
            yield {}, k, kk or k + 5, _ZERO, ts, None, "exact", ind
    else:
        msg = f"unknown backend {backend!r}"
        raise ValueError(msg)


def simd_probe(Z, repeats: int = 5):
    """Yield (what, min s, all s) of single-threaded faiss calls whose inner loops are SIMD-dispatched.

    One thread and the minimum of ``repeats`` runs, so that other jobs on the machine disturb the
    comparison of SIMD levels as little as possible: the L2 kernel alone (``fvec_L2sqr_ny``: one
    vector against all n), the IVF search of 10,000 cells (nlist sqrt(n), nprobe 32, 20 candidates)
    and the HNSW search of the same cells (M 16, efConstruction 40, efSearch 64).
    """
    import faiss

    faiss.omp_set_num_threads(1)
    n, p = Z.shape
    q = Z[np.random.default_rng(1).choice(n, size=10_000, replace=False)]

    def best(fn, r):
        times = []
        for _ in range(r):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times), times

    dis = np.empty(n, dtype=np.float32)
    x = np.ascontiguousarray(Z[0])

    def kernel():
        for _ in range(20):
            faiss.fvec_L2sqr_ny(faiss.swig_ptr(dis), faiss.swig_ptr(x), faiss.swig_ptr(Z), p, n)

    yield "fvec_L2sqr_ny x 20 (1 vector vs all cells), 1 thread", *best(kernel, repeats)
    nlist = int(round(np.sqrt(n)))
    ivf = faiss.IndexIVFFlat(faiss.IndexFlatL2(p), p, nlist)
    ivf.cp.seed = int(np.random.RandomState(0).randint(2**31 - 1))
    ivf.cp.min_points_per_centroid = 1
    ivf.train(Z)
    ivf.add(Z)
    ivf.nprobe = 32
    yield "ivf nlist=1 nprobe=32: 10,000 queries, 1 thread", *best(lambda: ivf.search(q, 20), repeats)
    hnsw = faiss.IndexHNSWFlat(p, 16)
    hnsw.hnsw.efConstruction = 40
    hnsw.add(Z)
    hnsw.hnsw.efSearch = 64
    yield "hnsw M=16 efc=40 efs=64: 10,000 queries, 1 thread", *best(lambda: hnsw.search(q, 20), repeats)


def _simd_level():
    try:
        import faiss

        return faiss.SIMDConfig.get_level_name()
    except Exception:  # noqa: BLE001 - older faiss: no SIMDConfig
        return ""


def worker(
    setting: str, n: int, work: Path, mem_limit_gb: float, lib_loc: float, ks, n_truth=N_TRUTH, n_queries=None
) -> None:
    limit = int(mem_limit_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    load0 = load1()
    if setting == "pcs":
        try:
            out = make_pcs(n, work, lib_loc)
        except MemoryError as exc:
            out = {"note": f"MemoryError under the {mem_limit_gb:g} GB address-space limit: {exc}"[:300]}
        out.update(
            {
                "setting": "pca (library route: ARPACK, 50 PCs)",
                "k": "",
                "peak_rss_gb": vm_hwm_gb(),
                "load_before": load0,
                "load_after": load1(),
            }
        )
        print("RESULT " + json.dumps(out), flush=True)
        return
    if EXTRA.is_dir():
        sys.path.append(str(EXTRA))  # after the venv's own packages (its numpy first)
    Z = np.load(_pcs_file(work, n))
    if setting == "simdprobe":
        for what, t, times in simd_probe(Z):
            print(
                "RESULT "
                + json.dumps(
                    {
                        "setting": f"probe: {what}",
                        "search_s": t,
                        "simd": _simd_level(),
                        "peak_rss_gb": vm_hwm_gb(),
                        "load_before": load0,
                        "load_after": load1(),
                        "note": "min of " + ", ".join(f"{x:.3f}" for x in times) + " s",
                    }
                ),
                flush=True,
            )
        return
    q, truth = make_truth(Z, n, work, n_truth)
    qs, pos, scale, sub = None, None, 1.0, ""
    if n_queries and n_queries < n:  # a seeded sample of query cells, the truth cells among them
        rest = np.setdiff1d(np.arange(n), q)
        qs = np.sort(np.r_[q, np.random.default_rng(1).choice(rest, max(0, n_queries - q.size), replace=False)])
        pos, scale = np.searchsorted(qs, q), n / qs.size
        sub = f"; {qs.size:,} of {n:,} cells searched, search s and CPU s x {scale:.3g}"
    backend, build, searches = parse_setting(setting)
    try:
        for s, k, k_search, b, t, c, note, ind in run_build(backend, build, searches, Z, ks, qs):
            out = {
                "setting": setting_name(backend, build, s),
                "k": k,
                "k_search": k_search,
                "build_s": b.s,
                "search_s": t.s * scale,
                "total_s": b.s + t.s * scale,
                "cpu_s": b.cpu + t.cpu * scale,
                "compile_s": c,
                "recall": recall(ind, q, truth, k, Z, pos),
                "peak_rss_gb": vm_hwm_gb(),
                "simd": _simd_level() if backend in ("ivf", "hnsw", "flat", "ivfpqfs", "ivfsq") else "",
                "load_before": load0,
                "load_after": load1(),
                "note": note + sub,
            }
            print("RESULT " + json.dumps(out), flush=True)
    except MemoryError as exc:
        print(
            "RESULT "
            + json.dumps(
                {
                    "setting": setting,
                    "note": f"MemoryError under the {mem_limit_gb:g} GB address-space limit: {exc}"[:300],
                    "peak_rss_gb": vm_hwm_gb(),
                    "load_before": load0,
                    "load_after": load1(),
                }
            ),
            flush=True,
        )


# ---- driver -----------------------------------------------------------------------------------

COLUMNS = [
    "date",
    "n_cells",
    "setting",
    "k",
    "k_search",
    "run",
    "build_s",
    "search_s",
    "total_s",
    "compile_s",
    "peak_rss_gb",
    "recall",
    "simd",
    "simd_env",
    "load_before",
    "load_after",
    "note",
    "cpu_s",
]


def run_worker(setting, n, args, simd_env=None):
    """One fresh process; return its rows (or one row saying how it failed)."""
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        setting,
        "--cells",
        str(n),
        "--work",
        str(args.work),
        "--mem-limit-gb",
        str(args.mem_limit_gb),
        "--lib-loc",
        str(args.lib_loc),
        "--k",
        *map(str, args.k),
        "--truth",
        str(args.truth),
    ] + (["--queries", str(args.queries)] if args.queries else [])
    env = dict(os.environ)
    env.pop("FAISS_SIMD_LEVEL", None)
    if simd_env and simd_env != "unset":
        env["FAISS_SIMD_LEVEL"] = simd_env
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = str(THREADS)
    load0 = load1()
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=False, env=env)
        stdout, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, rc = f"stopped after {args.timeout} s", None
    rows = [json.loads(ln[7:]) for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    if rc != 0:
        tail = (err.strip().splitlines() or ["no output"])[-1]
        note = f"failed (exit {rc}) after {time.perf_counter() - t0:.0f} s: {tail}"[:300]
        rows.append({"setting": setting, "note": note, "load_before": load0, "load_after": load1()})
    return rows


def append(tsv: Path, row: dict) -> None:
    new = not tsv.exists()
    with tsv.open("a") as f:
        if new:
            f.write("\t".join(COLUMNS) + "\n")
        vals = [row.get(c) for c in COLUMNS]
        f.write(
            "\t".join(
                ""
                if v is None
                else (f"{v:.4g}" if isinstance(v, float) else str(v)).replace("\t", " ").replace("\n", " ")
                for v in vals
            )
            + "\n"
        )


def too_slow(tsv: Path, setting: str, n: int, limit: float):
    """Why `setting` is skipped at n: > limit s at a smaller size, or extrapolated above it; else None."""
    import pandas as pd

    if not tsv.exists():
        return None
    t = pd.read_csv(tsv, sep="\t")
    t = t[(t["n_cells"] < n) & (t["k"].astype(str) == "15") & t["total_s"].notna() & (t["simd_env"].isna())]
    name = setting_name(*parse_setting(setting)[:2], {})
    t = t[t["setting"].str.startswith(name)]
    if t.empty:
        return None
    per = t.groupby("n_cells")["total_s"].min()  # the fastest search setting of this build
    if per.max() > limit:
        return f"skipped: {per.max():.0f} s > {limit:g} s at {per.idxmax():,} cells"
    if per.size >= 2:
        (n1, t1), (n2, t2) = list(per.items())[-2:]
        b = np.log(t2 / t1) / np.log(n2 / n1)
        pred = t2 * (n / n2) ** b
        if pred > limit:
            return f"skipped: extrapolated {pred:.0f} s (exponent {b:.2f} from {n1:,} and {n2:,} cells) > {limit:g} s"
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, nargs="+", default=[50_000])
    ap.add_argument("--work", type=Path, default=Path("/tmp/glfs_atlas"))
    ap.add_argument("--lib-loc", type=float, default=6.3, help="which simulated counts (atlas_scale.py's --lib-loc)")
    ap.add_argument("--settings", nargs="+", help="build settings to run (default: DEFAULT_SETTINGS)")
    ap.add_argument("--k", type=int, nargs="+", default=list(KS), help="neighbours kept (default 15 5)")
    ap.add_argument("--truth", type=int, default=N_TRUTH, help="seeded cells whose exact neighbours are the truth")
    ap.add_argument(
        "--queries",
        type=int,
        help="search only this many seeded cells (the truth cells among them); "
        "search times scaled to all cells (a screen; the tables' full rows search every cell)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes per build (median in the .md)")
    ap.add_argument("--mem-limit-gb", type=float, default=18.0)
    ap.add_argument("--timeout", type=int, default=2400, help="seconds per process")
    ap.add_argument("--skip-above", type=float, default=900.0, help="skip a build slower than this at a smaller size")
    ap.add_argument("--pcs", action="store_true", help="only compute and cache the principal components")
    ap.add_argument("--simd-levels", nargs="+", help="FAISS_SIMD_LEVEL values to compare (unset = faiss' own choice)")
    ap.add_argument("--out", default="knn_backends", help="stem of the .tsv and .md in benchmarks/results/")
    ap.add_argument("--worker")
    ap.add_argument("--render", action="store_true", help="only write knn_backends.md from the TSV")
    args = ap.parse_args(argv)
    tsv, md = RESULTS / f"{args.out}.tsv", RESULTS / f"{args.out}.md"
    if args.render:
        render(tsv, md)
        return
    if args.worker:
        _threads()
        worker(
            args.worker,
            args.cells[0],
            args.work,
            args.mem_limit_gb,
            args.lib_loc,
            tuple(args.k),
            args.truth,
            args.queries,
        )
        return
    RESULTS.mkdir(exist_ok=True)
    for n in args.cells:
        if args.pcs:
            jobs = [("pcs", None, 1)]
        elif args.simd_levels:
            jobs = [
                (s, lv, r + 1)
                for r in range(args.repeat)
                for lv in args.simd_levels
                for s in (args.settings or ["simdprobe"])
            ]
        else:
            settings = args.settings or [s for s in DEFAULT_SETTINGS if s != "flat" or n <= FLAT_MAX_CELLS]
            jobs = [(s, None, r + 1) for r in range(args.repeat) for s in settings]
        for setting, simd_env, run in jobs:
            why = None if (args.pcs or args.simd_levels) else too_slow(tsv, setting, n, args.skip_above)
            if why:
                rows = [{"setting": setting, "note": why, "load_before": load1(), "load_after": load1()}]
            elif setting == "pcs" and _pcs_file(args.work, n).exists():
                print(f"{_pcs_file(args.work, n)} exists", flush=True)
                continue
            else:
                rows = run_worker(setting, n, args, simd_env)
            for r in rows:
                row = {
                    "date": time.strftime("%Y-%m-%d %H:%M"),
                    "n_cells": n,
                    "run": run,
                    "simd_env": simd_env or "",
                    **r,
                }
                print(json.dumps(row), flush=True)
                append(tsv, row)
            render(tsv, md)


# ---- the report -------------------------------------------------------------------------------


def _fmt(v, spec=".3g"):
    import pandas as pd

    return "" if v is None or (isinstance(v, float) and np.isnan(v)) or pd.isna(v) else format(v, spec)


def _machine() -> list[str]:
    import platform

    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    flags = next(
        (
            ln.split(":", 1)[1].split()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("flags")
        ),
        [],
    )
    simd = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_fp16") if f in flags)
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    vers = []
    if EXTRA.is_dir():
        sys.path.append(str(EXTRA))
    from importlib.metadata import PackageNotFoundError, version

    for pkg in ("numpy", "faiss-cpu", "pynndescent", "numba", "hnswlib", "usearch"):
        try:
            vers.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            where = EXTRA / f"{pkg}"
            vers.append(f"{pkg} not installed" if not where.exists() else f"{pkg} (in {EXTRA})")
    return [
        f"Machine: {cpu}, {os.cpu_count()} cores (shared with other jobs), {mem:.0f} GB RAM; CPU flags {simd}.",
        f"Python {platform.python_version()}; " + ", ".join(vers) + ".",
    ]


def _median_rows(t):
    """One row per (size, setting, k): medians over the runs, the runs counted, load range."""
    import pandas as pd

    num = ["build_s", "search_s", "total_s", "cpu_s", "compile_s", "peak_rss_gb", "recall"]
    out = []
    for (n, s, k), g in t.groupby(["n_cells", "setting", "k"], sort=False):
        r = {"n_cells": n, "setting": s, "k": k, "runs": int(g["total_s"].notna().sum())}
        for c in num:
            r[c] = g[c].median() if g[c].notna().any() else np.nan
        r["load"] = f"{g['load_before'].min():.1f}-{g['load_after'].max():.1f}"
        notes = [str(x) for x in g["note"].dropna().unique()]
        r["note"] = "; ".join(notes)
        r["simd"] = ", ".join(str(x) for x in g["simd"].dropna().unique())
        out.append(r)
    return pd.DataFrame(out)


def render(tsv: Path, md: Path) -> None:
    """knn_backends.md from the TSV: machine, PCA, one table per size, the SIMD experiment, the conclusion."""
    import pandas as pd

    t = pd.read_csv(tsv, sep="\t", dtype={"k": str, "simd_env": str})
    t["k"] = t["k"].fillna("")
    t["simd_env"] = t["simd_env"].fillna("")
    pcs = t[t["setting"].str.startswith("pca")]
    simd = t[t["simd_env"] != ""]
    main = t[(t["simd_env"] == "") & ~t["setting"].str.startswith("pca")]
    out = [
        "# Neighbour-search backends for the cell graph at atlas scale",
        "",
        f"Written by `benchmarks/knn_backends.py` from `{tsv.name}` (see the script's docstring for the "
        "method). Data: the simulated log-normalised counts of `benchmarks/atlas_scale.py` (20,000 genes, 10 "
        "cell groups, CSR float32), reduced to 50 principal components by the library's own route "
        "(`glfs.graph._neighbors.nearest_neighbors` with `n_pcs`: ARPACK; in knn_backends.md on every cell, in "
        "knn_backends_1m.md fitted on 100,000 cells and every cell projected, as the library does now), float32, "
        "Euclidean. Every index searches all cells against all cells "
        "(the whole kNN graph), k + 5 candidates (pynndescent: `_knn_approx`'s max(20, 2 (k + 1))), self "
        "dropped, k kept; 2 threads. Recall@k = mean over 2,000 seeded random cells (knn_backends_1m.md: 10,000) "
        "of the share of their true k nearest other cells found (truth: exact IndexFlatL2; in knn_backends_1m.md "
        "the candidates are first ordered by their float64 distances, as the library keeps them). Times in wall seconds: build = index "
        "construction (IVF: k-means + add; pynndescent: the whole graph), search = all n queries, total = "
        "both; the library's float64 distance recomputation after the search is not included (the same for "
        "every backend). Peak = VmHWM of the process (its PCs included; one process runs every search "
        "setting of one build, so later rows of a build carry the earlier rows' peak). load = 1-minute load "
        "average when the process started and after the search (2 cores, shared with other jobs: a CI run "
        "and other sessions' benchmarks ran beside this one; a load above 2 means the backends had less "
        "than 2 cores). x current = total time of `ivf nlist=1 nprobe=32` (the library's search until commit "
        "489dcb0; since then it searches in list order, the `order=list` row) at the "
        "same size and k / the row's total time. CPU s = CPU seconds of the process over build and search "
        "(all threads; near 2 x total when "
        "the backend had both cores to itself; OpenMP threads that spin while waiting count too). "
        "Rows with runs = 3 "
        "are medians of 3 fresh processes, each column the median of its own values (so build + search need not "
        "equal total).",
        "",
    ]
    loads = pd.concat([t["load_before"], t["load_after"]]).dropna()
    out += _machine() + [
        f"1-minute load average over the run ({t['date'].min()} to {t['date'].max()}): "
        f"{loads.min():.1f} to {loads.max():.1f}, median {loads.median():.1f}.",
        "",
    ]
    if not pcs.empty:
        out += [
            "## Principal components (cached once per size)",
            "",
            "| cells | PCA s | peak GB | load | note |",
            "|---|---|---|---|---|",
        ]
        for _, r in pcs.iterrows():
            out.append(
                f"| {r['n_cells']:,} | {_fmt(r['build_s'])} | {_fmt(r['peak_rss_gb'])} | "
                f"{_fmt(r['load_before'], '.1f')}-{_fmt(r['load_after'], '.1f')} | {r['note']} |"
            )
        out.append("")
    m = _median_rows(main) if not main.empty else pd.DataFrame()
    best = {}
    for n in sorted(m["n_cells"].unique()) if not m.empty else []:
        g = m[m["n_cells"] == n]
        cur = {k: g[(g["setting"] == CURRENT) & (g["k"] == k)]["total_s"] for k in ("15", "5")}
        cur = {k: (float(v.iloc[0]) if len(v) and pd.notna(v.iloc[0]) else None) for k, v in cur.items()}
        out += [
            f"## {n:,} cells",
            "",
            "| setting | recall@15 | build s | search s | total s | CPU s | x current | recall@5 | total s (k=5) | "
            "x current (k=5) | peak GB | load | runs | note |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for s in g["setting"].unique():
            a = g[(g["setting"] == s) & (g["k"] == "15")]
            b = g[(g["setting"] == s) & (g["k"] == "5")]
            a = a.iloc[0] if len(a) else None
            b = b.iloc[0] if len(b) else None
            skipped = g[(g["setting"] == s) & (g["k"] == "")]
            if a is None and b is None:
                note = "; ".join(skipped["note"]) if len(skipped) else ""
                load = skipped["load"].iloc[0] if len(skipped) else ""
                out.append(f"| {s} |  |  |  |  |  |  |  |  |  |  | {load} | 0 | {note} |")
                continue
            ref = a if a is not None else b

            def ratio(row, k):
                if row is None or not cur[k] or pd.isna(row["total_s"]):
                    return ""
                return f"{cur[k] / row['total_s']:.2f}"

            note = ref["note"]
            if pd.notna(ref["compile_s"]):
                note = f"numba compile {ref['compile_s']:.1f} s (warm-up, not in total); " + note

            def col(row, c, spec=".3g"):
                return "" if row is None else _fmt(row[c], spec)

            out.append(
                f"| {s} | {col(a, 'recall', '.4f')} | {_fmt(ref['build_s'])} | {col(a, 'search_s')} | "
                f"{col(a, 'total_s')} | {col(a, 'cpu_s')} | "
                f"{ratio(a, '15')} | {_fmt(b['recall'], '.4f') if b is not None else ''} | "
                f"{_fmt(b['total_s']) if b is not None else ''} | {ratio(b, '5')} | "
                f"{_fmt(max(x['peak_rss_gb'] for x in (a, b) if x is not None))} | {ref['load']} | "
                f"{int(ref['runs'])} | {note} |"
            )
            if a is not None and pd.notna(a["recall"]) and a["recall"] >= 0.95 and s != "flat":
                if n not in best or a["total_s"] < best[n][1]["total_s"]:
                    best[n] = (s, a, cur["15"])
        out.append("")
    if not simd.empty:
        out += [
            "## Which SIMD level faiss uses",
            "",
            "faiss-cpu 1.15.1's Python loader tries the modules `swigfaiss_avx512_spr`, `swigfaiss_avx512` and "
            "`swigfaiss_avx2` in turn; the wheel ships none of them, so it logs (at INFO) that each could not "
            "be loaded and then loads the one `swigfaiss` module. That module's libfaiss.so is a "
            "dynamic-dispatch build (`faiss.get_compile_options()`: `OPTIMIZE DD AVX2 AVX512 AVX512_SPR "
            "AVX512_VPOPCNT`): it picks the SIMD level of its distance kernels at load time from the CPU, or "
            "from the environment variable `FAISS_SIMD_LEVEL` (names accepted, from the library's strings and "
            "`faiss.SIMDLevel_*`: NONE, AVX2, AVX512, AVX512_SPR; ARM_NEON and ARM_SVE are not compiled into "
            "this x86 build; anything else, including an empty value, aborts the process with `Invalid SIMD "
            "level string`). `faiss.SIMDConfig.get_level_name()` reports the level in use. Each row below is "
            "a fresh process with the variable set as shown (`unset` = faiss' own choice); the processes ran "
            "in turn, level by level, and the whole sequence twice (runs 1 and 2). Cells: seconds of run 1 / "
            "run 2; `probe` rows are single-threaded and the minimum of 5 calls in the process (less exposed to "
            "the other jobs than the 2-thread rows).",
            "",
        ]
        levels = list(dict.fromkeys(simd["simd_env"]))
        out += ["| cells | measurement | " + " | ".join(levels) + " |", "|---|---|" + "---|" * len(levels)]
        used = {lv: ", ".join(str(x) for x in simd[simd["simd_env"] == lv]["simd"].dropna().unique()) for lv in levels}
        out.append("| | level in use (`SIMDConfig.get_level_name()`) | " + " | ".join(used[lv] for lv in levels) + " |")
        for (n, s, k), g in simd.groupby(["n_cells", "setting", "k"], sort=False):
            col = "search_s"
            what = s if s.startswith("probe") else f"{s}, k={k}, 2 threads: search s (build s)"
            cells = []
            for lv in levels:
                h = g[g["simd_env"] == lv].sort_values("run")
                if s.startswith("probe"):
                    cells.append(" / ".join(f"{v:.3g}" for v in h[col]))
                else:
                    cells.append(" / ".join(f"{v:.3g} ({b:.2g})" for v, b in zip(h[col], h["build_s"])))
            out.append(f"| {n:,} | {what} | " + " | ".join(cells) + " |")
        out.append(f"\nload during these rows: {simd['load_before'].min():.1f}-{simd['load_after'].max():.1f}.")
        out.append("")
    if best:
        out += [
            "## Fastest setting with recall@15 >= 0.95 at each size",
            "",
            "| cells | setting | recall@15 | total s | IVF natural order: total s (recall@15) | speedup | "
            "IVF list order: total s (recall@15) | speedup |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for n, (s, a, c) in sorted(best.items()):
            cells = []
            for ref in (CURRENT, CURRENT + " order=list"):
                r = m[(m["n_cells"] == n) & (m["setting"] == ref) & (m["k"] == "15")]
                if len(r) and pd.notna(r["total_s"].iloc[0]):
                    t0, r0 = float(r["total_s"].iloc[0]), float(r["recall"].iloc[0])
                    cells += [f"{t0:.3g} ({r0:.4f})", f"{t0 / a['total_s']:.2f}"]
                else:
                    cells += ["", ""]
            out.append(f"| {n:,} | {s} | {a['recall']:.4f} | {a['total_s']:.3g} | " + " | ".join(cells) + " |")
        out.append("")
    findings = FINDINGS_BY_STEM.get(md.stem, "")
    out += [findings.strip(), ""] if findings else []
    md.write_text("\n".join(out))


if __name__ == "__main__":
    main()
