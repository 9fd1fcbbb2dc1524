"""Figures of the workflow report: PNG bytes drawn with matplotlib from the run's tables.

Used by :mod:`glfs_workflow.report`; not part of the stable API.  Every figure is
drawn with math text off (:func:`_no_mathtext`): gene, label and method names are
the user's.  Line styles come from the method registry (:mod:`glfs.api`): the HVG
family drawn alike, GLFS methods (``MethodInfo.is_glfs``) solid.
"""

from __future__ import annotations

import functools
import io

import numpy as np
import pandas as pd

from glfs.api import METHODS

from .which import HVG_FAMILY, WhichMethod


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def _is_glfs(method) -> bool:
    """A GLFS method of the registry (``MethodInfo.is_glfs``: family glfs or glfs_published)."""
    info = METHODS.get(str(method))
    return info is not None and info.is_glfs


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
def figure_nmi(
    df: pd.DataFrame, dataset: str, floor: pd.DataFrame | None = None, all_genes: float | None = None
) -> bytes:
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
        ax.fill_between(
            fl["n_features"],
            fl["floor_mean"] - sd,
            fl["floor_mean"] + sd,
            color="0.8",
            zorder=0,
            label=f"random genes (floor, mean +- sd of {int(fl['n_draws'].max())} draws)",
        )
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
    hvg = [m for m in methods if _family(m) == HVG_FAMILY]
    oranges, tab20 = matplotlib.colormaps["Oranges"], matplotlib.colormaps["tab20"]
    styles = {}
    for i, m in enumerate(hvg):
        styles[m] = {
            "ls": ":",
            "lw": 2.0,
            "marker": "s",
            "ms": 4,
            "color": oranges(0.45 + 0.5 * i / max(len(hvg) - 1, 1)),
        }
    others = [m for m in methods if m not in styles]
    for i, m in enumerate(others):
        styles[m] = {
            "ls": "-" if _is_glfs(m) else "--",
            "lw": 1.5,
            "marker": "o",
            "ms": 3,
            "color": tab20(_OTHER_COLOURS[i % len(_OTHER_COLOURS)]),
        }
    return styles


def _family(method) -> str:
    info = METHODS.get(str(method))
    return info.family if info is not None else ""


@_no_mathtext
def figure_which(wm: WhichMethod, dataset: str, *, ylabel: str, title: str) -> bytes:
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
        ax.fill_between(
            fl["n_features"],
            fl["floor_mean"] - sd,
            fl["floor_mean"] + sd,
            color="0.8",
            zorder=0,
            label=f"random genes (floor, mean +- sd of {wm.n_draws} draws)",
        )
        ax.plot(fl["n_features"], fl["floor_mean"], color="0.5", lw=1, zorder=0)
    if wm.all_genes is not None and np.isfinite(wm.all_genes):
        ax.axhline(
            wm.all_genes,
            color="k",
            lw=0.8,
            ls=(0, (1, 2)),
            zorder=0,
            label=f"all {wm.n_genes or ''} genes ({wm.all_genes:.3f})".replace("all  genes", "all genes"),
        )
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
        (
            axes[0],
            df[df["n_noise"] == sim.get("n_noise_at_sigma")],
            "sigma",
            f"noise sd sigma (N = {sim.get('n_noise_at_sigma')})",
        ),
        (
            axes[1],
            df[np.isclose(df["sigma"], float(sim.get("sigma_at_n_noise", np.nan)))],
            "n_noise",
            f"noise features N (sigma = {sim.get('sigma_at_n_noise')})",
        ),
    ]
    for ax, d, x, xlabel in panels:
        agg = d.groupby(["method", x])["score"].agg(["mean", "std"]).reset_index()
        for m, g in agg.groupby("method", sort=False):
            g = g.sort_values(x)
            ax.errorbar(
                g[x],
                g["mean"],
                yerr=g["std"].fillna(0),
                label=m,
                marker="o",
                ms=3,
                capsize=2,
                ls="-" if _is_glfs(m) else "--",
            )
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
