"""``run_benchmarks.md`` from the results of a run (:class:`bench.results.RunResults`).

:func:`summary_md` joins one section per group; each section function
returns its Markdown lines (an empty list when the group has no rows).
Nothing here measures anything: the same results give the same summary.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from bench.results import RunResults, result_path
from bench.settings import (
    BIG_D,
    BIG_N,
    BYTES_PER_FLOAT,
    GB,
    GOAL_MEM_MB,
    GOAL_SPEEDUP,
    GOAL_TIME_S,
    GROUPS,
    LAPAOFS_D,
    LAPAOFS_LAMBDA,
    LAPAOFS_N_NEIGHBORS,
    LAPAOFS_SELECT,
    LS_IMPLS,
    MB,
    MB_PER_GB,
    N_NEIGHBORS,
    N_SELECT,
    NN_DENSE,
    SLOPE_N,
    SYNTH_BIG,
)

BIG_CASE = f"n={BIG_N} d={BIG_D}"  # the goal size in ls_scaling
BIG_DATASET_CASE = f"{SYNTH_BIG} {BIG_N}x{BIG_D}"  # ... and in the datasets group
BIG_INPUT_MB = BIG_N * BIG_D * BYTES_PER_FLOAT / MB
DENSE_GB_AT_BIG = BIG_N**2 * BYTES_PER_FLOAT / 1e9  # one dense BIG_N x BIG_N float64 matrix, decimal GB
RATIO_PAIRS = (  # (peer, ours) in the ls_scaling ratios
    ("skfeature graph+ls", "glfs graph+ls"),
    ("naive_dense ls", "glfs ls"),
    ("skfeature ls", "glfs ls"),
)
DENSE_PEERS = {impl: n_dense for impl, _, n_dense in LS_IMPLS if n_dense}  # extrapolated to BIG_N
MS_PER_S = 1e3
GENES_PER_STEP = 1000  # the slope's linear fit is reported per this many genes
TINY = 1e-300  # floor of a variance in R^2
NOTE_CELL_CHARS = 110  # a method-table cell with a note is cut to this length
GLFS_SLOPE_STATUS_CHARS = 80

AGREEMENT_HEADER = (
    "| input | n x d | max abs diff glfs vs naive | max rel diff | skfeature on our W: same order | "
    "skfeature own graph: W_sk - (W + I) | skfeature own graph: same order as naive(W + I) | "
    "Spearman(skfeature own, glfs) | top-100 overlap | skfeature mode='rank' = correct ranks / = d-1-order |"
)
AGREEMENT_READING = (
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
MACHINE_THREADS_NOTE = (
    "(set through OMP/OPENBLAS_NUM_THREADS; rows named '2 threads' use 2). Under load, multi-threaded OpenBLAS "
    "on small matrices can be tens of times slower than one thread, so the comparisons use one thread per worker. "
)
MACHINE_MEMORY_NOTE = (
    "Memory columns: `peak_rss_mb` = process peak during the call (includes this baseline and the input), "
    "`peak_delta_mb` (in brackets below) = peak minus RSS just before the call. Times: best of up to 7 "
    "repeats (at least 3 when a call takes under 2 s, else a single run); each case in a fresh process. "
    "Other jobs shared the 2 cores during this run (column `load1` in the TSV = 1-minute load average "
    "when the case started), so single-run times are upper bounds.\n"
)


# --------------------------------------------------------------------------- cells
def fit_loglog(xs, ys):
    """Slope and intercept of log y on log x (NaN, NaN with fewer than two points)."""
    xs, ys = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    if xs.size < 2:
        return float("nan"), float("nan")
    b, a = np.polyfit(xs, ys, 1)
    return float(b), float(a)


def find_row(rows, group, case=None, impl=None):
    """The first row of ``group`` (and ``case``, ``impl`` if given), or None."""
    for r in rows:
        if r["group"] == group and (case is None or r["case"] == case) and (impl is None or r["impl"] == impl):
            return r
    return None


def time_cell(r):
    if r is None:
        return "-"
    if r["status"] != "ok":
        return r["status"]
    return f"{r['time_s']:.3g} s"


def memory_cell(r):
    if r is None or r["status"] != "ok" or r.get("peak_rss_mb") != r.get("peak_rss_mb"):
        return "-"
    return f"{r['peak_rss_mb']:.0f} MB (+{r['peak_delta_mb']:.0f})"


def method_cell(r) -> str:
    if r is None:
        return "-"
    if r["status"] == "ok":
        return f"{time_cell(r)}<br>{memory_cell(r)}"
    if r["status"] == "not_available":
        return "not available"
    if r["status"] == "timeout" or not r.get("note"):
        return r["status"]
    return f"{r['status']}: {r['note']}"[:NOTE_CELL_CHARS]


def scaling_cell(r) -> str:
    if r and r["status"] == "ok":
        return f"{time_cell(r)}<br>{memory_cell(r)}"
    return f"{r['status']}: {r.get('note', '')}" if r else "-"


def _unique(values):
    return list(dict.fromkeys(values))


def method_table(all_rows, group, rows):
    """Markdown table: one row per method (impl), one column per case."""
    cases = _unique(r["case"] for r in rows)
    lines = ["| method | " + " | ".join(cases) + " |", "|---|" + "---|" * len(cases)]
    for m in _unique(r["impl"] for r in rows):
        lines.append(f"| {m} | " + " | ".join(method_cell(find_row(all_rows, group, c, m)) for c in cases) + " |")
    return lines


def group_section(group):
    """Decorate ``section(res, rows)``: called with the rows of ``group``, and [] when it has none."""

    def wrap(section):
        @functools.wraps(section)
        def with_rows(res: RunResults):
            rows = [r for r in res.rows if r["group"] == group]
            return section(res, rows) if rows else []

        return with_rows

    return wrap


def _loads(xs):
    return ", ".join(f"{x:.1f}" for x in xs)


# --------------------------------------------------------------------------- header, machine, inputs
def header_section(res: RunResults):
    quick = " --quick" if res.quick else ""
    only = "" if set(res.only) == set(GROUPS) else " --only " + " ".join(res.only)
    lines = [
        f"# glfs benchmarks{' (quick)' if res.quick else ''}\n",
        f"Generated by `python benchmarks/run_benchmarks.py{quick}{only}` at {res.minfo['date']} "
        f"(git {res.minfo['git']}), total {res.total / 60:.1f} min. See `benchmarks/README.md` for the method.\n",
    ]
    runs = sorted({r.get("run_at", "") for r in res.rows} - {""})
    if len(runs) > 1:
        lines.append(
            f"Rows come from {len(runs)} invocations ({', '.join(runs)}; column `run_at` in the TSV): groups not "
            "named in a partial re-run (`--only`) are kept from the earlier run.\n"
        )
    return lines


def machine_section(res: RunResults):
    m = res.minfo
    return [
        "## Machine\n",
        f"- CPU: {m['cpu']}, {m['cpu_count']} logical CPUs ({m['affinity']} usable), RAM {m['ram']}",
        f"- Python {m['python']}, numpy {m['numpy']}, scipy {m['scipy']}, scikit-learn {m['scikit-learn']}, "
        f"skfeature-chappers {m['skfeature-chappers']}",
        "- BLAS / OpenMP (threadpoolctl): " + "; ".join(m["blas"]),
        f"- Platform: {m['platform']}",
        f"- BLAS/OpenMP threads per worker: {m.get('threads') or 'library default (all cores)'} "
        + MACHINE_THREADS_NOTE
        + f"Load average (1, 5, 15 min) at start {_loads(m['load_start'])}, at end {_loads(m['load_end'])}",
        f"- Idle worker (same imports, no data): RSS {res.idle.get('rss_mb', float('nan')):.0f} MB. "
        + MACHINE_MEMORY_NOTE,
    ]


def inputs_section(res: RunResults):
    lines = ["## Inputs (samples x genes)\n"]
    lines += [f"- `{k}`: {v['shape'][0]} x {v['shape'][1]} ({v['source']})" for k, v in res.dinfo.items()]
    return [*lines, ""]


# --------------------------------------------------------------------------- datasets
@group_section("datasets")
def datasets_section(res: RunResults, rows):
    lines = [
        "## Graph and Laplacian score on each input\n",
        "| input | graph | Laplacian score (given W) | graph + LS | peak memory graph + LS |",
        "|---|---|---|---|---|",
    ]
    for case in _unique(r["case"] for r in rows):
        g, ls, gl = (find_row(res.rows, "datasets", case, f"glfs {k}") for k in ("graph", "ls", "graph+ls"))
        if case.startswith(SYNTH_BIG):  # LS and graph + LS at this size are in ls_scaling
            ls = find_row(res.rows, "ls_scaling", BIG_CASE, "glfs ls") or ls
            gl = find_row(res.rows, "ls_scaling", BIG_CASE, "glfs graph+ls") or gl
        lines.append(f"| {case} | {time_cell(g)} | {time_cell(ls)} | {time_cell(gl)} | {memory_cell(gl)} |")
    return [*lines, ""]


# --------------------------------------------------------------------------- ls_scaling
def _series(rows, impl):
    """Sorted (n, time_s, peak_rss_mb) of the ok rows of ``impl``."""
    return sorted(
        (int(r["n_samples"]), r["time_s"], r["peak_rss_mb"]) for r in rows if r["impl"] == impl and r["status"] == "ok"
    )


def ls_table(res, rows):
    impls = _unique(r["impl"] for r in rows)
    lines = ["| size | " + " | ".join(impls) + " |", "|---|" + "---|" * len(impls)]
    for c in _unique(r["case"] for r in rows):
        lines.append(
            f"| {c} | " + " | ".join(scaling_cell(find_row(res.rows, "ls_scaling", c, i)) for i in impls) + " |"
        )
    return [*lines, ""]


def ls_ratios(sers):
    lines = ["**Ratios (peer time / glfs time) at the largest size where both ran:**\n"]
    for peer, ours in RATIO_PAIRS:
        a = {n: t for n, t, _ in sers.get(peer, [])}
        b = {n: t for n, t, _ in sers.get(ours, [])}
        common = sorted(set(a) & set(b))
        if common:
            n = common[-1]
            lines.append(f"- {peer} vs {ours} at n = {n}: {a[n]:.3g} s / {b[n]:.3g} s = **{a[n] / b[n]:.1f}x**")
    return [*lines, ""]


def ls_extrapolation(sers):
    lines = [
        f"**Extrapolation to {BIG_N:,} samples (EXTRAPOLATED, not measured):** log-log fit of time on n over the "
        "measured sizes; memory from the dense n x n matrices the implementation builds.\n"
    ]
    for impl, nd in DENSE_PEERS.items():
        pts = sers.get(impl, [])
        if not pts or any(p[0] == BIG_N for p in pts):
            continue
        if len(pts) < 2:
            lines.append(f"- {impl}: only one size measured; not extrapolated")
            continue
        b, a = fit_loglog([p[0] for p in pts], [p[1] for p in pts])
        lines.append(
            f"- {impl}: slope {b:.2f} from n = {', '.join(str(p[0]) for p in pts)}; extrapolated "
            f"time at {BIG_N:,} x {BIG_D:,} about {math.exp(a) * BIG_N**b:.0f} s; >= {nd} dense {BIG_N:,}^2 float64 "
            f"matrices = {nd * DENSE_GB_AT_BIG:.1f} GB (did not run: see table)"
        )
    return lines


def _goal_time_line(res, t, t2):
    """Goal 1: graph + Laplacian score at BIG_N x BIG_D under GOAL_TIME_S (t: 1 thread, t2: 2 threads or None)."""
    r20 = find_row(res.rows, "ls_scaling", BIG_CASE, "glfs graph+ls")
    g20 = find_row(res.rows, "datasets", BIG_DATASET_CASE, "glfs graph")
    best = min(t, t if t2 is None else t2)
    two = "" if t2 is None else f", {t2:.2f} s with 2 threads"
    knn = ""
    if g20 and g20["status"] == "ok":
        knn = f"; the kNN graph alone takes {g20['time_s']:.1f} s (brute-force kNN is O(n^2 d) = 1.6e12 flops here)"
    return (
        f"- graph + Laplacian score on {BIG_N:,} x {BIG_D:,} under {GOAL_TIME_S:g} s: {t:.2f} s wall with 1 thread "
        f"(CPU {r20.get('cpu_first_s', float('nan')):.1f} s, load {r20.get('load1', float('nan')):.1f})"
        f"{two} -> {'met' if best < GOAL_TIME_S else 'NOT met'}{knn}"
    )


def _goal_memory_line(res, m):
    return (
        f"- ... and under {GOAL_MEM_MB / MB_PER_GB:g} GB: peak RSS {m:.0f} MB (process total incl. "
        f"{res.idle.get('rss_mb', 0):.0f} MB imports and the {BIG_INPUT_MB:.0f} MB input) -> "
        f"{'met' if m < GOAL_MEM_MB else 'NOT met'}"
    )


def _goal_speedup_lines(res, t, pts):
    """Goal 3: GOAL_SPEEDUP times faster than skfeature at BIG_N (measured, else extrapolated)."""
    if not pts:
        return []
    what = f"- >= {GOAL_SPEEDUP}x faster than skfeature at {BIG_N:,}"
    measured = {p[0]: p[1] for p in pts}
    if BIG_N in measured:
        return [f"{what}: {measured[BIG_N] / t:.1f}x (measured)"]
    b, a = fit_loglog([p[0] for p in pts], [p[1] for p in pts]) if len(pts) >= 2 else (float("nan"), 0)
    if b != b:
        return []
    tp = math.exp(a) * BIG_N**b
    return [
        f"{what}: about {tp / t:.0f}x (EXTRAPOLATED peer time "
        f"{tp:.0f} s; the peer does not fit in {res.max_mem_gb:g} GB there)"
    ]


def ls_goals(res, sers):
    lines = ["", "**Goals (reported, not asserted):**\n"]
    ours = {n: (t, m) for n, t, m in sers.get("glfs graph+ls", [])}
    ours2 = {n: t for n, t, _ in sers.get("glfs graph+ls 2 threads", [])}
    if BIG_N not in ours:
        return [*lines, f"- {BIG_N:,} x {BIG_D:,} not run in this mode", ""]
    t, m = ours[BIG_N]
    lines.append(_goal_time_line(res, t, ours2.get(BIG_N)))
    lines.append(_goal_memory_line(res, m))
    lines += _goal_speedup_lines(res, t, sers.get("skfeature graph+ls", []))
    return [*lines, ""]


@group_section("ls_scaling")
def ls_scaling_section(res: RunResults, rows):
    lines = [
        "## Laplacian score: glfs vs naive dense formula vs scikit-feature\n",
        f"Samples x {BIG_D} genes (rows of the synthetic matrix). kNN {N_NEIGHBORS}, heat kernel; skfeature's graph uses "
        "the same width (t_sk = sqrt(t/2)) but includes self-loops (see agreement). "
        "`ls` = scores given the graph; `graph+ls` = both. Time / peak RSS (+extra).\n",
    ]
    sers = {i: _series(rows, i) for i in _unique(r["impl"] for r in rows)}
    return lines + ls_table(res, rows) + ls_ratios(sers) + ls_extrapolation(sers) + ls_goals(res, sers)


# --------------------------------------------------------------------------- ls_agreement
def agreement_row(a):
    if a.get("status") != "ok":
        return f"| {a['dataset']} | {a.get('status')}: {a.get('note', '')} |"
    return (
        f"| {a['dataset']} | {int(a['n_samples'])} x {int(a['n_features'])} | {a['max_abs_diff_glfs_vs_naive']:.2e} | "
        f"{a['max_rel_diff_glfs_vs_naive']:.2e} | {a['sk_same_graph_order_equal_frac']:.3f} "
        f"(Spearman {a['sk_same_graph_spearman']:.4f}) | {a['sk_own_graph_max_abs_diff_W_vs_Wglfs_plus_I']:.1e} | "
        f"{a['sk_own_graph_order_equal_frac_vs_naive_W_plus_I']:.3f} | {a['sk_own_graph_spearman_vs_glfs']:.4f} | "
        f"{a['sk_own_graph_top100_overlap_vs_glfs']:.2f} | {a['sk_rank_mode_equals_proper_ranks_frac']:.3f} / "
        f"{a['sk_rank_mode_equals_garbled_frac']:.3f} |"
    )


def agreement_section(res: RunResults):
    if not res.agreement:
        return []
    lines = ["## Agreement of scores\n", AGREEMENT_HEADER, "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [agreement_row(a) for a in res.agreement]
    return [*lines, "", AGREEMENT_READING]


# --------------------------------------------------------------------------- lapaofs
def _same_order(a, b):
    oa, ob = a["extra"].get("order"), b["extra"].get("order")
    return "yes" if oa == ob else f"no ({sum(x == y for x, y in zip(oa, ob))}/{len(ob)} positions)"


def lapaofs_row(res, case):
    a = find_row(res.rows, "lapaofs", case, "glfs.lapaofs")
    b = find_row(res.rows, "lapaofs", case, "naive re-inversion")
    both = a and b and a["status"] == b["status"] == "ok"
    ratio = f"{b['time_s'] / a['time_s']:.0f}x" if both else "-"
    same = _same_order(a, b) if both else "-"
    return f"| {case} | {time_cell(a)} | {time_cell(b)} | {ratio} | {same} |"


@group_section("lapaofs")
def lapaofs_section(res: RunResults, rows):
    lines = [
        "## LapAOFS: glfs greedy vs naive re-inversion\n",
        "`glfs.lapaofs` makes the paper's greedy steps (Eq. 20 with the Sherman-Morrison update Eq. 19) in the "
        "equivalent k x k feature-space form (see `src/glfs/optimal.py`); the naive reference inverts "
        "A_k + g g' for every candidate and evaluates Eq. 17 directly.\n",
        f"Synthetic, {LAPAOFS_N_NEIGHBORS}-NN heat graph, lambda1 = lambda2 = {LAPAOFS_LAMBDA}, "
        f"select k = {LAPAOFS_SELECT} of {LAPAOFS_D} genes.\n",
        "| size | glfs.lapaofs | naive re-inversion | ratio | same selection order |",
        "|---|---|---|---|---|",
    ]
    lines += [lapaofs_row(res, c) for c in _unique(r["case"] for r in rows)]
    return [*lines, ""]


# --------------------------------------------------------------------------- glfs_slope
def slope_line(impl, rows):
    """Times in d of one objective, log-log slope and a linear fit."""
    pts = [(int(r["n_features"]), r["time_s"]) for r in rows if r["impl"] == impl and r["status"] == "ok"]
    cells = (
        ", ".join(f"d={d}: {t * MS_PER_S:.1f} ms" for d, t in pts)
        or ", ".join(f"{r['status']}" for r in rows if r["impl"] == impl)[:GLFS_SLOPE_STATUS_CHARS]
    )
    if len(pts) < 2:
        return f"- {impl}: {cells}"
    b, _ = fit_loglog(*zip(*pts))
    dd, tt = (np.asarray(v, float) for v in zip(*pts))
    lin_b, lin_a = np.polyfit(dd, tt, 1)
    r2 = 1 - np.sum((tt - (lin_a + lin_b * dd)) ** 2) / max(np.sum((tt - tt.mean()) ** 2), TINY)
    return (
        f"- {impl}: {cells}; log-log slope **{b:.2f}** (1 = linear in d; below 1 when the "
        f"d-independent O(n^3) part still weighs); linear fit t = {lin_a * MS_PER_S:.1f} ms + "
        f"{lin_b * (MS_PER_S * GENES_PER_STEP):.2f} ms per {GENES_PER_STEP} genes (R^2 {r2:.2f})"
    )


@group_section("glfs_slope")
def glfs_slope_section(res: RunResults, rows):
    lines = [f"## GLFS objective + gradient: cost in d (fixed n = {SLOPE_N})\n"]
    lines += [slope_line(impl, rows) for impl in _unique(r["impl"] for r in rows)]
    return [*lines, ""]


# --------------------------------------------------------------------------- methods, nn_scaling
def guard_limits_line(max_mem_gb):
    """Largest n whose predicted dense n x n matrices fit under the memory guard, per method."""
    lim = max_mem_gb * GB
    return (
        "Largest n under the memory guard (predicted dense n x n matrices only): "
        + "; ".join(
            f"`{m}` ~{k} matrices -> n <= {int(math.sqrt(lim / (BYTES_PER_FLOAT * k))):,}" for m, k in NN_DENSE.items()
        )
        + ".\n"
    )


@group_section("methods")
def methods_section(res: RunResults, rows):
    lines = [
        f"## Every method through `glfs.select(X, method=m, graph=W, n_features={N_SELECT})`\n",
        "Graph built beforehand (not timed). Time / peak RSS (+extra). Memory guard: skipped when ~k dense n x n "
        f"matrices are predicted to exceed {res.max_mem_gb:g} GB; time limit {res.method_timeout:.0f} s per case.\n",
        *method_table(res.rows, "methods", rows),
        "",
        guard_limits_line(res.max_mem_gb),
    ]
    na = [m for m, v in res.avail.items() if v is not True]
    if na:
        lines.append("Not importable at run time: " + ", ".join(f"`{m}`" for m in na) + ".\n")
    return lines


@group_section("nn_scaling")
def nn_scaling_section(res: RunResults, rows):
    return [
        "## Methods with O(n^2) memory: where they stop fitting\n",
        f"`glfs.select(..., n_features={N_SELECT})` on the first n rows of the {BIG_N:,} x {BIG_D:,} matrix; a size is "
        f"skipped when predicted (~n^3 from the previous size) to exceed {res.method_timeout:.0f} s or when the "
        f"dense n x n matrices are predicted to exceed {res.max_mem_gb:g} GB.\n",
        *method_table(res.rows, "nn_scaling", rows),
        "",
    ]


# --------------------------------------------------------------------------- the summary
SECTIONS = (
    header_section,
    machine_section,
    inputs_section,
    datasets_section,
    ls_scaling_section,
    agreement_section,
    lapaofs_section,
    glfs_slope_section,
    methods_section,
    nn_scaling_section,
)


def summary_md(res: RunResults) -> str:
    """The Markdown summary of a run: machine, inputs, one section per group that has rows."""
    lines = [line for section in SECTIONS for line in section(res)]
    return "\n".join(lines) + "\n"


def write_summary(res: RunResults, out) -> None:
    """Write ``run_benchmarks.md`` (``run_benchmarks_quick.md`` for --quick) into ``out``."""
    result_path(out, "summary", res.quick).write_text(summary_md(res))
