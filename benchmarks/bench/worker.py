"""What runs inside a worker process (``run_benchmarks.py --worker SPEC``).

A worker loads its input from the ``.npy`` cache, builds what the case needs
but does not time (e.g. the graph for "Laplacian score given W"), then times
one call and reads the process's peak resident size during it:

- memory: ``/proc/self/clear_refs`` with ``5`` resets the peak (``VmHWM``) to
  the current RSS (Linux >= 4.0); after the call ``VmHWM`` is the peak.
- time: ``time.perf_counter`` around the call; short calls are repeated in
  the same process and the minimum is kept (other work on the machine only
  ever slows a run down).

The result is written to stdout as JSON after :data:`RESULT_MARK`.
"""

from __future__ import annotations

import gc
import json
import sys
import time

from bench.naive import heat_t, naive_dense_laplacian_score, naive_lapaofs, skfeature_graph, skfeature_width
from bench.procfs import reset_peak, status_kb  # noqa: F401 (re-exported)
from bench.settings import (
    BETA_SEED,
    CACHE,
    GB,
    KB_PER_MB,
    MAX_REPEATS,
    MIN_REPEATS,
    N_NEIGHBORS,
    N_PCS,
    NOTE_CHARS,
    REPEAT_BUDGET_S,
    RESULT_MARK,
    SHORT_CALL_S,
    TOP_OVERLAP,
)


# --------------------------------------------------------------------------- memory probes
# --------------------------------------------------------------------------- inputs
def import_timed_modules():
    """Import what every timed worker holds (the same set for every case and the idle one)."""
    import warnings

    import numpy  # noqa: F401
    import scipy  # noqa: F401
    import scipy.sparse  # noqa: F401
    import skfeature.function.similarity_based.lap_score  # noqa: F401
    import skfeature.utility.construct_W  # noqa: F401
    import sklearn  # noqa: F401

    import glfs  # noqa: F401

    warnings.simplefilter("ignore")


def load_input(spec):
    """The case's input: the first n_samples x n_features of the cached matrix, and its labels."""
    import numpy as np

    X = np.load(CACHE / f"{spec['dataset']}.npy", mmap_mode="r")
    labels = np.load(CACHE / f"{spec['dataset']}.labels.npy", allow_pickle=False)
    n = spec.get("n_samples") or X.shape[0]
    d = spec.get("n_features") or X.shape[1]
    X = np.ascontiguousarray(X[:n, :d], dtype=np.float64)
    return X, labels[:n]


def _graph(X, spec, **kwargs):
    import glfs

    return glfs.similarity_graph(X, n_neighbors=spec.get("k", N_NEIGHBORS), kernel="heat", **kwargs)


# --------------------------------------------------------------------------- timed calls, one per kind
# Each builder does the untimed set-up and returns the call to time.
def _call_graph(X, labels, spec):
    return lambda: _graph(X, spec)


def _call_ls(X, labels, spec):
    import glfs

    W = _graph(X, spec)
    return lambda: glfs.laplacian_score(X, W)


def _call_graph_ls(X, labels, spec):
    import glfs

    return lambda: glfs.laplacian_score(X, _graph(X, spec))


def _call_graph_pcs_ls(X, labels, spec):
    import glfs

    return lambda: glfs.laplacian_score(X, _graph(X, spec, n_pcs=N_PCS))


def _call_naive_ls(X, labels, spec):
    W = _graph(X, spec)
    return lambda: naive_dense_laplacian_score(X, W)


def _call_skfeature_ls(X, labels, spec):
    from skfeature.function.similarity_based.lap_score import lap_score

    W = _graph(X, spec).tocsc()
    return lambda: lap_score(X, W=W, mode="index")


def _call_skfeature_graph_ls(X, labels, spec):
    from skfeature.function.similarity_based.lap_score import lap_score

    t = heat_t(X)
    return lambda: lap_score(X, W=skfeature_graph(X, t), mode="index")


def _call_lapaofs(X, labels, spec):
    import glfs

    W = _graph(X, spec)
    return lambda: glfs.lapaofs(X, W, n_features=spec["n_select"])


def _call_naive_lapaofs(X, labels, spec):
    W = _graph(X, spec)
    return lambda: naive_lapaofs(X, W, spec["n_select"])


def _call_glfs_objective(X, labels, spec):
    import numpy as np

    import glfs

    W = _graph(X, spec)
    d = X.shape[1]
    beta = np.random.default_rng(BETA_SEED).uniform(0.0, 1.0, d) / d
    return lambda: glfs.glfs_objective(beta, X, W, objective=spec["objective"])


def _call_select(X, labels, spec):
    import glfs

    method = spec["method"]
    info = glfs.METHODS[method]
    W = _graph(X, spec) if info.needs_graph else None
    lab = labels if info.needs_labels else None
    return lambda: glfs.select(X, method=method, graph=W, n_features=spec["n_select"], labels=lab)


TIMED_CALLS = {
    "graph": _call_graph,
    "ls": _call_ls,
    "graph+ls": _call_graph_ls,
    "graph_pcs+ls": _call_graph_pcs_ls,  # neighbours on N_PCS principal components
    "naive_ls": _call_naive_ls,
    "skfeature_ls": _call_skfeature_ls,
    "skfeature_graph+ls": _call_skfeature_graph_ls,
    "lapaofs": _call_lapaofs,
    "naive_lapaofs": _call_naive_lapaofs,
    "glfs_objective": _call_glfs_objective,
    "select": _call_select,
}


# --------------------------------------------------------------------------- what a call returned
def _order(out, spec):
    import numpy as np

    sel = out.ranking if hasattr(out, "ranking") else np.asarray(out)
    return {"order": [int(i) for i in np.asarray(sel)[: spec["n_select"]]]}


def _n_selected(out, spec):
    import numpy as np

    return {"n_selected": int(np.sum(out.selected))}


EXTRAS = {
    "select": _n_selected,
    "lapaofs": _order,
    "naive_lapaofs": _order,
    "glfs_objective": lambda out, spec: {"value": float(out[0])},
}


# --------------------------------------------------------------------------- measurement
def _repeat_again(times):
    """Repeat a short call: up to MAX_REPEATS, while under REPEAT_BUDGET_S, at least MIN_REPEATS if short."""
    if len(times) >= MAX_REPEATS:
        return False
    return sum(times) < REPEAT_BUDGET_S or (len(times) < MIN_REPEATS and times[0] < SHORT_CALL_S)


def measure(run):
    """Time ``run()`` and read the peak RSS during its first call; returns (last output, figures)."""
    gc.collect()
    ok_reset = reset_peak()
    rss0 = status_kb("VmRSS")
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = run()
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    hwm = status_kb("VmHWM")
    times = [dt]
    while _repeat_again(times):
        del out
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    nan = float("nan")
    return out, {
        "status": "ok",
        "time_s": min(times),
        "time_first_s": times[0],
        "cpu_first_s": cpu,
        "repeats": len(times),
        "peak_rss_mb": hwm / KB_PER_MB if ok_reset else nan,
        "peak_delta_mb": (hwm - rss0) / KB_PER_MB if ok_reset else nan,
        "rss_before_mb": rss0 / KB_PER_MB,
    }


def idle_case(spec):
    """RSS of a worker that imported everything and loaded nothing: the import baseline."""
    import_timed_modules()
    return {"status": "ok", "rss_mb": status_kb("VmRSS") / KB_PER_MB, "hwm_mb": status_kb("VmHWM") / KB_PER_MB}


def timed_case(spec):
    """Set up the case ``spec["kind"]``, time it, and return the figures plus what the call returned."""
    import_timed_modules()
    kind = spec["kind"]
    if kind not in TIMED_CALLS:
        msg = f"unknown kind {kind!r}"
        raise ValueError(msg)
    X, labels = load_input(spec)
    out, res = measure(TIMED_CALLS[kind](X, labels, spec))
    extra = EXTRAS.get(kind)
    res["extra"] = extra(out, spec) if extra else {}
    return res


# --------------------------------------------------------------------------- agreement (not timed)
def _rank_of(order):
    """Rank of each gene given an order (best first)."""
    import numpy as np

    order = np.asarray(order).ravel()
    r = np.empty(order.size, int)
    r[order] = np.arange(order.size)
    return r


def _top_overlap(a, b, d):
    return len(set(a[:TOP_OVERLAP]) & set(b[:TOP_OVERLAP])) / min(TOP_OVERLAP, d)


def _glfs_vs_naive(s, s_naive):
    import numpy as np

    ok = np.isfinite(s) & np.isfinite(s_naive)
    diff = np.abs(s[ok] - s_naive[ok])
    return {
        "max_abs_diff_glfs_vs_naive": float(np.max(diff)),
        "max_rel_diff_glfs_vs_naive": float(np.max(diff / np.abs(s_naive[ok]))),
        "nan_glfs": int(np.sum(~np.isfinite(s))),
        "nan_naive": int(np.sum(~np.isfinite(s_naive))),
    }


def _skfeature_on_our_graph(X, W, order):
    """skfeature's lap_score on glfs' graph: its order (mode="index") and its default output (mode="rank")."""
    import numpy as np
    from scipy.stats import spearmanr
    from skfeature.function.similarity_based.lap_score import lap_score

    d = X.shape[1]
    sk_same = np.asarray(lap_score(X.copy(), W=W.tocsc(), mode="index")).ravel()
    # skfeature's default output (mode="rank"): per its docstring a per-feature rank (higher = better)
    sk_rank_mode = np.asarray(lap_score(X.copy(), W=W.tocsc())).ravel()
    proper = np.empty(d, int)
    proper[sk_same] = d - 1 - np.arange(d)  # what a correct "higher = better" rank vector would be
    garbled = d - 1 - sk_same  # out[i] = d-1 - (index of i-th best feature)
    return {
        "sk_same_graph_order_equal_frac": float(np.mean(sk_same == order)),
        "sk_same_graph_spearman": float(spearmanr(_rank_of(sk_same), _rank_of(order)).statistic),
        "sk_same_graph_top100_overlap": _top_overlap(sk_same, order, d),
        "sk_rank_mode_equals_proper_ranks_frac": float(np.mean(sk_rank_mode == proper)),
        "sk_rank_mode_equals_garbled_frac": float(np.mean(sk_rank_mode == garbled)),
    }


def _skfeature_own_graph(X, W, s, order):
    """skfeature with its own graph (matched heat width): W_sk = W + I, reproduced by the naive formula."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.stats import spearmanr
    from skfeature.function.similarity_based.lap_score import lap_score

    n, d = X.shape
    t = heat_t(X)
    Wsk = skfeature_graph(X.copy(), t)
    W_plus_I = W + sp.identity(n, format="csr")
    sk_own = np.asarray(lap_score(X.copy(), W=Wsk, mode="index")).ravel()
    s_naive_selfloop = naive_dense_laplacian_score(X, W_plus_I)
    return {
        "sk_own_graph_max_abs_diff_W_vs_Wglfs_plus_I": float(abs(sp.csr_matrix(Wsk) - W_plus_I).max()),
        "sk_own_graph_order_equal_frac_vs_naive_W_plus_I": float(
            np.mean(sk_own == np.argsort(s_naive_selfloop, kind="stable"))
        ),
        "sk_own_graph_spearman_vs_glfs": float(spearmanr(_rank_of(sk_own), _rank_of(order)).statistic),
        "sk_own_graph_top100_overlap_vs_glfs": _top_overlap(sk_own, order, d),
        "max_abs_diff_glfs_vs_naive_selfloop": float(np.nanmax(np.abs(s - s_naive_selfloop))),
        "heat_t_glfs": t,
        "heat_t_skfeature": skfeature_width(t),
    }


def agreement_case(spec):
    """Laplacian scores of glfs, the naive dense formula and skfeature on the same X (not timed)."""
    import warnings

    import numpy as np

    import glfs

    warnings.simplefilter("ignore")
    X, _ = load_input(spec)
    n, d = X.shape
    W = glfs.similarity_graph(X, n_neighbors=N_NEIGHBORS, kernel="heat")
    s = glfs.laplacian_score(X, W)
    order = np.argsort(s, kind="stable")
    return {
        "status": "ok",
        "n_samples": n,
        "n_features": d,
        **_glfs_vs_naive(s, naive_dense_laplacian_score(X, W)),
        **_skfeature_on_our_graph(X, W, order),
        **_skfeature_own_graph(X, W, s, order),
    }


# --------------------------------------------------------------------------- entry point
CASES = {"idle": idle_case, "agreement": agreement_case}


def _cap_address_space(limit_gb):
    """Cap the worker's address space (a safety net behind the memory prediction)."""
    try:
        import resource

        cap = int(limit_gb * GB)
        if cap > 0:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ValueError, OSError):
        pass


def _note(exc):
    return f"{type(exc).__name__}: {exc}"[:NOTE_CHARS]


def run_spec(spec):
    """Run one case; a failure becomes a status (oom, not_available, error), never an exception."""
    try:
        return CASES.get(spec["kind"], timed_case)(spec)
    except MemoryError:
        return {"status": "oom", "note": "MemoryError under the address-space cap"}
    except (ImportError, AttributeError) as exc:
        return {"status": "not_available", "note": _note(exc)}
    except Exception as exc:  # record, never crash the run
        return {"status": "error", "note": _note(exc)}


def worker_main(arg):
    """Entry point of ``run_benchmarks.py --worker SPEC``: run the JSON case spec, print the result."""
    spec = json.loads(arg)
    _cap_address_space(spec.get("as_limit_gb", 0))
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(run_spec(spec)) + "\n")
