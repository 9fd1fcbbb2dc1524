"""Leave-one-dataset-out on the development panel: choose on three sets, score on the held-out fourth.

A design choice or default counts only if it wins on the panel set it was not chosen on (issue 28,
studies/real-panel.md, "The real development panel").  The functions work on the panel table of
``benchmarks/real_panel.py`` (one row per set x labels x method x draw x k x run, column ``score``).

- :func:`score_matrix`: the mean score per method (rows) and (labels, k) (columns); random genes
  averaged over draws; where k >= the set's genes every selection is all genes, so those cells hold
  the all-genes value.
- :func:`leave_one_dataset_out`: for each held-out set h, the member of a family (a list of
  methods or settings, rows of the matrix) with the best mean score over the other sets and the
  gene counts; its held-out scores.
- :func:`lodo_table`: the folds side by side with the HVG flavour chosen the same way and random genes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

NOT_METHODS = ("random", "all_genes")


def score_matrix(df: pd.DataFrame, grid) -> pd.DataFrame:
    """Mean ``score`` per method (index) and (labels, k) (columns, levels ``labels`` and ``k``)."""
    grid = [int(k) for k in grid]
    means = df.groupby(["method", "labels", "n_features"])["score"].mean()
    n_genes = df.groupby("labels")["n_genes"].first()
    allg = df[df["method"] == "all_genes"].groupby("labels")["score"].mean()
    cols = pd.MultiIndex.from_product([list(dict.fromkeys(df["labels"])), grid], names=["labels", "k"])
    methods = list(dict.fromkeys(df["method"]))
    S = pd.DataFrame(np.nan, index=pd.Index(methods, name="method"), columns=cols)
    for lab, k in cols:
        for m in methods:
            if m == "all_genes" or k >= n_genes[lab]:
                S.loc[m, (lab, k)] = allg.get(lab, np.nan)
            else:
                S.loc[m, (lab, k)] = means.get((m, lab, k), np.nan)
    return S


def leave_one_dataset_out(S: pd.DataFrame, family, panel, grid) -> pd.DataFrame:
    """For each held-out set: the family member chosen on the other sets and its held-out scores.

    Parameters
    ----------
    S : DataFrame
        :func:`score_matrix` (methods x (labels, k)).
    family : sequence of str
        The candidates (rows of S) one choice is made among.
    panel : sequence of str
        The sets (label-set names, one per fold).
    grid : sequence of int
        Gene counts; the choice maximises the mean score over the training sets and these counts.

    Returns
    -------
    DataFrame, one row per fold: ``held_out``, ``chosen``, ``train_score`` (the chosen member's mean
    on the training sets), ``k=<k>`` (held-out score at each k) and ``held_out_mean`` (over k).
    Ties are broken by the family's order.
    """
    family, panel, grid = list(family), list(panel), [int(k) for k in grid]
    missing = sorted(set(family) - set(S.index))
    if missing or not family:
        msg = f"family must be a non-empty list of rows of the score matrix; missing {missing}"
        raise ValueError(msg)
    if len(panel) < 2:
        msg = f"panel must hold at least 2 sets; got {panel}"
        raise ValueError(msg)
    rows = []
    for h in panel:
        train = [s for s in panel if s != h]
        train_score = pd.Series({m: np.nanmean([S.loc[m, (s, k)] for s in train for k in grid]) for m in family})
        chosen = family[int(np.argmax(train_score.to_numpy()))]
        held = {f"k={k}": float(S.loc[chosen, (h, k)]) for k in grid}
        rows.append(
            {
                "held_out": h,
                "chosen": chosen,
                "train_score": float(train_score[chosen]),
                **held,
                "held_out_mean": float(np.mean(list(held.values()))),
            }
        )
    return pd.DataFrame(rows)


def lodo_table(res: pd.DataFrame, S: pd.DataFrame, panel, grid) -> pd.DataFrame:
    """The folds of :func:`leave_one_dataset_out` beside the HVG flavour chosen the same way and random genes.

    Columns: per fold the chosen member, its held-out score at each k and over k, the HVG flavour
    chosen on the same training sets (``hvg``) with its held-out mean, random genes' held-out mean,
    and ``wins`` (chosen >= HVG and > random, held out).  A last row holds the means over folds.
    """
    hvg = [m for m in S.index if str(m).startswith("hvg_")]
    out = res.copy()
    grid = [int(k) for k in grid]
    if hvg:
        h = leave_one_dataset_out(S, hvg, panel, grid)
        out["hvg"] = h["chosen"].to_numpy()
        for k in grid:
            out[f"hvg k={k}"] = h[f"k={k}"].to_numpy()
        out["hvg_held_out_mean"] = h["held_out_mean"].to_numpy()
    if "random" in S.index:
        out["random_held_out_mean"] = [np.mean([S.loc["random", (f, k)] for k in grid]) for f in out["held_out"]]
    if hvg and "random" in S.index:
        out["wins"] = (out["held_out_mean"] >= out["hvg_held_out_mean"]) & (
            out["held_out_mean"] > out["random_held_out_mean"]
        )
    mean = {c: out[c].mean() for c in out.columns if out[c].dtype.kind == "f"}
    mean.update({"held_out": "mean", "chosen": "", **({"hvg": ""} if hvg else {})})
    if "wins" in out:
        mean["wins"] = f"{int(out['wins'].sum())}/{len(out)}"
    out = pd.concat([out, pd.DataFrame([mean])], ignore_index=True)
    return out.drop(columns=["train_score"])


def head_to_head(S: pd.DataFrame, reference: str, members, panel, grid) -> pd.DataFrame:
    """Each member against ``reference`` alone, by leave-one-dataset-out of the pair.

    Per member: its held-out mean score (over ``grid``) minus the reference's on each set; the folds
    whose training sets choose it over the reference (strictly higher mean there; ties keep the
    reference); and how many of those it wins held out (strictly higher on the held-out set).
    The rule of studies/real-panel.md: a design counts only if it wins the folds that choose it.
    """
    grid = [int(k) for k in grid]
    held = {m: {h: float(np.mean([S.loc[m, (h, k)] for k in grid])) for h in panel} for m in [reference, *members]}
    rows = []
    for m in members:
        res = leave_one_dataset_out(S, [reference, m], panel, grid)
        chosen = [h for h, c in zip(res["held_out"], res["chosen"]) if c == m]
        won = [h for h in chosen if held[m][h] > held[reference][h]]
        diff = {h: held[m][h] - held[reference][h] for h in panel}
        rows.append(
            {
                "design": m,
                **{f"{h} - ref": v for h, v in diff.items()},
                "mean - ref": float(np.mean(list(diff.values()))),
                "chosen in folds": ", ".join(chosen) or "-",
                "wins held out": f"{len(won)}/{len(chosen)}",
            }
        )
    return pd.DataFrame(rows).sort_values("mean - ref", ascending=False)
