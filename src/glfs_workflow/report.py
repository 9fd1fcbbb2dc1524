"""Final workflow report: one self-contained HTML file (figures inline as base64 PNG).

Used by ``scripts/make_report.py``; not part of the stable API.  Everything
shown is read from the workflow's result files at run time; the only
hard-coded numbers are the paper's (``resources/paper_table3.tsv`` and the
claims quoted in :data:`PAPER_CLAIMS`), always labelled as the paper's.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import functools
import html
import io
import json
import logging
import platform
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from glfs.api import METHODS

from . import findings as F

log = logging.getLogger(__name__)

# Claims of Wang & Goldenberg (ICML 2013) we compare against; quoted, never ours.
PAPER_CLAIMS = {
    "sim_sigma": ("Sec. 3.1 / Fig. 1A", "GLFS recovers the 4 true features (Score = 1) up to sigma = 0.415 at N = 1000", 0.415),
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

CSS = """
body{font-family:sans-serif;max-width:1150px;margin:auto;padding:1em;color:#222}
h1{border-bottom:2px solid #444} h2{border-bottom:1px solid #aaa;margin-top:2em}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right} th{background:#eee}
.note{background:#fff8e0;border-left:4px solid #e0b000;padding:0.4em 0.8em}
.paper{background:#eef4ff;border-left:4px solid #4070c0;padding:0.4em 0.8em}
.findings{background:#eef8ee;border-left:4px solid #40a040;padding:0.4em 0.8em}
img{max-width:100%} pre{background:#f4f4f4;padding:0.5em;font-size:0.8em;overflow-x:auto}
"""


# ---- small helpers ------------------------------------------------------------------


def _esc(s) -> str:
    return html.escape(str(s))


def _table(df: pd.DataFrame, float_format="{:.3f}", index=False) -> str:
    if df is None or len(df) == 0:
        return "<p><em>(empty)</em></p>"
    return df.to_html(index=index, float_format=lambda x: float_format.format(x), border=0, na_rep="", escape=True)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def _is_glfs(method) -> bool:
    """A GLFS method of the registry (family glfs or glfs_published), or a classification row built on one
    (``glfs_supervised``: the well-posed GLFS with the class graph)."""
    info = METHODS.get(str(method).removesuffix("_supervised"))
    return info is not None and info.is_glfs


def _findings_html(sentences) -> str:
    """A findings block: plain sentences computed from the results (glfs_workflow.findings)."""
    sentences = [s for s in sentences or [] if s]
    if not sentences:
        return ""
    return "<div class='findings'><b>Findings.</b> " + " ".join(_esc(s) for s in sentences) + "</div>"


def _gene_notes(var, genes=None) -> dict:
    """Gene id -> symbol or description carried by the data (a var column that differs from the ids), or {}."""
    ids = var.index.astype(str)
    for col in ("gene_symbol", "symbol", "gene_name", "description"):
        if col in var and (var[col].astype(str).to_numpy() != ids.to_numpy()).any():
            col_values = var[col].astype(object)  # categorical columns (h5ad strings) cannot take a new fill value
            notes = dict(zip(ids, col_values.where(col_values.notna(), "").astype(str)))
            return {g: notes[g] for g in (genes if genes is not None else ids) if notes.get(g)}
    return {}


def _with_note(gene: str, notes: dict, width=32) -> str:
    note = notes.get(gene, "")
    if not note or note == gene:
        return gene
    return f"{gene} ({note[:width]}{'...' if len(note) > width else ''})"


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}"/>'


def _no_mathtext(fn):
    """Draw every text of a figure as plain text.

    Gene, label and method names are the user's: a ``$`` in one would
    otherwise be parsed as matplotlib math text (``$\\foo$`` raises
    ``ParseFatalException: Unknown symbol``).
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return fn(*args, **kwargs)

    return wrapper


@_no_mathtext
def _placeholder(text: str) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    return _png(fig)


def _read_tsv(path):
    from .files import read_tsv  # ids (genes, methods) read as text

    p = Path(path)
    if not p.exists():
        return None
    return read_tsv(p)


# ---- figures ---------------------------------------------------------------------------


def _plain_log_ticks(axis, lo: float, hi: float):
    """Ticks of a log axis over the data range [lo, hi], written as plain numbers (0.001, 0.2, 10).

    At the powers of 10, or at 1, 2 and 5 times them when fewer than two powers of 10 fall in
    the range, or at lo and hi.  Matplotlib's default log labels are math text
    (``$\\mathdefault{10^{-1}}$``), which the figures, drawn with math text off
    (:func:`_no_mathtext`), would show as raw text.
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    decades = 10.0 ** np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
    ticks = [t for t in decades if lo <= t <= hi]
    if len(ticks) < 2:
        ticks = [t for t in np.outer(decades, [1.0, 2.0, 5.0]).ravel() if lo <= t <= hi]
    if len(ticks) < 2:
        ticks = sorted({lo, hi})
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.3g}"))
    axis.set_minor_locator(NullLocator())


def _grid_ticks(ax, values):
    """Ticks at the grid values, plain numbers, on a log axis."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ax.xaxis.set_major_locator(FixedLocator([float(v) for v in values]))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())


@_no_mathtext
def figure_nmi(df: pd.DataFrame, dataset: str, floor: pd.DataFrame | None = None,
               all_genes: float | None = None) -> bytes:
    """Mean +- sd of spectral-clustering NMI against the number of genes, one line per method.

    ``floor`` (glfs_workflow.findings.floor_summary): the random-genes floor, drawn as a grey band (mean +- sd);
    ``all_genes``: the NMI with all genes, a horizontal line.  Line styles: :func:`_method_styles`.
    """
    import matplotlib.pyplot as plt

    if df is None or df.empty:
        return _placeholder(f"{dataset}: no clustering results")
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    if floor is not None and not floor.empty:
        fl = floor.sort_values("n_features")
        sd = fl["floor_sd"].fillna(0.0)
        ax.fill_between(fl["n_features"], fl["floor_mean"] - sd, fl["floor_mean"] + sd, color="0.8", zorder=0,
                        label=f"random genes (floor, mean +- sd of {int(fl['n_draws'].max())} draws)")
        ax.plot(fl["n_features"], fl["floor_mean"], color="0.5", lw=1, zorder=0)
    agg = df.groupby(["method", "n_features"], sort=False)["nmi"].agg(["mean", "std"]).reset_index()
    styles = _method_styles(agg["method"].unique())
    for m, g in agg.groupby("method", sort=False):
        g = g.sort_values("n_features")
        ax.errorbar(g["n_features"], g["mean"], yerr=g["std"].fillna(0), label=m, capsize=2, **styles[m])
    if all_genes is not None and np.isfinite(all_genes):
        ax.axhline(all_genes, color="k", lw=0.8, ls=(0, (1, 2)), zorder=0, label=f"all genes ({all_genes:.3f})")
    ax.set_xscale("log")
    _grid_ticks(ax, sorted(df["n_features"].unique()))
    ax.set_xlabel("number of top-ranked genes (log scale; rightmost = all genes)")
    ax.set_ylabel("NMI (arithmetic), mean +- sd over runs")
    ax.set_title(f"{dataset}: spectral clustering vs labels")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


# Colours (tab20 indices) of the methods outside the HVG family: without tab20's oranges, which the HVG
# flavours use, and its greys, which the random floor uses; dark shades first.
_OTHER_COLOURS = [0, 4, 8, 18, 10, 12, 16, 6, 1, 5, 9, 19, 11, 13, 17, 7]


def _method_styles(methods) -> dict:
    """Line style of each method in the score-against-genes figures.

    The HVG flavours (registry family "hvg") are drawn alike, so the bar they set reads as one group:
    dotted, square markers, shades of orange.  GLFS variants solid, every other method dashed.
    """
    import matplotlib

    methods = list(methods)
    hvg = [m for m in methods if _family(m) == F.HVG_FAMILY]
    oranges, tab20 = matplotlib.colormaps["Oranges"], matplotlib.colormaps["tab20"]
    styles = {}
    for i, m in enumerate(hvg):
        styles[m] = {"ls": ":", "lw": 2.0, "marker": "s", "ms": 4,
                     "color": oranges(0.45 + 0.5 * i / max(len(hvg) - 1, 1))}
    others = [m for m in methods if m not in styles]
    for i, m in enumerate(others):
        styles[m] = {"ls": "-" if _is_glfs(m) else "--", "lw": 1.5, "marker": "o", "ms": 3,
                     "color": tab20(_OTHER_COLOURS[i % len(_OTHER_COLOURS)])}
    return styles


def _family(method) -> str:
    info = METHODS.get(str(method))
    return info.family if info is not None else ""


@_no_mathtext
def figure_which(wm: F.WhichMethod, dataset: str, *, ylabel: str, title: str) -> bytes:
    """Primary score (mean +- sd over runs) against the number of genes for every method of ``wm``
    (glfs_workflow.findings.which_method): the random-genes floor as a grey band (mean +- sd over
    draws), all genes as a horizontal line, the HVG flavours drawn alike (:func:`_method_styles`)."""
    import matplotlib.pyplot as plt

    if wm is None or wm.per_k.empty:
        return _placeholder(f"{dataset}: no clustering results")
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    fl = wm.floor.sort_values("n_features")
    if not fl.empty:
        sd = fl["floor_sd"].fillna(0.0)
        ax.fill_between(fl["n_features"], fl["floor_mean"] - sd, fl["floor_mean"] + sd, color="0.8", zorder=0,
                        label=f"random genes (floor, mean +- sd of {wm.n_draws} draws)")
        ax.plot(fl["n_features"], fl["floor_mean"], color="0.5", lw=1, zorder=0)
    if wm.all_genes is not None and np.isfinite(wm.all_genes):
        ax.axhline(wm.all_genes, color="k", lw=0.8, ls=(0, (1, 2)), zorder=0,
                   label=f"all {wm.n_genes or ''} genes ({wm.all_genes:.3f})".replace("all  genes", "all genes"))
    styles = _method_styles(wm.methods["method"])
    for m in wm.methods["method"]:
        g = wm.per_k[wm.per_k["method"] == m].sort_values("n_features")
        ax.errorbar(g["n_features"], g["mean"], yerr=g["sd"].fillna(0), label=m, capsize=2, **styles[m])
    ax.set_xscale("log")
    _grid_ticks(ax, wm.grid)
    ax.set_xlabel("number of top-ranked genes (log scale)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


@_no_mathtext
def figure_paths(paths: dict, dataset: str) -> bytes:
    """Number of non-zero GLFS weights against lam, one line per GLFS variant (Fig. 2A)."""
    import matplotlib.pyplot as plt

    paths = {m: p for m, p in paths.items() if p is not None and len(p)}
    if not paths:
        return _placeholder(f"{dataset}: no GLFS path recorded")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for m, p in paths.items():
        p = p.sort_values("lam")
        ax.step(p["lam"], p["n_selected"], where="post", marker=".", label=m)
    ax.set_xscale("log")
    lams = np.concatenate([p["lam"].to_numpy(dtype=float) for p in paths.values()])
    lams = lams[np.isfinite(lams) & (lams > 0)]
    if lams.size:
        _plain_log_ticks(ax.xaxis, float(lams.min()), float(lams.max()))
    top = max(float(p["n_selected"].max()) for p in paths.values())
    from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator, StrMethodFormatter

    if top > 50:  # 0 stays on the axis: linear below 1 gene, logarithmic above; no negative counts
        ax.set_yscale("symlog", linthresh=1, linscale=0.5)
        decades = 10 ** np.arange(0, int(np.ceil(np.log10(top))) + 1)
        ax.yaxis.set_major_locator(FixedLocator([0, *decades]))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_ylim(-0.3, decades[-1] * 1.2)
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-0.5, top + 1)
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.set_xlabel("lam (log scale)")
    ax.set_ylabel("number of genes with beta > 0")
    ax.set_title(f"{dataset}: GLFS sparsity path")
    ax.legend(fontsize=8)
    return _png(fig)


@_no_mathtext
def figure_simulation(df: pd.DataFrame, sim: dict) -> bytes:
    """Recovery Score (mean +- sd over replicates) over sigma and over N (Fig. 1A, 1B)."""
    import matplotlib.pyplot as plt

    if df is None or df.empty:
        return _placeholder("no simulation results")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = [
        (axes[0], df[df["n_noise"] == sim.get("n_noise_at_sigma")], "sigma", f"noise sd sigma (N = {sim.get('n_noise_at_sigma')})"),
        (axes[1], df[np.isclose(df["sigma"], float(sim.get("sigma_at_n_noise", np.nan)))], "n_noise", f"noise features N (sigma = {sim.get('sigma_at_n_noise')})"),
    ]
    for ax, d, x, xlabel in panels:
        agg = d.groupby(["method", x])["score"].agg(["mean", "std"]).reset_index()
        for m, g in agg.groupby("method", sort=False):
            g = g.sort_values(x)
            ax.errorbar(g[x], g["mean"], yerr=g["std"].fillna(0), label=m, marker="o", ms=3, capsize=2,
                        ls="-" if _is_glfs(m) else "--")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("Score (1 = 4 true features ranked first)")
        ax.set_ylim(-0.05, 1.05)
        if x == "n_noise":
            ax.set_xscale("log")
            _grid_ticks(ax, sorted(d[x].unique()))
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle("Planted-feature simulation (Wang & Goldenberg 2013, Fig. 1 protocol)")
    return _png(fig)


@_no_mathtext
def figure_heatmap(X, genes, labels, dataset: str, method: str) -> bytes:
    """Expression of the top genes of ``method`` (z-scored per gene), samples grouped by label."""
    import matplotlib.pyplot as plt

    X = np.asarray(X, dtype=np.float64)
    if X.size == 0:
        return _placeholder(f"{dataset}: no genes")
    labels = np.asarray(labels).astype(str)
    order = np.argsort(labels, kind="stable")
    Z = X[order]
    sd = Z.std(axis=0)
    Z = (Z - Z.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(genes) + 1.8))
    im = ax.imshow(Z.T, aspect="auto", cmap="RdBu_r", vmin=-3, vmax=3, interpolation="nearest")
    ax.set_yticks(range(len(genes)))
    ax.set_yticklabels(genes, fontsize=7)
    lab = labels[order]
    bounds = np.flatnonzero(lab[1:] != lab[:-1]) + 0.5
    for b in bounds:
        ax.axvline(b, color="k", lw=1)
    starts = np.r_[0, bounds + 0.5]
    ends = np.r_[bounds + 0.5, lab.size]
    ax.set_xticks((starts + ends) / 2 - 0.5)
    ax.set_xticklabels([lab[int(s)] for s in starts], fontsize=8)
    ax.set_xlabel("samples, grouped by label")
    ax.set_title(f"{dataset}: top {len(genes)} genes of {method} (z-score per gene)")
    fig.colorbar(im, ax=ax, fraction=0.03)
    return _png(fig)


# ---- summaries -------------------------------------------------------------------------


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
    clears = {m: [int(k) for k in g.loc[g["clears"] & (g["n_features"] < kmax), "n_features"]]
              for m, g in comp.groupby("method", sort=False)}
    tab["clears floor at"] = [
        ("" if m == "random genes (floor)" else
         ("every k" if clears.get(m) == grid and grid else (", ".join(map(str, clears.get(m, []))) or "never")))
        for m in tab["method"]
    ]
    fl = F.floor_summary(random_df).set_index("n_features")
    sd_row = {"method": "random genes: sd over draws"}
    for c in shown:
        k = int(c.split("@")[1].split("(")[1].rstrip(")")) if "(" in c else int(c.split("@")[1])
        sd_row[c] = float(fl.loc[k, "floor_sd"]) if k in fl.index else np.nan
    tab = pd.concat([tab, pd.DataFrame([sd_row])], ignore_index=True)
    return tab


def runtime_table(benchmarks) -> pd.DataFrame:
    """Per-rule wall time from Snakemake ``benchmark:`` files (benchmarks/{rule}/{wildcards}.tsv).

    ``benchmarks``: the benchmark files of this run's jobs (a list, as report_layout gives them;
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
        rows.append({"rule": f.parent.name, "job": f.stem, "s": float(b["s"].iloc[0]),
                     "max_rss_mb": float(b["max_rss"].iloc[0]) if "max_rss" in b else np.nan})
    if not rows:
        return pd.DataFrame(columns=["rule", "jobs", "total_s", "max_s", "slowest_job", "max_rss_mb"])
    df = pd.DataFrame(rows)
    g = df.groupby("rule")
    out = pd.DataFrame({
        "jobs": g.size(),
        "total_s": g["s"].sum(),
        "max_s": g["s"].max(),
        "slowest_job": df.loc[g["s"].idxmax(), ["rule", "job"]].set_index("rule")["job"],
        "max_rss_mb": g["max_rss_mb"].max(),
    }).reset_index().sort_values("total_s", ascending=False)
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


def paper_vs_run(ctx: dict) -> pd.DataFrame:
    """Rows comparing the paper's claims with this run's numbers (computed from the results)."""
    rows = [*_simulation_rows(ctx), *_gbm_clustering_rows(ctx), *_gbm_path_rows(ctx), *_classification_rows(ctx)]
    return pd.DataFrame(rows, columns=["item", "paper", "this run", "note"])


def _simulation_rows(ctx: dict) -> list:
    """Per simulated method: the largest sigma (GLFS readings) and N (GLFS, Laplacian score) with full recovery."""
    rows = []
    sim = ctx.get("simulation_df")
    simcfg = ctx.get("simulation_config") or {}
    if sim is not None and not sim.empty:
        a = sim[sim["n_noise"] == simcfg.get("n_noise_at_sigma")]
        b = sim[np.isclose(sim["sigma"], float(simcfg.get("sigma_at_n_noise", np.nan)))]
        for m in sorted(sim["method"].unique()):
            best, lo, hi = _max_x_with_full_recovery(a[a["method"] == m], "sigma")
            if _is_glfs(m):
                rows.append(_sigma_row(m, best, lo, hi, _failing_points(a[a["method"] == m], "sigma")))
            bestn, lo, hi = _max_x_with_full_recovery(b[b["method"] == m], "n_noise")
            if _is_glfs(m) or m == "laplacian_score":
                rows.append(_n_noise_row(m, bestn, lo, hi, _failing_points(b[b["method"] == m], "n_noise")))
    return rows


def _sigma_row(m: str, best, lo, hi, failing: list) -> dict:
    """The row "largest sigma with Score = 1" of one GLFS reading."""
    ref, _, val = PAPER_CLAIMS["sim_sigma"]
    note = f"grid {lo}..{hi}; resolution limits the comparison"
    if best is not None and best >= hi:
        note += "; full recovery at every sigma tried"
    if failing:
        note += f"; Score < 1 at sigma = {failing}"
    return {"item": f"simulation, largest sigma with Score = 1 ({m})", "paper": f"{val} ({ref})",
            "this run": "none" if best is None else best, "note": note}


def _n_noise_row(m: str, bestn, lo, hi, failing: list) -> dict:
    """The row "largest N with Score = 1" of a GLFS reading or the Laplacian score."""
    key = "sim_n_noise_ls" if m == "laplacian_score" else "sim_n_noise_glfs"
    ref, _, val = PAPER_CLAIMS[key]
    note = f"grid N = {lo}..{hi}"
    if hi is not None and hi < val:
        note += f"; the grid stops below the paper's {val} (run `snakemake simulate_full` for N up to 60000)"
    if failing:
        note += f"; Score < 1 at N = {failing} (counted from the smallest N, as the paper's 'up to')"
    return {"item": f"simulation, largest N with Score = 1 ({m})", "paper": f"{val} ({ref})",
            "this run": "none" if bestn is None else bestn, "note": note}


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
            rows.append({
                "item": f"{ds}: NMI rank of the best GLFS variant among unsupervised methods at {k} genes",
                "paper": f"1 ({PAPER_CLAIMS['gbm_small_k'][0]}, figure only)",
                "this run": f"{pos} of {len(mk)} ({glfs_rows.iloc[0]['method']} {glfs_rows.iloc[0]['nmi']:.3f}; best {mk.iloc[0]['method']} {mk.iloc[0]['nmi']:.3f})",
                "note": "paper: 18,632 genes x 173 patients (Broad U133A); ours: see the dataset's note",
            })
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
        rows.append({
            "item": f"{ds}: genes at the largest lam with a non-empty GLFS support ({ctx.get('glfs_method')})",
            "paper": f"about {PAPER_CLAIMS['gbm_path'][2]} at lam ~ 0.5 ({PAPER_CLAIMS['gbm_path'][0]})",
            "this run": f"{int(top['n_selected'])} at lam = {top['lam']:.3g}; {int(p['n_selected'].max())} at the smallest lam",
            "note": "lam depends on the scale of X and M (GLFS preprocesses X), so lam values are not comparable across implementations",
        })
    return rows


def _classification_rows(ctx: dict) -> list:
    """Golub (Table 3): CV / test errors and genes of each classifier beside the paper's row for it."""
    rows = []
    cls = ctx.get("classification")
    paper = ctx.get("paper_table")
    if cls is not None and not cls.empty and paper is not None:
        pt = paper.set_index("method")
        for _, r in cls.iterrows():
            ds = r.get("dataset") or "classification"
            prow = "GLFS" if _is_glfs(r["method"]) else PAPER_ROW_OF.get(r["method"])
            if prow is None or prow not in pt.index:
                continue
            q = pt.loc[prow]
            note = "paper rows other than GLFS are Zou & Hastie 2005's, with their gene screening; ours use all genes, no screening"
            if prow == "GLFS":
                note = "GLFS classifier (Eq. 11) on all genes; lam by CV on the training set"
            if pd.isna(r["cv_errors"]) or pd.isna(r["test_errors"]):
                rows.append({"item": f"{ds}: {r['method']} CV / test errors, genes",
                             "paper": f"{prow}: {q['cv_errors']}/{q['cv_n']}, {q['test_errors']}/{q['test_n']}, {q['n_genes']}",
                             "this run": "failed (see the classification table's params)", "note": ""})
                continue
            rows.append({
                "item": f"{ds}: {r['method']} CV / test errors, genes",
                "paper": f"{prow}: {q['cv_errors']}/{q['cv_n']}, {q['test_errors']}/{q['test_n']}, {q['n_genes']}",
                "this run": f"{r['cv_errors']}/{r['cv_n']}, {r['test_errors']}/{r['test_n']}, {r['n_genes']}",
                "note": note,
            })
    return rows


# ---- which method, on this dataset ------------------------------------------------------------

# How each protocol's primary score is named: (long, short).
SCORE_NAMES = {
    "leiden": ("Leiden ARI at the resolution whose cluster count is closest to the number of labels "
               "(ari_nlabels: the resolution is chosen without the labels)", "Leiden ARI at the label count"),
    "spectral": ("spectral-clustering NMI (nmi, the papers' protocol)", "spectral NMI"),
}
PROTOCOL_NAMES = {"leiden": "single-cell Leiden protocol", "spectral": "spectral protocol"}
NOISE_RULE = ("a method is within noise of the best when the gap of their grid-averaged means is smaller than "
              "max(sd over runs of the best method, sd over runs of that method, sd over draws of the random "
              "floor), each averaged over the grid points")
SCALED_RULE = ("baseline-scaled score (Zappia et al., Nat Methods 2025): (S_m(k) - S_random(k)) / "
               "(S_bestHVG(k) - S_random(k)) at each gene count k, with S the mean score, S_random the mean "
               "over the random draws and S_bestHVG the best HVG flavour's mean at k; 0 = random genes of the "
               "same count, 1 = the best HVG flavour; averaged over the grid")


def _f(x, digits=3) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{digits}f}"


def _names_with(wm: F.WhichMethod, names, digits=3) -> str:
    means = wm.methods.set_index("method")["mean"]
    return F._list(f"{m} ({_f(means[m], digits)})" for m in names)


def _n_above_floor(wm: F.WhichMethod) -> str:
    """ "n of m": the unsupervised methods whose grid-averaged mean is above the random floor's."""
    uns = wm.methods[~wm.methods["supervised"]]
    return f"{int((uns['above_floor'] > 0).sum())} of {len(uns)}"


def which_sentences(wm: F.WhichMethod | None, dataset: str) -> list[str]:
    """The computed sentences answering "which method" on one dataset and protocol (numbers from ``wm``)."""
    if wm is None or wm.best is None:
        return []
    long, _ = SCORE_NAMES[wm.protocol]
    m = wm.methods.set_index("method")
    b = m.loc[wm.best]
    out = [f"On {dataset}, by {long}, averaged over {len(wm.grid)} gene counts ({', '.join(map(str, wm.grid))}) "
           f"and {wm.n_runs} runs, the best method is {wm.best} ({_f(b['mean'])})."]
    noise = (f" (noise rule: {NOISE_RULE}; here sd over runs of {wm.best} {_f(b['sd'])}, sd over draws of random "
             f"genes {_f(wm.floor_sd)})")
    if wm.within_noise:
        out.append(f"Within noise of it: {_names_with(wm, wm.within_noise)}{noise}.")
    else:
        out.append(f"No other method is within noise of it{noise}.")
    if wm.hvg:
        bar = (f"The HVG bar (the best of the {len(wm.hvg)} HVG flavours at each count) averages "
               f"{_f(wm.hvg_bar_mean)}")
        above = [x for x in m.index if not m.loc[x, "supervised"] and np.isfinite(m.loc[x, "scaled"])
                 and m.loc[x, "scaled"] > 1]
        scaled = (f"; baseline-scaled score (0 = random genes, 1 = the best HVG flavour) of {wm.best}: "
                  f"{_f(b['scaled'], 2)}")
        if above:
            scaled += f"; above the HVG bar on average (scaled > 1): {F._list(above)}"
        if wm.scaled_undefined_at:
            scaled += (f"; the scaled score is undefined at {', '.join(map(str, wm.scaled_undefined_at))} genes, "
                       "where no HVG flavour is above random genes")
        out.append(bar + scaled + ".")
    else:
        out.append(f"No HVG flavour ran on {dataset}, so the baseline-scaled score (1 = the best HVG flavour) is "
                   "undefined here.")
    floor = (f"Random genes of the same counts average {_f(wm.floor_mean)} (sd {_f(wm.floor_sd)} over "
             f"{wm.n_draws} draws; {_n_above_floor(wm)} methods average above it)" if wm.n_draws
             else "No random-genes floor was computed")
    if wm.all_genes is not None:
        floor += f"; all {wm.n_genes or ''} genes give {_f(wm.all_genes)}".replace("all  genes", "all genes")
    out.append(floor + ".")
    sup = [x for x in wm.supervised if x in m.index]
    if sup:
        out.append(f"Supervised references (they used the labels; not ranked): {_names_with(wm, sup)}.")
    return out


def which_summary_sentence(wm: F.WhichMethod, dataset: str) -> str:
    """One sentence of the report's opening summary: best, within noise, HVG bar and floor of one dataset."""
    _, short = SCORE_NAMES[wm.protocol]
    b = wm.methods.set_index("method").loc[wm.best]
    s = f"{dataset} ({short}): best {wm.best} ({_f(b['mean'])}"
    s += f", scaled {_f(b['scaled'], 2)})" if wm.hvg else ")"
    s += f"; within noise: {_names_with(wm, wm.within_noise) if wm.within_noise else 'none'}"
    s += f"; HVG bar {_f(wm.hvg_bar_mean)}" if wm.hvg else "; no HVG flavour ran"
    s += (f"; random floor {_f(wm.floor_mean)} ({_n_above_floor(wm)} methods above it)" if wm.n_draws
          else "; no random floor")
    if wm.all_genes is not None:
        s += f"; all genes {_f(wm.all_genes)}"
    return s + "."


def which_summary_html(answers: dict, which_md="results/which_method.md") -> list:
    """The opening summary (above the configuration): one paragraph over every labelled dataset."""
    items = [(ds, wm) for (ds, _), wm in answers.items() if wm is not None and wm.best is not None]
    if not items:
        return []
    text = " ".join(_esc(which_summary_sentence(wm, ds)) for ds, wm in items)
    return ["<h2>Which method? (summary)</h2>",
            f"<div class='findings'><b>This run's answer.</b> Per labelled dataset: the method with the highest "
            f"mean score over the gene-count grid and runs, the methods within noise of it ({_esc(NOISE_RULE)}), "
            f"the HVG bar (the best HVG flavour at each count, averaged over the grid) and the random-genes floor. "
            f"{text} Details, figures and ranks in each dataset's section; the same tables in "
            f"{_esc(which_md)}.</div>"]


def which_table(wm: F.WhichMethod) -> pd.DataFrame:
    """The ranks table shown for one dataset: one row per method (best first), then random genes and all genes.

    Columns: method, family, mean and sd of the primary score, the scaled score, gap to the best, noise,
    within noise, the side scores' means, and "k: rank (mean)" per gene count.
    """
    sc = wm.score
    tab = pd.DataFrame({
        "method": wm.methods["method"],
        "family": [f + (" (supervised)" if s else "") for f, s in zip(wm.methods["family"], wm.methods["supervised"])],
        f"mean {sc}": wm.methods["mean"],
        "sd over runs": wm.methods["sd"],
        "scaled (0 random, 1 best HVG)": wm.methods["scaled"] if wm.hvg else "no HVG",
        "gap to best": wm.methods["gap"],
        "noise": wm.methods["noise"],
        "within noise": np.where(wm.methods["method"] == wm.best, "best",
                                 np.where(wm.methods["within_noise"], "yes", "")),
    })
    for c in wm.side_scores:
        tab[f"mean {c}" + (" (best resolution, uses the labels)" if c == "ari" else "")] = wm.methods[c]
    ranks = F.rank_table(wm)
    for k in wm.grid:
        tab[f"{k}: rank (mean)"] = [("-" if not np.isfinite(r) else str(int(r))) + f" ({_f(v)})"
                                    for r, v in zip(ranks[f"rank@{k}"], ranks[f"mean@{k}"])]
    extra = []
    if wm.n_draws:
        fl = wm.floor.set_index("n_features")
        extra.append({"method": f"random genes (floor, {wm.n_draws} draws)", f"mean {sc}": wm.floor_mean,
                      "sd over runs": np.nan, **{f"{k}: rank (mean)": f"{_f(fl.loc[k, 'floor_mean'])} +- "
                                                 f"{_f(fl.loc[k, 'floor_sd'])}" for k in wm.grid if k in fl.index}})
    if wm.all_genes is not None:
        extra.append({"method": f"all genes ({wm.n_genes or ''})".replace(" ()", ""), f"mean {sc}": wm.all_genes,
                      "sd over runs": wm.all_genes_sd})
    return pd.concat([tab, pd.DataFrame(extra)], ignore_index=True) if extra else tab


def which_per_k_table(wm: F.WhichMethod) -> pd.DataFrame:
    """Per (method, gene count): mean and sd of the primary score, rank, scaled score, side scores."""
    cols = ["method", "n_features", "mean", "sd", "n_runs", "rank", "scaled", *wm.side_scores]
    out = wm.per_k[cols].rename(columns={"mean": f"mean {wm.score}", "sd": f"sd {wm.score}"})
    return out.assign(rank=out["rank"].astype("Int64"))


def _which_html(name: str, wm: F.WhichMethod | None) -> list:
    """Subsection "Which method": the computed sentences, the rules, the ranks table and per-k details."""
    if wm is None or wm.best is None:
        return []
    parts = [f"<h3 id='which-{_esc(name)}-{wm.protocol}'>Which method on {_esc(name)}? "
             f"({_esc(PROTOCOL_NAMES[wm.protocol])})</h3>"]
    parts.append(_findings_html(which_sentences(wm, name)))
    parts.append(f"<p>Score: {_esc(SCORE_NAMES[wm.protocol][0])}. Best: the highest mean over the grid "
                 f"({', '.join(map(str, wm.grid))} genes) and runs; the supervised references are not ranked. "
                 f"Noise: {_esc(NOISE_RULE)} (column 'noise'; 'gap to best' below it = within noise). "
                 f"Scaled: {_esc(SCALED_RULE)}"
                 + ("" if wm.hvg else f" (no HVG flavour ran on {_esc(name)}, so it is undefined)") +
                 ". Rank at each count: 1 = best mean at that count.</p>")
    parts.append(_table(which_table(wm)))
    parts.append(f"<details><summary>per gene count: mean, sd, rank and scaled score</summary>"
                 f"{_table(which_per_k_table(wm))}</details>")
    return parts


def _md_table(header: list, rows: list) -> list:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def which_method_markdown(answers: dict, report_html="results/report.html") -> str:
    """results/which_method.md: per labelled dataset and protocol, the computed sentences and a table
    (method, mean primary score, scaled score, rank at each gene count), for the README's "Which method?"."""
    lines = ["# Which method? (this run)", "",
             f"Written by the workflow's make_report rule from this run's tables ({report_html} has the "
             "figures). Best: the highest mean primary score over the gene-count grid and runs. Noise: "
             f"{NOISE_RULE}. Scaled: {SCALED_RULE}.", ""]
    for (ds, protocol), wm in answers.items():
        if wm is None or wm.best is None:
            continue
        lines += [f"## {ds} ({PROTOCOL_NAMES[protocol]}; score {wm.score})", ""]
        lines += [" ".join(which_sentences(wm, ds)), ""]
        ranks = F.rank_table(wm).set_index("method")
        header = ["method", f"mean {wm.score}", "scaled", *[f"rank at {k}" for k in wm.grid]]
        rows = []
        for _, r in wm.methods.iterrows():
            m = r["method"]
            name = m + (" (supervised)" if r["supervised"] else "") + (" (best)" if m == wm.best else
                                                                        " (within noise)" if r["within_noise"] else "")
            rows.append([name, _f(r["mean"]), _f(r["scaled"], 2) if wm.hvg else "no HVG",
                         *[("-" if not np.isfinite(ranks.loc[m, f"rank@{k}"]) else int(ranks.loc[m, f"rank@{k}"]))
                           for k in wm.grid]])
        if wm.n_draws:
            rows.append([f"random genes ({wm.n_draws} draws)", _f(wm.floor_mean), "0" if wm.hvg else "no HVG",
                         *["" for _ in wm.grid]])
        if wm.all_genes is not None:
            rows.append([f"all genes ({wm.n_genes})" if wm.n_genes else "all genes", _f(wm.all_genes), "",
                         *["" for _ in wm.grid]])
        lines += _md_table(header, rows) + [""]
    if len(lines) == 5:
        lines += ["No labelled dataset was evaluated in this run.", ""]
    return "\n".join(lines)


# ---- the GLFS section ------------------------------------------------------------------------

SENSITIVITY_LABEL = ("Post-hoc sensitivity on the evaluated data, not tuning: the default graph_weight was chosen "
                     "on the planted simulation (benchmarks/results/glfs_design_defaults.txt).")


def sensitivity_table(sens: pd.DataFrame) -> pd.DataFrame:
    """One row per graph_weight: lambda1, criterion, converged and mean NMI at each k (the default marked)."""
    wide = sens.pivot_table(index="graph_weight", columns="k", values="nmi_mean", aggfunc="first")
    wide.columns = [f"NMI@{int(k)}" for k in wide.columns]
    first = sens.drop_duplicates("graph_weight").set_index("graph_weight")
    out = first[["lambda1", "criterion", "greedy_criterion", "converged", "n_swaps"]].join(wide).reset_index()
    out.insert(1, "default", np.where(first["is_default"].astype(bool).to_numpy(), "default", ""))
    return out


def glfs_section(layout: dict, *, metas: dict, paths: dict, path_tsvs: dict, clustering: dict, random: dict,
                 classification: dict) -> str:
    """HTML of the GLFS section: convergence, the published path, why it collapses, side by side, vs greedy, sensitivity.

    ``metas``: (dataset, method) -> selection JSON of every GLFS method; ``paths``:
    (dataset, method) -> path table of the published readings; ``path_tsvs``:
    dataset -> results/{dataset}/glfs_path.tsv; ``clustering``/``random``: dataset
    -> clustering_nmi.tsv / clustering_random.tsv rows; ``classification``:
    dataset -> classification.tsv.
    """
    out = ["<h2>GLFS: convergence, the published relaxation, and the well-posed glfs</h2>"]
    out.append("<p><code>glfs</code> is the well-posed GLFS (the recommended one): the budgeted LapRLS A-optimal "
               "design, min Tr(H_S<sup>-1</sup>) over sets of k genes, solved by a greedy start and single swaps to a "
               "certified 1-swap local optimum (docs/methods.md). <code>glfs_exact</code>, <code>glfs_paper</code> "
               "and <code>glfs_printed</code> are the published method's readings (lam paths).</p>")
    out += _convergence_html(metas)
    out += _published_path_html(path_tsvs, layout.get("glfs_method"))
    out += _collapse_html(paths)
    out += _side_by_side_html(clustering, random, classification)
    out += _greedy_html(layout)
    out += _sensitivity_html(layout)
    return "".join(out)


def _convergence_html(metas: dict) -> list:
    """Subsection "Converged or not": one row per GLFS selection."""
    conv = F.convergence_table(metas)
    out = ["<h3>Converged or not</h3>"]
    out.append(_findings_html(F.convergence_findings(conv)))
    out.append(_table(conv) if not conv.empty else "<p>No GLFS selection in this run.</p>")
    return out


def _published_path_html(path_tsvs: dict, gm) -> list:
    """Subsection "The published path": findings and each dataset's glfs_path.tsv."""
    if not path_tsvs:
        return []
    out = [f"<h3>The published path ({_esc(gm)})</h3>"]
    out.append(_findings_html([s for ds, p in path_tsvs.items() for s in F.path_findings(p, gm, ds)]))
    for ds, p in path_tsvs.items():
        if p is not None and len(p):
            cols = [c for c in p.columns if c != "method"]
            note = "" if "converged" in p else " (this run's path records no converged column)"
            out.append(f"<p>{_esc(ds)}{_esc(note)}:</p>" + _table(p[cols], "{:.4g}"))
    return out


def _collapse_html(paths: dict) -> list:
    """Subsection "Why the published relaxation collapses": the argument and this run's numbers."""
    if not paths:
        return []
    out = ["<h3>Why the published relaxation collapses</h3>"]
    out.append("<p>The published GLFS minimises a LapRLS covariance trace V(beta) plus lam sum(beta) over "
               "gene weights beta &gt;= 0 without a budget. For the exact trace, V(beta) &gt;= 0 = V(0): "
               "beta = 0 is the global minimum, and the l1 term only adds to it. A solver therefore stops "
               "where its start point and iteration limit leave it, and solves run to convergence collapse "
               "towards very few genes. The numbers of this run:</p>")
    out.append(_findings_html(F.collapse_findings(paths)))
    return out


def _side_by_side_html(clustering: dict, random: dict, classification: dict) -> list:
    """Subsection "Side by side": clustering NMI of the GLFS family beside the floor, and the Table 3 rows."""
    out = []
    sbs = [ds for ds, c in clustering.items() if c is not None and not c.empty]
    if sbs or classification:
        out.append("<h3>Side by side</h3>")
        out.append("<p>Mean spectral-clustering NMI of the GLFS family, the Laplacian score, LapAOFS and random "
                   "genes of the same count (the floor every method must clear).</p>")
    for ds in sbs:
        tab = F.side_by_side(clustering[ds], random.get(ds))
        out.append(f"<h4>{_esc(ds)}</h4>" + _table(tab))
    for ds, c in classification.items():
        if c is None or c.empty:
            continue
        keep = [m for m in ["glfs", "glfs_supervised", *F.PUBLISHED_GLFS, "random_genes"] if m in set(c["method"])]
        if keep:
            rows = c.set_index("method").loc[keep].reset_index()
            cols = [x for x in ["method", "cv_errors", "cv_n", "test_errors", "test_n", "n_genes"] if x in rows]
            out.append(f"<h4>{_esc(ds)}: classification (Table 3 protocol)</h4>" + _table(rows[cols]))
    return out


def _greedy_html(layout: dict) -> list:
    """Subsection "glfs against greedy LapAOFS": each dataset's glfs_vs_greedy.tsv."""
    greedy = {d["name"]: _read_tsv(d["glfs_vs_greedy"]) for d in layout["datasets"] if d.get("glfs_vs_greedy")}
    greedy = {k: v for k, v in greedy.items() if v is not None}
    if not greedy:
        return []
    out = ["<h3>glfs against greedy LapAOFS on the same criterion</h3>"]
    out.append("<p>Tr(H_S<sup>-1</sup>) (He et al. 2011, Eq. 12; lower is better) of greedy LapAOFS (the start) "
               "and of glfs (after the swaps), same X, graph and lambdas.</p>")
    out.append(_findings_html(F.greedy_findings(greedy)))
    tab = pd.concat([t.assign(dataset=ds) for ds, t in greedy.items()], ignore_index=True)
    out.append(_table(tab[["dataset", *[c for c in tab.columns if c != "dataset"]]], "{:.4g}"))
    return out


def _sensitivity_html(layout: dict) -> list:
    """Subsection "lambda1 sensitivity of glfs": each dataset's glfs_sensitivity.tsv, labelled post hoc."""
    sens = {d["name"]: _read_tsv(d["sensitivity"]) for d in layout["datasets"] if d.get("sensitivity")}
    sens = {k: v for k, v in sens.items() if v is not None and not v.empty}
    if not sens:
        return []
    out = ["<h3>lambda1 sensitivity of glfs</h3>"]
    out.append(f"<p class='note'>{_esc(SENSITIVITY_LABEL)} lambda1 = graph_weight / mean degree of the graph; "
               "NMI as in the clustering tables (mean over runs); criterion values are not comparable across "
               "graph weights.</p>")
    out.append(_findings_html([s for ds, t in sens.items() for s in F.sensitivity_findings(t, ds)]))
    for ds, t in sens.items():
        out.append(f"<h4>{_esc(ds)}</h4>" + _table(sensitivity_table(t), "{:.4g}"))
    return out


# ---- the document --------------------------------------------------------------------------


def build_report(layout: dict, config: dict, *, figures_out: dict | None = None,
                 which_method_out=None, replaced: dict | None = None) -> str:
    """Assemble the HTML report.

    ``layout`` (built by workflow/rules/report.smk) names every input:
    ``datasets`` (list of dicts with name, labelled, methods, adata,
    selections, metas, clustering, random_floor, leiden, leiden_random,
    glfs_path, heatmap_method), ``classification`` (dataset -> path),
    ``paper_table``, ``simulation`` (path or None), ``benchmarks``
    (directory), ``provenance`` (dataset -> path).  ``figures_out`` maps
    figure names to PNG paths that are also written (for ``snakemake
    --report``); ``which_method_out``: a path for the which-method answers as
    markdown (:func:`which_method_markdown`), or None; ``replaced``: the record
    (:func:`replaced_report`) of a report made by another configuration that this one
    replaces, said at the top.  ``layout["report_dir"]``: where the report is written.
    """
    import matplotlib

    matplotlib.use("Agg")

    figs: dict[str, bytes] = {}
    res = _Results()
    _which_answers(layout, res)
    report_dir = layout.get("report_dir") or "results"
    parts = _head_html()
    parts += _replaced_html(replaced, f"{report_dir}/report.html")
    parts += which_summary_html(res.which, which_md=f"{report_dir}/which_method.md")
    parts += _run_html(layout, config)
    parts += _provenance_html(layout, config)
    for d in layout["datasets"]:
        parts += _dataset_html(d, layout, figs, res)
    cls_parts, cls_all = _classification_html(layout)
    parts += cls_parts
    paper_table = _read_tsv(layout["paper_table"]) if layout.get("paper_table") else None
    glfs_html = glfs_section(
        layout, metas=res.metas, paths=res.paths, path_tsvs={k: v for k, v in res.path_tsvs.items() if v is not None},
        clustering=res.clustering, random=res.random,
        classification={ds: c for ds, c in zip(layout.get("classification") or {}, cls_all)},
    )
    parts += _paper_table_html(layout, paper_table)
    parts.append(glfs_html)
    sim_parts, sim_df = _simulation_html(layout, config, figs)
    parts += sim_parts
    parts += _paper_vs_run_html(layout, config, res, sim_df, cls_all, paper_table)
    parts += _runtime_software_html(layout)
    parts.append("</body></html>")
    _write_figures(figures_out or {}, figs)
    if which_method_out is not None:
        from .files import atomic_path

        with atomic_path(which_method_out) as tmp:
            Path(tmp).write_text(which_method_markdown(res.which, report_html=f"{report_dir}/report.html"),
                                 encoding="utf-8")
    return "".join(parts)


def _read_results(d: dict, protocol: str) -> tuple:
    """A dataset's results and random floor of one protocol: (clustering_nmi, clustering_random) for
    "spectral", (clustering_leiden, leiden_random) for "leiden"; None for a file not in the layout."""
    res_key, floor_key = ("clustering", "random_floor") if protocol == "spectral" else ("leiden", "leiden_random")
    cdf = _read_tsv(d[res_key]) if d.get(res_key) else None
    rdf = _read_tsv(d[floor_key]) if d.get(floor_key) else None
    return cdf, rdf


def _n_genes(adata_path) -> int | None:
    """The number of genes of a dataset's .h5ad (read backed: the matrix is not loaded), or None."""
    import anndata

    if not adata_path or not Path(adata_path).exists():
        return None
    ad = anndata.read_h5ad(adata_path, backed="r")
    try:
        return int(ad.n_vars)
    finally:
        ad.file.close()


def _which_answers(layout: dict, res: _Results) -> None:
    """Read every labelled dataset's evaluation tables and compute the which-method answers
    (glfs_workflow.findings.which_method) into ``res.tables`` and ``res.which``, keyed (dataset, protocol)."""
    supervised = layout.get("supervised") or ()
    for d in layout["datasets"]:
        if not d["labelled"]:
            continue
        protocols = [p for p, key in (("spectral", "clustering"), ("leiden", "leiden")) if d.get(key)]
        if not protocols:
            continue
        n_genes = _n_genes(d.get("adata"))
        for protocol in protocols:
            cdf, rdf = _read_results(d, protocol)
            res.tables[(d["name"], protocol)] = (cdf, rdf)
            res.which[(d["name"], protocol)] = F.which_method(cdf, rdf, protocol=protocol, n_genes=n_genes,
                                                              supervised=supervised)


@dataclasses.dataclass
class _Results:
    """Result tables read while the dataset sections are written, for the GLFS and paper-versus-run sections."""

    clustering: dict = dataclasses.field(default_factory=dict)  # dataset -> clustering_nmi.tsv rows
    random: dict = dataclasses.field(default_factory=dict)  # dataset -> clustering_random.tsv rows (or None)
    path_tsvs: dict = dataclasses.field(default_factory=dict)  # dataset -> glfs_path.tsv rows (or None)
    metas: dict = dataclasses.field(default_factory=dict)  # (dataset, method) -> selection JSON
    paths: dict = dataclasses.field(default_factory=dict)  # (dataset, method) -> path table of a published reading
    tables: dict = dataclasses.field(default_factory=dict)  # (dataset, protocol) -> (results, random floor) rows
    which: dict = dataclasses.field(default_factory=dict)  # (dataset, protocol) -> findings.WhichMethod (or None)


def _head_html() -> list:
    """The document head, the title and the generation time."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>GLFS workflow report</title><style>{CSS}</style></head><body>"]
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts.append("<h1>Graph-Laplacian feature selection: workflow report</h1>")
    parts.append(f"<p>Generated {now}. Everything below is computed from this run's result files, "
                 "except blocks marked <em>paper</em>, which quote Wang &amp; Goldenberg (ICML 2013).</p>")
    return parts


def _run_html(layout: dict, config: dict) -> list:
    """Section "What was run": datasets, the methods each ran, seeds and the configuration of this run.

    Everything is this run's (glfs_workflow.findings.run_summary): the methods a dataset ran, not
    the top-level ``methods``; the classification and simulation only when they ran.  The
    configuration shown leaves out the definitions of datasets not in ``run``.
    """
    s = F.run_summary(layout)
    methods = [(f"methods on {ds}", f"{len(ms)}: {', '.join(ms)}" if ms else "none") for ds, ms in s["methods"].items()]
    cls = config.get("classification", {})
    cls_row = (json.dumps({**cls, "datasets": s["classification"]}) if s["classification"] else "not run")
    sim_row = "not run"
    if s["simulation_methods"]:
        sim = {k: v for k, v in (config.get("simulation") or {}).items() if k not in ("enabled", "methods")}
        sim_row = f"methods {', '.join(s['simulation_methods'])}; {json.dumps(sim)}"
    parts = ["<h2>What was run</h2>"]
    parts.append(_findings_html(F.run_findings(layout, config)))
    parts.append("<table>" + "".join(f"<tr><th>{_esc(k)}</th><td style='text-align:left'>{_esc(v)}</td></tr>" for k, v in [
        ("datasets", ", ".join(s["datasets"])),
        *methods,
        ("master seed", config.get("seed")),
        ("graph", json.dumps(config.get("graph", {}))),
        ("selection", json.dumps(config.get("selection", {}))),
        ("clustering", json.dumps(config.get("clustering", {}))),
        ("classification", cls_row),
        ("simulation", sim_row),
    ]) + "</table>")
    parts.append("<p>Seeds: every random step derives from the master seed: clustering run r uses "
                 "<code>glfs.evaluate.run_seeds(seed, n_runs)[r]</code> (the same for every method), CV folds "
                 "are shuffled with the master seed, each simulated data set uses "
                 "<code>glfs.simulate.point_seed(seed, sigma, N, replicate)</code> (the same for every method), "
                 "and selection methods get <code>random_state = seed</code>.</p>")
    parts.append("<details><summary>configuration of this run (datasets not in <code>run</code> left out)</summary>"
                 "<pre>" + _esc(json.dumps(run_config(config, s), indent=1, default=str)) + "</pre></details>")
    return parts


def run_config(config: dict, summary: dict) -> dict:
    """The configuration as this run used it: ``datasets`` and ``classification.datasets`` limited to
    the datasets of the run (``summary``: glfs_workflow.findings.run_summary)."""
    out = dict(config)
    if "datasets" in out:
        out["datasets"] = {k: v for k, v in (out["datasets"] or {}).items() if k in summary["datasets"]}
    if isinstance(out.get("classification"), dict):
        out["classification"] = {**out["classification"], "datasets": summary["classification"]}
    return out


# ---- the configuration that made a report -----------------------------------------------------

#: Config keys that do not change what a report says (compute resources): left out of its digest.
DIGEST_IGNORES = ("resources",)


def config_digest(config: dict) -> str:
    """sha256 (hex) of a configuration, keys sorted, without :data:`DIGEST_IGNORES`: two runs with
    the same digest make the same report from the same inputs."""
    import hashlib

    plain = {k: v for k, v in config.items() if k not in DIGEST_IGNORES}
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def write_report_record(path, config: dict, *, report_html) -> None:
    """Record which configuration made a report: a small JSON file beside it (config_sha256, run, report,
    created).  Read back by :func:`replaced_report` when the next report is written there."""
    from .files import atomic_path

    record = {
        "config_sha256": config_digest(config),
        "run": list(config.get("run") or []),
        "report": str(report_html),
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def replaced_report(path, config: dict) -> dict | None:
    """The record (:func:`write_report_record`) of a report made by another configuration, or None.

    None when there is no record or it names the same configuration as ``config``; an
    unreadable record is returned as ``{"config_sha256": None, ...}`` (an unknown configuration).
    """
    p = Path(path)
    if not p.exists():
        return None
    try:
        record = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        return {"config_sha256": None, "run": [], "created": None, "error": f"{p}: {e}"}
    if record.get("config_sha256") == config_digest(config):
        return None
    return {"config_sha256": record.get("config_sha256"), "run": list(record.get("run") or []),
            "created": record.get("created")}


def replaced_message(previous: dict, report_html) -> str:
    """One sentence: ``report_html`` replaced a report made by another configuration (``previous``)."""
    digest = previous.get("config_sha256")
    if digest:
        who = (f"another configuration (sha256 {digest[:12]}, datasets {', '.join(previous.get('run') or []) or 'none'}"
               + (f", made {previous['created']}" if previous.get("created") else "") + ")")
    else:
        who = "a configuration whose record could not be read"
    return (f"{report_html} replaced a report made by {who}; set report_dir in your configuration to give "
            "each configuration a report of its own.")


def _replaced_html(previous: dict | None, report_html) -> list:
    """A note at the top of a report that replaced one made by another configuration."""
    if not previous:
        return []
    return [f"<p class='note'>{_esc(replaced_message(previous, report_html))}</p>"]


def _provenance_html(layout: dict, config: dict) -> list:
    """Section "Data provenance": findings, then each dataset's note and input-file table."""
    parts = ["<h2>Data provenance</h2>"]
    prov_parts, prov_tables = [], {}
    for d in layout["datasets"]:
        prov_path = (layout.get("provenance") or {}).get(d["name"])
        prov_parts.append(f"<h3>{_esc(d['name'])}</h3>")
        note = (config.get("datasets", {}).get(d["name"], {}) or {}).get("note")
        if note:
            prov_parts.append(f"<p class='note'>{_esc(note)}</p>")
        prov_parts += _provenance_record_html(d["name"], prov_path, prov_tables)
    parts.append(_findings_html(F.provenance_findings(prov_tables)))
    parts.extend(prov_parts)
    return parts


def _provenance_record_html(name: str, prov_path, prov_tables: dict) -> list:
    """One dataset's provenance record as a table (added to ``prov_tables``), or why there is none."""
    if not (prov_path and Path(prov_path).exists()):
        return ["<p>No provenance record found.</p>"]
    parts = []
    try:
        prov = json.loads(Path(prov_path).read_text())
        prov_tables[name] = F.provenance_table(prov)
        created = f" Recorded {_esc(prov['created'])}." if prov.get("created") else ""
        parts.append(f"<p>Input files of {_esc(name)} ({_esc(prov_path)}).{created}</p>")
        parts.append(_table(prov_tables[name]))
    except (OSError, ValueError, AttributeError) as e:
        parts.append(f"<p>provenance file {_esc(prov_path)} unreadable: {_esc(e)}</p>")
    return parts


def _dataset_html(d: dict, layout: dict, figs: dict, res: _Results) -> list:
    """Section of one dataset: sizes and labels, top genes, clustering NMI, GLFS path, heatmap."""
    import anndata

    name = d["name"]
    parts = [f"<h2>Dataset {_esc(name)}</h2>"]
    ad = anndata.read_h5ad(d["adata"])
    parts += _dataset_intro_html(d, ad)
    parts += _not_converged_html(d, ad)
    parts += _top_genes_html(d, ad)
    parts += _clustering_html(d, layout, figs, res)
    parts += _leiden_html(d, figs, res)
    parts += _paths_html(d, figs, res)
    parts += _heatmap_html(d, ad, figs)
    return parts


def _not_converged_html(d: dict, ad) -> list:
    """A note naming the methods whose solver stopped before its tolerance (uns params ``converged``)."""
    bad = []
    for m in d["methods"]:
        p = (ad.uns.get(m) or {}).get("params") or {}
        if "converged" in p and not bool(p["converged"]):
            bad.append(f"{m} ({int(p['n_iter'])} iterations)" if "n_iter" in p else m)
    if not bad:
        return []
    return [f"<p class='note'>Not converged to the solver's tolerance: {_esc(', '.join(bad))}. Their rankings "
            "come from the last iterate and are shown with that caveat (GLFS: see the GLFS section).</p>"]


def _dataset_intro_html(d: dict, ad) -> list:
    """Samples x genes, label and split counts, and a note when the dataset has no labels."""
    parts = [f"<p>{ad.n_obs} samples x {ad.n_vars} genes."]
    if d["labelled"] and "label" in ad.obs:  # an unlabelled dataset's own obs 'label' is not its labels
        counts = ad.obs["label"].astype(str).value_counts().sort_index()
        parts.append(" Labels: " + ", ".join(f"{_esc(k)} {v}" for k, v in counts.items()) + ".")
    if "split" in ad.obs:
        parts.append(" Split: " + ", ".join(f"{_esc(k)} {v}" for k, v in ad.obs["split"].astype(str).value_counts().items()) + ".")
    parts.append("</p>")
    if not d["labelled"]:
        parts.append("<p class='note'>This dataset has no labels: label-based evaluations (clustering NMI, "
                     "k-means ACC, 1-NN accuracy, supervised methods, subtype heatmap) were skipped.</p>")
    return parts


def _top_genes_html(d: dict, ad) -> list:
    """The top 10 genes of every method, with the symbol or description the data carry."""
    top = {}
    for m, p in d["selections"].items():
        t = _read_tsv(p)
        if t is not None:
            top[m] = t.sort_values("rank")["gene"].astype(str).head(10).tolist()
    notes = _gene_notes(ad.var, sorted({g for v in top.values() for g in v}))
    if not top:
        return []
    parts = ["<h3>Top 10 genes per method</h3>"]
    parts.append(_findings_html(F.top_gene_findings(top, d["name"], descriptions=notes)))
    if notes:
        parts.append("<p>Gene ids with the symbol or description the data carry (var column) in brackets.</p>")
    shown = {m: [_with_note(x, notes) for x in g] for m, g in top.items()}
    parts.append(_table(pd.DataFrame({m: g + [""] * (10 - len(g)) for m, g in shown.items()}, index=range(1, 11)), index=True))
    return parts


def _clustering_html(d: dict, layout: dict, figs: dict, res: _Results) -> list:
    """Spectral-clustering NMI against the labels (figure and table, with the random-genes floor), and
    the which-method answer of the spectral protocol."""
    if not (d["labelled"] and d.get("clustering")):
        return []
    name = d["name"]
    cdf, rdf = res.tables.get((name, "spectral")) or _read_results(d, "spectral")
    res.clustering[name] = cdf
    res.random[name] = rdf
    wm = res.which.get((name, "spectral"))
    key = f"nmi_{name}"
    figs[key] = figure_nmi(cdf, name, F.floor_summary(rdf), all_genes=wm.all_genes if wm is not None else None)
    parts = ["<h3>Spectral-clustering NMI against the labels</h3>"]
    parts.append(_findings_html(F.clustering_findings(cdf, rdf, name, supervised=layout.get("supervised", ()))))
    parts.append(_img(figs[key], f"NMI vs genes, {name}"))
    parts.append("<p>Mean over runs. NMI@k: arithmetic normalisation; extra columns at 100 genes "
                 "(or all): NMI with max-entropy normalisation (He et al. 2011), k-means ACC and NMI "
                 "(best of 10 restarts), leave-one-out 1-NN accuracy. The random-genes floor: random gene "
                 "sets of the same size, evaluated the same way (mean and sd over the draws); "
                 "'clears floor at' lists the gene counts where a method's mean NMI is above the floor's "
                 "mean + 1 sd.</p>")
    parts.append(_table(nmi_summary_with_floor(cdf, rdf)))
    parts += _which_html(name, wm)
    return parts


def _leiden_html(d: dict, figs: dict, res: _Results) -> list:
    """The single-cell Leiden evaluation against the labels: the figure and the which-method answer."""
    if not (d["labelled"] and d.get("leiden")):
        return []
    name = d["name"]
    wm = res.which.get((name, "leiden"))
    key = f"leiden_{name}"
    figs[key] = figure_which(wm, name, ylabel="ARI at the label count (ari_nlabels), mean +- sd over runs",
                             title=f"{name}: Leiden clustering vs labels")
    parts = ["<h3>Single-cell evaluation: Leiden clustering against the labels</h3>"]
    parts.append("<p>On each method's top-k genes: log-normalised expression, PCA, kNN graph, Leiden over a "
                 "resolution grid (glfs.evaluate.evaluate_ranking_leiden). The figure shows ari_nlabels, the ARI at "
                 "the resolution whose number of clusters is closest to the number of labels (chosen without the "
                 "labels); the tables give ari, the ARI at the best resolution (chosen with the labels: an upper "
                 "bound), beside it. Grey band: random genes of the same count (mean +- sd over draws); dotted "
                 "black line: all genes; dotted orange lines with squares: scanpy's HVG flavours.</p>")
    if wm is None:
        return [*parts, "<p><em>(no Leiden results)</em></p>"]
    parts.append(_img(figs[key], f"Leiden ARI vs genes, {name}"))
    parts += _which_html(name, wm)
    return parts


def _paths_html(d: dict, figs: dict, res: _Results) -> list:
    """The GLFS sparsity paths of the dataset's GLFS selections (figure and tables)."""
    name = d["name"]
    paths = {}
    for m, p in d.get("metas", {}).items():
        try:
            meta = json.loads(Path(p).read_text())
        except (OSError, ValueError):
            continue
        res.metas[(name, m)] = meta
        pf = F.path_frame(meta)
        if pf is not None:
            paths[m] = pf
            res.paths[(name, m)] = pf
    if d.get("glfs_path"):
        res.path_tsvs[name] = _read_tsv(d["glfs_path"])
    if not paths:
        return []
    key = f"glfs_path_{name}"
    figs[key] = figure_paths(paths, name)
    parts = ["<h3>GLFS sparsity path</h3>"]
    parts.append(_findings_html([s for m, p in paths.items() for s in F.path_findings(p, m, name)]))
    parts.append(_img(figs[key], f"GLFS path {name}"))
    for m, p in paths.items():
        if p is not None and len(p):
            parts.append(f"<details><summary>{_esc(m)} path ({len(p)} points)</summary>{_table(p, '{:.4g}')}</details>")
    return parts


def _heatmap_html(d: dict, ad, figs: dict) -> list:
    """Heatmap of the top genes of ``heatmap_method``, samples grouped by label (labelled datasets)."""
    hm = d.get("heatmap_method")
    if not (hm and d["labelled"] and f"{hm}_rank" in ad.var and "label" in ad.obs):
        return []
    name = d["name"]
    rank = ad.var[f"{hm}_rank"].to_numpy()
    idx = np.argsort(rank, kind="stable")[: min(25, ad.n_vars)]
    X = ad.X[:, idx]
    X = X.toarray() if hasattr(X, "toarray") else X
    key = f"heatmap_{name}"
    hm_genes = list(ad.var_names[idx].astype(str))
    hm_notes = _gene_notes(ad.var, hm_genes)
    figs[key] = figure_heatmap(X, [_with_note(g, hm_notes, 24) for g in hm_genes], ad.obs["label"].to_numpy(), name, hm)
    return [f"<h3>Top {len(idx)} genes of {_esc(hm)} by label</h3>", _img(figs[key], f"heatmap {name}")]


def _classification_html(layout: dict) -> tuple[list, list]:
    """Section "Classification" (Golub protocol); returns its parts and the tables read."""
    cls_all = []
    if not layout.get("classification"):
        return [], cls_all
    parts = ["<h2>Classification (Golub protocol, Table 3)</h2>"]
    parts.append("<p>Trained on the training split only; hyper-parameters (GLFS lam, the baselines' "
                 "regularisation) chosen by CV inside the training set; the test split used once. "
                 "CV errors are those of the tuned model (Zou &amp; Hastie's convention; optimistic).</p>")
    for ds, p in layout["classification"].items():
        c = _read_tsv(p)
        cls_all.append(c)
        parts.append(f"<h3>This run: {_esc(ds)}</h3>")
        parts.append(_findings_html(F.classification_findings(c, ds)))
        parts.append(_table(c))
    if any(c is not None and "random_genes" in set(c["method"]) for c in cls_all):
        parts.append("<p>random_genes: the floor; LapRLS exactly as the glfs_supervised row fits it, on random "
                     "genes as many as that row uses; the median errors over seeded draws (params give the "
                     "number of draws and the ranges).</p>")
    return parts, cls_all


def _paper_table_html(layout: dict, paper_table) -> list:
    """The paper's Table 3, quoted beside this run's classification (when both exist)."""
    if paper_table is None or not layout.get("classification"):
        return []
    parts = ["<div class='paper'><h3>Paper (not this run): Wang &amp; Goldenberg, ICML 2013, Table 3</h3>"]
    parts.append("<p>Quoted for comparison only. Rows other than GLFS are reproduced there from Zou &amp; Hastie (2005), "
                 "who screened genes before fitting.</p>")
    parts.append(_table(paper_table) + "</div>")
    return parts


def _simulation_html(layout: dict, config: dict, figs: dict) -> tuple[list, pd.DataFrame | None]:
    """Section "Planted-feature simulation" (Figure 1 protocol); returns its parts and the recovery table."""
    if not layout.get("simulation"):
        return [], None
    sim_df = _read_tsv(layout["simulation"])
    figs["simulation"] = figure_simulation(sim_df, config.get("simulation", {}))
    parts = ["<h2>Planted-feature simulation (Figure 1 protocol)</h2>"]
    parts.append(_findings_html(F.simulation_findings(sim_df, config.get("simulation", {}))))
    parts.append(_img(figs["simulation"], "simulation curves"))
    if sim_df is not None and not sim_df.empty:
        agg = sim_df.groupby(["method", "sigma", "n_noise"])["score"].agg(["mean", "std", "count"]).reset_index()
        parts.append(f"<details><summary>mean Score per grid point</summary>{_table(agg)}</details>")
    parts.append("<p>Default grid from config.yaml (without the published readings glfs_paper and "
                 "glfs_printed, for time; glfs and glfs_exact run); the full grid (sigma up to 1.0, N up to "
                 "60,000, every reading) runs with <code>snakemake simulate_full</code> into "
                 "results/simulation_full/.</p>")
    return parts, sim_df


def _paper_vs_run_html(layout: dict, config: dict, res: _Results, sim_df, cls_all: list, paper_table) -> list:
    """Section "Paper versus this run": the paper's claims beside this run's numbers."""
    ctx = {
        "simulation_df": sim_df,
        "simulation_config": config.get("simulation", {}),
        "clustering": res.clustering,
        "paths": res.path_tsvs,
        "glfs_method": layout.get("glfs_method"),
        "supervised": layout.get("supervised", ["fisher_score", "lkr_score_supervised"]),
        "classification": _tagged(layout.get("classification") or {}, cls_all),
        "paper_table": paper_table,
    }
    parts = ["<h2>Paper versus this run</h2>"]
    parts.append("<p>Numbers on the right are computed from this run's result files; the paper's come from its "
                 "text and tables. Differences are expected where the data or protocol differ (notes).</p>")
    pvr = paper_vs_run(ctx)
    parts.append(_findings_html(F.paper_findings(pvr)))
    parts.append(_table(pvr))
    return parts


def _tagged(datasets, tables: list) -> pd.DataFrame | None:
    """The classification tables of the run, one below the other, each with its dataset's name (or None)."""
    frames = [c.assign(dataset=ds) for ds, c in zip(datasets, tables) if c is not None]
    return pd.concat(frames, ignore_index=True) if frames else None


def _runtime_software_html(layout: dict) -> list:
    """Sections "Runtime per rule" (the benchmark files of this run's jobs) and "Software versions"."""
    bench = layout.get("benchmarks", "benchmarks")
    rt = runtime_table(bench)
    if isinstance(bench, (str, Path)):
        text = (f"From every Snakemake <code>benchmark:</code> file in {_esc(bench)} (wall seconds), jobs of "
                "earlier runs included.")
    else:
        text = ("From the Snakemake <code>benchmark:</code> files of this run's jobs (wall seconds); a job whose "
                "output was already up to date keeps the time of the run that made it.")
        missing = len(bench) - int(rt["jobs"].sum())
        if missing:
            text += f" {missing} of the {len(bench)} jobs have no benchmark file (not counted)."
    parts = [f"<h2>Runtime per rule</h2><p>{text}</p>"]
    parts.append(_findings_html(F.runtime_findings(rt)))
    parts.append(_table(rt, "{:.1f}"))
    parts.append("<h2>Software versions</h2>")
    parts.append(_table(software_versions()))
    return parts


def _write_figures(figures_out: dict, figs: dict) -> None:
    """Write every requested figure as PNG (a placeholder for one not produced in this run)."""
    from .files import atomic_path

    for name, path in figures_out.items():
        png = figs.get(name) or _placeholder(f"{name}: not produced in this run")
        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(png)
