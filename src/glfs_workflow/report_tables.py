"""Tables of the workflow report: the pandas DataFrames it shows, built from the run's tables and findings.

Used by :mod:`glfs_workflow.report`; not part of the stable API.  These are
presentation: their column names and the few words in their cells (e.g. "every k",
"never", a row "random genes (floor)") are what the report's tables show; the
report's sentences are in its templates (``glfs_workflow/templates/``).  The only
hard-coded numbers are the paper's (:data:`PAPER_CLAIMS`), always labelled as the paper's.
"""

from __future__ import annotations

import logging
import platform
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from glfs.api import METHODS

from . import findings as F
from .which import WhichMethod, floor_summary, rank_table

log = logging.getLogger(__name__)

# Claims of Wang & Goldenberg (ICML 2013) we compare against; quoted, never ours.
PAPER_CLAIMS = {
    "sim_sigma": (
        "Sec. 3.1 / Fig. 1A",
        "GLFS recovers the 4 true features (Score = 1) up to sigma = 0.415 at N = 1000",
        0.415,
    ),
    "sim_n_noise_glfs": ("Sec. 3.1 / Fig. 1B", "GLFS Score = 1 up to N = 60,000 noise features at sigma = 0.2", 60000),
    "sim_n_noise_ls": ("Sec. 3.1 / Fig. 1B", "Laplacian score Score = 1 up to N = 30,000 at sigma = 0.2", 30000),
    "gbm_small_k": ("Sec. 3.3 / Fig. 2B", "GLFS is the clear winner (highest NMI) for small numbers of genes", None),
    "gbm_path": ("Sec. 3.3 / Fig. 2A", "the GLFS path stabilises at about lam = 0.5 with about 7 genes", 7),
    "golub": ("Sec. 3.4 / Table 3", "GLFS: 0/38 ten-fold CV errors, 0/34 test errors, 16 genes", None),
}

PAPER_ROW_OF = {
    "elastic_net": "Elastic net",
    "linear_svm": "SVM",
    "l2_logistic": "Penalized LR",
    "nearest_shrunken_centroids": "NSC",
}


def _is_glfs(method) -> bool:
    """A GLFS method of the registry (``MethodInfo.is_glfs``)."""
    info = METHODS.get(str(method))
    return info is not None and info.is_glfs


def _f(x, digits=3) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{digits}f}"


def gene_notes(var, genes=None) -> dict:
    """Gene id -> symbol or description carried by the data (a var column that differs from the ids), or {}."""
    ids = var.index.astype(str)
    for col in ("gene_symbol", "symbol", "gene_name", "description"):
        if col in var and (var[col].astype(str).to_numpy() != ids.to_numpy()).any():
            col_values = var[col].astype(object)  # categorical columns (h5ad strings) cannot take a new fill value
            notes = dict(zip(ids, col_values.where(col_values.notna(), "").astype(str)))
            return {g: notes[g] for g in (genes if genes is not None else ids) if notes.get(g)}
    return {}


def with_note(gene: str, notes: dict, width=32) -> str:
    note = notes.get(gene, "")
    if not note or note == gene:
        return gene
    return f"{gene} ({note[:width]}{'...' if len(note) > width else ''})"


# ---- clustering, runtime, software ------------------------------------------------------------


def nmi_summary(df: pd.DataFrame, ks=(10, 25, 50, 100)) -> pd.DataFrame:
    """Mean NMI (and NMI_max, k-means ACC, LOO 1-NN) per method at the grid points in ``ks`` present, plus all genes."""
    if df is None or df.empty:
        return pd.DataFrame()
    kmax = int(df["n_features"].max())
    grid = set(int(k) for k in df["n_features"])
    chosen = set(k for k in ks if k in grid) or grid  # e.g. a tiny test grid: show all of it
    keep = sorted(chosen | {kmax})
    d = df[df["n_features"].isin(keep)]
    wide = d.pivot_table(index="method", columns="n_features", values="nmi", aggfunc="mean", sort=False)
    wide.columns = [f"NMI@{c}" if c != kmax else f"NMI@all({c})" for c in wide.columns]
    extra = (
        d[d["n_features"] == (100 if 100 in keep else kmax)]
        .groupby("method", sort=False)[["nmi_max", "kmeans_acc", "kmeans_nmi", "loo_1nn_acc"]]
        .mean()
    )
    extra.columns = [f"{c}@{100 if 100 in keep else 'all'}" for c in extra.columns]
    return wide.join(extra).reset_index()


def nmi_summary_with_floor(df: pd.DataFrame, random_df: pd.DataFrame | None, ks=(10, 25, 50, 100)) -> pd.DataFrame:
    """:func:`nmi_summary` with the random-genes floor beside every method.

    Adds a row "random genes (floor)" (means over the draws), a row with the sd
    over the draws, and a column "clears floor at" listing the gene counts where
    the method's mean NMI is above the floor's mean + 1 sd (glfs_workflow.findings.floor_comparison).
    """
    if random_df is None or random_df.empty:
        return nmi_summary(df, ks)
    rnd = random_df.drop(columns=["draw"], errors="ignore").assign(method="random genes (floor)")
    tab = nmi_summary(pd.concat([df, rnd], ignore_index=True), ks)
    comp = F.floor_comparison(df, random_df)
    kmax = int(df["n_features"].max())
    shown = [c for c in tab.columns if c.startswith("NMI@")]
    grid = sorted(int(k) for k in comp["n_features"].unique() if k < kmax)
    clears = {
        m: [int(k) for k in g.loc[g["clears"] & (g["n_features"] < kmax), "n_features"]]
        for m, g in comp.groupby("method", sort=False)
    }
    tab["clears floor at"] = [
        (
            ""
            if m == "random genes (floor)"
            else ("every k" if clears.get(m) == grid and grid else (", ".join(map(str, clears.get(m, []))) or "never"))
        )
        for m in tab["method"]
    ]
    fl = floor_summary(random_df).set_index("n_features")
    sd_row = {"method": "random genes: sd over draws"}
    for c in shown:
        k = int(c.split("@")[1].split("(")[1].rstrip(")")) if "(" in c else int(c.split("@")[1])
        sd_row[c] = float(fl.loc[k, "floor_sd"]) if k in fl.index else np.nan
    tab = pd.concat([tab, pd.DataFrame([sd_row])], ignore_index=True)
    return tab


def side_by_side(
    cdf: pd.DataFrame | None, random_df: pd.DataFrame | None, *, methods=None, ks=(10, 50, 100)
) -> pd.DataFrame:
    """NMI (mean over runs) at a few gene counts for the GLFS family, the Laplacian score, LapAOFS and random genes.

    The last row is the random floor as "mean +- sd".  Columns: method, NMI@k...
    """
    if cdf is None or cdf.empty:
        return pd.DataFrame()
    methods = F.side_by_side_methods() if methods is None else methods
    grid = sorted(int(k) for k in cdf["n_features"].unique())
    use = F._pick_ks(grid, ks)
    present = [m for m in methods if m in set(cdf["method"])]
    d = cdf[cdf["method"].isin(present) & cdf["n_features"].isin(use)]
    wide = d.pivot_table(index="method", columns="n_features", values="nmi", aggfunc="mean").reindex(present)
    tab = pd.DataFrame({"method": present})
    for k in use:
        tab[f"NMI@{k}"] = [
            f"{wide.loc[m, k]:.3f}" if k in wide.columns and pd.notna(wide.loc[m, k]) else "" for m in present
        ]
    fl = floor_summary(random_df).set_index("n_features") if random_df is not None else pd.DataFrame()
    if not fl.empty:
        row = {"method": f"random genes (floor, {int(fl['n_draws'].max())} draws)"}
        for k in use:
            row[f"NMI@{k}"] = f"{fl.loc[k, 'floor_mean']:.3f} +- {fl.loc[k, 'floor_sd']:.3f}" if k in fl.index else ""
        tab = pd.concat([tab, pd.DataFrame([row])], ignore_index=True)
    return tab


def sensitivity_table(sens: pd.DataFrame) -> pd.DataFrame:
    """One row per graph_weight: lambda1, criterion, converged and mean NMI at each k (the default marked)."""
    wide = sens.pivot_table(index="graph_weight", columns="k", values="nmi_mean", aggfunc="first")
    wide.columns = [f"NMI@{int(k)}" for k in wide.columns]
    first = sens.drop_duplicates("graph_weight").set_index("graph_weight")
    out = first[["lambda1", "criterion", "greedy_criterion", "converged", "n_swaps"]].join(wide).reset_index()
    out.insert(1, "default", np.where(first["is_default"].astype(bool).to_numpy(), "default", ""))
    return out


def runtime_table(benchmarks) -> pd.DataFrame:
    """Per-rule wall time from Snakemake ``benchmark:`` files (logs/benchmarks/{rule}/{wildcards}.tsv).

    ``benchmarks``: the benchmark files of this run's jobs (a list: make_report's params.benchmarks;
    a file that does not exist is left out), or a directory, whose every file is read (jobs of
    earlier runs included).  One row per rule: jobs, total_s, max_s, slowest_job, max_rss_mb.
    """
    if isinstance(benchmarks, (str, Path)):
        files = sorted(Path(benchmarks).glob("*/*.tsv"))
    else:
        files = [Path(f) for f in benchmarks if Path(f).is_file()]
    rows = []
    for f in files:
        try:
            b = pd.read_csv(f, sep="\t")
        except Exception:  # noqa: BLE001 - a malformed benchmark file is reported, not fatal
            log.warning("cannot read benchmark %s", f)
            continue
        if "s" not in b:
            continue
        rows.append(
            {
                "rule": f.parent.name,
                "job": f.stem,
                "s": float(b["s"].iloc[0]),
                "max_rss_mb": float(b["max_rss"].iloc[0]) if "max_rss" in b else np.nan,
            }
        )
    if not rows:
        return pd.DataFrame(columns=["rule", "jobs", "total_s", "max_s", "slowest_job", "max_rss_mb"])
    df = pd.DataFrame(rows)
    g = df.groupby("rule")
    out = (
        pd.DataFrame(
            {
                "jobs": g.size(),
                "total_s": g["s"].sum(),
                "max_s": g["s"].max(),
                "slowest_job": df.loc[g["s"].idxmax(), ["rule", "job"]].set_index("rule")["job"],
                "max_rss_mb": g["max_rss_mb"].max(),
            }
        )
        .reset_index()
        .sort_values("total_s", ascending=False)
    )
    return out


def software_versions() -> pd.DataFrame:
    pkgs = ["glfs", "numpy", "scipy", "scikit-learn", "pandas", "anndata", "scanpy", "matplotlib", "snakemake", "h5py"]
    rows = [{"package": "python", "version": platform.python_version()}]
    for p in pkgs:
        try:
            v = metadata.version(p)
        except metadata.PackageNotFoundError:
            v = "not installed"
        rows.append({"package": p, "version": v})
    rows.append({"package": "platform", "version": platform.platform()})
    return pd.DataFrame(rows)


def _g(x) -> str:
    return f"{float(x):.3g}"


def convergence_table(records: list[dict]) -> pd.DataFrame:
    """Converged or not for every GLFS selection (glfs_workflow.findings.convergence_records), as shown.

    Rows: dataset, method, kind, converged ("yes", "no", "k of n path points", "not recorded")
    and details (swaps and criterion of the design; lam and the chosen point of the path variants).
    """
    rows = []
    for r in records:
        if r["kind"] == "design":
            conv = "not recorded" if r["converged"] is None else ("yes" if r["converged"] else "no")
            det = ""
            if r["criterion"] is not None and r["greedy_criterion"] is not None:
                swaps = "?" if r["n_swaps"] is None else r["n_swaps"]
                det = (
                    f"{swaps} swaps from the greedy start; Tr(H_S^-1) {_g(r['criterion'])} "
                    f"(greedy {_g(r['greedy_criterion'])})"
                )
            rows.append(
                {
                    "dataset": r["dataset"],
                    "method": r["method"],
                    "kind": "budgeted design (greedy + exchange)",
                    "converged": conv,
                    "details": det,
                }
            )
            continue
        det = ""
        if r["n_converged"] is not None:
            conv = f"{r['n_converged']} of {r['n_points']} path points"
            if r["lam_converged"] is not None:
                det = f"chosen lam {_g(r['lam'])}: {'converged' if r['lam_converged'] else 'NOT converged'}"
        elif r["converged"] is not None:
            conv = "yes" if r["converged"] else "no"
        else:
            conv = "not recorded"
        if r["kkt_max"] is not None:
            det += ("; " if det else "") + f"largest KKT residual {_g(r['kkt_max'])}"
        if not det and r["lam"] is not None:
            n_sel = "?" if r["n_selected_at_lam"] is None else r["n_selected_at_lam"]
            det = f"chosen lam {_g(r['lam'])}, {n_sel} genes with beta > 0"
        rows.append(
            {
                "dataset": r["dataset"],
                "method": r["method"],
                "kind": "lam path (published readings)",
                "converged": conv,
                "details": det,
            }
        )
    return pd.DataFrame(rows, columns=["dataset", "method", "kind", "converged", "details"])


# ---- paper versus this run -------------------------------------------------------------------------


def _max_x_with_full_recovery(d: pd.DataFrame, x: str):
    """Largest grid value of x with mean Score == 1 at it and at every smaller grid value."""
    agg = d.groupby(x)["score"].mean().sort_index()
    best = None
    for v, s in agg.items():
        if s >= 1.0 - 1e-12:
            best = v
        else:
            break
    return best, (agg.index.min() if len(agg) else None), (agg.index.max() if len(agg) else None)


def _failing_points(d: pd.DataFrame, x: str) -> list:
    """Grid values of x where the mean Score is below 1."""
    agg = d.groupby(x)["score"].mean().sort_index()
    return [v.item() if hasattr(v, "item") else v for v in agg.index[agg < 1.0 - 1e-12]]


PAPER_COLUMNS = ["item", "paper", "this run", "note"]


def paper_vs_run_rows(ctx: dict) -> list[dict]:
    """Rows comparing the paper's claims with this run's numbers (computed from the results).

    Each row has the shown columns :data:`PAPER_COLUMNS` and the values behind them: ``kind``
    ("sigma", "n_noise", "gbm_rank", "gbm_path", "classification"), ``dataset``, ``method`` and,
    for "gbm_rank", ``rank``; for "classification", ``glfs`` (a GLFS classifier row).
    """
    return [*_simulation_rows(ctx), *_gbm_clustering_rows(ctx), *_gbm_path_rows(ctx), *_classification_rows(ctx)]


def paper_vs_run(rows: list[dict]) -> pd.DataFrame:
    """The shown table of :func:`paper_vs_run_rows`."""
    return pd.DataFrame([{c: r[c] for c in PAPER_COLUMNS} for r in rows], columns=PAPER_COLUMNS)


def _simulation_rows(ctx: dict) -> list:
    """Per simulated method: the largest sigma (GLFS readings) and N (GLFS, Laplacian score) with full recovery."""
    rows = []
    sim = ctx.get("simulation_df")
    simcfg = ctx.get("simulation_config") or {}
    if sim is not None and not sim.empty:
        a = sim[sim["n_noise"] == simcfg.get("n_noise_at_sigma")]
        b = sim[np.isclose(sim["sigma"], float(simcfg.get("sigma_at_n_noise", np.nan)))]
        graph_score = F.first_graph_method("score")
        for m in sorted(sim["method"].unique()):
            best, lo, hi = _max_x_with_full_recovery(a[a["method"] == m], "sigma")
            if _is_glfs(m):
                rows.append(_sigma_row(m, best, lo, hi, _failing_points(a[a["method"] == m], "sigma")))
            bestn, lo, hi = _max_x_with_full_recovery(b[b["method"] == m], "n_noise")
            if _is_glfs(m) or m == graph_score:
                rows.append(
                    _n_noise_row(m, m == graph_score, bestn, lo, hi, _failing_points(b[b["method"] == m], "n_noise"))
                )
    return rows


def _sigma_row(m: str, best, lo, hi, failing: list) -> dict:
    """The row "largest sigma with Score = 1" of one GLFS reading."""
    ref, _, val = PAPER_CLAIMS["sim_sigma"]
    note = f"grid {lo}..{hi}; resolution limits the comparison"
    if best is not None and best >= hi:
        note += "; full recovery at every sigma tried"
    if failing:
        note += f"; Score < 1 at sigma = {failing}"
    return {
        "item": f"simulation, largest sigma with Score = 1 ({m})",
        "paper": f"{val} ({ref})",
        "this run": "none" if best is None else best,
        "note": note,
        "kind": "sigma",
        "method": m,
    }


def _n_noise_row(m: str, is_graph_score: bool, bestn, lo, hi, failing: list) -> dict:
    """The row "largest N with Score = 1" of a GLFS reading or the graph score (the Laplacian score)."""
    key = "sim_n_noise_ls" if is_graph_score else "sim_n_noise_glfs"
    ref, _, val = PAPER_CLAIMS[key]
    note = f"grid N = {lo}..{hi}"
    if hi is not None and hi < val:
        note += f"; the grid stops below the paper's {val} (run `snakemake simulate_full` for N up to 60000)"
    if failing:
        note += f"; Score < 1 at N = {failing} (counted from the smallest N, as the paper's 'up to')"
    return {
        "item": f"simulation, largest N with Score = 1 ({m})",
        "paper": f"{val} ({ref})",
        "this run": "none" if bestn is None else bestn,
        "note": note,
        "kind": "n_noise",
        "method": m,
    }


def _gbm_clustering_rows(ctx: dict) -> list:
    """On GBM datasets: the NMI rank of the best GLFS variant among unsupervised methods at each k <= 25."""
    rows = []
    supervised = set(ctx.get("supervised") or ())
    for ds, cdf in (ctx.get("clustering") or {}).items():
        if cdf is None or cdf.empty or "gbm" not in ds.lower():
            continue  # the paper's clustering claims are about GBM only
        mean = cdf[~cdf["method"].isin(supervised)].groupby(["n_features", "method"])["nmi"].mean().reset_index()
        for k in [k for k in sorted(mean["n_features"].unique()) if k <= 25]:
            mk = mean[mean["n_features"] == k].sort_values("nmi", ascending=False).reset_index(drop=True)
            glfs_rows = mk[mk["method"].map(_is_glfs).astype(bool)]
            if glfs_rows.empty:
                continue
            pos = int(glfs_rows.index[0]) + 1
            rows.append(
                {
                    "item": f"{ds}: NMI rank of the best GLFS variant among unsupervised methods at {k} genes",
                    "paper": f"1 ({PAPER_CLAIMS['gbm_small_k'][0]}, figure only)",
                    "this run": f"{pos} of {len(mk)} ({glfs_rows.iloc[0]['method']} {glfs_rows.iloc[0]['nmi']:.3f}; best {mk.iloc[0]['method']} {mk.iloc[0]['nmi']:.3f})",
                    "note": "paper: 18,632 genes x 173 patients (Broad U133A); ours: see the dataset's note",
                    "kind": "gbm_rank",
                    "dataset": ds,
                    "method": glfs_rows.iloc[0]["method"],
                    "rank": pos,
                }
            )
    return rows


def _gbm_path_rows(ctx: dict) -> list:
    """On GBM datasets: the genes at the largest lam with a non-empty support of the published GLFS path."""
    rows = []
    for ds, p in (ctx.get("paths") or {}).items():
        if p is None or len(p) == 0 or "gbm" not in ds.lower():
            continue
        nz = p[p["n_selected"] > 0]
        if nz.empty:
            continue
        top = nz.sort_values("lam").iloc[-1]
        rows.append(
            {
                "item": f"{ds}: genes at the largest lam with a non-empty GLFS support ({ctx.get('glfs_method')})",
                "paper": f"about {PAPER_CLAIMS['gbm_path'][2]} at lam ~ 0.5 ({PAPER_CLAIMS['gbm_path'][0]})",
                "this run": f"{int(top['n_selected'])} at lam = {top['lam']:.3g}; {int(p['n_selected'].max())} at the smallest lam",
                "note": "lam depends on the scale of X and M (GLFS preprocesses X), so lam values are not comparable across implementations",
                "kind": "gbm_path",
                "dataset": ds,
                "method": ctx.get("glfs_method"),
            }
        )
    return rows


def _classification_rows(ctx: dict) -> list:
    """Golub (Table 3): CV / test errors and genes of each classifier beside the paper's row for it."""
    rows = []
    cls = ctx.get("classification")
    paper = ctx.get("paper_table")
    if cls is not None and not cls.empty and paper is not None:
        pt = paper.set_index("method")
        glfs_rows = set(F.glfs_classifier_rows())
        for _, r in cls.iterrows():
            ds = r.get("dataset") or "classification"
            glfs = r["method"] in glfs_rows
            prow = "GLFS" if glfs else PAPER_ROW_OF.get(r["method"])
            if prow is None or prow not in pt.index:
                continue
            q = pt.loc[prow]
            note = "paper rows other than GLFS are Zou & Hastie 2005's, with their gene screening; ours use all genes, no screening"
            if prow == "GLFS":
                note = "GLFS classifier (Eq. 11) on all genes; lam by CV on the training set"
            if pd.isna(r["cv_errors"]) or pd.isna(r["test_errors"]):
                rows.append(
                    {
                        "item": f"{ds}: {r['method']} CV / test errors, genes",
                        "paper": f"{prow}: {q['cv_errors']}/{q['cv_n']}, {q['test_errors']}/{q['test_n']}, {q['n_genes']}",
                        "this run": "failed (see the classification table's params)",
                        "note": "",
                        "kind": "classification",
                        "dataset": ds,
                        "method": r["method"],
                        "glfs": glfs,
                    }
                )
                continue
            rows.append(
                {
                    "item": f"{ds}: {r['method']} CV / test errors, genes",
                    "paper": f"{prow}: {q['cv_errors']}/{q['cv_n']}, {q['test_errors']}/{q['test_n']}, {q['n_genes']}",
                    "this run": f"{r['cv_errors']}/{r['cv_n']}, {r['test_errors']}/{r['test_n']}, {r['n_genes']}",
                    "note": note,
                    "kind": "classification",
                    "dataset": ds,
                    "method": r["method"],
                    "glfs": glfs,
                }
            )
    return rows


# ---- which method, on this dataset ------------------------------------------------------------


# ---- which method ---------------------------------------------------------------------------------


def which_table(wm: WhichMethod) -> pd.DataFrame:
    """The ranks table shown for one dataset: one row per method (best first), then random genes and all genes.

    Columns: method, family, mean and sd of the primary score, the scaled score, gap to the best, noise,
    within noise, the side scores' means, and "k: rank (mean)" per gene count.
    """
    sc = wm.score
    tab = pd.DataFrame(
        {
            "method": wm.methods["method"],
            "family": [
                f + (" (supervised)" if s else "") for f, s in zip(wm.methods["family"], wm.methods["supervised"])
            ],
            f"mean {sc}": wm.methods["mean"],
            "sd over runs": wm.methods["sd"],
            "scaled (0 random, 1 best HVG)": wm.methods["scaled"] if wm.hvg else "no HVG",
            "gap to best": wm.methods["gap"],
            "noise": wm.methods["noise"],
            "within noise": np.where(
                wm.methods["method"] == wm.best, "best", np.where(wm.methods["within_noise"], "yes", "")
            ),
        }
    )
    for c in wm.side_scores:
        tab[f"mean {c}" + (" (best resolution, uses the labels)" if c == "ari" else "")] = wm.methods[c]
    ranks = rank_table(wm)
    for k in wm.grid:
        tab[f"{k}: rank (mean)"] = [
            ("-" if not np.isfinite(r) else str(int(r))) + f" ({_f(v)})"
            for r, v in zip(ranks[f"rank@{k}"], ranks[f"mean@{k}"])
        ]
    extra = []
    if wm.n_draws:
        fl = wm.floor.set_index("n_features")
        extra.append(
            {
                "method": f"random genes (floor, {wm.n_draws} draws)",
                f"mean {sc}": wm.floor_mean,
                "sd over runs": np.nan,
                **{
                    f"{k}: rank (mean)": f"{_f(fl.loc[k, 'floor_mean'])} +- {_f(fl.loc[k, 'floor_sd'])}"
                    for k in wm.grid
                    if k in fl.index
                },
            }
        )
    if wm.all_genes is not None:
        extra.append(
            {
                "method": f"all genes ({wm.n_genes or ''})".replace(" ()", ""),
                f"mean {sc}": wm.all_genes,
                "sd over runs": wm.all_genes_sd,
            }
        )
    return pd.concat([tab, pd.DataFrame(extra)], ignore_index=True) if extra else tab


def which_per_k_table(wm: WhichMethod) -> pd.DataFrame:
    """Per (method, gene count): mean and sd of the primary score, rank, scaled score, side scores."""
    cols = ["method", "n_features", "mean", "sd", "n_runs", "rank", "scaled", *wm.side_scores]
    out = wm.per_k[cols].rename(columns={"mean": f"mean {wm.score}", "sd": f"sd {wm.score}"})
    return out.assign(rank=out["rank"].astype("Int64"))


def batch_mixing_table(cdf, rdf):
    """Leiden ARI at the label count beside the batch mixing within cell types, per method (rows) and gene
    count (columns), means over runs (and draws: random genes); None without batches (batch_column unset)."""
    frames = [f for f in (cdf, rdf) if f is not None and "batch_mixing" in f and f["batch_mixing"].notna().any()]
    if not frames:
        return None
    df = pd.concat(frames, ignore_index=True)
    t = df.groupby(["method", "n_features"])[["ari_nlabels", "batch_mixing"]].mean().unstack("n_features")
    t.columns = [f"{'ARI' if c == 'ari_nlabels' else 'mixing'}@{k}" for c, k in t.columns]
    order = sorted(t.columns, key=lambda c: (int(c.split("@")[1]) if c.split("@")[1].isdigit() else 10**9, c))
    return t[order].round(3)
