"""Every single-cell gene selection, on simulated counts and the shared real set, judged as a scanpy user would.

    python benchmarks/singlecell_selection.py                  # default grid + mouse bladder (~15-20 min on 2 cores)
    python benchmarks/singlecell_selection.py --quick          # one small setting + mouse bladder (a few minutes)
    python benchmarks/singlecell_selection.py --full           # the bigger grid (hours)
    python benchmarks/singlecell_selection.py --methods NAME   # add registered methods by name
    python benchmarks/singlecell_selection.py --no-real        # simulated data only
    python benchmarks/singlecell_selection.py --summary-only   # rewrite the .md from the .tsv

Data
----
- Simulated: ``glfs.simulation._scsim.simulate_counts`` (the Splat model of splatter), 2,000 cells
  x 5,000 genes, seeds 0 and 1, over programme strength x group structure:
  ``weak`` (``de_fac_loc`` 0.1, ``de_prob`` 0.05) and ``strong`` (0.3, 0.1), each
  ``balanced`` (five groups of 20 %) and ``rare`` (40/30/20/7/3 %).  Library sizes
  around exp(8) = 3,000 counts per cell (droplet-like; splatter's default exp(11) =
  60,000 is a deep plate protocol, in ``--full``).  The corners were chosen on
  simulated data only (seed 0, all genes and HVG seurat_v3): ``de_prob`` 0.02 at this
  depth gives ARI ~ 0 for every selection (nothing to compare), weak gives all
  genes ~ 0.35-0.5 and strong ~ 0.95.  ``data_kind = simulated``; the programme genes
  (``SimulatedCounts.structured``) are the ground truth.
- Real: the shared mouse-bladder set (Han et al. 2018, 2,100 cells, 16 types;
  ``resources/singlecell/mouse_bladder_2100.h5ad``, X raw counts, labels
  ``obs["cell_type"]``), ``data_kind = development``: a sanity check that the
  team has seen, never a place to tune anything.

Protocol (the same for every selection)
---------------------------------------
``X_lognorm`` = scanpy ``normalize_total`` + ``log1p`` of the counts.  Each method
runs as a scanpy user would run it: ``glfs.select(X_lognorm, m,
n_features_to_select=k_max, counts=counts)`` (graph methods build their own graph,
``glfs.graph._similarity.DEFAULT_GRAPH_PARAMS``, unless named in ``--scanpy-graph``: then
``glfs.tl.select(adata, m, obsp="connectivities")`` on scanpy's standard graph,
HVG seurat 2,000 -> PCA 50 -> 15-NN, whose time is recorded apart).  The
wall time of the call is ``select_seconds``.  Its ranking is evaluated by
``glfs.evaluate.evaluate_ranking_leiden(X_lognorm, labels, ranking,
feature_grid=[500, 2000], n_runs=3)``: Leiden ARI at the best resolution
(``ari``: chosen with the labels, optimistic) and at the cluster count nearest the
number of labels (``ari_nlabels``: the honest one), and NMI.  Beside the methods:
random genes (``--n-random`` seeded draws, ``glfs.evaluate.random_gene_orders``,
evaluation seeded by the draw's seed as the workflow's random floor) and all
genes.  Simulated data also get planted-gene recovery: ``precision_at_k`` (fraction
of the top k that are programme genes) and ``recall_at_k`` (fraction of the
programme genes in the top k).

Selections: every registered method of family "score" that needs no labels, every
"hvg" flavour, the count-based baselines (``needs_counts``: deviance), ``variance``,
and any ``--methods``.

Outputs: ``benchmarks/results/singlecell_selection.tsv`` (one row per data set x
method x k x run; written after every data set, so a stopped run keeps what it
did) and ``singlecell_selection.md`` (mean ARI per method and setting at 500 and
2,000 genes, mean rank, recovery, time; with date, load and versions).  ``--quick``
writes ``singlecell_selection_quick.*``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import time
import warnings
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from bench.singlecell import lognorm, run_selection, scanpy_graph, versions  # benchmarks/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
REAL = ROOT / "resources" / "singlecell" / "mouse_bladder_2100.h5ad"
FEATURE_GRID = (500, 2000)
N_RUNS = 3

BALANCED = (0.2, 0.2, 0.2, 0.2, 0.2)
RARE = (0.4, 0.3, 0.2, 0.07, 0.03)
# name -> simulate_counts parameters (beyond n_cells, n_genes, random_state).
SETTINGS = {
    "weak_balanced": {"de_fac_loc": 0.1, "de_prob": 0.05, "group_prob": BALANCED, "lib_loc": 8.0},
    "weak_rare": {"de_fac_loc": 0.1, "de_prob": 0.05, "group_prob": RARE, "lib_loc": 8.0},
    "strong_balanced": {"de_fac_loc": 0.3, "de_prob": 0.1, "group_prob": BALANCED, "lib_loc": 8.0},
    "strong_rare": {"de_fac_loc": 0.3, "de_prob": 0.1, "group_prob": RARE, "lib_loc": 8.0},
}
# --full adds: the two other corners of strength x programme size, varied strength per group, and few
# programme genes at splatter's default depth (de_prob 0.02 is invisible at 3,000 counts per cell).
FULL_EXTRA = {
    "smallfc_balanced": {"de_fac_loc": 0.1, "de_prob": 0.1, "group_prob": BALANCED, "lib_loc": 8.0},
    "fewgenes_rare": {"de_fac_loc": 0.3, "de_prob": 0.05, "group_prob": RARE, "lib_loc": 8.0},
    "mixed_rare": {
        "de_fac_loc": (0.1, 0.1, 0.2, 0.3, 0.3),
        "de_prob": (0.05, 0.05, 0.1, 0.1, 0.1),
        "group_prob": RARE,
        "lib_loc": 8.0,
    },
    "sparse_deep_rare": {"de_fac_loc": 0.1, "de_prob": 0.02, "group_prob": RARE, "lib_loc": 11.0},
}
QUICK = {"quick_rare": {"de_fac_loc": 0.3, "de_prob": 0.1, "group_prob": RARE, "lib_loc": 8.0}}

COLUMNS = [
    "data",
    "data_kind",
    "setting",
    "seed",
    "method",
    "draw",
    "n_features",
    "run",
    "ari",
    "ari_nlabels",
    "nmi",
    "nmi_nlabels",
    "precision_at_k",
    "recall_at_k",
    "select_seconds",
    "graph_seconds",
    "n_cells",
    "n_genes",
    "n_programme",
    "params",
    "status",
    "load1",
]
NOT_METHODS = ("random", "all_genes")

log = logging.getLogger("singlecell_selection")


# ---- selections ---------------------------------------------------------------------------


def default_methods() -> list[str]:
    """Registered unsupervised graph/gene scores, scanpy's HVG flavours, count baselines, variance."""
    import glfs

    out = []
    for name, m in glfs.METHODS.items():
        if (
            (m.family == "score" and not m.needs_labels)
            or m.family == "hvg"
            or (m.family == "baseline" and m.needs_counts)
        ):
            out.append(name)
    return out + (["variance"] if "variance" not in out else [])


# ---- one data set ---------------------------------------------------------------------------


def evaluate_dataset(
    data, kind, setting, params, seed, counts, labels, structured, methods, args, scanpy_graph_methods
):
    """Rows of every selection on one data set."""
    from glfs.evaluate import evaluate_ranking_leiden, random_gene_orders

    n, d = counts.shape
    grid = [k for k in FEATURE_GRID if k < d] or [d]
    k_max = max(grid)
    t0 = time.perf_counter()
    Xl = lognorm(counts)
    log.info("%s: %d cells x %d genes, lognorm %.1f s", data, n, d, time.perf_counter() - t0)
    common = {
        "data": data,
        "data_kind": kind,
        "setting": setting,
        "seed": seed,
        "n_cells": n,
        "n_genes": d,
        "n_programme": int(structured.sum()) if structured is not None else np.nan,
        "params": json.dumps(params, sort_keys=True),
    }
    rows = []

    def add(method, draw, ranking, records, select_s, graph_s=np.nan, status="ok"):
        for r in records:
            k = r["n_features"]
            prec = rec = np.nan
            if structured is not None:
                hit = structured[ranking[:k]].sum()
                prec, rec = hit / k, hit / max(1, structured.sum())
            rows.append(
                {
                    **common,
                    "method": method,
                    "draw": draw,
                    "n_features": k,
                    "run": r["run"],
                    "ari": r["ari"],
                    "ari_nlabels": r["ari_nlabels"],
                    "nmi": r["nmi"],
                    "nmi_nlabels": r["nmi_nlabels"],
                    "precision_at_k": prec,
                    "recall_at_k": rec,
                    "select_seconds": select_s,
                    "graph_seconds": graph_s,
                    "status": status,
                    "load1": os.getloadavg()[0],
                }
            )

    adata_graph, graph_s = (None, np.nan)
    if scanpy_graph_methods & set(methods):
        adata_graph, graph_s = scanpy_graph(Xl, seed)
    for m in methods:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # constant genes, scanpy's notes: not the benchmark's business
                ranking, sec = run_selection(
                    m, Xl, counts, k_max, seed, adata_graph if m in scanpy_graph_methods else None
                )
        except Exception as exc:  # a failing method is recorded, the run goes on
            log.warning("%s: %s failed: %s", data, m, exc)
            rows.append(
                {
                    **common,
                    "method": m,
                    "draw": np.nan,
                    "n_features": np.nan,
                    "run": np.nan,
                    "status": f"error: {type(exc).__name__}: {exc}"[:300],
                    "load1": os.getloadavg()[0],
                }
            )
            continue
        recs = evaluate_ranking_leiden(Xl, labels, ranking, feature_grid=grid, n_runs=args.n_runs, random_state=seed)
        add(m, np.nan, ranking, recs, sec, graph_s if m in scanpy_graph_methods else np.nan)
        log.info(
            "%s: %-22s select %6.2f s, ARI %s",
            data,
            m,
            sec,
            " ".join(f"{k}:{np.mean([r['ari'] for r in recs if r['n_features'] == k]):.3f}" for k in grid),
        )
    for i, (s_i, order) in enumerate(random_gene_orders(d, args.n_random, seed)):
        recs = evaluate_ranking_leiden(Xl, labels, order, feature_grid=grid, n_runs=args.n_runs, random_state=s_i)
        add("random", i, order, recs, 0.0)
    recs = evaluate_ranking_leiden(
        Xl, labels, np.arange(d), feature_grid=("all",), n_runs=args.n_runs, random_state=seed
    )
    add("all_genes", np.nan, np.arange(d), recs, 0.0)
    log.info("%s: done in %.0f s", data, time.perf_counter() - t0)
    return rows


# ---- summary -------------------------------------------------------------------------------


def _table(df, value, order):
    """Mean of `value` per method (rows) and setting x k (columns); all_genes at its one k."""
    ok = df[df["status"] == "ok"].copy()
    ok["col"] = ok["setting"] + " " + ok["n_features"].map(lambda k: f"k={int(k)}")
    ok.loc[ok["method"] == "all_genes", "col"] = ok["setting"] + " all"
    t = ok.pivot_table(index="method", columns="col", values=value, aggfunc="mean")
    cols = []
    for s in dict.fromkeys(ok["setting"]):
        for k in FEATURE_GRID:
            if f"{s} k={k}" in t.columns:
                cols.append(f"{s} k={k}")
    t = t.reindex(columns=cols)
    allg = ok[ok["method"] == "all_genes"].groupby("setting")[value].mean()
    for c in cols:  # all genes: its value in both k columns of its setting
        t.loc["all_genes", c] = allg.get(c.rsplit(" ", 1)[0], np.nan)
    return t.reindex([m for m in order if m in t.index])


def _ranks(df, value):
    """Mean rank of each method (1 = best mean `value`) over data set x seed x k; all genes left out."""
    ok = df[(df["status"] == "ok") & (df["method"] != "all_genes")]
    means = ok.groupby(["data", "seed", "n_features", "method"])[value].mean().reset_index()
    means["rank"] = means.groupby(["data", "seed", "n_features"])[value].rank(ascending=False, method="average")
    return means.groupby("method")["rank"].mean()


def run_line(info: dict) -> str:
    """The .md's first paragraph: date, grid, wall time, load, CPUs, versions, commit."""
    return (
        f"Run {info['date']}, {info['mode']} grid; wall time {info['wall_s'] / 60:.1f} min; "
        f"load (1 min) {info['load_start']:.2f} at start, {info['load_end']:.2f} at end, "
        f"{info['cpus']} CPUs. Versions: {info['versions']}. Commit {info['commit']}."
    )


def write_summary(df: pd.DataFrame, run: str, path: Path) -> None:
    """The .md from the rows; ``run`` is its first paragraph (:func:`run_line`)."""
    order = list(dict.fromkeys(list(df["method"])))
    lines = [
        "# Single-cell gene selection (`benchmarks/singlecell_selection.py`)",
        "",
        run,
        "",
        "Protocol: scanpy normalize_total + log1p; each method's ranking evaluated with "
        "`glfs.evaluate.evaluate_ranking_leiden` (PCA 50, 15-NN, Leiden over resolutions 0.2-2.0, "
        f"{N_RUNS} runs). `ari` = ARI at the best resolution (chosen with the labels, optimistic); "
        "`ari_nlabels` = at the cluster count nearest the number of labels. Random = mean over seeded draws; "
        "all_genes = every gene (the same value in both k columns). Simulated settings (Splat model, "
        "`glfs.simulation._scsim.simulate_counts`): "
        + "; ".join(
            f"`{s}` {json.loads(p)}"
            for s, p in df[df["data_kind"] == "simulated"].groupby("setting")["params"].first().items()
        )
        + ".",
        "",
        "**`mouse_bladder` is a development set** (data_kind = development): the team has seen it; "
        "nothing may be tuned on it, and its numbers are a sanity check, not evidence for a default.",
        "",
    ]
    for value, title in (
        ("ari", "Mean ARI at the best resolution"),
        ("ari_nlabels", "Mean ARI at the number of labels"),
    ):
        lines += [f"## {title}", "", _table(df, value, order).to_markdown(floatfmt=".3f"), ""]
    ranks = pd.DataFrame(
        {
            "mean rank (ari)": _ranks(df, "ari"),
            "mean rank (ari_nlabels)": _ranks(df, "ari_nlabels"),
            "mean rank sim (ari)": _ranks(df[df["data_kind"] == "simulated"], "ari"),
        }
    )
    ok = df[df["status"] == "ok"]
    sim = ok[ok["data_kind"] == "simulated"]
    ranks["precision@500"] = sim[sim["n_features"] == 500].groupby("method")["precision_at_k"].mean()
    ranks["recall@2000"] = sim[sim["n_features"] == 2000].groupby("method")["recall_at_k"].mean()
    per_call = ok.drop_duplicates(["data", "seed", "method"])
    ranks["select s (sim, mean)"] = (
        per_call[per_call["data_kind"] == "simulated"].groupby("method")["select_seconds"].mean()
    )
    ranks["select s (bladder)"] = (
        per_call[per_call["data_kind"] == "development"].groupby("method")["select_seconds"].mean()
    )
    ranks = ranks.reindex([m for m in order if m in ranks.index]).sort_values("mean rank (ari)")
    lines += [
        "## Mean rank, recovery and time",
        "",
        "Rank 1 = best mean ARI among the selections on a data set x seed x k (random genes included, "
        "all genes left out), averaged over simulated and development data (first two columns) or simulated "
        "only. Recovery: precision of the top 500 and recall of the top 2,000 against the programme genes "
        "(simulated); random genes give the programme's share of genes. Every programme gene counts, also "
        "those no method can see: at exp(8) counts per cell, 43-44 % of the programme genes of the default "
        "settings (seed 0) have a mean below 0.1 count per cell, so these columns separate methods little. "
        "Time: wall seconds of the selection call (given nothing but the data; with `--scanpy-graph`, "
        "scanpy's graph is built apart, `graph_seconds` in the TSV), under the load above.",
        "",
        ranks.to_markdown(floatfmt=".3g"),
        "",
    ]
    bad = df[df["status"] != "ok"]
    if len(bad):
        lines += (
            ["## Failures", ""] + [f"- {r.data} seed {r.seed}, {r.method}: {r.status}" for r in bad.itertuples()] + [""]
        )
    path.write_text("\n".join(lines))


def _commit() -> str:
    """HEAD, and which of the files this run depends on differ from it (uncommitted)."""
    files = [
        "benchmarks/singlecell_selection.py",
        "src/glfs/scsim.py",
        "src/glfs/api.py",
        "src/glfs/evaluate.py",
        "src/glfs/leiden.py",
        "src/glfs/clustering.py",
    ]
    try:
        git = ["git", "-C", str(ROOT)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", *files], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "?"
    changed = [line[3:] for line in dirty.splitlines()]
    return head + (f" (uncommitted: {', '.join(changed)})" if changed else "")


# ---- main ------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="one small simulated setting, one seed")
    mode.add_argument("--full", action="store_true", help="bigger grid: more settings, 10,000 genes, 3 seeds")
    ap.add_argument(
        "--real", action=argparse.BooleanOptionalAction, default=True, help="the mouse-bladder development set"
    )
    ap.add_argument("--methods", nargs="*", default=[], help="more registered methods, by name")
    ap.add_argument("--only-methods", nargs="*", default=None, help="run these methods instead of the default list")
    ap.add_argument(
        "--scanpy-graph", nargs="*", default=[], help="methods given scanpy's graph (obsp) instead of their own"
    )
    ap.add_argument("--n-random", type=int, default=3, help="random-gene draws per data set")
    ap.add_argument("--n-runs", type=int, default=N_RUNS, help="Leiden runs per k")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--summary-only", action="store_true", help="rewrite the .md from the .tsv")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    for noisy in ("glfs", "scanpy", "anndata", "numba"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    stem = "singlecell_selection_quick" if args.quick else "singlecell_selection"
    tsv, md = args.out / f"{stem}.tsv", args.out / f"{stem}.md"
    if args.summary_only:  # keep the run's paragraph of the existing .md
        old = md.read_text().splitlines() if md.exists() else []
        run = next((line for line in old if line.startswith("Run ")), "Run: unknown (no earlier summary).")
        write_summary(pd.read_csv(tsv, sep="\t"), run, md)
        return 0

    import anndata as ad

    import glfs
    from glfs.simulation._scsim import simulate_counts

    methods = list(args.only_methods) if args.only_methods is not None else default_methods()
    methods += [m for m in args.methods if m not in methods]
    for m in methods:
        glfs.api.method_info(m)  # an unknown name fails now, with the list of names
    if args.quick:
        settings, n_cells, genes, seeds = QUICK, 1000, [3000], [0]
    elif args.full:
        settings, n_cells, genes, seeds = {**SETTINGS, **FULL_EXTRA}, 2000, [5000, 10000], [0, 1, 2]
    else:
        settings, n_cells, genes, seeds = SETTINGS, 2000, [5000], [0, 1]
    info = {
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "mode": "quick" if args.quick else "full" if args.full else "default",
        "load_start": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "versions": versions(),
        "commit": _commit(),
    }
    log.info("methods: %s; load %.2f", methods, info["load_start"])
    t_start = time.perf_counter()
    rows = []
    args.out.mkdir(parents=True, exist_ok=True)

    def save():
        df = pd.DataFrame(rows).reindex(columns=COLUMNS)
        df.to_csv(tsv, sep="\t", index=False, float_format="%.6g")
        info["wall_s"], info["load_end"] = time.perf_counter() - t_start, os.getloadavg()[0]
        write_summary(df, run_line(info), md)

    scanpy_graph_methods = set(args.scanpy_graph)
    if args.real:
        a = ad.read_h5ad(REAL)
        counts = sp.csr_matrix(a.X, dtype=np.float32)
        rows += evaluate_dataset(
            "mouse_bladder",
            "development",
            "mouse_bladder",
            {"file": REAL.name},
            0,
            counts,
            np.asarray(a.obs["cell_type"]),
            None,
            methods,
            args,
            scanpy_graph_methods,
        )
        save()
    for name, params in settings.items():
        for d in genes:
            for seed in seeds:
                sim = simulate_counts(n_cells, d, random_state=seed, **params)
                data = f"{name}_{d}g_s{seed}"
                p = {**params, "n_cells": n_cells, "n_genes": d}
                rows += evaluate_dataset(
                    data,
                    "simulated",
                    name if len(genes) == 1 else f"{name}_{d}g",
                    p,
                    seed,
                    sim.counts,
                    sim.groups,
                    sim.structured,
                    methods,
                    args,
                    scanpy_graph_methods,
                )
                save()
    save()
    log.info("done in %.1f min, load %.2f", (time.perf_counter() - t_start) / 60, os.getloadavg()[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
