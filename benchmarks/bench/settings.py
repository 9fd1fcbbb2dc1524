"""Paths, group names, sizes and the other constants of the benchmark run.

Only the standard library is imported here: a worker process imports this
module too, and its import baseline must stay the same for every case.
"""

from __future__ import annotations

import os
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent  # benchmarks/
ROOT = BENCH_DIR.parent
SCRIPT = BENCH_DIR / "run_benchmarks.py"  # the CLI; also the worker's entry point (--worker)
DATA = Path(os.environ.get("GLFS_SHARED_DATA", ROOT.parent / "shared" / "data"))
CACHE = Path(os.environ.get("GLFS_BENCH_CACHE", "/tmp/glfs_bench_cache"))
RESULTS = BENCH_DIR / "results"

# Groups in the order they run and appear in run_benchmarks.tsv.
GROUPS = ["datasets", "ls_scaling", "ls_agreement", "lapaofs", "glfs_slope", "methods", "nn_scaling"]

# ---- units
BYTES_PER_FLOAT = 8  # float64
MB = 2**20
GB = 2**30
KB_PER_MB = 1024  # /proc/self/status reports kB
MB_PER_GB = 1024

# ---- shared by every case
N_NEIGHBORS = 5  # kNN of the similarity graph
N_SELECT = 100  # genes selected in the 'methods' and 'nn_scaling' groups
N_PCS = 50  # principal components of the "graph(50 PCs)" rows

# ---- inputs (samples x genes); see bench.datasets
REAL_DATASETS = ["gbm_clanc840", "gbm_stategra", "golub"]
SYNTH_WIDE = "synth_200x12000"
SYNTH_BIG = "synth_20000x2000"
SYNTH_QUICK = "synth_2000x2000"  # --quick stand-in for SYNTH_BIG
BIG_N, BIG_D = 20000, 2000  # shape of SYNTH_BIG: the size of the goals

# ---- CLI defaults
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_METHOD_TIMEOUT_S = 150.0
DEFAULT_MAX_MEM_GB = 8.0
DEFAULT_AS_LIMIT_GB = 14.0
DEFAULT_THREADS = 1
IDLE_TIMEOUT_S = 120.0  # the idle worker (imports only)

# ---- worker protocol and repeats
RESULT_MARK = "@@RESULT@@"  # the worker's JSON result follows this mark on stdout
NOTE_CHARS = 300  # error notes are cut to this length
MAX_REPEATS = 7  # short calls are repeated in the same process, the minimum is reported
MIN_REPEATS = 3  # ... at least this often when the first call is shorter than SHORT_CALL_S
SHORT_CALL_S = 2.0
REPEAT_BUDGET_S = 1.0  # ... and repeated while the total is under this
SIGKILL = 9  # a worker killed by this signal ran out of memory (the kernel's OOM killer)

# ---- ls_scaling: (impl, worker kind, dense n x n float64 matrices it builds)
LS_IMPLS = [
    ("glfs graph+ls", "graph+ls", 0),
    ("glfs graph+ls 2 threads", "graph+ls", 0),
    ("glfs graph(50 PCs)+ls 2 threads", "graph_pcs+ls", 0),
    ("glfs ls", "ls", 0),
    ("naive_dense ls", "naive_ls", 3),  # dense W, D, L
    ("skfeature ls", "skfeature_ls", 2),  # W.todense(), D.todense()
    ("skfeature graph+ls", "skfeature_graph+ls", 3),  # distances, sorted copy, argsort
]
TWO_THREADS_SUFFIX = "2 threads"  # impls named so run with TWO_THREADS BLAS threads
TWO_THREADS = 2
LS_SIZES = [2000, 5000, 10000, BIG_N]
LS_SIZES_QUICK = [500, 1000, 2000]
LS_INPUT_COPIES = 2  # n x d float64 arrays held besides the dense matrices
AGREEMENT_N = 2000  # rows of the synthetic matrix in the agreement check
TOP_OVERLAP = 100  # top-k overlap of two gene orders

# ---- lapaofs
LAPAOFS_D = 200
LAPAOFS_SELECT = 10
LAPAOFS_N_NEIGHBORS = 4
LAPAOFS_LAMBDA = 0.01  # lambda1 = lambda2 of the naive reference (glfs.lapaofs' defaults)
LAPAOFS_SIZES = [50, 100, 200, 400]
LAPAOFS_SIZES_QUICK = [50, 100]

# ---- glfs_slope
SLOPE_N = 200
SLOPE_OBJECTIVES = ("exact", "paper")
SLOPE_DS = [1000, 2000, 4000, 8000]
SLOPE_DS_QUICK = [1000, 2000, 4000]
BETA_SEED = 0

# ---- methods and nn_scaling
SELECT_INPUT_COPIES = 3  # n x d float64 arrays held besides the dense matrices
NN_METHODS = ("glfs", "ufi", "lkr_score_supervised")
NN_SIZES = (500, 1000, 2000, 4000, 8000, 16000)
NN_D = 2000

# Dense n x n float64 matrices each method keeps at once (for the memory guard),
# read from the methods' docstrings: GLFS forms M, A, R, K, S, G (src/glfs/gradient.py);
# UFI keeps the instance-space inverse P plus work copies (src/glfs/ufi.py); the
# supervised LKR graph is dense within classes (about n^2 / n_classes entries);
# LapAOFS/LapDOFS work in feature space (no n x n); Q-alpha and SPCA are O(n d)
# (src/glfs/baselines.py).  Methods not listed are taken as O(n d).
NN_DENSE = {
    "glfs": 8,
    "glfs_paper": 8,
    "glfs_exact": 8,
    "glfs_printed": 8,
    "ufi": 4,
    "lkr_score_supervised": 1,
}

# ---- goals of issue 2 (reported in run_benchmarks.md, never asserted)
GOAL_TIME_S = 10.0  # graph + Laplacian score on BIG_N x BIG_D
GOAL_MEM_MB = 2048.0
GOAL_SPEEDUP = 10  # against scikit-feature
