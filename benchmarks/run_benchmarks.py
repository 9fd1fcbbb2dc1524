#!/usr/bin/env python
"""Wall time and peak memory of the glfs library, with comparisons against peers.

Run on demand (not part of the test suite)::

    python benchmarks/run_benchmarks.py                 # full run (about 15-20 min on 2 cores)
    python benchmarks/run_benchmarks.py --quick         # small sizes only (about 2 min)
    python benchmarks/run_benchmarks.py --only ls_scaling methods

Groups (``--only``):

- ``datasets``: graph, Laplacian score and graph + Laplacian score on the
  real GBM (ClaNC840 173 x 840, STATegRa 169 x 1740) and Golub (72 x 7129)
  matrices and on synthetic 200 x 12,000 and 20,000 x 2,000 matrices.
- ``ls_scaling``: graph + Laplacian score against the naive dense formula
  and against scikit-feature (``skfeature-chappers``) on 2,000 .. 20,000
  samples x 2,000 genes, with a memory guard, and extrapolation.
- ``ls_agreement``: do our scores agree with the naive dense formula, and
  how do scikit-feature's differ (not timed).
- ``lapaofs``: ``glfs.lapaofs`` greedy against naive re-inversion.
- ``glfs_slope``: ``glfs.glfs_objective`` (value + gradient) at fixed n and
  d = 1000 .. 8000; slope of log time on log d.
- ``methods``: every name in ``glfs.METHODS`` through ``glfs.select`` on
  every data set, with memory prediction, time limit and "not available"
  for methods that are not importable.
- ``nn_scaling``: the methods with O(n^2) memory (GLFS, UFI, supervised
  LKR) on growing n, to see where they stop fitting.

Every timed case runs in a fresh Python process (this file with
``--worker``) that imports the same modules (numpy, scipy, scikit-learn,
glfs, skfeature), loads its input from a ``.npy`` cache and builds what the
case needs but does not time (e.g. the graph for a "Laplacian score only"
case).  Then it resets the kernel's peak-RSS counter (``/proc/self/clear_refs``
with ``5``), runs the timed call and reads ``VmHWM`` from
``/proc/self/status``.  ``peak_rss_mb`` is the whole process's peak during the
call (imports + input + everything the call allocates); ``peak_delta_mb`` is
that peak minus the resident size just before the call, i.e. the extra
memory the call needed.  An idle worker (same imports, no data) gives the
import baseline, reported in the summary.

Outputs in ``benchmarks/results/``: ``benchmarks.tsv`` (one row per case),
``summary.md`` (machine, headline figures, ratios, agreement checks,
extrapolations) and ``agreement.tsv``.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = Path(os.environ.get("GLFS_SHARED_DATA", ROOT.parent / "shared" / "data"))
CACHE = Path(os.environ.get("GLFS_BENCH_CACHE", "/tmp/glfs_bench_cache"))
RESULTS = HERE / "results"

N_NEIGHBORS = 5
N_SELECT = 100

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


# --------------------------------------------------------------------------- memory
def _status_kb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def _reset_peak():
    """Reset VmHWM to the current RSS (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


# --------------------------------------------------------------------------- naive references
def naive_dense_laplacian_score(X, W):
    """He et al. 2005, Eq. 1 as printed: dense W, D, L and a loop over features.

    L_r = f~' L f~ / f~' D f~,  f~ = f - (f' D 1 / 1' D 1) 1.  O(n^2) memory
    (three dense n x n matrices), O(n^2 d) time.
    """
    import numpy as np

    Wd = W.toarray() if hasattr(W, "toarray") else np.asarray(W)
    D = np.diag(Wd.sum(axis=1))
    L = D - Wd
    ones = np.ones(Wd.shape[0])
    D1 = D @ ones
    one_D_one = ones @ D1
    out = np.empty(X.shape[1])
    for r in range(X.shape[1]):
        f = X[:, r]
        ft = f - (f @ D1) / one_D_one * ones
        den = ft @ (D @ ft)
        out[r] = (ft @ (L @ ft)) / den if den > 0 else np.nan
    return out


def naive_lapaofs(X, W, n_features, lambda1=0.01, lambda2=0.01):
    """LapAOFS (He et al. 2011, Eq. 17) by brute force: for every candidate g,
    invert A_k + g g' directly and evaluate Tr((A_k + g g')^{-1} M).
    O(k d n^3) time, M = lambda2 (I + lambda1 L)^{-1}, A_0 = M."""
    import numpy as np

    n, d = X.shape
    Wd = W.toarray()
    L = np.diag(Wd.sum(axis=1)) - Wd
    M = lambda2 * np.linalg.inv(np.eye(n) + lambda1 * L)
    A = M.copy()
    chosen = []
    avail = np.ones(d, dtype=bool)
    avail[np.ptp(X, axis=0) == 0] = False
    for _ in range(n_features):
        best, best_val = -1, np.inf
        for j in np.flatnonzero(avail):
            g = X[:, j]
            inv = np.linalg.inv(A + np.outer(g, g))
            val = np.sum(inv * M.T)  # Tr(inv @ M)
            if val < best_val:
                best, best_val = j, val
        chosen.append(best)
        avail[best] = False
        g = X[:, best]
        A = A + np.outer(g, g)
    return np.array(chosen)


def _heat_t(X, k=N_NEIGHBORS):
    """glfs' default heat-kernel width: mean squared distance over the kNN edges."""
    import numpy as np
    from sklearn.neighbors import NearestNeighbors

    dist, ind = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    self_ = ind == np.arange(X.shape[0])[:, None]
    d2 = np.where(self_, np.nan, dist**2)
    # keep exactly k non-self neighbours per row
    d2 = np.sort(d2, axis=1)[:, :k]
    return float(np.nanmean(d2))


def skfeature_graph(X, t_glfs):
    """skfeature's construct_W with the heat kernel matched to glfs' width.

    skfeature weights kNN edges with exp(-||xi-xj||^2 / (2 t^2)); glfs with
    exp(-||xi-xj||^2 / t).  Same weights when t_sk = sqrt(t_glfs / 2).
    skfeature also keeps each sample as its own neighbour (k + 1 columns
    including self), so its W = W_glfs + I.
    """
    from skfeature.utility.construct_W import construct_W

    return construct_W(
        X, metric="euclidean", neighbor_mode="knn", weight_mode="heat_kernel", k=N_NEIGHBORS, t=math.sqrt(t_glfs / 2)
    )


# --------------------------------------------------------------------------- worker
def _worker(spec):
    import warnings

    import numpy as np
    import scipy  # noqa: F401
    import scipy.sparse as sp
    import sklearn  # noqa: F401
    import skfeature.function.similarity_based.lap_score  # noqa: F401
    import skfeature.utility.construct_W  # noqa: F401

    import glfs

    warnings.simplefilter("ignore")
    kind = spec["kind"]
    if kind == "idle":
        return {"status": "ok", "rss_mb": _status_kb("VmRSS") / 1024, "hwm_mb": _status_kb("VmHWM") / 1024}
    X, labels = _load_input(spec)
    n, d = X.shape
    ctx = {}
    run = None
    extra = {}

    def graph(Z=None):
        return glfs.similarity_graph(X if Z is None else Z, n_neighbors=spec.get("k", N_NEIGHBORS), kernel="heat")

    if kind == "graph":
        run = graph
    elif kind == "ls":
        ctx["W"] = graph()
        run = lambda: glfs.laplacian_score(X, ctx["W"])  # noqa: E731
    elif kind == "graph+ls":
        run = lambda: glfs.laplacian_score(X, graph())  # noqa: E731
    elif kind == "graph_pcs+ls":  # neighbours on 50 principal components (similarity_graph n_pcs)
        run = lambda: glfs.laplacian_score(  # noqa: E731
            X, glfs.similarity_graph(X, n_neighbors=spec.get("k", N_NEIGHBORS), kernel="heat", n_pcs=50)
        )
    elif kind == "naive_ls":
        ctx["W"] = graph()
        run = lambda: naive_dense_laplacian_score(X, ctx["W"])  # noqa: E731
    elif kind == "skfeature_ls":
        from skfeature.function.similarity_based.lap_score import lap_score

        ctx["W"] = graph().tocsc()
        run = lambda: lap_score(X, W=ctx["W"], mode="index")  # noqa: E731
    elif kind == "skfeature_graph+ls":
        from skfeature.function.similarity_based.lap_score import lap_score

        ctx["t"] = _heat_t(X)
        run = lambda: lap_score(X, W=skfeature_graph(X, ctx["t"]), mode="index")  # noqa: E731
    elif kind == "lapaofs":
        ctx["W"] = graph()
        run = lambda: glfs.lapaofs(X, ctx["W"], n_features=spec["n_select"])  # noqa: E731
    elif kind == "naive_lapaofs":
        ctx["W"] = graph()
        run = lambda: naive_lapaofs(X, ctx["W"], spec["n_select"])  # noqa: E731
    elif kind == "glfs_objective":
        ctx["W"] = graph()
        rng = np.random.default_rng(0)
        ctx["beta"] = rng.uniform(0.0, 1.0, d) / d
        obj = spec["objective"]
        run = lambda: glfs.glfs_objective(ctx["beta"], X, ctx["W"], objective=obj)  # noqa: E731
    elif kind == "select":
        method = spec["method"]
        info = glfs.METHODS[method]
        ctx["W"] = graph() if info.needs_graph else None
        lab = labels if info.needs_labels else None
        run = lambda: glfs.select(
            X, method=method, graph=ctx["W"], n_features=spec["n_select"], labels=lab
        )  # noqa: E731
    else:
        msg = f"unknown kind {kind!r}"
        raise ValueError(msg)

    gc.collect()
    ok_reset = _reset_peak()
    rss0 = _status_kb("VmRSS")
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = run()
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    hwm = _status_kb("VmHWM")
    times = [dt]
    # short calls: repeat in the same process and keep the minimum (other work on
    # the machine only ever slows a run down)
    while len(times) < 7 and (sum(times) < 1.0 or (len(times) < 3 and times[0] < 2.0)):
        del out
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    if kind == "select":
        extra["n_selected"] = int(np.sum(out.selected))
    if kind == "lapaofs" or kind == "naive_lapaofs":
        sel = out.ranking if hasattr(out, "ranking") else np.asarray(out)
        extra["order"] = [int(i) for i in np.asarray(sel)[: spec["n_select"]]]
    if kind == "glfs_objective":
        extra["value"] = float(out[0])
    del sp
    return {
        "status": "ok",
        "time_s": min(times),
        "time_first_s": times[0],
        "cpu_first_s": cpu,
        "repeats": len(times),
        "peak_rss_mb": hwm / 1024 if ok_reset else float("nan"),
        "peak_delta_mb": (hwm - rss0) / 1024 if ok_reset else float("nan"),
        "rss_before_mb": rss0 / 1024,
        "extra": extra,
    }


def _load_input(spec):
    import numpy as np

    X = np.load(CACHE / f"{spec['dataset']}.npy", mmap_mode="r")
    labels = np.load(CACHE / f"{spec['dataset']}.labels.npy", allow_pickle=False)
    n = spec.get("n_samples") or X.shape[0]
    d = spec.get("n_features") or X.shape[1]
    X = np.ascontiguousarray(X[:n, :d], dtype=np.float64)
    return X, labels[:n]


def _agreement_worker(spec):
    """Scores of glfs, the naive dense formula and skfeature on the same X (not timed)."""
    import warnings

    import numpy as np
    import scipy.sparse as sp
    from scipy.stats import spearmanr
    from skfeature.function.similarity_based.lap_score import lap_score

    import glfs

    warnings.simplefilter("ignore")
    X, _ = _load_input(spec)
    n, d = X.shape
    W = glfs.similarity_graph(X, n_neighbors=N_NEIGHBORS, kernel="heat")
    s = glfs.laplacian_score(X, W)
    s_naive = naive_dense_laplacian_score(X, W)
    ok = np.isfinite(s) & np.isfinite(s_naive)
    order = np.argsort(s, kind="stable")
    rank = np.empty(d, int)
    rank[order] = np.arange(d)

    def rank_of(idx):
        r = np.empty(d, int)
        r[np.asarray(idx).ravel()] = np.arange(d)
        return r

    # skfeature on OUR graph: it returns only an order (mode="index")
    sk_same = np.asarray(lap_score(X.copy(), W=W.tocsc(), mode="index")).ravel()
    # skfeature's default output (mode="rank"): per its docstring a per-feature rank (higher = better)
    sk_rank_mode = np.asarray(lap_score(X.copy(), W=W.tocsc())).ravel()
    proper = np.empty(d, int)
    proper[sk_same] = d - 1 - np.arange(d)  # what a correct "higher = better" rank vector would be
    garbled = d - 1 - sk_same  # out[i] = d-1 - (index of i-th best feature)
    # skfeature's own graph with matched heat width
    t = _heat_t(X)
    Wsk = skfeature_graph(X.copy(), t)
    diffW = abs(sp.csr_matrix(Wsk) - (W + sp.identity(n, format="csr"))).max()
    sk_own = np.asarray(lap_score(X.copy(), W=Wsk, mode="index")).ravel()
    s_naive_selfloop = naive_dense_laplacian_score(X, W + sp.identity(n, format="csr"))
    order_selfloop = np.argsort(s_naive_selfloop, kind="stable")
    return {
        "status": "ok",
        "n_samples": n,
        "n_features": d,
        "max_abs_diff_glfs_vs_naive": float(np.max(np.abs(s[ok] - s_naive[ok]))),
        "max_rel_diff_glfs_vs_naive": float(np.max(np.abs(s[ok] - s_naive[ok]) / np.abs(s_naive[ok]))),
        "nan_glfs": int(np.sum(~np.isfinite(s))),
        "nan_naive": int(np.sum(~np.isfinite(s_naive))),
        "sk_same_graph_order_equal_frac": float(np.mean(sk_same == order)),
        "sk_same_graph_spearman": float(spearmanr(rank_of(sk_same), rank).statistic),
        "sk_same_graph_top100_overlap": len(set(sk_same[:100]) & set(order[:100])) / min(100, d),
        "sk_rank_mode_equals_proper_ranks_frac": float(np.mean(sk_rank_mode == proper)),
        "sk_rank_mode_equals_garbled_frac": float(np.mean(sk_rank_mode == garbled)),
        "sk_own_graph_max_abs_diff_W_vs_Wglfs_plus_I": float(diffW),
        "sk_own_graph_order_equal_frac_vs_naive_W_plus_I": float(np.mean(sk_own == order_selfloop)),
        "sk_own_graph_spearman_vs_glfs": float(spearmanr(rank_of(sk_own), rank).statistic),
        "sk_own_graph_top100_overlap_vs_glfs": len(set(sk_own[:100]) & set(order[:100])) / min(100, d),
        "max_abs_diff_glfs_vs_naive_selfloop": float(np.nanmax(np.abs(s - s_naive_selfloop))),
        "heat_t_glfs": t,
        "heat_t_skfeature": math.sqrt(t / 2),
    }


def worker_main(arg):
    spec = json.loads(arg)
    # memory guard: cap the address space (safety net behind the prediction)
    try:
        import resource

        cap = int(spec.get("as_limit_gb", 0) * 2**30)
        if cap > 0:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ValueError, OSError):
        pass
    try:
        res = _agreement_worker(spec) if spec["kind"] == "agreement" else _worker(spec)
    except MemoryError:
        res = {"status": "oom", "note": "MemoryError under the address-space cap"}
    except (ImportError, AttributeError) as exc:
        res = {"status": "not_available", "note": f"{type(exc).__name__}: {exc}"[:300]}
    except Exception as exc:  # record, never crash the run
        res = {"status": "error", "note": f"{type(exc).__name__}: {exc}"[:300]}
    sys.stdout.write("\n@@RESULT@@" + json.dumps(res) + "\n")


# --------------------------------------------------------------------------- driver
THREADS = 1  # set from --threads; a spec may override with "threads"


def run_case(spec, *, timeout, as_limit_gb):
    spec = {**spec, "as_limit_gb": as_limit_gb}
    load = os.getloadavg()[0]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    threads = spec.get("threads", THREADS)
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {
            "status": "timeout",
            "note": f"> {timeout:.0f} s (killed)",
            "wall_s": time.perf_counter() - t0,
            "load1": load,
        }
    out = p.stdout.rsplit("@@RESULT@@", 1)
    if len(out) == 2:
        res = json.loads(out[1])
    elif p.returncode < 0:
        res = {"status": "oom" if p.returncode == -9 else "error", "note": f"worker killed by signal {-p.returncode}"}
    else:
        res = {"status": "error", "note": (p.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    res["wall_s"] = time.perf_counter() - t0
    res["load1"] = load
    return res


def prepare_datasets(names):
    """Write each input matrix (samples x genes) and its labels to the .npy cache."""
    import numpy as np
    import pandas as pd

    def _save(p, a):  # atomic, so a concurrent run never reads half a file
        tmp = p.with_name(p.name + f".{os.getpid()}.tmp.npy")
        np.save(tmp, a)
        os.replace(tmp, p)

    CACHE.mkdir(parents=True, exist_ok=True)
    info = {}
    for name in names:
        path = CACHE / f"{name}.npy"
        lab_path = CACHE / f"{name}.labels.npy"
        source = None
        if name == "gbm_clanc840":
            f = DATA / "tcga_gbm" / "TCGA_unified_CORE_ClaNC840.txt"
            source = f"real: {f.name}"
            if not path.exists():
                df = pd.read_csv(f, sep="\t", index_col=0)
                labels = df.iloc[0, 1:].astype(str).to_numpy()
                X = df.iloc[1:, 1:].astype(float).to_numpy().T
                _save(path, X)
                _save(lab_path, labels.astype("U32"))
        elif name == "gbm_stategra":
            f = DATA / "tcga_gbm" / "STATegRa_S1.rda"
            source = f"real: {f.name} (Block1)"
            if not path.exists():
                import rdata

                r = rdata.read_rda(str(f))
                X = np.asarray(r["Block1"].values, dtype=float).T
                labels = r["ed"]["classname"].astype(str).to_numpy()
                _save(path, X)
                _save(lab_path, labels.astype("U32"))
        elif name == "golub":
            source = "real: golub train + independent CSV (raw intensities)"
            if not path.exists():
                parts = []
                for fn in ("data_set_ALL_AML_train.csv", "data_set_ALL_AML_independent.csv"):
                    df = pd.read_csv(DATA / "golub" / fn)
                    cols = [c for c in df.columns if c.strip().isdigit()]
                    parts.append(df[cols])
                allv = pd.concat(parts, axis=1)
                allv.columns = [int(c) for c in allv.columns]
                allv = allv[sorted(allv.columns)]
                act = pd.read_csv(DATA / "golub" / "actual.csv").set_index("patient")["cancer"]
                X = allv.to_numpy(dtype=float).T
                labels = act.loc[allv.columns].astype(str).to_numpy()
                _save(path, X)
                _save(lab_path, labels.astype("U32"))
        elif name.startswith("synth_"):
            n, d = (int(v) for v in name[len("synth_") :].split("x"))
            source = "synthetic: N(0,1) genes, 4 sample clusters shifting 40 planted genes by +-1.5 sd, seed 0"
            if not path.exists():
                rng = np.random.default_rng(0)
                X = rng.standard_normal((n, d))
                clusters = np.arange(n) % 4
                rng.shuffle(clusters)
                planted = rng.choice(d, size=min(40, d), replace=False)
                shift = rng.choice([-1.5, 1.5], size=(4, planted.size))
                X[:, planted] += shift[clusters]
                _save(path, X)
                _save(lab_path, clusters.astype(str).astype("U32"))
                del X
        else:
            msg = f"unknown dataset {name!r}"
            raise ValueError(msg)
        X = np.load(path, mmap_mode="r")
        info[name] = {"shape": tuple(int(s) for s in X.shape), "source": source}
    return info


def method_availability():
    import importlib

    import glfs

    avail = {}
    for name, info in glfs.METHODS.items():
        mod, fn = info.target.split(":")
        try:
            getattr(importlib.import_module(mod), fn)
            avail[name] = True
        except Exception as exc:  # noqa: BLE001
            avail[name] = f"{type(exc).__name__}: {exc}"[:200]
    return avail


def machine_info():
    import numpy as np
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    blas = [
        f"{p.get('internal_api')} {p.get('version')} ({p.get('prefix')}, {p.get('architecture', '')}, "
        f"{p.get('num_threads')} threads)"
        for p in threadpool_info()
    ]
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import psutil

        ram = f"{psutil.virtual_memory().total / 2**30:.1f} GiB"
    except ImportError:
        ram = "unknown"
    try:
        skv = __import__("importlib.metadata").metadata.version("skfeature-chappers")
    except Exception:  # noqa: BLE001
        skv = "unknown"
    try:
        git = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        git = "unknown"
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "ram": ram,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "skfeature-chappers": skv,
        "blas": blas,
        "git": git,
        "platform": platform.platform(),
    }


def fit_loglog(xs, ys):
    import numpy as np

    xs, ys = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    if xs.size < 2:
        return float("nan"), float("nan")
    b, a = np.polyfit(xs, ys, 1)
    return float(b), float(a)


class Runner:
    def __init__(self, args):
        self.args = args
        self.rows = []
        self.agreement = []
        self.notes = []

    def add(self, group, case, impl, spec, *, predicted_mb=float("nan"), skip=None, timeout=None):
        base = {
            "group": group,
            "case": case,
            "impl": impl,
            "dataset": spec.get("dataset", ""),
            "n_samples": spec.get("n_samples", ""),
            "n_features": spec.get("n_features", ""),
            "predicted_mb": predicted_mb,
        }
        if skip:
            res = {"status": skip[0], "note": skip[1]}
        else:
            res = run_case(spec, timeout=timeout or self.args.timeout, as_limit_gb=self.args.as_limit_gb)
        row = {**base, **{k: v for k, v in res.items() if k != "extra"}, "extra": res.get("extra", {})}
        self.rows.append(row)
        t = row.get("time_s")
        tt = f"{t:9.3f} s" if isinstance(t, float) else f"{'':11s}"
        pk = row.get("peak_rss_mb")
        pm = f"{pk:8.0f} MB" if isinstance(pk, float) and pk == pk else ""
        print(
            f"[{time.strftime('%H:%M:%S')}] {group:12s} {case:34s} {impl:24s} {row['status']:13s} {tt} {pm} "
            f"{row.get('note', '')}",
            flush=True,
        )
        return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    groups = GROUPS
    ap.add_argument("--quick", action="store_true", help="small sizes only (a couple of minutes)")
    ap.add_argument("--only", nargs="+", choices=groups, default=groups, help="groups to run")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per case (default 300)")
    ap.add_argument("--method-timeout", type=float, default=150.0, help="seconds per case in 'methods' (default 150)")
    ap.add_argument("--max-mem-gb", type=float, default=8.0, help="skip cases predicted to need more (default 8)")
    ap.add_argument("--as-limit-gb", type=float, default=14.0, help="address-space cap per worker (default 14)")
    ap.add_argument(
        "--threads", type=int, default=1, help="BLAS/OpenMP threads per worker (default 1; 0 = library default)"
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help="output directory (default benchmarks/results)")
    ap.add_argument("--summary-only", action="store_true", help="rewrite summary.md from the existing TSVs")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main(args.worker)
        return 0
    if args.summary_only:
        summary_only(args)
        return 0

    global THREADS
    THREADS = args.threads
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    quick = args.quick
    real = ["gbm_clanc840", "gbm_stategra", "golub"]
    synth_big = "synth_20000x2000"
    synth_wide = "synth_200x12000"
    names = real + [synth_wide] + ([] if quick else [synth_big]) + (["synth_2000x2000"] if quick else [])
    print(f"preparing inputs in {CACHE} ...", flush=True)
    dinfo = prepare_datasets(names)
    minfo = machine_info()
    avail = method_availability()
    R = Runner(args)
    max_mb = args.max_mem_gb * 1024
    idle = run_case({"kind": "idle"}, timeout=120, as_limit_gb=0)
    print(f"idle worker (imports only): RSS {idle.get('rss_mb', float('nan')):.0f} MB", flush=True)

    # ---- datasets: graph / LS / graph+LS on every input
    if "datasets" in args.only:
        for ds in names:
            n, d = dinfo[ds]["shape"]
            spec = {"dataset": ds, "n_samples": n, "n_features": d}
            # 20,000 x 2,000: LS and graph + LS are in ls_scaling (n = 20000); only the graph here
            for kind in ("graph",) if ds == synth_big else ("graph", "ls", "graph+ls"):
                R.add("datasets", f"{ds} {n}x{d}", f"glfs {kind}", {**spec, "kind": kind})

    # ---- LS scaling: glfs vs naive dense vs skfeature
    if "ls_scaling" in args.only:
        src = "synth_2000x2000" if quick else synth_big
        sizes = [500, 1000, 2000] if quick else [2000, 5000, 10000, 20000]
        d = 2000
        impls = [
            ("glfs graph+ls", "graph+ls", 0),
            ("glfs graph+ls 2 threads", "graph+ls", 0),
            ("glfs graph(50 PCs)+ls 2 threads", "graph_pcs+ls", 0),
            ("glfs ls", "ls", 0),
            ("naive_dense ls", "naive_ls", 3),  # dense W, D, L
            ("skfeature ls", "skfeature_ls", 2),  # W.todense(), D.todense()
            ("skfeature graph+ls", "skfeature_graph+ls", 3),  # distances, sorted copy, argsort
        ]
        last_time = {}
        for n in sizes:
            for impl, kind, n_dense in impls:
                spec = {"dataset": src, "n_samples": n, "n_features": d, "kind": kind}
                if impl.endswith("2 threads"):
                    spec["threads"] = 2
                pred = (n_dense * n * n * 8 + 2 * n * d * 8) / 2**20 + idle.get("rss_mb", 0)
                skip = None
                if n_dense and pred > max_mb:
                    skip = ("skipped_memory", f"predicted {pred / 1024:.1f} GB > {args.max_mem_gb:g} GB")
                elif impl in last_time:
                    n0, t0 = last_time[impl]
                    # dense O(n^2) per feature (naive), O(n^2 d) products (skfeature): predict ~ n^2
                    guess = t0 * (n / n0) ** 2
                    if math.isinf(guess):
                        skip = ("skipped_time", f"timed out at n={n0}")
                    elif guess > args.timeout:
                        skip = ("skipped_time", f"predicted {guess:.0f} s > {args.timeout:.0f} s from n={n0}")
                row = R.add(
                    "ls_scaling", f"n={n} d={d}", impl, spec, predicted_mb=pred if n_dense else float("nan"), skip=skip
                )
                if row["status"] == "ok":
                    last_time[impl] = (n, row["time_s"])
                elif row["status"] in ("timeout", "oom"):
                    last_time[impl] = (n, float("inf"))

    # ---- agreement (scores, not time)
    if "ls_agreement" in args.only:
        cases = [(ds, None) for ds in real] + [("synth_2000x2000" if quick else synth_big, 2000)]
        for ds, n in cases:
            spec = {"kind": "agreement", "dataset": ds, "n_samples": n, "n_features": 2000 if n else None}
            res = run_case(spec, timeout=args.timeout, as_limit_gb=args.as_limit_gb)
            res["dataset"] = ds
            R.agreement.append(res)
            print(f"agreement {ds}: {res}", flush=True)

    # ---- LapAOFS greedy vs naive re-inversion
    if "lapaofs" in args.only:
        src = synth_wide
        d, k = 200, 10
        last = None
        for n in [50, 100] if quick else [50, 100, 200, 400]:
            spec = {"dataset": src, "n_samples": n, "n_features": d, "n_select": k, "k": 4}
            case = f"n={n} d={d} k={k}"
            if avail.get("lapaofs") is not True:
                R.add("lapaofs", case, "glfs.lapaofs", spec, skip=("not_available", str(avail.get("lapaofs"))))
            else:
                R.add("lapaofs", case, "glfs.lapaofs", {**spec, "kind": "lapaofs"})
            skip = None
            if last is not None and last[1] * (n / last[0]) ** 3 > args.timeout:
                guess = last[1] * (n / last[0]) ** 3
                skip = ("skipped_time", f"predicted {guess:.0f} s > {args.timeout:.0f} s from n={last[0]} (~n^3)")
            row = R.add("lapaofs", case, "naive re-inversion", {**spec, "kind": "naive_lapaofs"}, skip=skip)
            if row["status"] == "ok":
                last = (n, row["time_s"])
            elif row["status"] == "timeout":
                last = (n, float("inf"))

    # ---- GLFS objective + gradient cost in d
    if "glfs_slope" in args.only:
        n = 200
        for obj in ("exact", "paper"):
            for d in [1000, 2000, 4000] if quick else [1000, 2000, 4000, 8000]:
                spec = {
                    "dataset": synth_wide,
                    "n_samples": n,
                    "n_features": d,
                    "kind": "glfs_objective",
                    "objective": obj,
                }
                skip = None
                if avail.get("glfs_exact") is not True:
                    skip = ("not_available", str(avail.get("glfs_exact")))
                R.add("glfs_slope", f"n={n} d={d}", f"glfs_objective {obj}", spec, skip=skip)

    # ---- every method through glfs.select
    if "methods" in args.only:
        import glfs

        for ds in [x for x in names if x != "synth_2000x2000"]:  # quick mode: real inputs + 200 x 12000
            n, d = dinfo[ds]["shape"]
            for m in glfs.METHODS:
                spec = {
                    "dataset": ds,
                    "n_samples": n,
                    "n_features": d,
                    "kind": "select",
                    "method": m,
                    "n_select": N_SELECT,
                }
                k = NN_DENSE.get(m, 0)
                pred = (k * n * n * 8 + 3 * n * d * 8) / 2**20 + idle.get("rss_mb", 0)
                skip = None
                if avail.get(m) is not True:
                    skip = ("not_available", str(avail.get(m)))
                elif k and pred > max_mb:
                    skip = (
                        "skipped_memory",
                        f"predicted {pred / 1024:.1f} GB (~{k} dense n x n) > {args.max_mem_gb:g} GB",
                    )
                R.add(
                    "methods",
                    f"{ds} {n}x{d}",
                    m,
                    spec,
                    predicted_mb=pred if k else float("nan"),
                    skip=skip,
                    timeout=args.method_timeout,
                )

    # ---- methods with O(n^2) memory: where do they stop fitting (time and memory)?
    if "nn_scaling" in args.only and not quick:
        import glfs

        for m in ("glfs", "ufi", "lkr_score_supervised"):
            k = NN_DENSE.get(m, 0)
            last = None
            for n in (500, 1000, 2000, 4000, 8000, 16000):
                d = 2000
                spec = {
                    "dataset": synth_big,
                    "n_samples": n,
                    "n_features": d,
                    "kind": "select",
                    "method": m,
                    "n_select": N_SELECT,
                }
                pred = (k * n * n * 8 + 3 * n * d * 8) / 2**20 + idle.get("rss_mb", 0)
                skip = None
                if avail.get(m) is not True:
                    skip = ("not_available", str(avail.get(m)))
                elif pred > max_mb:
                    skip = (
                        "skipped_memory",
                        f"predicted {pred / 1024:.1f} GB (~{k} dense n x n) > {args.max_mem_gb:g} GB",
                    )
                elif last is not None:
                    guess = last[1] * (n / last[0]) ** 3
                    if math.isinf(guess):
                        skip = ("skipped_time", f"timed out at n={last[0]}")
                    elif guess > args.method_timeout:
                        skip = (
                            "skipped_time",
                            f"predicted {guess:.0f} s > {args.method_timeout:.0f} s from n={last[0]} (~n^3)",
                        )
                row = R.add(
                    "nn_scaling", f"n={n} d={d}", m, spec, predicted_mb=pred, skip=skip, timeout=args.method_timeout
                )
                if row["status"] == "ok":
                    last = (n, row["time_s"])
                elif row["status"] == "timeout":
                    last = (n, float("inf"))

    total = time.perf_counter() - t_start
    minfo["load_start"] = load_start
    minfo["load_end"] = os.getloadavg()
    minfo["threads"] = args.threads
    write_outputs(args, R, dinfo, minfo, avail, idle, total)
    print(f"done in {total:.0f} s; results in {args.out}", flush=True)
    return 0


# --------------------------------------------------------------------------- outputs
COLS = [
    "group",
    "case",
    "impl",
    "dataset",
    "n_samples",
    "n_features",
    "status",
    "time_s",
    "time_first_s",
    "cpu_first_s",
    "repeats",
    "peak_rss_mb",
    "peak_delta_mb",
    "rss_before_mb",
    "predicted_mb",
    "wall_s",
    "load1",
    "run_at",
    "note",
    "extra",
]
GROUPS = ["datasets", "ls_scaling", "ls_agreement", "lapaofs", "glfs_slope", "methods", "nn_scaling"]
_NUMERIC = {
    "time_s",
    "time_first_s",
    "cpu_first_s",
    "repeats",
    "peak_rss_mb",
    "peak_delta_mb",
    "rss_before_mb",
    "predicted_mb",
    "wall_s",
    "load1",
}


def _parse(key, v):
    if key == "extra":
        return json.loads(v) if v else {}
    if key in _NUMERIC or key not in COLS:
        try:
            return float(v) if v != "" else float("nan")
        except ValueError:
            return v
    return v


def _read_tsv(path):
    with open(path) as fh:
        head = fh.readline().rstrip("\n").split("\t")
        return [{k: _parse(k, v) for k, v in zip(head, line.rstrip("\n").split("\t"))} for line in fh if line.strip()]


def _fmt(v):
    if isinstance(v, float):
        if v != v:
            return ""
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def write_outputs(args, R, dinfo, minfo, avail, idle, total):
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    tsv = out / f"benchmarks{suffix}.tsv"
    for r in R.rows:
        r["run_at"] = minfo["date"]
    # groups not run now are kept from the previous file (partial re-runs with --only)
    if set(args.only) != set(GROUPS) and tsv.exists():
        old = [r for r in _read_tsv(tsv) if r.get("group") not in args.only]
        R.rows = sorted(old + R.rows, key=lambda r: GROUPS.index(r["group"]) if r["group"] in GROUPS else 99)
        agr = out / f"agreement{suffix}.tsv"
        if "ls_agreement" not in args.only and agr.exists() and not R.agreement:
            R.agreement = _read_tsv(agr)
            for a in R.agreement:
                a.setdefault("status", "ok")
    with open(tsv, "w") as fh:
        fh.write("\t".join(COLS) + "\n")
        for r in R.rows:
            cells = [json.dumps(r.get(c) or {}) if c == "extra" else _fmt(r.get(c, "")) for c in COLS]
            fh.write("\t".join(x.replace("\t", " ").replace("\n", " ") for x in cells) + "\n")
    if R.agreement and "ls_agreement" in args.only:
        keys = sorted({k for a in R.agreement for k in a if k not in ("wall_s",)})
        keys.remove("dataset")
        keys = ["dataset", *keys]
        with open(out / f"agreement{suffix}.tsv", "w") as fh:
            fh.write("\t".join(keys) + "\n")
            for a in R.agreement:
                fh.write("\t".join(_fmt(a.get(k, "")) for k in keys) + "\n")
    info = {
        "minfo": minfo,
        "dinfo": dinfo,
        "avail": avail,
        "idle": idle,
        "total": total,
        "only": list(args.only),
        "timeout": args.timeout,
        "method_timeout": args.method_timeout,
        "max_mem_gb": args.max_mem_gb,
    }
    (out / f"run_info{suffix}.json").write_text(json.dumps(info, indent=1, default=str) + "\n")
    (out / f"summary{suffix}.md").write_text(summary_md(args, R, dinfo, minfo, avail, idle, total))


def summary_only(args):
    """Rewrite summary.md from the TSVs and run_info.json of an earlier run."""
    suffix = "_quick" if args.quick else ""
    info = json.loads((args.out / f"run_info{suffix}.json").read_text())
    R = Runner(args)
    R.rows = _read_tsv(args.out / f"benchmarks{suffix}.tsv")
    agr = args.out / f"agreement{suffix}.tsv"
    if agr.exists():
        R.agreement = [{**a, "status": a.get("status", "ok")} for a in _read_tsv(agr)]
    args.only = info["only"]
    for k in ("timeout", "method_timeout", "max_mem_gb"):
        setattr(args, k, info[k])
    for v in info["dinfo"].values():
        v["shape"] = tuple(v["shape"])
    text = summary_md(args, R, info["dinfo"], info["minfo"], info["avail"], info["idle"], info["total"])
    (args.out / f"summary{suffix}.md").write_text(text)


def _get(R, group, case=None, impl=None):
    for r in R.rows:
        if r["group"] == group and (case is None or r["case"] == case) and (impl is None or r["impl"] == impl):
            return r
    return None


def _t(r):
    if r is None:
        return "-"
    if r["status"] != "ok":
        return r["status"]
    return f"{r['time_s']:.3g} s"


def _m(r):
    if r is None or r["status"] != "ok" or r.get("peak_rss_mb") != r.get("peak_rss_mb"):
        return "-"
    return f"{r['peak_rss_mb']:.0f} MB (+{r['peak_delta_mb']:.0f})"


def _method_cell(r) -> str:
    if r is None:
        return "-"
    if r["status"] == "ok":
        return f"{_t(r)}<br>{_m(r)}"
    if r["status"] == "not_available":
        return "not available"
    if r["status"] == "timeout" or not r.get("note"):
        return r["status"]
    return f"{r['status']}: {r['note']}"[:110]


def _method_table(w, R, group, rows) -> None:
    """Markdown table: one row per method (impl), one column per case."""
    cases = list(dict.fromkeys(r["case"] for r in rows))
    w("| method | " + " | ".join(cases) + " |")
    w("|---|" + "---|" * len(cases))
    for m in dict.fromkeys(r["impl"] for r in rows):
        w(f"| {m} | " + " | ".join(_method_cell(_get(R, group, c, m)) for c in cases) + " |")


def summary_md(args, R, dinfo, minfo, avail, idle, total):
    L = []
    w = L.append
    w(f"# glfs benchmarks{' (quick)' if args.quick else ''}\n")
    w(
        f"Generated by `python benchmarks/run_benchmarks.py{' --quick' if args.quick else ''}"
        f"{'' if set(args.only) == set(GROUPS) else ' --only ' + ' '.join(args.only)}` "
        f"at {minfo['date']} (git {minfo['git']}), total {total / 60:.1f} min. See `benchmarks/README.md` for the method.\n"
    )
    runs = sorted({r.get("run_at", "") for r in R.rows} - {""})
    if len(runs) > 1:
        w(
            f"Rows come from {len(runs)} invocations ({', '.join(runs)}; column `run_at` in the TSV): groups not "
            "named in a partial re-run (`--only`) are kept from the earlier run.\n"
        )
    w("## Machine\n")
    w(f"- CPU: {minfo['cpu']}, {minfo['cpu_count']} logical CPUs ({minfo['affinity']} usable), RAM {minfo['ram']}")
    w(
        f"- Python {minfo['python']}, numpy {minfo['numpy']}, scipy {minfo['scipy']}, scikit-learn {minfo['scikit-learn']}, "
        f"skfeature-chappers {minfo['skfeature-chappers']}"
    )
    w("- BLAS / OpenMP (threadpoolctl): " + "; ".join(minfo["blas"]))
    w(f"- Platform: {minfo['platform']}")
    w(
        f"- BLAS/OpenMP threads per worker: {minfo.get('threads') or 'library default (all cores)'} (set through "
        "OMP/OPENBLAS_NUM_THREADS; rows named '2 threads' use 2). Under load, multi-threaded OpenBLAS on small "
        "matrices can be tens of times slower than one thread, so the comparisons use one thread per worker. "
        f"Load average (1, 5, 15 min) "
        f"at start {', '.join(f'{x:.1f}' for x in minfo['load_start'])}, at end "
        f"{', '.join(f'{x:.1f}' for x in minfo['load_end'])}"
    )
    w(
        f"- Idle worker (same imports, no data): RSS {idle.get('rss_mb', float('nan')):.0f} MB. "
        "Memory columns: `peak_rss_mb` = process peak during the call (includes this baseline and the input), "
        "`peak_delta_mb` (in brackets below) = peak minus RSS just before the call. Times: best of up to 7 "
        "repeats (at least 3 when a call takes under 2 s, else a single run); each case in a fresh process. "
        "Other jobs shared the 2 cores during this run (column `load1` in the TSV = 1-minute load average "
        "when the case started), so single-run times are upper bounds.\n"
    )
    w("## Inputs (samples x genes)\n")
    for k, v in dinfo.items():
        w(f"- `{k}`: {v['shape'][0]} x {v['shape'][1]} ({v['source']})")
    w("")

    rows = [r for r in R.rows if r["group"] == "datasets"]
    if rows:
        w("## Graph and Laplacian score on each input\n")
        w("| input | graph | Laplacian score (given W) | graph + LS | peak memory graph + LS |")
        w("|---|---|---|---|---|")
        for case in dict.fromkeys(r["case"] for r in rows):
            g, ls, gl = (_get(R, "datasets", case, f"glfs {k}") for k in ("graph", "ls", "graph+ls"))
            if case.startswith("synth_20000x2000"):
                ls = _get(R, "ls_scaling", "n=20000 d=2000", "glfs ls") or ls
                gl = _get(R, "ls_scaling", "n=20000 d=2000", "glfs graph+ls") or gl
            w(f"| {case} | {_t(g)} | {_t(ls)} | {_t(gl)} | {_m(gl)} |")
        w("")

    rows = [r for r in R.rows if r["group"] == "ls_scaling"]
    if rows:
        w("## Laplacian score: glfs vs naive dense formula vs scikit-feature\n")
        w(
            "Samples x 2000 genes (rows of the synthetic matrix). kNN 5, heat kernel; skfeature's graph uses "
            "the same width (t_sk = sqrt(t/2)) but includes self-loops (see agreement). "
            "`ls` = scores given the graph; `graph+ls` = both. Time / peak RSS (+extra).\n"
        )
        impls = list(dict.fromkeys(r["impl"] for r in rows))
        cases = list(dict.fromkeys(r["case"] for r in rows))
        w("| size | " + " | ".join(impls) + " |")
        w("|---|" + "---|" * len(impls))
        for c in cases:
            cells = []
            for i in impls:
                r = _get(R, "ls_scaling", c, i)
                cells.append(
                    f"{_t(r)}<br>{_m(r)}"
                    if r and r["status"] == "ok"
                    else (f"{r['status']}: {r.get('note', '')}" if r else "-")
                )
            w(f"| {c} | " + " | ".join(cells) + " |")
        w("")

        # ratios at the largest common size
        def series(impl):
            pts = []
            for r in rows:
                if r["impl"] == impl and r["status"] == "ok":
                    pts.append((int(r["n_samples"]), r["time_s"], r["peak_rss_mb"]))
            return sorted(pts)

        sers = {i: series(i) for i in impls}
        w("**Ratios (peer time / glfs time) at the largest size where both ran:**\n")
        for peer, ours in (
            ("skfeature graph+ls", "glfs graph+ls"),
            ("naive_dense ls", "glfs ls"),
            ("skfeature ls", "glfs ls"),
        ):
            a, b = dict((n, t) for n, t, _ in sers.get(peer, [])), dict((n, t) for n, t, _ in sers.get(ours, []))
            common = sorted(set(a) & set(b))
            if common:
                n = common[-1]
                w(f"- {peer} vs {ours} at n = {n}: {a[n]:.3g} s / {b[n]:.3g} s = **{a[n] / b[n]:.1f}x**")
        w("")
        w(
            "**Extrapolation to 20,000 samples (EXTRAPOLATED, not measured):** log-log fit of time on n over the "
            "measured sizes; memory from the dense n x n matrices the implementation builds.\n"
        )
        for impl, nd in (("naive_dense ls", 3), ("skfeature ls", 2), ("skfeature graph+ls", 3)):
            pts = sers.get(impl, [])
            if not pts or any(p[0] == 20000 for p in pts):
                continue
            if len(pts) >= 2:
                b, a = fit_loglog([p[0] for p in pts], [p[1] for p in pts])
                t20 = math.exp(a) * 20000**b
                w(
                    f"- {impl}: slope {b:.2f} from n = {', '.join(str(p[0]) for p in pts)}; extrapolated "
                    f"time at 20,000 x 2,000 about {t20:.0f} s; >= {nd} dense 20,000^2 float64 matrices = "
                    f"{nd * 3.2:.1f} GB (did not run: see table)"
                )
            else:
                w(f"- {impl}: only one size measured; not extrapolated")
        ours = dict((n, (t, m)) for n, t, m in sers.get("glfs graph+ls", []))
        w("")
        w("**Goals (reported, not asserted):**\n")
        ours2 = dict((n, (t, m)) for n, t, m in sers.get("glfs graph+ls 2 threads", []))
        if 20000 in ours:
            t, m = ours[20000]
            r20 = _get(R, "ls_scaling", "n=20000 d=2000", "glfs graph+ls")
            g20 = _get(R, "datasets", "synth_20000x2000 20000x2000", "glfs graph")
            w(
                f"- graph + Laplacian score on 20,000 x 2,000 under 10 s: {t:.2f} s wall with 1 thread "
                f"(CPU {r20.get('cpu_first_s', float('nan')):.1f} s, load {r20.get('load1', float('nan')):.1f})"
                + (f", {ours2[20000][0]:.2f} s with 2 threads" if 20000 in ours2 else "")
                + f" -> {'met' if min(t, ours2.get(20000, (t, 0))[0]) < 10 else 'NOT met'}"
                + (
                    f"; the kNN graph alone takes {g20['time_s']:.1f} s (brute-force kNN is O(n^2 d) = 1.6e12 "
                    "flops here)"
                    if g20 and g20["status"] == "ok"
                    else ""
                )
            )
            w(
                f"- ... and under 2 GB: peak RSS {m:.0f} MB (process total incl. {idle.get('rss_mb', 0):.0f} MB imports "
                f"and the 305 MB input) -> {'met' if m < 2048 else 'NOT met'}"
            )
            pts = sers.get("skfeature graph+ls", [])
            if pts:
                b, a = fit_loglog([p[0] for p in pts], [p[1] for p in pts]) if len(pts) >= 2 else (float("nan"), 0)
                if 20000 in dict((p[0], p[1]) for p in pts):
                    tp = dict((p[0], p[1]) for p in pts)[20000]
                    w(f"- >= 10x faster than skfeature at 20,000: {tp / t:.1f}x (measured)")
                elif b == b:
                    tp = math.exp(a) * 20000**b
                    w(
                        f"- >= 10x faster than skfeature at 20,000: about {tp / t:.0f}x (EXTRAPOLATED peer time "
                        f"{tp:.0f} s; the peer does not fit in {args.max_mem_gb:g} GB there)"
                    )
        else:
            w("- 20,000 x 2,000 not run in this mode")
        w("")

    if R.agreement:
        w("## Agreement of scores\n")
        w(
            "| input | n x d | max abs diff glfs vs naive | max rel diff | skfeature on our W: same order | "
            "skfeature own graph: W_sk - (W + I) | skfeature own graph: same order as naive(W + I) | "
            "Spearman(skfeature own, glfs) | top-100 overlap | skfeature mode='rank' = correct ranks / = d-1-order |"
        )
        w("|---|---|---|---|---|---|---|---|---|---|")
        for a in R.agreement:
            if a.get("status") != "ok":
                w(f"| {a['dataset']} | {a.get('status')}: {a.get('note', '')} |")
                continue
            w(
                f"| {a['dataset']} | {int(a['n_samples'])} x {int(a['n_features'])} | {a['max_abs_diff_glfs_vs_naive']:.2e} | "
                f"{a['max_rel_diff_glfs_vs_naive']:.2e} | {a['sk_same_graph_order_equal_frac']:.3f} "
                f"(Spearman {a['sk_same_graph_spearman']:.4f}) | {a['sk_own_graph_max_abs_diff_W_vs_Wglfs_plus_I']:.1e} | "
                f"{a['sk_own_graph_order_equal_frac_vs_naive_W_plus_I']:.3f} | {a['sk_own_graph_spearman_vs_glfs']:.4f} | "
                f"{a['sk_own_graph_top100_overlap_vs_glfs']:.2f} | {a['sk_rank_mode_equals_proper_ranks_frac']:.3f} / "
                f"{a['sk_rank_mode_equals_garbled_frac']:.3f} |"
            )
        w("")
        w(
            "Reading: skfeature's `lap_score` computes `1 - f~'Wf~ / f~'Df~`, which is the same quantity as "
            "f~'Lf~ / f~'Df~, so on the same graph it orders genes as we do (it returns only an order or ranks, "
            "never the scores). Its own `construct_W` keeps every sample as its own nearest neighbour, so "
            "W_sk = W + I (self-loops, weight exp(0) = 1): L is unchanged but D grows by I, which changes the "
            "centring weights and the denominator f~'(D + I)f~; hence different scores and orders from the paper's "
            "graph, reproduced exactly by the naive formula on W + I. Its heat kernel is exp(-d^2 / (2 t^2)) "
            "(default t = 1) where He et al. and glfs use exp(-d^2 / t). Its default output (`mode='rank'`) "
            "is not a per-gene rank: it returns d - 1 - (index of the i-th best gene) at position i (see the "
            "last column; 1.000 in the second number confirms it). Constant genes get the magic denominator 10000.\n"
        )

    rows = [r for r in R.rows if r["group"] == "lapaofs"]
    if rows:
        w("## LapAOFS: glfs greedy vs naive re-inversion\n")
        w(
            "`glfs.lapaofs` makes the paper's greedy steps (Eq. 20 with the Sherman-Morrison update Eq. 19) in the "
            "equivalent k x k feature-space form (see `src/glfs/optimal.py`); the naive reference inverts "
            "A_k + g g' for every candidate and evaluates Eq. 17 directly.\n"
        )
        w("Synthetic, 4-NN heat graph, lambda1 = lambda2 = 0.01, select k = 10 of 200 genes.\n")
        w("| size | glfs.lapaofs | naive re-inversion | ratio | same selection order |")
        w("|---|---|---|---|---|")
        for c in dict.fromkeys(r["case"] for r in rows):
            a, b = _get(R, "lapaofs", c, "glfs.lapaofs"), _get(R, "lapaofs", c, "naive re-inversion")
            ratio = f"{b['time_s'] / a['time_s']:.0f}x" if a and b and a["status"] == b["status"] == "ok" else "-"
            same = "-"
            if a and b and a["status"] == b["status"] == "ok":
                oa, ob = a["extra"].get("order"), b["extra"].get("order")
                same = "yes" if oa == ob else f"no ({sum(x == y for x, y in zip(oa, ob))}/{len(ob)} positions)"
            w(f"| {c} | {_t(a)} | {_t(b)} | {ratio} | {same} |")
        w("")

    rows = [r for r in R.rows if r["group"] == "glfs_slope"]
    if rows:
        w("## GLFS objective + gradient: cost in d (fixed n = 200)\n")
        for impl in dict.fromkeys(r["impl"] for r in rows):
            pts = [(int(r["n_features"]), r["time_s"]) for r in rows if r["impl"] == impl and r["status"] == "ok"]
            cells = (
                ", ".join(f"d={d}: {t * 1e3:.1f} ms" for d, t in pts)
                or ", ".join(f"{r['status']}" for r in rows if r["impl"] == impl)[:80]
            )
            if len(pts) >= 2:
                import numpy as np

                b, _ = fit_loglog(*zip(*pts))
                dd, tt = (np.asarray(v, float) for v in zip(*pts))
                lin_b, lin_a = np.polyfit(dd, tt, 1)
                r2 = 1 - np.sum((tt - (lin_a + lin_b * dd)) ** 2) / max(np.sum((tt - tt.mean()) ** 2), 1e-300)
                w(
                    f"- {impl}: {cells}; log-log slope **{b:.2f}** (1 = linear in d; below 1 when the "
                    f"d-independent O(n^3) part still weighs); linear fit t = {lin_a * 1e3:.1f} ms + "
                    f"{lin_b * 1e6:.2f} ms per 1000 genes (R^2 {r2:.2f})"
                )
            else:
                w(f"- {impl}: {cells}")
        w("")

    rows = [r for r in R.rows if r["group"] == "methods"]
    if rows:
        w(f"## Every method through `glfs.select(X, method=m, graph=W, n_features={N_SELECT})`\n")
        w(
            "Graph built beforehand (not timed). Time / peak RSS (+extra). Memory guard: skipped when ~k dense n x n "
            f"matrices are predicted to exceed {args.max_mem_gb:g} GB; time limit {args.method_timeout:.0f} s per case.\n"
        )
        _method_table(w, R, "methods", rows)
        w("")
        lim = args.max_mem_gb * 2**30
        w(
            "Largest n under the memory guard (predicted dense n x n matrices only): "
            + "; ".join(f"`{m}` ~{k} matrices -> n <= {int(math.sqrt(lim / (8 * k))):,}" for m, k in NN_DENSE.items())
            + ".\n"
        )
        na = [m for m, v in avail.items() if v is not True]
        if na:
            w("Not importable at run time: " + ", ".join(f"`{m}`" for m in na) + ".\n")
    rows = [r for r in R.rows if r["group"] == "nn_scaling"]
    if rows:
        w("## Methods with O(n^2) memory: where they stop fitting\n")
        w(
            f"`glfs.select(..., n_features={N_SELECT})` on the first n rows of the 20,000 x 2,000 matrix; a size is "
            f"skipped when predicted (~n^3 from the previous size) to exceed {args.method_timeout:.0f} s or when the "
            f"dense n x n matrices are predicted to exceed {args.max_mem_gb:g} GB.\n"
        )
        _method_table(w, R, "nn_scaling", rows)
        w("")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
