"""The driver: one function per group builds its cases and runs each in a fresh worker process.

A case is a JSON spec (``kind``, ``dataset``, sizes, ...) handed to
``run_benchmarks.py --worker`` (see :mod:`bench.worker`).  Before running a
case the driver applies the guards: a case whose predicted memory (the dense
n x n float64 matrices it builds) exceeds ``--max-mem-gb`` is recorded as
``skipped_memory``; in a scaling series, a size predicted from the previous
one to exceed the time limit is recorded as ``skipped_time``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field

from bench.results import LIMITS, RunResults
from bench.settings import (
    AGREEMENT_N,
    BIG_D,
    BYTES_PER_FLOAT,
    CACHE,
    GROUPS,
    IDLE_TIMEOUT_S,
    LAPAOFS_D,
    LAPAOFS_N_NEIGHBORS,
    LAPAOFS_SELECT,
    LAPAOFS_SIZES,
    LAPAOFS_SIZES_QUICK,
    LS_IMPLS,
    LS_INPUT_COPIES,
    LS_SIZES,
    LS_SIZES_QUICK,
    MB,
    MB_PER_GB,
    N_SELECT,
    NN_D,
    NN_DENSE,
    NN_METHODS,
    NN_SIZES,
    NOTE_CHARS,
    REAL_DATASETS,
    RESULT_MARK,
    SCRIPT,
    SELECT_INPUT_COPIES,
    SIGKILL,
    SLOPE_DS,
    SLOPE_DS_QUICK,
    SLOPE_N,
    SLOPE_OBJECTIVES,
    SYNTH_BIG,
    SYNTH_QUICK,
    SYNTH_WIDE,
    TWO_THREADS,
    TWO_THREADS_SUFFIX,
)

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
STOPPED = ("timeout",)  # statuses after which a scaling series predicts "too slow" for the next size


# --------------------------------------------------------------------------- one case
def _worker_env(threads):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if threads:
        for var in THREAD_VARS:
            env[var] = str(threads)
    return env


def _worker_result(p):
    """The worker's JSON result, or a status from how it ended."""
    out = p.stdout.rsplit(RESULT_MARK, 1)
    if len(out) == 2:
        return json.loads(out[1])
    if p.returncode < 0:
        return {
            "status": "oom" if p.returncode == -SIGKILL else "error",
            "note": f"worker killed by signal {-p.returncode}",
        }
    return {"status": "error", "note": (p.stderr.strip().splitlines() or ["no output"])[-1][:NOTE_CHARS]}


def run_case(spec, *, timeout, as_limit_gb, threads):
    """Run one case in a fresh worker process; adds wall_s and the 1-minute load at the start."""
    spec = {**spec, "as_limit_gb": as_limit_gb}
    load = os.getloadavg()[0]
    env = _worker_env(spec.get("threads", threads))
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable, str(SCRIPT), "--worker", json.dumps(spec)],
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
    res = _worker_result(p)
    res["wall_s"] = time.perf_counter() - t0
    res["load1"] = load
    return res


@dataclass
class Runner:
    """Runs cases (or records their skip), prints a line per case, collects the rows."""

    timeout: float
    as_limit_gb: float
    threads: int
    rows: list = field(default_factory=list)
    agreement: list = field(default_factory=list)

    def run(self, spec, timeout=None):
        return run_case(spec, timeout=timeout or self.timeout, as_limit_gb=self.as_limit_gb, threads=self.threads)

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
        res = {"status": skip[0], "note": skip[1]} if skip else self.run(spec, timeout)
        row = {**base, **{k: v for k, v in res.items() if k != "extra"}, "extra": res.get("extra", {})}
        self.rows.append(row)
        _print_row(row)
        return row


def _print_row(row):
    t = row.get("time_s")
    tt = f"{t:9.3f} s" if isinstance(t, float) else f"{'':11s}"
    pk = row.get("peak_rss_mb")
    pm = f"{pk:8.0f} MB" if isinstance(pk, float) and pk == pk else ""
    print(
        f"[{time.strftime('%H:%M:%S')}] {row['group']:12s} {row['case']:34s} {row['impl']:24s} {row['status']:13s} "
        f"{tt} {pm} {row.get('note', '')}",
        flush=True,
    )


# --------------------------------------------------------------------------- guards
def predicted_mb(n, d, n_dense, input_copies, baseline_mb):
    """Predicted peak RSS: n_dense dense n x n and input_copies n x d float64 arrays over the import baseline."""
    return (n_dense * n * n * BYTES_PER_FLOAT + input_copies * n * d * BYTES_PER_FLOAT) / MB + baseline_mb


def memory_skip(pred_mb, max_mem_gb, n_dense=None):
    """A skipped_memory record if the prediction exceeds the limit, else None."""
    if pred_mb <= max_mem_gb * MB_PER_GB:
        return None
    dense = "" if n_dense is None else f" (~{n_dense} dense n x n)"
    return ("skipped_memory", f"predicted {pred_mb / MB_PER_GB:.1f} GB{dense} > {max_mem_gb:g} GB")


def availability_skip(avail, method):
    return None if avail.get(method) is True else ("not_available", str(avail.get(method)))


@dataclass
class Series:
    """A scaling series: predicts a size's time from the last measured one (time ~ n^power)."""

    power: int
    limit_s: float
    suffix: str = ""  # appended to the skip note, e.g. " (~n^3)"
    stopped: tuple = STOPPED
    last: tuple | None = None  # (n, seconds); seconds = inf after a stop

    def skip(self, n):
        if self.last is None:
            return None
        n0, t0 = self.last
        guess = t0 * (n / n0) ** self.power
        if math.isinf(guess):
            return ("skipped_time", f"timed out at n={n0}")
        if guess > self.limit_s:
            return ("skipped_time", f"predicted {guess:.0f} s > {self.limit_s:.0f} s from n={n0}{self.suffix}")
        return None

    def record(self, n, row):
        if row["status"] == "ok":
            self.last = (n, row["time_s"])
        elif row["status"] in self.stopped:
            self.last = (n, float("inf"))


# --------------------------------------------------------------------------- groups
@dataclass
class Plan:
    """What every group needs: the settings, the inputs and the run's state."""

    args: object  # the parsed command line
    names: list  # input names
    dinfo: dict  # {name: {"shape": (n, d), "source": str}}
    avail: dict  # {method: True or import error}
    idle_mb: float  # import baseline of a worker

    @property
    def quick(self):
        return self.args.quick


def run_datasets(R, plan):
    """Graph, Laplacian score given W, and graph + Laplacian score on every input."""
    for ds in plan.names:
        n, d = plan.dinfo[ds]["shape"]
        spec = {"dataset": ds, "n_samples": n, "n_features": d}
        # SYNTH_BIG: LS and graph + LS are in ls_scaling (n = BIG_N); only the graph here
        for kind in ("graph",) if ds == SYNTH_BIG else ("graph", "ls", "graph+ls"):
            R.add("datasets", f"{ds} {n}x{d}", f"glfs {kind}", {**spec, "kind": kind})


def _ls_case(R, plan, n, impl, kind, n_dense, series):
    spec = {"dataset": SYNTH_QUICK if plan.quick else SYNTH_BIG, "n_samples": n, "n_features": BIG_D, "kind": kind}
    if impl.endswith(TWO_THREADS_SUFFIX):
        spec["threads"] = TWO_THREADS
    pred = predicted_mb(n, BIG_D, n_dense, LS_INPUT_COPIES, plan.idle_mb)
    skip = (memory_skip(pred, plan.args.max_mem_gb) if n_dense else None) or series.skip(n)
    row = R.add("ls_scaling", f"n={n} d={BIG_D}", impl, spec, predicted_mb=pred if n_dense else float("nan"), skip=skip)
    series.record(n, row)


def run_ls_scaling(R, plan):
    """Graph + Laplacian score: glfs vs the naive dense formula vs scikit-feature on growing n."""
    # dense O(n^2) per feature (naive), O(n^2 d) products (skfeature): time ~ n^2
    series = {impl: Series(power=2, limit_s=plan.args.timeout, stopped=("timeout", "oom")) for impl, _, _ in LS_IMPLS}
    for n in LS_SIZES_QUICK if plan.quick else LS_SIZES:
        for impl, kind, n_dense in LS_IMPLS:
            _ls_case(R, plan, n, impl, kind, n_dense, series[impl])


def run_ls_agreement(R, plan):
    """Scores of glfs vs the naive formula and scikit-feature (not timed)."""
    big = SYNTH_QUICK if plan.quick else SYNTH_BIG
    for ds, n in [(ds, None) for ds in REAL_DATASETS] + [(big, AGREEMENT_N)]:
        spec = {"kind": "agreement", "dataset": ds, "n_samples": n, "n_features": BIG_D if n else None}
        res = R.run(spec)
        res["dataset"] = ds
        R.agreement.append(res)
        print(f"agreement {ds}: {res}", flush=True)


def run_lapaofs(R, plan):
    """glfs.lapaofs against the naive re-inversion (time ~ n^3)."""
    series = Series(power=3, limit_s=plan.args.timeout, suffix=" (~n^3)")
    for n in LAPAOFS_SIZES_QUICK if plan.quick else LAPAOFS_SIZES:
        spec = {
            "dataset": SYNTH_WIDE,
            "n_samples": n,
            "n_features": LAPAOFS_D,
            "n_select": LAPAOFS_SELECT,
            "k": LAPAOFS_N_NEIGHBORS,
        }
        case = f"n={n} d={LAPAOFS_D} k={LAPAOFS_SELECT}"
        skip = availability_skip(plan.avail, "lapaofs")
        R.add("lapaofs", case, "glfs.lapaofs", spec if skip else {**spec, "kind": "lapaofs"}, skip=skip)
        row = R.add("lapaofs", case, "naive re-inversion", {**spec, "kind": "naive_lapaofs"}, skip=series.skip(n))
        series.record(n, row)


def run_glfs_slope(R, plan):
    """glfs.glfs_objective (value + gradient) at fixed n on growing d."""
    skip = availability_skip(plan.avail, "glfs_exact")
    for obj in SLOPE_OBJECTIVES:
        for d in SLOPE_DS_QUICK if plan.quick else SLOPE_DS:
            spec = {"dataset": SYNTH_WIDE, "n_samples": SLOPE_N, "n_features": d, "kind": "glfs_objective"}
            R.add("glfs_slope", f"n={SLOPE_N} d={d}", f"glfs_objective {obj}", {**spec, "objective": obj}, skip=skip)


def _select_case(R, plan, group, ds, n, d, method, series=None):
    """glfs.select(method) on the first n x d of input ds, behind the availability, memory and time guards."""
    spec = {"dataset": ds, "n_samples": n, "n_features": d, "kind": "select", "method": method, "n_select": N_SELECT}
    k = NN_DENSE.get(method, 0)
    pred = predicted_mb(n, d, k, SELECT_INPUT_COPIES, plan.idle_mb)
    skip = (
        availability_skip(plan.avail, method)
        or (memory_skip(pred, plan.args.max_mem_gb, k) if k else None)
        or (series.skip(n) if series else None)
    )
    case = f"{ds} {n}x{d}" if group == "methods" else f"n={n} d={d}"
    return R.add(
        group,
        case,
        method,
        spec,
        predicted_mb=pred if k else float("nan"),
        skip=skip,
        timeout=plan.args.method_timeout,
    )


def run_methods(R, plan):
    """Every name in glfs.METHODS through glfs.select on every input (quick: real inputs + the wide one)."""
    import glfs

    for ds in [x for x in plan.names if x != SYNTH_QUICK]:
        n, d = plan.dinfo[ds]["shape"]
        for m in glfs.METHODS:
            _select_case(R, plan, "methods", ds, n, d, m)


def run_nn_scaling(R, plan):
    """The O(n^2)-memory methods on growing n (time ~ n^3): where they stop fitting. Not in --quick."""
    if plan.quick:
        return
    for m in NN_METHODS:
        series = Series(power=3, limit_s=plan.args.method_timeout, suffix=" (~n^3)")
        for n in NN_SIZES:
            series.record(n, _select_case(R, plan, "nn_scaling", SYNTH_BIG, n, NN_D, m, series))


GROUP_RUNS = {  # one per name in GROUPS
    "datasets": run_datasets,
    "ls_scaling": run_ls_scaling,
    "ls_agreement": run_ls_agreement,
    "lapaofs": run_lapaofs,
    "glfs_slope": run_glfs_slope,
    "methods": run_methods,
    "nn_scaling": run_nn_scaling,
}


# --------------------------------------------------------------------------- a whole run
def input_names(quick):
    """The inputs of a run: real data, the wide synthetic matrix, and the big one (quick: a 2,000-row stand-in)."""
    return REAL_DATASETS + [SYNTH_WIDE] + ([SYNTH_QUICK] if quick else [SYNTH_BIG])


def measure_run(args) -> RunResults:
    """Run the groups named in ``args.only`` (in GROUPS order); returns the rows and the run's description."""
    from bench.datasets import prepare_datasets
    from bench.machine import machine_info, method_availability

    t_start = time.perf_counter()
    load_start = os.getloadavg()
    names = input_names(args.quick)
    print(f"preparing inputs in {CACHE} ...", flush=True)
    dinfo = prepare_datasets(names)
    minfo = machine_info()
    avail = method_availability()
    R = Runner(timeout=args.timeout, as_limit_gb=args.as_limit_gb, threads=args.threads)
    idle = run_case({"kind": "idle"}, timeout=IDLE_TIMEOUT_S, as_limit_gb=0, threads=args.threads)
    print(f"idle worker (imports only): RSS {idle.get('rss_mb', float('nan')):.0f} MB", flush=True)
    plan = Plan(args=args, names=names, dinfo=dinfo, avail=avail, idle_mb=idle.get("rss_mb", 0))
    for group in GROUPS:
        if group in args.only:
            GROUP_RUNS[group](R, plan)
    total = time.perf_counter() - t_start
    minfo.update(load_start=load_start, load_end=os.getloadavg(), threads=args.threads)
    return RunResults(
        rows=R.rows,
        agreement=R.agreement,
        dinfo=dinfo,
        minfo=minfo,
        avail=avail,
        idle=idle,
        total=total,
        only=args.only,
        quick=args.quick,
        **{k: getattr(args, k) for k in LIMITS},
    )
