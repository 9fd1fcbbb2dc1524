"""Which method does best on one dataset, and the random-genes floor it is judged against.

Used by :mod:`glfs_workflow.findings` and :mod:`glfs_workflow.report`; not part of
the stable API.  :func:`which_method` returns a :class:`WhichMethod` of tables,
numbers and names; :func:`which_facts` reduces it to the plain values the report's
template words (``glfs_workflow/templates/which.html``).  Families and supervised
methods come from the registry (:mod:`glfs.api`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from glfs.api import METHODS

# The method name of the all-genes reference rows in leiden_random.tsv.
ALL_GENES = "all_genes"


def floor_summary(random_df: pd.DataFrame | None, score: str = "nmi") -> pd.DataFrame:
    """Mean and sd over draws of the random-genes ``score`` (NMI by default) per number of genes.

    ``random_df``: rows of results/{dataset}/clustering_random.tsv or
    leiden_random.tsv (n_features, draw, run, score columns; rows of method
    ``all_genes``, the all-genes reference of leiden_random.tsv, are left out).
    Runs within a draw are averaged first.  Returns columns n_features,
    floor_mean, floor_sd, n_draws (sd NaN with one draw).
    """
    cols = ["n_features", "floor_mean", "floor_sd", "n_draws"]
    if random_df is not None and "method" in random_df:
        random_df = random_df[random_df["method"] != ALL_GENES]
    if random_df is None or random_df.empty:
        return pd.DataFrame(columns=cols)
    key = "draw" if "draw" in random_df else "run"
    per_draw = random_df.groupby(["n_features", key])[score].mean().reset_index()
    g = per_draw.groupby("n_features")[score]
    out = pd.DataFrame({"floor_mean": g.mean(), "floor_sd": g.std(ddof=1), "n_draws": g.size()}).reset_index()
    return out[cols]


# The primary score of each evaluation protocol: the one the "which method" answers rank by.
# Leiden: the ARI at the resolution whose number of clusters is closest to the number of labels
# (chosen without the labels); spectral: the papers' NMI.
PRIMARY_SCORE = {"spectral": "nmi", "leiden": "ari_nlabels"}
# Scores shown beside the primary one: the Leiden ARI at the best resolution (it uses the labels).
SIDE_SCORES = {"spectral": (), "leiden": ("ari",)}
# The registry family of scanpy's highly-variable-gene flavours: the bar of the scaled score.
HVG_FAMILY = "hvg"


@dataclasses.dataclass(frozen=True)
class WhichMethod:
    """The answer to "which method, on this dataset" for one evaluation protocol (numbers and names only).

    Built by :func:`which_method`; the report words it.  ``grid``: the gene
    counts compared (below all genes, evaluated for every method).

    Tables
    ------
    per_k
        One row per (method, n_features) on the grid: ``mean``/``sd``/``n_runs``
        of the primary score over runs, ``rank`` among the unsupervised methods
        at that count (1 = best; ties share the smaller rank; NaN for the
        supervised references), ``scaled`` (Zappia et al. 2025, see
        :func:`scaled_scores`), ``floor_mean``, ``hvg_best`` and the means of
        :data:`SIDE_SCORES`.
    methods
        One row per method, best first: ``family``, ``supervised``, ``mean``
        (primary score averaged over the grid and runs), ``sd`` (sd over runs,
        averaged over the grid), ``scaled`` (mean over the grid; NaN where it is
        undefined at some count), ``rank`` of ``mean`` (unsupervised only),
        ``gap`` = best mean - mean, ``noise`` = max(sd of the best, sd of the
        method, ``floor_sd``), ``within_noise`` (gap < noise; the best itself is
        True), ``above_floor`` = mean - ``floor_mean`` (NaN without a floor), and ``<side>`` grid means.
    floor
        n_features, floor_mean, floor_sd, n_draws (random genes, over draws) on the grid.
    hvg_bar
        n_features, hvg_best (the best HVG flavour at that count), hvg_mean (its mean).
    """

    protocol: str
    score: str
    grid: tuple
    per_k: pd.DataFrame
    methods: pd.DataFrame
    floor: pd.DataFrame
    hvg_bar: pd.DataFrame
    best: str | None
    within_noise: tuple  # methods within noise of the best, best excluded, best first
    floor_mean: float  # random genes: mean over the grid
    floor_sd: float  # random genes: sd over draws, averaged over the grid
    n_draws: int
    n_runs: int
    all_genes: float | None  # primary score with all genes (None when not evaluated)
    all_genes_sd: float | None
    n_genes: int | None  # number of genes of the dataset (the all-genes point)
    hvg: tuple  # HVG flavours (registry family "hvg") evaluated on this dataset
    hvg_bar_mean: float | None  # the best HVG flavour's mean at each count, averaged over the grid
    scaled_undefined_at: tuple  # counts where the best HVG flavour is not above random genes
    supervised: tuple  # supervised references: shown, not ranked, never "best"
    side_scores: tuple


def _family(method) -> str:
    info = METHODS.get(str(method))
    return info.family if info is not None else ""


def _needs_labels(method) -> bool:
    info = METHODS.get(str(method))
    return bool(info is not None and info.needs_labels)


def score_means(cdf: pd.DataFrame, score: str, grid=None, side=()) -> pd.DataFrame:
    """Mean, sd (ddof 1; NaN with one run) and number of runs of ``score`` per (method, n_features).

    ``cdf``: clustering_nmi.tsv or clustering_leiden.tsv rows; ``grid``: keep only these
    gene counts (None = all); ``side``: further score columns whose means are added.
    Methods keep the order of their first row.
    """
    d = cdf if grid is None else cdf[cdf["n_features"].isin(list(grid))]
    g = d.groupby(["method", "n_features"], sort=False)
    out = pd.DataFrame({"mean": g[score].mean(), "sd": g[score].std(ddof=1), "n_runs": g[score].size()})
    for c in side:
        if c in d:
            out[c] = g[c].mean()
    return out.reset_index()


def rank_within(per_k: pd.DataFrame, exclude=()) -> pd.Series:
    """Rank of each row's ``mean`` among the rows of the same n_features (1 = best; ties share the
    smaller rank), counting only methods not in ``exclude`` (those get NaN)."""
    ranked = per_k["method"].map(lambda m: m not in set(exclude)).astype(bool)
    r = per_k.loc[ranked].groupby("n_features")["mean"].rank(ascending=False, method="min")
    return r.reindex(per_k.index)


def scaled_scores(per_k: pd.DataFrame, floor: pd.DataFrame, hvg) -> tuple[pd.Series, pd.DataFrame]:
    """The baseline-scaled score of Zappia et al. (Nat Methods 2025) of each (method, k) row.

    scaled_m(k) = (S_m(k) - S_random(k)) / (S_bestHVG(k) - S_random(k)), with S the
    mean primary score, S_random the mean over the random draws at k and
    S_bestHVG(k) the highest mean of the HVG flavours ``hvg`` at k: 0 = random
    genes of the same count, 1 = the best HVG flavour.  NaN where no HVG flavour
    or no floor was evaluated at k, or where the best flavour is not above the
    floor (the scale is undefined there).  Returns the scaled values (aligned
    with ``per_k``) and the bar: n_features, hvg_best, hvg_mean.
    """
    hv = per_k[per_k["method"].isin(list(hvg))]
    if hv.empty:
        bar = pd.DataFrame(columns=["n_features", "hvg_best", "hvg_mean"])
        return pd.Series(np.nan, index=per_k.index), bar
    idx = hv.groupby("n_features")["mean"].idxmax()
    bar = pd.DataFrame(
        {
            "n_features": hv.loc[idx, "n_features"].to_numpy(),
            "hvg_best": hv.loc[idx, "method"].to_numpy(),
            "hvg_mean": hv.loc[idx, "mean"].to_numpy(),
        }
    )
    fl = floor.set_index("n_features")["floor_mean"] if not floor.empty else pd.Series(dtype=float)
    top = bar.set_index("n_features")["hvg_mean"]
    s_rand = per_k["n_features"].map(fl).astype(float)
    den = per_k["n_features"].map(top).astype(float) - s_rand
    scaled = (per_k["mean"] - s_rand) / den.where(den > 0)
    return scaled.astype(float), bar


def _all_genes_score(cdf, random_df, score, n_genes):
    """(mean, sd over runs) of ``score`` with all genes: leiden_random.tsv's all_genes rows, else
    the rows of clustering results at n_features >= n_genes (every method, the same genes)."""
    rows = None
    if random_df is not None and "method" in random_df and (random_df["method"] == ALL_GENES).any():
        rows = random_df[random_df["method"] == ALL_GENES]
    elif n_genes is not None and (cdf["n_features"] >= n_genes).any():
        rows = cdf[cdf["n_features"] >= n_genes]
    if rows is None or rows.empty:
        return None, None
    per_run = rows.groupby("run")[score].mean() if "run" in rows else rows[score]
    sd = float(per_run.std(ddof=1)) if len(per_run) > 1 else float("nan")
    return float(rows[score].mean()), sd


def _nanmean(values) -> float:
    v = np.asarray(list(values), dtype=float)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


def which_method(
    cdf: pd.DataFrame | None,
    random_df: pd.DataFrame | None,
    *,
    protocol: str,
    n_genes: int | None = None,
    supervised=(),
) -> WhichMethod | None:
    """Which method does best on one dataset under one protocol, and which are within noise of it.

    ``cdf``: the methods' results (clustering_nmi.tsv for ``protocol="spectral"``,
    clustering_leiden.tsv for ``"leiden"``); ``random_df``: the floor
    (clustering_random.tsv / leiden_random.tsv, or None); ``n_genes``: the
    dataset's number of genes (counts at or above it are "all genes", not part
    of the grid); ``supervised``: methods that used the labels (with the
    registry's ``needs_labels`` ones they are shown but never ranked or best).

    The score is :data:`PRIMARY_SCORE` of the protocol.  The grid is the gene
    counts below ``n_genes`` evaluated for every method.  The best method has
    the highest mean score over the grid and runs.  A method is within noise of
    it when the gap of their grid-averaged means is smaller than max(sd over
    runs of the best method, sd over runs of that method, sd over draws of the
    random floor), each averaged over the grid points.  The scaled score is
    :func:`scaled_scores`, averaged over the grid.  Returns None without results.
    """
    if protocol not in PRIMARY_SCORE:
        msg = f"protocol must be one of {sorted(PRIMARY_SCORE)}, got {protocol!r}"
        raise ValueError(msg)
    if cdf is None or cdf.empty:
        return None
    score, side = PRIMARY_SCORE[protocol], tuple(c for c in SIDE_SCORES[protocol] if c in cdf)
    below = cdf if n_genes is None else cdf[cdf["n_features"] < n_genes]
    per_method_ks = [set(g["n_features"]) for _, g in below.groupby("method", sort=False)]
    grid = tuple(sorted(int(k) for k in set.intersection(*per_method_ks))) if per_method_ks else ()
    names = list(dict.fromkeys(cdf["method"].astype(str)))
    sup = tuple(m for m in names if m in set(supervised) or _needs_labels(m))
    hvg = tuple(m for m in names if _family(m) == HVG_FAMILY)

    per_k, floor, bar, undefined = _per_k_scores(below, random_df, score, grid, side, sup, hvg)
    floor_mean = _nanmean(floor["floor_mean"]) if not floor.empty else float("nan")
    floor_sd = _nanmean(floor["floor_sd"]) if not floor.empty else float("nan")
    methods, best, within = _method_table(per_k, side, sup, floor_mean, floor_sd)
    all_mean, all_sd = _all_genes_score(cdf, random_df, score, n_genes)
    cols = [
        "method",
        "family",
        "supervised",
        "mean",
        "sd",
        "scaled",
        "rank",
        "gap",
        "noise",
        "within_noise",
        "above_floor",
        *side,
    ]
    return WhichMethod(
        protocol=protocol,
        score=score,
        grid=grid,
        per_k=per_k[
            ["method", "n_features", "mean", "sd", "n_runs", "rank", "scaled", "floor_mean", "hvg_best", *side]
        ],
        methods=methods[cols],
        floor=floor,
        hvg_bar=bar,
        best=best,
        within_noise=within,
        floor_mean=floor_mean,
        floor_sd=floor_sd,
        n_draws=int(floor["n_draws"].max()) if not floor.empty else 0,
        n_runs=int(per_k["n_runs"].max()) if not per_k.empty else 0,
        all_genes=all_mean,
        all_genes_sd=all_sd,
        n_genes=n_genes,
        hvg=hvg,
        hvg_bar_mean=_nanmean(bar["hvg_mean"]) if not bar.empty else None,
        scaled_undefined_at=undefined,
        supervised=sup,
        side_scores=side,
    )


def _per_k_scores(below, random_df, score, grid, side, sup, hvg):
    """:func:`which_method` at each gene count of the grid: (per_k: each method's mean, sd, rank and scaled
    score; the floor; the HVG bar; the counts where the scaled score is undefined)."""
    per_k = score_means(below, score, grid, side)
    floor = floor_summary(random_df, score)
    floor = floor[floor["n_features"].isin(grid)].reset_index(drop=True)
    per_k["rank"] = rank_within(per_k, exclude=sup)
    per_k["scaled"], bar = scaled_scores(per_k, floor, hvg)
    per_k["floor_mean"] = per_k["n_features"].map(floor.set_index("n_features")["floor_mean"]).astype(float)
    per_k["hvg_best"] = per_k["n_features"].map(bar.set_index("n_features")["hvg_mean"]).astype(float)
    undefined = tuple(int(k) for k in grid if hvg and not (per_k.loc[per_k["n_features"] == k, "scaled"].notna().any()))
    return per_k, floor, bar, undefined


def _method_table(per_k, side, sup, floor_mean, floor_sd):
    """:func:`which_method` over the grid: (one row per method, unsupervised best first; the best
    method; the others within noise of it)."""
    g = per_k.groupby("method", sort=False)
    methods = pd.DataFrame(
        {
            "mean": g["mean"].mean(),
            "sd": g["sd"].apply(_nanmean),
            # the grid mean of the scaled score is defined only where it is defined at every count
            "scaled": g["scaled"].apply(lambda s: float(s.mean()) if s.notna().all() and len(s) else float("nan")),
            **{c: g[c].mean() for c in side},
        }
    ).reset_index()
    methods["family"] = methods["method"].map(_family)
    methods["supervised"] = methods["method"].isin(sup)
    ranked = ~methods["supervised"]
    methods["rank"] = methods.loc[ranked, "mean"].rank(ascending=False, method="min").reindex(methods.index)
    cand = methods[ranked].sort_values("mean", ascending=False, kind="stable")
    best = str(cand["method"].iloc[0]) if len(cand) else None
    if best is not None:
        b = cand.iloc[0]
        methods["gap"] = float(b["mean"]) - methods["mean"]
        methods["noise"] = [
            float(np.nanmax([b["sd"], sd, floor_sd])) if not np.isnan([b["sd"], sd, floor_sd]).all() else 0.0
            for sd in methods["sd"]
        ]
        methods["within_noise"] = ranked & (methods["gap"] < methods["noise"])
        methods.loc[methods["method"] == best, "within_noise"] = True
    else:
        methods["gap"], methods["noise"], methods["within_noise"] = np.nan, np.nan, False
    methods["above_floor"] = methods["mean"] - floor_mean  # NaN without a floor
    order = methods.assign(_s=methods["supervised"].astype(int)).sort_values(
        ["_s", "mean"], ascending=[True, False], kind="stable"
    )
    methods = order.drop(columns="_s").reset_index(drop=True)
    within = tuple(m for m in methods.loc[methods["within_noise"], "method"] if m != best)
    return methods, best, within


def rank_table(wm: WhichMethod) -> pd.DataFrame:
    """Methods x gene counts: ``rank@k`` and ``mean@k`` of the primary score, one row per method
    (the order of ``wm.methods``: unsupervised best first, then the supervised references)."""
    wide_r = wm.per_k.pivot(index="method", columns="n_features", values="rank")
    wide_m = wm.per_k.pivot(index="method", columns="n_features", values="mean")
    out = pd.DataFrame({"method": wm.methods["method"]})
    for k in wm.grid:
        out[f"rank@{k}"] = out["method"].map(wide_r[k]).to_numpy()
        out[f"mean@{k}"] = out["method"].map(wide_m[k]).to_numpy()
    return out


def _finite(x) -> float | None:
    """x as a float, or None when it is None or not finite."""
    return None if x is None or not np.isfinite(float(x)) else float(x)


def which_facts(wm: WhichMethod | None, dataset: str) -> dict | None:
    """The values the report says about one answer (numbers and names; the template words them).

    None when there is no answer (no results, or no unsupervised method).  Keys: ``dataset``,
    ``protocol``, ``score``, ``grid``, ``n_runs``; ``best`` with ``best_mean``, ``best_sd``,
    ``best_scaled``; ``within``: [(method, mean)] within noise of the best; ``n_hvg`` (HVG
    flavours run), ``hvg_bar_mean``, ``above_hvg`` (unsupervised methods whose scaled score
    averages above 1), ``undefined_at``; ``n_draws``, ``floor_mean``, ``floor_sd``,
    ``n_above_floor`` of ``n_unsupervised`` (grid-averaged mean above the floor's); ``all_genes``,
    ``n_genes``, ``all_genes_better`` (all genes score above the best selection); ``supervised``: [(method, mean)]; ``rows``: per method, best first, its
    ``method``, ``supervised``, ``best``, ``within``, ``mean``, ``scaled`` and ``ranks`` (rank at
    each grid count, None for the supervised references).  Missing or non-finite numbers are None.
    """
    if wm is None or wm.best is None:
        return None
    m = wm.methods.set_index("method")
    means = m["mean"]
    uns = wm.methods[~wm.methods["supervised"]]
    ranks = rank_table(wm).set_index("method")
    rows = [
        {
            "method": r["method"],
            "supervised": bool(r["supervised"]),
            "best": r["method"] == wm.best,
            "within": bool(r["within_noise"]),
            "mean": _finite(r["mean"]),
            "scaled": _finite(r["scaled"]),
            "ranks": [
                None
                if not np.isfinite(ranks.loc[r["method"], f"rank@{k}"])
                else int(ranks.loc[r["method"], f"rank@{k}"])
                for k in wm.grid
            ],
        }
        for _, r in wm.methods.iterrows()
    ]
    return {
        "dataset": dataset,
        "protocol": wm.protocol,
        "score": wm.score,
        "grid": list(wm.grid),
        "n_runs": wm.n_runs,
        "best": wm.best,
        "best_mean": _finite(m.loc[wm.best, "mean"]),
        "best_sd": _finite(m.loc[wm.best, "sd"]),
        "best_scaled": _finite(m.loc[wm.best, "scaled"]),
        "within": [(x, _finite(means[x])) for x in wm.within_noise],
        "n_hvg": len(wm.hvg),
        "hvg_bar_mean": _finite(wm.hvg_bar_mean),
        "above_hvg": [
            x
            for x in m.index
            if not m.loc[x, "supervised"] and np.isfinite(m.loc[x, "scaled"]) and m.loc[x, "scaled"] > 1
        ],
        "undefined_at": list(wm.scaled_undefined_at),
        "n_draws": wm.n_draws,
        "floor_mean": _finite(wm.floor_mean),
        "floor_sd": _finite(wm.floor_sd),
        "n_above_floor": int((uns["above_floor"] > 0).sum()),
        "n_unsupervised": len(uns),
        "all_genes": None if wm.all_genes is None else float(wm.all_genes),
        "n_genes": wm.n_genes,
        "all_genes_better": bool(
            wm.all_genes is not None
            and np.isfinite(m.loc[wm.best, "mean"])
            and float(wm.all_genes) > float(m.loc[wm.best, "mean"])
        ),
        "supervised": [(x, _finite(means[x])) for x in wm.supervised if x in m.index],
        "rows": rows,
    }


# The gene counts the single-cell advice quotes (the bar of studies/real-panel.md: 500 and 2,000 genes).
ADVICE_COUNTS = (500, 2000)
# The random-genes rows of the panel summary.
RANDOM_GENES = "random_genes"


def _advice_vs_run(which: list[dict], cells: dict | None) -> list[dict]:
    """Per Leiden-protocol answer of this run: does the panel's advised selection agree with it?

    ``agrees`` when the advised method is this run's best or within noise of it; ``ran`` whether it
    ran here at all; ``rank`` its place among the unsupervised methods (1 = best) and ``n`` their number.
    Empty without panel advice.
    """
    if cells is None:
        return []
    advised, out = cells["best"], []
    for a in which:
        if a["protocol"] != "leiden":
            continue
        order = [r["method"] for r in a.get("rows", ()) if not r["supervised"]]
        ran = advised in order
        within = {m for m, _ in a.get("within", ())}
        out.append(
            {
                "dataset": a["dataset"],
                "best": a["best"],
                "advised": advised,
                "ran": ran,
                "agrees": ran and (advised == a["best"] or advised in within),
                "rank": order.index(advised) + 1 if ran else None,
                "n": len(order),
            }
        )
    return out


def advice_facts(which: list[dict], panel: pd.DataFrame | None) -> dict:
    """The values of the report's opening advice (numbers and names; templates/which.html words them).

    ``which``: the run's :func:`which_facts`.  ``panel``: the development panel's summary
    (``resources/singlecell/panel_summary.tsv``: ``method``, ``n_genes``, ``mean_score``, ``n_sets``;
    recorded in ``studies/real-panel.md``), or None.  Returns ``cells``: the panel's best selection
    over :data:`ADVICE_COUNTS` (mean of the two counts' mean scores), whether it is a scanpy HVG flavour,
    the scanpy flavour name, the best three other HVG flavours, the best selection that is not an HVG
    flavour (``best_own``, None when it is the best) and the random genes beside it (None without a
    panel); ``bulk``: per spectral-protocol dataset of this run its best method, whether it is above
    random genes, and whether all genes beat it; ``bulk_overall``: the unsupervised method with the best
    mean rank over those datasets (None with fewer than two), and that mean rank; ``cells_vs_run``: per
    Leiden-protocol dataset of this run, whether the panel's advice agrees with what the run measured
    (:func:`_advice_vs_run`).
    """
    out = {"cells": None, "bulk": [], "bulk_overall": None, "bulk_overall_rank": None, "cells_vs_run": []}
    if panel is not None and not panel.empty:
        at = [panel[panel["n_genes"] == k].set_index("method")["mean_score"] for k in ADVICE_COUNTS]
        methods = [m for m in at[0].index if m in at[1].index and m != RANDOM_GENES and m != ALL_GENES]
        if methods and all(RANDOM_GENES in a.index for a in at):
            avg = {m: (at[0][m] + at[1][m]) / 2 for m in methods}
            best = max(methods, key=lambda m: (avg[m], m))
            fam = {m: METHODS[m].family if m in METHODS else None for m in methods}
            hvg = sorted((m for m in methods if fam[m] == HVG_FAMILY and m != best), key=lambda m: -avg[m])[:3]
            own = sorted((m for m in methods if fam[m] != HVG_FAMILY), key=lambda m: (-avg[m], m))
            out["cells"] = {
                "best": best,
                "best_is_hvg": fam[best] == HVG_FAMILY,
                "best_scanpy": best.removeprefix("hvg_") if fam[best] == HVG_FAMILY else None,
                "others": hvg,
                "n_sets": int(panel["n_sets"].min()),
                "best_own": own[0] if own and own[0] != best else None,
                "at": [{m: float(a[m]) for m in methods} for a in at],
                "random": [float(a[RANDOM_GENES]) for a in at],
            }
    ranks: dict[str, list[int]] = {}
    for a in which:
        if a["protocol"] != "spectral":
            continue
        order = [r["method"] for r in a.get("rows", ()) if not r["supervised"]]
        for i, m in enumerate(order):
            ranks.setdefault(m, []).append(i + 1)
        out["bulk"].append(
            {
                "dataset": a["dataset"],
                "best": a["best"],
                "above_random": a["floor_mean"] is None or (a["best_mean"] or 0) > a["floor_mean"],
                "all_genes_better": a["all_genes_better"],
                "top_k": max(a["grid"]),
            }
        )
    out["cells_vs_run"] = _advice_vs_run(which, out["cells"])
    n = len(out["bulk"])
    common = {m: sum(r) / n for m, r in ranks.items() if len(r) == n}
    out["bulk_overall"] = min(common, key=lambda m: (common[m], m)) if n > 1 and common else None
    out["bulk_overall_rank"] = common.get(out["bulk_overall"]) if out["bulk_overall"] else None
    return out
