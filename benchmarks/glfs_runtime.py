"""Wall time of the published GLFS variants, against the previous implementation in the same run.

Target (issue 8 item 5): ``glfs.select(X, method=m, graph=W, n_features=100)`` on
100 samples x 10,000 genes in at most 20 s on 2 cores, for every GLFS variant:
the recommended ``glfs`` (the fixed-size design, ``glfs.designs._budgeted``; it has no
previous implementation to compare with) and the published readings
glfs_exact, glfs_paper, glfs_printed.  Two kinds of data of that shape:

- ``lognormal``: X = exp(N(2, 0.5)), independent genes (no structure; uncentred
  expression-like levels);
- ``planted``: ``glfs.simulation._simulate.make_planted(100, 9996, sigma=0.2)`` (4 planted
  cluster genes; the recovery score of the ranking is reported).

Each call runs in its own process (``--one``), the current code (with the BLAS
threads of the environment, and with one BLAS thread) and the code of commit
``OLD_COMMIT`` (the implementation before the KKT/active-set rewrite, loaded
from ``git show``, one BLAS thread) on the same data and graph, each with a time
limit (``--timeout``, default 900 s; a call that hits it is reported as ">limit").
The machine load (1-minute load average) is recorded before every call.  Then the
current code alone on the shapes of the vendored data sets (173 x 1,740 and
72 x 7,129, log-normal), ``glfs_path`` with the defaults.

Run:  python benchmarks/glfs_runtime.py > benchmarks/results/glfs_runtime.txt
      (about 30 min, most of it the previous implementation; ``--current-only``
      skips the previous code: a few minutes)
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

OLD_COMMIT = "3173cc0"  # src/glfs/gradient.py before the rewrite (L-BFGS-B, max_iter=100, no KKT check)
VARIANTS = ("glfs_exact", "glfs_paper", "glfs_printed")  # the published readings (glfs_path)
SELECT_VARIANTS = ("glfs", *VARIANTS)  # every GLFS variant through glfs.select
ROOT = Path(__file__).resolve().parents[1]


def _data(kind, n, d):
    import glfs
    from glfs.simulation._simulate import make_planted

    if kind == "lognormal":
        X = np.exp(np.random.default_rng(0).normal(2.0, 0.5, size=(n, d)))
        informative = None
    else:
        X, informative, _ = make_planted(n, d - 4, 0.2, random_state=0)
    return X, glfs.similarity_graph(X, n_neighbors=5), informative


def _old_module():
    src = subprocess.run(
        ["git", "show", f"{OLD_COMMIT}:src/glfs/gradient.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "gradient_old.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("glfs._gradient_old", path)  # package glfs: relative imports work
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look the module up
    spec.loader.exec_module(mod)
    return mod


def run_one(impl, method, kind, n, d, call):
    """One timed call in this process; prints a JSON record."""
    import glfs
    from glfs.simulation._simulate import recovery_score

    X, W, informative = _data(kind, n, d)
    warnings.simplefilter("ignore")
    t = time.perf_counter()
    c = time.process_time()
    if call == "select":
        if impl == "current":
            sel = glfs.select(X, method=method, graph=W, n_features=100)
        else:
            sel = getattr(_old_module(), f"select_{method}")(X, W, n_features=100)
        dt = time.perf_counter() - t
        cpu = time.process_time() - c
        if method == "glfs":  # the design: one converged solve, no lam path
            conv, counts = [bool(sel.params["converged"])], [int(sel.selected.sum())]
        elif impl == "current":
            path = sel.extra["path"]
            conv = [r["converged"] for r in path]
            counts = [r["n_selected"] for r in path]
        else:  # the previous Selection did not record convergence
            conv = None
            counts = [p[1] for p in sel.extra["path"]]
        rec = {
            "seconds": dt,
            "cpu": cpu,
            "converged": None if conv is None else f"{sum(conv)}/{len(conv)}",
            "support": counts,
            "recovery": None if informative is None else recovery_score(sel.ranking, informative),
        }
    else:
        res = glfs.glfs_path(X, W, objective=method.removeprefix("glfs_"))
        dt = time.perf_counter() - t
        rec = {
            "seconds": dt,
            "cpu": time.process_time() - c,
            "converged": f"{sum(res.converged)}/{len(res.converged)}",
            "support": [p[1] for p in res.path],
            "recovery": None,
        }
    print(json.dumps(rec))


def _load():
    return os.getloadavg()[0]


def _spawn(args, timeout, threads=None):
    cmd = [sys.executable, __file__, "--one", *map(str, args)]
    env = dict(os.environ)
    if threads is not None:
        env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True, env=env).stdout
        return json.loads(out.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return None


def _secs(rec, timeout):
    """Wall seconds (CPU seconds of the process in brackets)."""
    return f"{rec['seconds']:.1f} ({rec['cpu']:.1f})" if rec else f">{timeout:.0f}"


def main(timeout, current_only=False):
    print(
        f"# glfs_runtime: {time.strftime('%Y-%m-%d %H:%M')}; cores {os.cpu_count()}; "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; previous code = {OLD_COMMIT}; "
        f"time limit {timeout:.0f} s per call"
    )
    print("# load = 1-minute load average just before the call (2 cores: > 2 means other jobs were running)")
    print("# times: wall seconds (CPU seconds of the process); with load L > 2 on 2 cores a process gets about")
    print("# 2/L of a core, so wall time grows with the load while CPU time does not")
    print("# current_s: BLAS threads as the environment sets them (the solver itself uses one BLAS thread below")
    print("# 1,000 samples); current_1t_s / previous_1t_s: OPENBLAS_NUM_THREADS=1 for the whole process")
    print("\n## glfs.select(X, method, graph=W, n_features=100) on 100 x 10,000")
    print(
        "data\tmethod\tcurrent_s\tcurrent_1t_s\tprevious_1t_s\tspeedup_1t_cpu(wall)\tconverged\tsupport_along_path\t"
        "recovery\tload_current\tload_current_1t\tload_previous"
    )
    for kind in ("lognormal", "planted"):
        for method in SELECT_VARIANTS:
            args = ["current", method, kind, 100, 10000, "select"]
            l_new = _load()
            new = _spawn(args, timeout)
            l_new1 = _load()
            new1 = _spawn(args, timeout, threads=1)
            l_old = _load()
            skip_old = current_only or method not in VARIANTS
            old = None if skip_old else _spawn(["previous", *args[1:]], timeout, threads=1)
            if new1 and old:
                ratio = f"{old['cpu'] / new1['cpu']:.1f} ({old['seconds'] / new1['seconds']:.1f})"
            elif new1 and not skip_old:
                ratio = f">{timeout / new1['seconds']:.1f}"
            else:
                ratio = "-"
            ref = new1 or new or {}
            rec, old_rec = ref.get("recovery"), (old or {}).get("recovery")
            rec_s = "-" if rec is None else f"{rec:.3f} (previous {'-' if old_rec is None else f'{old_rec:.3f}'})"
            old_s = "not run" if skip_old else _secs(old, timeout)
            print(
                f"{kind}\t{method}\t{_secs(new, timeout)}\t{_secs(new1, timeout)}\t{old_s}\t{ratio}\t"
                f"{ref.get('converged')}\t{ref.get('support')}\t{rec_s}\t{l_new:.1f}\t{l_new1:.1f}\t{l_old:.1f}",
                flush=True,
            )
    print("\n## current code, glfs_path with the defaults, log-normal data of the vendored data sets' shapes")
    print("shape\tobjective\tseconds\tseconds_1t\tconverged\tsupport_along_path\tload")
    for n, d in ((173, 1740), (72, 7129)):
        for method in VARIANTS:
            l_new = _load()
            args = ["current", method, "lognormal", n, d, "path"]
            new = _spawn(args, timeout)
            new1 = _spawn(args, timeout, threads=1)
            ref = new1 or new or {}
            print(
                f"{n}x{d}\t{method}\t{_secs(new, timeout)}\t{_secs(new1, timeout)}\t{ref.get('converged')}\t"
                f"{ref.get('support')}\t{l_new:.1f}",
                flush=True,
            )
    print(f"\n# finished {time.strftime('%Y-%m-%d %H:%M')}; load {_load():.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", nargs=6, metavar=("IMPL", "METHOD", "KIND", "N", "D", "CALL"))
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--current-only", action="store_true", help="skip the previous implementation")
    a = ap.parse_args()
    if a.one:
        impl, method, kind, n, d, call = a.one
        run_one(impl, method, kind, int(n), int(d), call)
    else:
        main(a.timeout, a.current_only)
