"""The panel's cross-set tables: the workflow's Leiden tables of several datasets, side by side.

No evaluation of its own: every number comes from the datasets' ``clustering_leiden.tsv`` (the methods) and
``leiden_random.tsv`` (random genes, averaged over draws, and all genes), as rule evaluate_leiden wrote them.

- :func:`panel_scores`: per set, method and gene count the mean over runs of the ARIs, the rare-type F1 and
  the batch mixing, and ``score``, the mean of the three ARIs (``ari``, ``ari_nlabels``, ``kmeans_ari``).
  At a gene count not below a set's gene count every selection is all genes, so the all-genes row fills
  that cell (``at_all_genes`` says so).
- :func:`panel_summary`: the mean over the sets per method and gene count (the layout of
  ``resources/singlecell/panel_summary.tsv``, which the report's advice reads, plus ``rare_f1``).
- :func:`leave_one_dataset_out`: for each held-out set, the method with the best mean score over the other
  sets and the gene counts, and its score on the held-out set, beside random genes and all genes there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The rows of the floor table that are not selection methods.
RANDOM_GENES = "random_genes"
ALL_GENES = "all_genes"
#: The per-run figures a panel cell averages.
FIGURES = ("ari", "ari_nlabels", "kmeans_ari", "rare_f1", "rare_f1_nlabels", "batch_mixing")
#: The mean of these three ARIs is a panel cell's ``score`` (the Leiden protocol's three clusterings).
SCORE_OF = ("ari", "ari_nlabels", "kmeans_ari")

SCORE_COLUMNS = ["set", "method", "n_features", "n_genes", "at_all_genes", "score", *FIGURES]
SUMMARY_COLUMNS = ["method", "n_genes", "mean_score", "n_sets", "rare_f1"]


def _means(df: pd.DataFrame) -> pd.DataFrame:
    """Mean of :data:`FIGURES` per (method, n_features) over runs (and draws), with ``score``."""
    df = df.copy()
    for col in FIGURES:
        if col not in df:
            df[col] = np.nan
    out = df.groupby(["method", "n_features"], sort=False)[list(FIGURES)].mean().reset_index()
    out["score"] = out[list(SCORE_OF)].mean(axis=1)
    return out


def panel_scores(tables: dict, grid) -> pd.DataFrame:
    """Scores per set, method and gene count (module docstring).

    Parameters
    ----------
    tables : dict
        set name -> (``clustering_leiden.tsv``, ``leiden_random.tsv``) as DataFrames.  The floor table's
        ``all_genes`` row gives the set's gene count (its ``n_features``).
    grid : dict or sequence of int
        The gene counts of the panel, or set name -> its gene counts.

    Returns
    -------
    DataFrame with :data:`SCORE_COLUMNS`, one row per set, method (every set's methods, ``random_genes``
    and ``all_genes``) and gene count of the grid; NaN where a method has no rows on a set.
    """
    rows = []
    every = [m for leiden, _ in tables.values() for m in leiden["method"]]
    methods = list(dict.fromkeys([*every, RANDOM_GENES, ALL_GENES]))  # a method run on some sets only: NaN elsewhere
    for name, (leiden, floor) in tables.items():
        allg = floor[floor["method"] == ALL_GENES]
        if allg.empty:
            msg = f"panel set {name!r}: its leiden_random.tsv has no all_genes row (rule evaluate_leiden writes one)"
            raise ValueError(msg)
        n_genes = int(allg["n_features"].iloc[0])
        means = pd.concat([_means(leiden), _means(floor)], ignore_index=True).set_index(["method", "n_features"])
        all_row = means.loc[ALL_GENES].iloc[0]
        ks = grid.get(name, ()) if isinstance(grid, dict) else grid
        for k in (int(k) for k in ks if k != "all"):
            for m in methods:
                full = m == ALL_GENES or k >= n_genes
                if full:
                    row = all_row
                elif (m, k) in means.index:
                    row = means.loc[(m, k)]
                else:  # a method without that gene count (failed, or not run there)
                    row = pd.Series(np.nan, index=["score", *FIGURES])
                rows.append(
                    {
                        "set": name,
                        "method": m,
                        "n_features": k,
                        "n_genes": n_genes,
                        "at_all_genes": bool(full),
                        **{c: float(row[c]) for c in ["score", *FIGURES]},
                    }
                )
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


def panel_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per method and gene count, the mean score and rare-type F1 (label-count resolution) over the sets.

    ``n_sets``: the sets with a score (a method that failed on a set is not averaged there).
    Columns :data:`SUMMARY_COLUMNS` (``n_genes`` is the gene count, as in the vendored summary).
    """
    g = scores.dropna(subset=["score"]).groupby(["method", "n_features"], sort=False)
    out = g.agg(mean_score=("score", "mean"), n_sets=("set", "nunique"), rare_f1=("rare_f1_nlabels", "mean"))
    return out.reset_index().rename(columns={"n_features": "n_genes"})[SUMMARY_COLUMNS]


def leave_one_dataset_out(scores: pd.DataFrame, family=None) -> pd.DataFrame:
    """For each held-out set, the method chosen on the other sets and its score on the held-out set.

    The choice maximises the mean ``score`` over the other sets and the gene counts (ties: the first
    method in the table's order); a method missing on some set is chosen on the sets it has.

    Parameters
    ----------
    scores : DataFrame
        :func:`panel_scores`.
    family : sequence of str, optional
        The candidates; default every method of the table except random genes and all genes.

    Returns
    -------
    DataFrame, one row per held-out set and gene count (``n_features``) plus one per set over the gene
    counts (``n_features`` = "mean"): ``held_out``, ``chosen``, ``train_score`` (the chosen method's mean on
    the other sets), ``score``, ``rare_f1`` (label-count resolution), ``best`` (the best method on the
    held-out set itself, the regret's reference), ``best_score``, ``random_genes`` and ``all_genes`` (their
    scores on the held-out set).  A last row ``held_out`` = "mean" averages the per-set means.
    """
    sets = list(dict.fromkeys(scores["set"]))
    if len(sets) < 2:
        msg = f"leave-one-dataset-out needs at least 2 panel sets; got {sets}"
        raise ValueError(msg)
    if family is None:
        family = [m for m in dict.fromkeys(scores["method"]) if m not in (RANDOM_GENES, ALL_GENES)]
    family = list(family)
    missing = sorted(set(family) - set(scores["method"]))
    if missing or not family:
        msg = f"family must be a non-empty list of methods of the panel table; not in it: {missing}"
        raise ValueError(msg)
    cell = scores.set_index(["set", "method", "n_features"])
    rows = []
    for h in sets:
        train = scores[(scores["set"] != h) & scores["method"].isin(family)]
        train_score = train.groupby("method")["score"].mean().reindex(family)
        if train_score.isna().all():
            msg = f"leave-one-dataset-out: no method of {family} has a score on the sets other than {h!r}"
            raise ValueError(msg)
        chosen = family[int(np.nanargmax(train_score.to_numpy()))]
        ks = sorted(scores.loc[scores["set"] == h, "n_features"].unique())
        held = []
        for k in ks:
            here = scores[(scores["set"] == h) & (scores["n_features"] == k) & scores["method"].isin(family)]
            best = here.loc[here["score"].idxmax()] if here["score"].notna().any() else None
            held.append(
                {
                    "held_out": h,
                    "n_features": k,
                    "chosen": chosen,
                    "train_score": float(train_score[chosen]),
                    "score": _at(cell, h, chosen, k, "score"),
                    "rare_f1": _at(cell, h, chosen, k, "rare_f1_nlabels"),
                    "best": None if best is None else best["method"],
                    "best_score": np.nan if best is None else float(best["score"]),
                    RANDOM_GENES: _at(cell, h, RANDOM_GENES, k, "score"),
                    ALL_GENES: _at(cell, h, ALL_GENES, k, "score"),
                }
            )
        mean = {c: float(np.nanmean([r[c] for r in held])) for c in ("score", "rare_f1", "best_score")}
        mean.update({c: float(np.nanmean([r[c] for r in held])) for c in (RANDOM_GENES, ALL_GENES)})
        rows += held
        rows.append({"held_out": h, "n_features": "mean", "chosen": chosen, "train_score": held[0]["train_score"],
                     "best": "", **mean})  # fmt: skip
    out = pd.DataFrame(rows)
    per_set = out[out["n_features"] == "mean"]
    total = {c: float(per_set[c].mean()) for c in ("score", "rare_f1", "best_score", RANDOM_GENES, ALL_GENES)}
    out = pd.concat(
        [out, pd.DataFrame([{"held_out": "mean", "n_features": "mean", "chosen": "", "best": "", **total}])]
    )
    return out.reset_index(drop=True)


def _at(cell: pd.DataFrame, s, m, k, col) -> float:
    """One figure of the panel table, NaN where the (set, method, gene count) has none."""
    try:
        return float(cell.loc[(s, m, k), col])
    except KeyError:
        return np.nan
