"""Findings of the workflow report: the numbers, names and flags it states, computed from the result files.

Used by :mod:`glfs_workflow.report`; not part of the stable API.  Every function takes
the run's tables (pandas DataFrames as the workflow writes them) and returns plain
values (dicts of numbers, names and flags, or tables); the report's template
(``glfs_workflow/templates/``) words them.  Nothing here is a hard-coded result or a
sentence.  The only fixed content is the list of known sex-chromosome genes used to
flag top genes that separate samples by sex (:data:`SEX_GENES`) and the thresholds
the template names (:data:`NEAR_ZERO_NMI`).  Method roles come from the registry
(:mod:`glfs.api`): GLFS methods by ``MethodInfo.is_glfs`` and ``objective``, the
classification rows by :func:`glfs.api.classifier_rows`.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from glfs.api import METHODS, classifier_rows, methods_of

from .which import floor_summary

# Genes on the Y chromosome (male-specific expression; current and older symbols) and XIST
# (female-specific): top genes among these separate the samples by sex, not by the biology asked about.
Y_GENES = frozenset(
    {
        "RPS4Y1",
        "RPS4Y2",
        "RPS4Y",
        "DDX3Y",
        "DBY",
        "KDM5D",
        "JARID1D",
        "SMCY",
        "EIF1AY",
        "UTY",
        "USP9Y",
        "ZFY",
        "NLGN4Y",
        "TXLNGY",
        "CYORF15A",
        "CYORF15B",
        "PRKY",
        "TMSB4Y",
        "SRY",
        "PCDH11Y",
        "TBL1Y",
        "AMELY",
        "TSPY",
        "TSPY1",
        "VCY",
        "CDY1",
        "DAZ1",
        "RBMY1A1",
        "HSFY1",
        "BPY2",
        "XKRY",
        "TTTY14",
        "TTTY15",
    }
)
X_INACTIVATION = frozenset({"XIST", "TSIX"})
SEX_GENES = Y_GENES | X_INACTIVATION

# Mean NMI below this counts as "near 0" (no agreement with the labels beyond chance level).
NEAR_ZERO_NMI = 0.1

PATH_COLUMNS = ["lam", "n_selected", "objective", "converged", "kkt_residual"]


def side_by_side_methods() -> list[str]:
    """Methods of the GLFS section's side-by-side table: the GLFS methods (``MethodInfo.is_glfs``), then
    what GLFS builds on: the first graph-based unsupervised method of the gene-wise scores (the Laplacian
    score) and of the greedy optimal designs (LapAOFS), in registry order."""
    glfs = [m for m, info in METHODS.items() if info.is_glfs]
    return [*glfs, first_graph_method("score"), first_graph_method("optimal_design")]


def first_graph_method(family: str) -> str:
    """The first graph-based unsupervised method of a family, in registry order: for ``"score"`` the Laplacian
    score, the gene-wise score GLFS builds on and the paper compares it with (Fig. 1B)."""
    return next(
        m for m, info in METHODS.items() if info.family == family and info.needs_graph and not info.needs_labels
    )


def glfs_classifier_rows() -> list[str]:
    """Rows of the classification table fitted with a GLFS method, in registry order (glfs.api.classifier_rows)."""
    return [r for m, info in METHODS.items() if info.is_glfs for r in classifier_rows(m)]


def _objective(method) -> str | None:
    info = METHODS.get(str(method))
    return info.objective if info is not None else None


# ---- random floor ------------------------------------------------------------------------


def floor_comparison(cdf: pd.DataFrame | None, random_df: pd.DataFrame | None) -> pd.DataFrame:
    """Every method's mean NMI next to the random floor at the same number of genes.

    Returns one row per (method, n_features) with ``nmi`` (mean over runs),
    ``floor_mean``, ``floor_sd``, ``margin`` = nmi - floor_mean and ``clears``:
    nmi > floor_mean + floor_sd (above the typical spread of random gene sets;
    with one draw, above its mean).  Empty when either table is missing.
    """
    cols = ["method", "n_features", "nmi", "floor_mean", "floor_sd", "margin", "clears"]
    fl = floor_summary(random_df)
    if cdf is None or cdf.empty or fl.empty:
        return pd.DataFrame(columns=cols)
    m = cdf.groupby(["method", "n_features"], sort=False)["nmi"].mean().reset_index()
    out = m.merge(fl, on="n_features", how="inner")
    out["margin"] = out["nmi"] - out["floor_mean"]
    out["clears"] = out["nmi"] > out["floor_mean"] + out["floor_sd"].fillna(0.0)
    return out[cols]


def _pick_ks(values, wanted=(10, 50, 100)):
    grid = sorted(int(v) for v in set(values))
    ks = [k for k in wanted if k in grid]
    if not ks:
        ks = grid[: min(3, len(grid))]
    return ks


def clustering_facts(
    cdf: pd.DataFrame | None, random_df: pd.DataFrame | None, *, supervised=(), ks=(10, 50, 100)
) -> dict | None:
    """What the report says about a dataset's clustering results: the random floor, near-zero NMI, the best methods.

    ``cdf``: clustering_nmi.tsv rows; ``random_df``: clustering_random.tsv rows (or None);
    ``supervised``: method names that used the labels (named apart).  None without results.
    Keys: ``floor`` (:func:`_floor_facts`; None when no floor was computed), ``unsupervised``
    (:func:`_unsupervised_facts`), ``supervised_best`` (method, nmi, k at <= 100 genes, or
    None) and ``all_genes`` (k, nmi: the largest gene count, the same genes for every method).
    """
    if cdf is None or cdf.empty:
        return None
    kmax = int(cdf["n_features"].max())
    mean = cdf.groupby(["method", "n_features"], sort=False)["nmi"].mean().reset_index()
    small = mean[mean["n_features"] < kmax] if (mean["n_features"] < kmax).any() else mean
    sup = small[small["method"].isin(set(supervised)) & (small["n_features"] <= 100)]
    sup_best = None
    if not sup.empty:
        b = sup.sort_values("nmi", ascending=False).iloc[0]
        sup_best = {"method": b["method"], "nmi": float(b["nmi"]), "k": int(b["n_features"])}
    allg = mean[mean["n_features"] == kmax]["nmi"]
    return {
        "floor": _floor_facts(cdf, random_df, kmax=kmax, ks=ks),
        "unsupervised": _unsupervised_facts(small[~small["method"].isin(set(supervised))]),
        "supervised_best": sup_best,
        "all_genes": None if allg.empty else {"k": kmax, "nmi": float(allg.mean())},
    }


def _floor_facts(cdf: pd.DataFrame, random_df: pd.DataFrame | None, *, kmax: int, ks) -> dict | None:
    """Which methods clear the random-genes floor at a few grid sizes below all genes, and which never do.

    ``at``: per gene count k, ``n`` methods, ``above`` (above the floor's mean + 1 sd, best first),
    ``within`` (within its spread), ``below`` (under its mean - 1 sd), ``floor_mean``, ``floor_sd``,
    ``n_draws``; ``never``: methods above the floor at no grid size below all genes.  None without a floor.
    """
    comp = floor_comparison(cdf, random_df)
    if comp.empty:
        return None
    n_draws = int(floor_summary(random_df)["n_draws"].max())
    at = []
    for k in _pick_ks(
        comp.loc[comp["n_features"] < kmax, "n_features"] if (comp["n_features"] < kmax).any() else comp["n_features"],
        ks,
    ):
        ck = comp[comp["n_features"] == k]
        if ck.empty:
            continue
        fm, fs = float(ck["floor_mean"].iloc[0]), float(ck["floor_sd"].iloc[0])
        yes = ck[ck["clears"]].sort_values("nmi", ascending=False)
        no = ck[~ck["clears"]].sort_values("nmi", ascending=False)
        below = no[no["nmi"] < fm - (fs if fs == fs else 0.0)]
        within = no[~no.index.isin(below.index)]
        at.append(
            {
                "k": int(k),
                "n": len(ck),
                "above": list(yes["method"]),
                "within": list(within["method"]),
                "below": list(below["method"]),
                "floor_mean": fm,
                "floor_sd": fs,
                "n_draws": n_draws,
            }
        )
    never = [m for m, g in comp[comp["n_features"] < kmax].groupby("method", sort=False) if not g["clears"].any()]
    return {"at": at, "never": never}


def _unsupervised_facts(uns: pd.DataFrame) -> dict | None:
    """The best unsupervised method at <= 100 genes (``best``: method, nmi, k); ``all_near_zero`` when even it is
    below :data:`NEAR_ZERO_NMI`, else ``near``: the methods that stay below it at every count (of ``n_methods``)."""
    upto100 = uns[uns["n_features"] <= 100]
    if upto100.empty:
        return None
    b = upto100.sort_values("nmi", ascending=False).iloc[0]
    best = {"method": b["method"], "nmi": float(b["nmi"]), "k": int(b["n_features"])}
    peak = upto100.groupby("method", sort=False)["nmi"].max()
    near = peak[peak < NEAR_ZERO_NMI].sort_values()
    return {
        "best": best,
        "all_near_zero": bool(b["nmi"] < NEAR_ZERO_NMI),
        "near": list(near.index),
        "n_methods": len(peak),
        "threshold": NEAR_ZERO_NMI,
    }


# ---- top genes ---------------------------------------------------------------------------


def _tokens(name) -> set[str]:
    return {t.upper() for t in re.split(r"[^A-Za-z0-9]+", str(name)) if t}


_Y_TEXT = re.compile(r"\bY-linked\b|\bY chromosome\b", re.IGNORECASE)


def sex_genes_in(genes, descriptions=None) -> list[str]:
    """The genes of ``genes`` that are known sex-chromosome genes (:data:`SEX_GENES`).

    A gene is flagged when a token of its id is a listed symbol, or when its
    description from the data (``descriptions``: id -> text, e.g. Golub's
    "RPS4Y Ribosomal protein S4; Y-linked") starts with a listed symbol or says
    "Y-linked".  Only the first word of a description counts as a symbol, so
    "Sry-Related Hmg-Box 12 Protein" (SOX12) is not SRY.
    """
    descriptions = descriptions or {}
    hits = []
    for g in genes:
        text = str(descriptions.get(g, ""))
        first = text.split()[0].upper() if text.split() else ""
        if _tokens(g) & SEX_GENES or first in SEX_GENES or _Y_TEXT.search(text):
            hits.append(str(g))
    return hits


def top_gene_facts(top: dict, *, descriptions=None, n=10) -> dict:
    """The recommended method's top genes, and the methods whose top genes include sex-chromosome genes.

    ``top``: method -> list of gene ids, best first.  ``descriptions``: gene id -> symbol/description
    text from the data (searched too, e.g. Golub probe ids).  The recommended method is the first of
    the registry's family "glfs" (the well-posed GLFS).  Returns ``highlight`` (that method, or None
    when it did not run), ``top`` ([gene, the first 30 characters of its description or None] for its
    first 5 genes), ``sex`` ([{method, hits, n}] for every method with a hit among its first ``n``) and ``n``.
    """
    descriptions = descriptions or {}
    highlight = next((m for m in methods_of("glfs") if top.get(m)), None)
    shown = []
    if highlight is not None:
        shown = [
            [g, descriptions[g][:30] if descriptions.get(g) and descriptions[g] != g else None]
            for g in top[highlight][:5]
        ]
    sex = [
        {"method": m, "hits": h, "n": min(n, len(g))}
        for m, g in top.items()
        for h in [sex_genes_in(g[:n], descriptions)]
        if h
    ]
    return {"highlight": highlight, "top": shown, "sex": sex, "n": n}


# ---- GLFS: convergence, path ---------------------------------------------------------------


def label_count_misses(leiden: pd.DataFrame | None) -> list[dict]:
    """The (method, gene count) pairs of a Leiden table where some run's clustering "at the label count" never
    reached it (``nlabels_reached`` False: no resolution of the grid came within
    ``glfs.evaluate._leiden.LABEL_COUNT_TOLERANCE`` of the labels), with the runs and the cluster counts reached.
    Empty for a table without the column (results written before it existed)."""
    if leiden is None or "nlabels_reached" not in leiden:
        return []
    ok = leiden["nlabels_reached"].astype(str).str.lower().isin(["true", "1", "1.0"])
    out = []
    for (method, k), t in leiden.assign(_ok=ok.to_numpy()).groupby(["method", "n_features"], sort=True):
        miss = t[~t["_ok"]]
        if len(miss):
            out.append(
                {
                    "method": str(method),
                    "k": int(k),
                    "runs": len(miss),
                    "of": len(t),
                    "clusters": sorted({int(c) for c in miss["n_clusters_nlabels"]}),
                }
            )
    return out


def path_frame(meta: dict) -> pd.DataFrame | None:
    """The lam path of a published-GLFS selection JSON as a table (lam, n_selected, objective, [converged, kkt_residual]).

    Accepts rows as lists (named in the order of :data:`PATH_COLUMNS`, extra
    unnamed values dropped) or as records; None when no path is recorded.
    """
    path = (meta.get("extra") or {}).get("path")
    if not path:
        return None
    if isinstance(path[0], (list, tuple)):
        width = min(len(path[0]), len(PATH_COLUMNS))
        df = pd.DataFrame([list(p)[:width] for p in path], columns=PATH_COLUMNS[:width])
    elif isinstance(path, dict):
        df = pd.DataFrame(path)
    else:
        df = pd.DataFrame(list(path))
    if "n_nonzero" in df and "n_selected" not in df:
        df = df.rename(columns={"n_nonzero": "n_selected"})
    if "lam" not in df or "n_selected" not in df:
        return None
    if "converged" in df:
        df["converged"] = df["converged"].map(lambda v: bool(v) if v is not None and v == v else None)
    return df


def convergence_records(metas: dict) -> list[dict]:
    """Converged or not, for every GLFS selection: one dict per (dataset, method) of ``metas`` (selection JSONs).

    The budgeted design (objective "design", or a record with a greedy criterion): ``kind`` "design",
    ``converged`` (bool, or None when not recorded), ``n_swaps``, ``criterion``, ``greedy_criterion``.
    A published reading: ``kind`` "path", ``n_points`` and ``n_converged`` of its path (None when the
    path records no flags), ``converged`` (the params' flag, or None), ``lam`` (the chosen lam or None),
    ``lam_converged`` (whether the path point at it converged; None when not found), ``kkt_max``
    (largest KKT residual of the path, or None) and ``n_selected_at_lam``.
    """
    out = []
    for (ds, m), meta in metas.items():
        p = meta.get("params") or {}
        if _objective(m) == "design" or "greedy_criterion" in p:
            out.append(
                {
                    "dataset": ds,
                    "method": m,
                    "kind": "design",
                    "converged": p.get("converged"),
                    "n_swaps": p.get("n_swaps"),
                    "criterion": p.get("criterion"),
                    "greedy_criterion": p.get("greedy_criterion"),
                }
            )
            continue
        path = path_frame(meta)
        rec = {
            "dataset": ds,
            "method": m,
            "kind": "path",
            "n_points": None,
            "n_converged": None,
            "converged": p.get("converged"),
            "lam": p.get("lam"),
            "lam_converged": None,
            "kkt_max": None,
            "n_selected_at_lam": p.get("n_selected_at_lam"),
        }
        if path is not None and "converged" in path and path["converged"].notna().any():
            c = path["converged"].fillna(False).astype(bool)
            rec.update(n_points=len(c), n_converged=int(c.sum()))
            if "lam" in p:
                at = path.index[np.isclose(path["lam"].astype(float), float(p["lam"]))]
                if len(at):
                    rec["lam_converged"] = bool(c.loc[at[0]])
        if path is not None and "kkt_residual" in path and path["kkt_residual"].notna().any():
            rec["kkt_max"] = float(path["kkt_residual"].max())
        out.append(rec)
    return out


def convergence_facts(records: list[dict]) -> dict:
    """Over :func:`convergence_records`: ``design`` (n, n_ok, not_ok: datasets where the well-posed glfs did not
    converge; None without one) and ``paths`` (None without a published reading; ``recorded``: whether any path
    records convergence flags; ``bad``: [(method, dataset, converged points, points)] with unconverged points)."""
    design = [r for r in records if r["kind"] == "design"]
    paths = [r for r in records if r["kind"] == "path"]
    out = {"design": None, "paths": None}
    if design:
        ok = [r for r in design if r["converged"] is not None and bool(r["converged"])]
        out["design"] = {"n": len(design), "n_ok": len(ok), "not_ok": [r["dataset"] for r in design if r not in ok]}
    if paths:
        rec = [r for r in paths if r["n_converged"] is not None]
        out["paths"] = {
            "recorded": bool(rec),
            "bad": [
                (r["method"], r["dataset"], r["n_converged"], r["n_points"])
                for r in rec
                if r["n_converged"] < r["n_points"]
            ],
        }
    return out


def path_facts(path: pd.DataFrame | None, method: str, dataset: str) -> dict | None:
    """A published GLFS path as lam falls: ``sizes`` (support sizes, largest lam first), ``lams``, ``direction``
    ("flat", "grows", "shrinks" or "mixed") and ``converged`` (None without flags; else ``n``, ``n_converged``
    and the ``sizes`` of the converged points).  None for an empty path."""
    if path is None or len(path) == 0:
        return None
    p = path.sort_values("lam", ascending=False).reset_index(drop=True)
    n = p["n_selected"].astype(int).to_numpy()
    d = np.diff(n)
    if len(n) < 2 or np.all(d == 0):
        direction = "flat"
    elif np.all(d >= 0):
        direction = "grows"
    elif np.all(d <= 0):
        direction = "shrinks"
    else:
        direction = "mixed"
    conv = None
    if "converged" in p and p["converged"].notna().any():
        c = p["converged"].fillna(False).astype(bool).to_numpy()
        conv = {"n": len(c), "n_converged": int(c.sum()), "sizes": sorted({int(v) for v in n[c]})}
    return {
        "method": method,
        "dataset": dataset,
        "sizes": [int(v) for v in n],
        "lams": [float(v) for v in p["lam"].astype(float)],
        "direction": direction,
        "converged": conv,
    }


def collapse_facts(paths: dict) -> dict:
    """Numbers for why the published relaxation collapses: beta = 0 is the exact objective's global minimum.

    ``paths``: (dataset, method) -> path table.  For the exact reading (objective "exact") the
    smooth part V(beta) = Tr Cov >= 0 and V(0) = 0, so with lam >= 0 the value at every path
    point, V + lam sum(beta), is at least the empty set's 0.  ``entries``, in the order of ``paths``:
    ``kind`` "exact" (dataset, method, ``min`` and ``max`` of the objective at the ``n_nonempty``
    non-empty points, ``all_positive``) or "negative" (the Eq. 7 readings, objectives "paper" and
    "printed": ``n_negative`` of ``n`` points, ``min``); ``single``: [(dataset, [(method, points that
    keep one gene, points)])].
    """
    items, single = [], {}
    for (ds, m), p in paths.items():
        if p is None or len(p) == 0 or "objective" not in p:
            continue
        obj = p["objective"].astype(float)
        nonempty = p["n_selected"].astype(int) > 0
        if _objective(m) == "exact" and nonempty.any() and obj.notna().any():
            o = obj[nonempty]
            items.append(
                {
                    "kind": "exact",
                    "dataset": ds,
                    "method": m,
                    "min": float(o.min()),
                    "max": float(o.max()),
                    "n_nonempty": int(nonempty.sum()),
                    "all_positive": bool((o > 0).all()),
                }
            )
        elif _objective(m) in ("paper", "printed") and obj.notna().any():
            neg = int((obj < 0).sum())
            if neg:
                items.append(
                    {
                        "kind": "negative",
                        "dataset": ds,
                        "method": m,
                        "n_negative": neg,
                        "n": len(obj),
                        "min": float(obj.min()),
                    }
                )
        sizes = p["n_selected"].astype(int)
        if (sizes == 1).any():
            single.setdefault(ds, []).append((m, int((sizes == 1).sum()), len(sizes)))
    return {"entries": items, "single": list(single.items())}


# ---- glfs vs greedy, sensitivity --------------------------------------------------------------


def greedy_facts(tables: dict) -> dict | None:
    """Over the glfs-vs-greedy criterion tables (dataset -> glfs_vs_greedy.tsv rows): ``n_cases``, ``worse``
    [(dataset, k)] where glfs is worse than greedy LapAOFS, ``best`` (pct, dataset, k: the largest gain),
    ``n_equal`` (cases equal to greedy) and ``not_converged`` [(dataset, k)].  None without a table."""
    rows = [t.assign(dataset=ds) for ds, t in tables.items() if t is not None and not t.empty]
    if not rows:
        return None
    df = pd.concat(rows, ignore_index=True)
    worse = df[df["criterion"] > df["greedy_criterion"] * (1 + 1e-12)]
    best = df.sort_values("pct_lower", ascending=False).iloc[0]
    nc = df[~df["converged"].astype(bool)]
    return {
        "n_cases": len(df),
        "worse": [(r["dataset"], int(r["k"])) for _, r in worse.iterrows()],
        "best": {"pct": float(best["pct_lower"]), "dataset": best["dataset"], "k": int(best["k"])},
        "n_equal": int((df["pct_lower"] <= 1e-9).sum()),
        "not_converged": [(r["dataset"], int(r["k"])) for _, r in nc.iterrows()],
    }


def sensitivity_facts(sens: pd.DataFrame | None, dataset: str) -> dict | None:
    """The post-hoc graph_weight sensitivity of glfs on one dataset: ``per_k`` (k, the lowest and highest
    NMI with their graph weights, the ``default`` weight's NMI and rank among the weights, the NMI
    ``without_graph`` at weight 0) and ``not_converged`` (graph weights).  None without the table."""
    if sens is None or sens.empty:
        return None
    per_k = []
    for k, g in sens.groupby("k"):
        g = g.sort_values("graph_weight")
        lo, hi = g.loc[g["nmi_mean"].idxmin()], g.loc[g["nmi_mean"].idxmax()]
        row = {
            "k": int(k),
            "lo_nmi": float(lo["nmi_mean"]),
            "lo_weight": float(lo["graph_weight"]),
            "hi_nmi": float(hi["nmi_mean"]),
            "hi_weight": float(hi["graph_weight"]),
            "default": None,
            "without_graph": None,
        }
        dflt = g[g["is_default"].astype(bool)]
        if not dflt.empty:
            v = float(dflt["nmi_mean"].iloc[0])
            row["default"] = {
                "weight": float(dflt["graph_weight"].iloc[0]),
                "nmi": v,
                "rank": int((g["nmi_mean"] > v + 1e-12).sum()) + 1,
                "n": len(g),
            }
        zero = g[g["graph_weight"] == 0]
        if not zero.empty:
            row["without_graph"] = float(zero["nmi_mean"].iloc[0])
        per_k.append(row)
    nc = sens.loc[~sens["converged"].astype(bool), "graph_weight"].unique()
    return {"dataset": dataset, "per_k": per_k, "not_converged": [float(v) for v in nc]}


# ---- classification ------------------------------------------------------------------------------


def classification_facts(cls: pd.DataFrame | None) -> dict | None:
    """A classification table: ``failed`` rows, ``test_n``, the ``best`` rows (fewest test errors,
    ``best_errors``), the ``random`` genes floor (n_genes, n_genes_as, statistic, test_errors, range,
    ``fewer``: rows with fewer test errors, ``not_fewer``) and the GLFS rows' numbers (``glfs``: the rows
    of the family "glfs", its supervised row first).  None without a table; ``test_n`` None when every row failed."""
    if cls is None or cls.empty:
        return None
    ok = cls.dropna(subset=["test_errors"])
    out = {"failed": cls.loc[cls["test_errors"].isna(), "method"].tolist(), "test_n": None}
    if ok.empty:
        return out
    best = ok[ok["test_errors"] == ok["test_errors"].min()]
    out.update(
        test_n=int(ok["test_n"].iloc[0]),
        best_errors=int(best["test_errors"].iloc[0]),
        best=list(best["method"]),
        random=None,
        glfs=[],
    )
    rnd = ok[ok["method"] == "random_genes"]
    if not rnd.empty:
        r = rnd.iloc[0]
        try:
            rp = json.loads(r["params"]) if isinstance(r.get("params"), str) else {}
        except ValueError:
            rp = {}
        others = ok[ok["method"] != "random_genes"]
        out["random"] = {
            "n_genes": int(r["n_genes"]),
            "n_genes_as": rp.get("n_genes_as"),
            "statistic": rp.get("statistic"),
            "test_errors": int(r["test_errors"]),
            "range": rp.get("test_errors_range"),
            "fewer": list(others.loc[others["test_errors"] < r["test_errors"], "method"]),
            "not_fewer": list(others.loc[others["test_errors"] >= r["test_errors"], "method"]),
        }
    for m in reversed([row for g in methods_of("glfs") for row in classifier_rows(g)]):  # the supervised row first
        row = ok[ok["method"] == m]
        if not row.empty:
            r = row.iloc[0]
            out["glfs"].append(
                {
                    "method": m,
                    "n_genes": int(r["n_genes"]),
                    "test_errors": int(r["test_errors"]),
                    "cv_errors": int(r["cv_errors"]),
                    "cv_n": int(r["cv_n"]),
                }
            )
    return out


# ---- simulation, runtime, provenance ------------------------------------------------------------


def simulation_facts(sim: pd.DataFrame | None) -> dict | None:
    """The planted-feature simulation: ``perfect`` (methods with Score 1 at every grid point), ``lowest`` and
    ``highest`` (method, mean Score over the grid).  None without results."""
    if sim is None or sim.empty:
        return None
    agg = sim.groupby(["method", "sigma", "n_noise"])["score"].mean().reset_index()
    perfect = [m for m, g in agg.groupby("method", sort=False) if (g["score"] >= 1 - 1e-12).all()]
    mean = agg.groupby("method")["score"].mean().sort_values()
    return {
        "perfect": perfect,
        "lowest": (mean.index[0], float(mean.iloc[0])),
        "highest": (mean.index[-1], float(mean.iloc[-1])),
    }


def runtime_facts(rt: pd.DataFrame | None) -> dict | None:
    """Where the run's time went: ``total`` seconds, the rule with the largest share (``rule``, ``rule_s``,
    ``pct``) and its slowest job (``slowest_job``, ``max_s``).  None without benchmarks."""
    if rt is None or rt.empty:
        return None
    total = float(rt["total_s"].sum())
    top = rt.sort_values("total_s", ascending=False).iloc[0]
    return {
        "total": total,
        "rule": top["rule"],
        "rule_s": float(top["total_s"]),
        "pct": 100 * float(top["total_s"]) / max(total, 1e-9),
        "slowest_job": top["slowest_job"],
        "max_s": float(top["max_s"]),
    }


NO_CHECKSUM = "no checksum given"


def provenance_table(prov: dict) -> pd.DataFrame:
    """A provenance record (results/{dataset}/provenance.json) as one row per input file.

    Columns: file, source, path, url, size, sha256 (first 16 hex digits), checksum
    ("matches expected", "MISMATCH", or :data:`NO_CHECKSUM` when the config gives no
    expected value: nothing was checked), time.
    """
    rows = []
    for role, f in (prov.get("files") or {}).items():
        if not isinstance(f, dict):
            rows.append({"file": role, "source": str(f)})
            continue
        sha, exp = f.get("sha256"), f.get("expected_sha256")
        check = NO_CHECKSUM if not exp else ("matches expected" if sha and sha.lower() == exp.lower() else "MISMATCH")
        rows.append(
            {
                "file": role,
                "source": f.get("source", ""),
                "path": f.get("path", ""),
                "url": f.get("url", ""),
                "size": f.get("size", ""),
                "sha256": (sha or "")[:16] + ("..." if sha else ""),
                "checksum": check,
                "time": f.get("time", ""),
            }
        )
    return pd.DataFrame(rows)


def checksum_counts(tables: dict) -> dict:
    """Input files over every dataset's :func:`provenance_table`: ``checked`` (an expected sha256 was
    given), ``match``, ``mismatch`` ("dataset/file" of each) and ``unchecked`` (no checksum given)."""
    out = {"checked": 0, "match": 0, "mismatch": [], "unchecked": 0}
    for ds, t in tables.items():
        if t is None or t.empty or "checksum" not in t:
            continue
        check = t["checksum"].fillna(NO_CHECKSUM)
        out["checked"] += int((check != NO_CHECKSUM).sum())
        out["match"] += int((check == "matches expected").sum())
        out["mismatch"] += [f"{ds}/{f}" for f in t.loc[check == "MISMATCH", "file"]]
        out["unchecked"] += int((check == NO_CHECKSUM).sum())
    return out


def provenance_facts(tables: dict) -> dict | None:
    """The checksums and sources of every dataset's inputs (dataset -> :func:`provenance_table`):
    :func:`checksum_counts` and ``sources`` ([(source, number of files)], or None without a source column).

    Only files with an expected sha256 are counted as checked; the others have no checksum given
    (not a mismatch).  None without a table with checksums.
    """
    rows = [t.assign(dataset=ds) for ds, t in tables.items() if t is not None and not t.empty]
    if not rows:
        return None
    df = pd.concat(rows, ignore_index=True)
    if "checksum" not in df:
        return None
    sources = list(df["source"].value_counts().items()) if "source" in df else None
    return {**checksum_counts(tables), "sources": sources}


def run_summary(layout: dict) -> dict:
    """What this run did, from the datasets the report reads (never from config keys the run did not use).

    ``layout``: ``datasets`` ([{name, labelled, methods}]), ``classification`` (the datasets classified),
    ``simulation`` (the recovery table, or None when the simulation did not run), ``simulation_methods``.

    Returns ``datasets`` and ``labelled`` (names), ``methods`` (dataset -> the methods it ran: its own
    list or the top-level one, without supervised methods on unlabelled data), ``n_methods``
    (distinct methods over the datasets), ``classification`` (datasets classified),
    ``simulation_methods`` (methods of the planted simulation; [] when it did not run).
    """
    ds = layout.get("datasets") or []
    methods = {d["name"]: list(d.get("methods") or []) for d in ds}
    return {
        "datasets": [d["name"] for d in ds],
        "labelled": [d["name"] for d in ds if d.get("labelled")],
        "methods": methods,
        "n_methods": len({m for ms in methods.values() for m in ms}),
        "classification": list(layout.get("classification") or {}),
        "simulation_methods": list(layout.get("simulation_methods") or []) if layout.get("simulation") else [],
    }


def paper_facts(rows: list[dict]) -> dict:
    """Over the paper-versus-run rows (glfs_workflow.report_tables.paper_vs_run_rows): ``ranks`` (the
    NMI rank of the best GLFS variant at each GBM (dataset, gene count) point checked) and ``glfs_rows``
    (the Table 3 rows of the GLFS classifiers: dataset, method, this run's and the paper's numbers)."""
    ranks = [r["rank"] for r in rows if r.get("kind") == "gbm_rank"]
    glfs_rows = [r for r in rows if r.get("kind") == "classification" and r.get("glfs")]
    return {"ranks": ranks, "n_first": sum(p == 1 for p in ranks), "glfs_rows": glfs_rows}
