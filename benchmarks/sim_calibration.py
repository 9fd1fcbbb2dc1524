"""Does the calibrated simulator rank the single-cell selections as real cells do?

    nice -n 10 python benchmarks/sim_calibration.py                 # the four panel sets (~20 min on 2 quiet cores)
    nice -n 10 python benchmarks/sim_calibration.py --sets bladder  # one set
    python benchmarks/sim_calibration.py --summary-only             # rewrite the .md from the .tsv

For each development-panel set (``/work/shared/data/singlecell``, MANIFEST.md): a stratified
subsample of at most ``--max-cells`` cells (3,000: the run's time; the same cells for every
selection and for the parameter estimate), then the simulator's parameters estimated from it
(``glfs.simulation._estimate.estimate_params`` with the labels: library sizes, gene means and
outliers, BCV within the labels, dropout, each label's share and DE) and a simulated
counterpart of the same size (``simulate_counts(**params.simulate_kwargs())``, seed 0; its
groups are the simulated labels).  Two counterparts: ``sim_splat`` (Splat's BCV trend,
``bcv_trend`` 1, what splatter's ``splatEstimate`` fits) and ``sim_fitted`` (the trend's weight
fitted too).  The groups' separation follows from the DE estimated per label; the run records the
all-genes score of each data set beside the selections as the check of that separation.

Every selection (``SELECTIONS``: scanpy's HVG flavours, deviance, variance, Laplacian score,
graph_moran; 2 seeded random-gene draws) runs on the real subsample and on each counterpart as in
``benchmarks/singlecell_selection.py`` (scanpy normalize_total + log1p; ``glfs.select`` with the
counts), and each ranking is evaluated with ``glfs.evaluate.evaluate_ranking_leiden`` at 200, 500
and 2,000 genes (capped at the set's genes), ``--n-runs`` runs (1).  Score = mean of the Leiden
ARI at the best resolution, at the labels' cluster count and the k-means ARI (issue 28's score).

Agreement: per set, the Spearman correlation between the selections' mean scores (over k) on
the real subsample and on a counterpart; overall, the same on the scores averaged over the sets.
When ``benchmarks/results/real_panel.tsv`` (the panel benchmark, all cells) is there, the
correlation with its means is reported too.

Outputs: ``benchmarks/results/sim_calibration.tsv`` (one row per set x data x selection x k x
run; written after every set) and ``sim_calibration.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench.singlecell import lognorm, run_selection, versions  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path("/work/shared/data/singlecell")
SETS = {  # name -> (file, label column)
    "bladder": ("mouse_bladder_2100.h5ad", "cell_type"),
    "zeisel": ("zeisel2015_mouse_cortex_4000g.h5ad", "label"),
    "cbmc": ("stoeckius2017_cbmc_500g.h5ad", "label"),
    "kang": ("kang2018_pbmc_5donors_2511g.h5ad", "label"),
}
SELECTIONS = (
    "hvg_seurat",
    "hvg_cell_ranger",
    "hvg_seurat_v3",
    "hvg_pearson_residuals",
    "deviance",
    "variance",
    "laplacian_score",
    "graph_moran",
)
FEATURE_GRID = (200, 500, 2000)
VARIANTS = {"sim_splat": 1.0, "sim_fitted": None, "sim_matched": None}  # counterpart -> estimate_params(bcv_trend=...)
#: sim_matched: the fitted counterpart with every group's log fold changes scaled by the lambda of this grid whose
#: label separation (eta^2, :func:`separation`) is nearest the real set's.
DE_SCALES = (1.0, 0.7, 0.5, 0.35, 0.25, 0.18, 0.12)
PARAM_KEYS = ("mean_shape", "out_prob", "out_fac_loc", "lib_loc", "lib_scale", "bcv_common", "bcv_trend", "bcv_df")

log = logging.getLogger("sim_calibration")


def _score(r: dict) -> float:
    return float(np.mean([r["ari"], r["ari_nlabels"], r["kmeans_ari"]]))


def evaluate(data: str, counts, labels, args) -> list[dict]:
    """Rows of every selection (and random genes, all genes) on one count matrix."""
    from glfs.evaluate import evaluate_ranking_leiden, random_gene_orders

    n, d = counts.shape
    grid = sorted({min(k, d) for k in FEATURE_GRID})
    Xl = lognorm(counts)
    rows = []

    def add(method, draw, recs, sec):
        rows.extend(
            {
                "data": data,
                "method": method,
                "draw": draw,
                "n_features": r["n_features"],
                "run": r["run"],
                "ari": r["ari"],
                "ari_nlabels": r["ari_nlabels"],
                "kmeans_ari": r["kmeans_ari"],
                "score": _score(r),
                "select_seconds": sec,
                "load1": os.getloadavg()[0],
            }
            for r in recs
        )

    for m in SELECTIONS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ranking, sec = run_selection(m, Xl, counts, max(grid), 0)
        except Exception as exc:  # a failing method is recorded, the run goes on
            log.warning("%s: %s failed: %s", data, m, exc)
            rows.append({"data": data, "method": m, "status": f"error: {type(exc).__name__}: {exc}"[:200]})
            continue
        add(m, np.nan, evaluate_ranking_leiden(Xl, labels, ranking, feature_grid=grid, n_runs=args.n_runs), sec)
    for i, (s_i, order) in enumerate(random_gene_orders(d, args.n_random, 0)):
        add(
            "random",
            i,
            evaluate_ranking_leiden(Xl, labels, order, feature_grid=grid, n_runs=args.n_runs, random_state=s_i),
            0.0,
        )
    add(
        "all_genes",
        np.nan,
        evaluate_ranking_leiden(Xl, labels, np.arange(d), feature_grid=("all",), n_runs=args.n_runs),
        0.0,
    )
    return rows


def separation(counts, labels) -> float:
    """Mean over genes (mean count >= 0.1 per cell) of eta^2: the labels' share of the log-normalised variance."""
    Xl = lognorm(counts)
    keep = np.asarray(counts.mean(axis=0)).ravel() >= 0.1
    X = Xl[:, keep].toarray()
    codes = np.unique(labels, return_inverse=True)[1]
    total = ((X - X.mean(axis=0)) ** 2).sum(axis=0)
    means = np.stack([X[codes == g].mean(axis=0) for g in range(codes.max() + 1)])
    between = (np.bincount(codes)[:, None] * (means - X.mean(axis=0)) ** 2).sum(axis=0)
    return float(np.mean(between / np.maximum(total, 1e-12)))


def matched_kwargs(p, counts, labels) -> tuple[dict, float, float]:
    """``simulate_kwargs`` with the DE scaled to the real set's separation: (kwargs, lambda, real eta^2)."""
    from glfs.simulation._scsim import simulate_counts

    target = separation(counts, labels)
    best = None
    for lam in DE_SCALES:
        kw = p.simulate_kwargs()
        kw["de_fac_loc"] = tuple(lam * v for v in kw["de_fac_loc"])
        kw["de_fac_scale"] = tuple(lam * v for v in kw["de_fac_scale"])
        sim = simulate_counts(**kw, random_state=0)
        gap = abs(separation(sim.counts, sim.groups) - target)
        if best is None or gap < best[0]:
            best = (gap, kw, lam)
    return best[1], best[2], target


def run_set(name: str, args) -> tuple[list[dict], dict]:
    """Rows for the real subsample and its counterparts, and the estimated parameters."""
    import anndata as ad

    from glfs.evaluate import stratified_subsample
    from glfs.simulation._estimate import estimate_params
    from glfs.simulation._scsim import simulate_counts

    file, col = SETS[name]
    a = ad.read_h5ad(DATA / file)
    labels = np.asarray(a.obs[col]).astype(str)
    idx = stratified_subsample(labels, args.max_cells, 0) if a.n_obs > args.max_cells else np.arange(a.n_obs)
    counts = sp.csr_matrix(a.X[idx], dtype=np.float32)
    labels = labels[idx]
    t0 = time.perf_counter()
    rows = [dict(r, set=name) for r in evaluate("real", counts, labels, args)] if args.real else []
    log.info("%s real (%d x %d): %.0f s", name, *counts.shape, time.perf_counter() - t0)
    params = {}
    for variant in args.variants:
        t = time.perf_counter()
        p = estimate_params(counts, labels, bcv_trend=VARIANTS[variant])
        kw, lam, eta2 = (
            matched_kwargs(p, counts, labels) if variant == "sim_matched" else (p.simulate_kwargs(), 1.0, np.nan)
        )
        sim = simulate_counts(**kw, random_state=0)
        params[variant] = {
            "de_scale": lam,
            "eta2_real": eta2,
            "eta2_sim": separation(sim.counts, sim.groups),
            **{k: getattr(p, k) for k in PARAM_KEYS},
            "dropout_mid": p.dropout_mid,
            "de_prob_mean": float(np.mean(p.de_prob)),
            "de_fac_loc_mean": float(np.mean(p.de_fac_loc)),
            "de_fac_scale_mean": float(np.mean(p.de_fac_scale)),
            "estimate_seconds": time.perf_counter() - t,
            "bcv_level_measured": p.diagnostics["bcv_level_measured"],
            "zero_excess": p.diagnostics["zero_excess"],
            "nonzero_real": counts.nnz / np.prod(counts.shape),
            "nonzero_sim": sim.counts.nnz / np.prod(sim.counts.shape),
        }
        rows += [dict(r, set=name) for r in evaluate(variant, sim.counts, sim.groups, args)]
        log.info("%s %s: %.0f s", name, variant, time.perf_counter() - t)
    return rows, params


# ---- summary -------------------------------------------------------------------------------


def method_means(df: pd.DataFrame) -> pd.DataFrame:
    """Mean score per (set, data, method) over k, runs and random draws; all genes apart."""
    ok = df[df["score"].notna()]
    return ok.groupby(["set", "data", "method"])["score"].mean().unstack("data")


def agreement(means: pd.DataFrame, ref: str = "real") -> pd.DataFrame:
    """Spearman correlation of the selections' mean scores, reference vs each counterpart, per set and overall."""
    from scipy.stats import spearmanr

    sel = means.drop(index="all_genes", level="method", errors="ignore")
    out = {}
    sets = list(dict.fromkeys(sel.index.get_level_values("set")))
    overall = sel.groupby(level="method").mean()
    for key, block in [*((s, sel.xs(s, level="set")) for s in sets), ("overall (scores averaged over sets)", overall)]:
        row = {}
        for col in block.columns:
            if col == ref or ref not in block.columns:
                continue
            both = block[[ref, col]].dropna()
            row[col] = spearmanr(both[ref], both[col]).statistic if len(both) > 2 else np.nan
        row["n_selections"] = int(block[ref].notna().sum()) if ref in block else 0
        out[key] = row
    return pd.DataFrame(out).T


def panel_means() -> pd.DataFrame | None:
    """Mean score per (set, method) from the panel benchmark's table (all cells), if it is there and readable."""
    path = RESULTS / "real_panel.tsv"
    if not path.exists():
        return None
    t = pd.read_csv(path, sep="\t")
    set_col = next((c for c in ("dataset", "set", "data") if c in t.columns), None)
    if set_col is None or "method" not in t.columns:
        return None
    if "labels" in t.columns:  # each set's primary labels (not e.g. Zeisel's subclasses)
        t = t[t["labels"].astype(str) == t[set_col].astype(str)]
    if "score" not in t.columns:
        need = ("ari", "ari_nlabels", "kmeans_ari")
        if not all(c in t.columns for c in need):
            return None
        t["score"] = t[list(need)].mean(axis=1)
    keys = {"bladder": "bladder", "zeisel": "zeisel", "cbmc": "cbmc", "stoeckius": "cbmc", "kang": "kang"}
    t["set"] = t[set_col].astype(str).map(lambda s: next((v for k, v in keys.items() if k in s.lower()), None))
    t = t[t["set"].notna() & t["score"].notna()]
    if "n_features" in t.columns:  # the same gene counts as this run
        t = t[pd.to_numeric(t["n_features"], errors="coerce").isin(FEATURE_GRID) | (t["method"] == "all_genes")]
    return t.groupby(["set", "method"])["score"].mean().to_frame("panel")


def _param_table(params: dict) -> pd.DataFrame:
    rows = {f"{s} {v}": p for s, by in params.items() for v, p in by.items()}
    return pd.DataFrame(rows).T


def write_summary(df: pd.DataFrame, params: dict, info: dict, path: Path) -> None:
    means = method_means(df)
    panel = panel_means()
    lines = [
        "# Simulator calibration (`benchmarks/sim_calibration.py`)",
        "",
        f"Run {info['date']}; wall time {info['wall_s'] / 60:.1f} min; load (1 min) {info['load_start']:.1f} at start, "
        f"{info['load_end']:.1f} at end, {info['cpus']} CPUs; at most {info['max_cells']} cells per set (stratified), "
        f"{info['n_runs']} Leiden/k-means run per k, k in {list(FEATURE_GRID)}. Versions: {info['versions']}."
        + "".join(
            f" Rows of {m} (merged: they replace this run's rows of those sets)." for m in info.get("merged", [])
        ),
        "",
        "Score = mean of Leiden ARI (best resolution), Leiden ARI (labels' cluster count) and k-means ARI, averaged "
        "over k (random: also over draws). `real` = the set's subsample; `sim_splat` = its counterpart with Splat's "
        "BCV trend (`bcv_trend` 1, as splatter's `splatEstimate`); `sim_fitted` = the trend's weight fitted too.",
        "",
        "## Rank agreement (Spearman, selections incl. random, all genes left out)",
        "",
        agreement(means).to_markdown(floatfmt=".2f"),
        "",
    ]
    if panel is not None:
        joined = panel.join(means, how="inner")
        lines += [
            "Against the panel benchmark's table (`real_panel.tsv`, all cells, its runs):",
            "",
            agreement(joined, ref="panel").to_markdown(floatfmt=".2f"),
            "",
        ]
    lines += ["## Mean score per set and selection", "", means.unstack("set").to_markdown(floatfmt=".3f"), ""]
    if params:
        lines += [
            "## Estimated parameters (per set and counterpart)",
            "",
            _param_table(params).to_markdown(floatfmt=".3g"),
            "",
        ]
    path.write_text("\n".join(lines))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="*", default=list(SETS), choices=list(SETS))
    ap.add_argument("--max-cells", type=int, default=3000)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--real", action=argparse.BooleanOptionalAction, default=True, help="evaluate the real subsample")
    ap.add_argument("--n-runs", type=int, default=1)
    ap.add_argument("--n-random", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument(
        "--merge",
        nargs="*",
        type=Path,
        default=[],
        help="with --summary-only: also read the .tsv/.json of these output folders (sets run apart or re-run; their rows replace this run's)",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    for noisy in ("glfs", "scanpy", "anndata", "numba"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    tsv, md, pj = (args.out / f"sim_calibration.{e}" for e in ("tsv", "md", "json"))
    if args.summary_only:
        meta = json.loads(pj.read_text())
        frames = [pd.read_csv(tsv, sep="\t")]
        for other in args.merge:  # sets run in another process: their rows and parameters join this run's
            frames.append(pd.read_csv(other / tsv.name, sep="\t"))
            more = json.loads((other / pj.name).read_text())
            for name, by in more["params"].items():  # per set: this run's counterparts and the other's
                meta["params"][name] = meta["params"].get(name, {}) | by
            mi = more["info"]
            meta["info"].setdefault("merged", []).append(
                f"{', '.join(sorted(more['params']))}: run {mi['date']}, wall time {mi['wall_s'] / 60:.1f} min, load "
                f"{mi['load_start']:.1f} at start, {mi['load_end']:.1f} at end"
            )
        # a merged run's rows replace every row of this run for the same set and data (a set re-run)
        for i in range(1, len(frames)):
            redone = pd.MultiIndex.from_frame(frames[i][["set", "data"]])
            frames[0] = frames[0][~pd.MultiIndex.from_frame(frames[0][["set", "data"]]).isin(redone)]
        df = pd.concat(frames, ignore_index=True)
        df.to_csv(tsv, sep="\t", index=False, float_format="%.6g")
        pj.write_text(json.dumps(meta, indent=1, default=float))
        write_summary(df, meta["params"], meta["info"], md)
        return 0
    info = {
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "load_start": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "versions": versions(),
        "max_cells": args.max_cells,
        "n_runs": args.n_runs,
    }
    t0 = time.perf_counter()
    rows, params = [], {}
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.sets:
        r, p = run_set(name, args)
        rows += r
        params[name] = p
        info["wall_s"], info["load_end"] = time.perf_counter() - t0, os.getloadavg()[0]
        df = pd.DataFrame(rows)
        df.to_csv(tsv, sep="\t", index=False, float_format="%.6g")
        pj.write_text(json.dumps({"info": info, "params": params}, indent=1, default=float))
        write_summary(df, params, info, md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
