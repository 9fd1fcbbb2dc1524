"""Findings of the workflow report: tables and plain sentences computed from the result files.

Used by :mod:`glfs_workflow.report`; not part of the stable API.  Every function takes
the run's tables (pandas DataFrames as the workflow writes them) and returns a
table or a list of sentences, or (:func:`which_method`) a :class:`WhichMethod` of
numbers and names that the report words; nothing here is a hard-coded result.  The only
fixed content is the list of known sex-chromosome genes used to flag top genes
that separate samples by sex (:data:`SEX_GENES`) and the thresholds named in
the sentences (:data:`NEAR_ZERO_NMI`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pandas as pd

from glfs.api import METHODS, methods_of

# Genes on the Y chromosome (male-specific expression; current and older symbols) and XIST
# (female-specific): top genes among these separate the samples by sex, not by the biology asked about.
Y_GENES = frozenset({
    "RPS4Y1", "RPS4Y2", "RPS4Y", "DDX3Y", "DBY", "KDM5D", "JARID1D", "SMCY", "EIF1AY", "UTY", "USP9Y", "ZFY",
    "NLGN4Y", "TXLNGY", "CYORF15A", "CYORF15B", "PRKY", "TMSB4Y", "SRY", "PCDH11Y", "TBL1Y", "AMELY", "TSPY",
    "TSPY1", "VCY", "CDY1", "DAZ1", "RBMY1A1", "HSFY1", "BPY2", "XKRY", "TTTY14", "TTTY15",
})
X_INACTIVATION = frozenset({"XIST", "TSIX"})
SEX_GENES = Y_GENES | X_INACTIVATION

# Mean NMI below this counts as "near 0" (no agreement with the labels beyond chance level).
NEAR_ZERO_NMI = 0.1

# The method name of the all-genes reference rows in leiden_random.tsv.
ALL_GENES = "all_genes"

# Methods shown side by side in the GLFS section (those present in the run).
GLFS_SIDE_BY_SIDE = ["glfs", "glfs_exact", "glfs_paper", "glfs_printed", "laplacian_score", "lapaofs"]
PUBLISHED_GLFS = methods_of("glfs_published")
PATH_COLUMNS = ["lam", "n_selected", "objective", "converged", "kkt_residual"]


def _fmt(x, digits=3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def _g(x) -> str:
    return f"{float(x):.3g}"


def _list(items) -> str:
    items = [str(i) for i in items]
    if not items:
        return "none"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


# ---- random floor ------------------------------------------------------------------------


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


def clustering_findings(
    cdf: pd.DataFrame | None,
    random_df: pd.DataFrame | None,
    dataset: str,
    *,
    supervised=(),
    ks=(10, 50, 100),
) -> list[str]:
    """Sentences on a dataset's clustering results: the random floor, near-zero NMI, the best methods.

    ``cdf``: clustering_nmi.tsv rows; ``random_df``: clustering_random.tsv rows
    (or None); ``supervised``: method names that used the labels (named apart).
    """
    out: list[str] = []
    if cdf is None or cdf.empty:
        return out
    kmax = int(cdf["n_features"].max())
    mean = cdf.groupby(["method", "n_features"], sort=False)["nmi"].mean().reset_index()
    small = mean[mean["n_features"] < kmax] if (mean["n_features"] < kmax).any() else mean
    out += _floor_sentences(cdf, random_df, dataset, kmax=kmax, ks=ks)
    out += _unsupervised_sentences(small[~small["method"].isin(set(supervised))], dataset)
    sup = small[small["method"].isin(set(supervised)) & (small["n_features"] <= 100)]
    if not sup.empty:
        b = sup.sort_values("nmi", ascending=False).iloc[0]
        out.append(f"The supervised reference {b['method']} (it used the labels) reaches {_fmt(b['nmi'])} at "
                   f"{int(b['n_features'])} genes.")
    allg = mean[mean["n_features"] == kmax]["nmi"]
    if not allg.empty:
        out.append(f"With all {kmax} genes NMI is {_fmt(float(allg.mean()))} (the same genes for every method).")
    return out


def _floor_sentences(cdf: pd.DataFrame, random_df: pd.DataFrame | None, dataset: str, *, kmax: int, ks) -> list[str]:
    """Which methods clear the random-genes floor at a few grid sizes below all genes, and which never do."""
    comp = floor_comparison(cdf, random_df)
    if comp.empty:
        return [f"No random-genes floor was computed for {dataset}, so no method can be judged against chance."]
    out = []
    n_draws = int(floor_summary(random_df)["n_draws"].max())
    for k in _pick_ks(comp.loc[comp["n_features"] < kmax, "n_features"] if (comp["n_features"] < kmax).any()
                      else comp["n_features"], ks):
        ck = comp[comp["n_features"] == k]
        if not ck.empty:
            out.append(_floor_sentence_at(ck, k, n_draws))
    never = [m for m, g in comp[comp["n_features"] < kmax].groupby("method", sort=False) if not g["clears"].any()]
    if never:
        out.append(f"Never above the floor at any grid size below all genes: {_list(never)}.")
    return out


def _floor_sentence_at(ck: pd.DataFrame, k, n_draws: int) -> str:
    """At k genes: the methods above the floor (mean + 1 sd), within its spread, and below mean - 1 sd."""
    fm, fs = float(ck["floor_mean"].iloc[0]), float(ck["floor_sd"].iloc[0])
    yes = ck[ck["clears"]].sort_values("nmi", ascending=False)
    no = ck[~ck["clears"]].sort_values("nmi", ascending=False)
    below = no[no["nmi"] < fm - (fs if fs == fs else 0.0)]
    within = no[~no.index.isin(below.index)]
    s = (f"At {k} genes, {len(yes)} of {len(ck)} methods clear the random floor (NMI above mean + 1 sd of "
         f"{n_draws} random gene sets, {_fmt(fm)} + {_fmt(fs)}): {_list(yes['method'])}.")
    if len(within):
        s += f" Within the spread of random genes: {_list(within['method'])}."
    if len(below):
        s += f" Below it (under the mean - 1 sd): {_list(below['method'])}."
    return s


def _unsupervised_sentences(uns: pd.DataFrame, dataset: str) -> list[str]:
    """The best unsupervised method at <= 100 genes, or that every one (or which ones) stay near NMI 0."""
    upto100 = uns[uns["n_features"] <= 100]
    if upto100.empty:
        return []
    best = upto100.sort_values("nmi", ascending=False).iloc[0]
    if best["nmi"] < NEAR_ZERO_NMI:
        s = (f"Every unsupervised method is near NMI 0 on {dataset} at <= 100 genes (all below "
             f"{NEAR_ZERO_NMI}; highest {best['method']} with {_fmt(best['nmi'])} at {int(best['n_features'])} "
             "genes): spectral clustering on these genes does not recover the labels.")
        return [s]
    out = []
    peak = upto100.groupby("method", sort=False)["nmi"].max()
    near = peak[peak < NEAR_ZERO_NMI].sort_values()
    if len(near):
        out.append(f"{len(near)} of {len(peak)} unsupervised methods stay near NMI 0 (below {NEAR_ZERO_NMI} "
                   f"at every gene count <= 100): {_list(near.index)}.")
    out.append(f"The best unsupervised result at <= 100 genes is {best['method']} with NMI "
               f"{_fmt(best['nmi'])} at {int(best['n_features'])} genes.")
    return out


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


def top_gene_findings(top: dict, dataset: str, *, descriptions=None, highlight="glfs", n=10) -> list[str]:
    """Sentences on the top genes: the recommended method's top genes, and methods led by sex genes.

    ``top``: method -> list of gene ids, best first.  ``descriptions``: gene id ->
    symbol/description text from the data (searched too, e.g. Golub probe ids).
    """
    out = []
    descriptions = descriptions or {}
    if highlight in top and top[highlight]:
        shown = [f"{g} ({descriptions[g][:30]})" if descriptions.get(g) and descriptions[g] != g else g
                 for g in top[highlight][:5]]
        out.append(f"Top genes of {highlight} on {dataset}: {_list(shown)}.")
    flagged = {m: sex_genes_in(g[:n], descriptions) for m, g in top.items()}
    flagged = {m: h for m, h in flagged.items() if h}
    if flagged:
        parts = [f"{m} ({len(h)} of {min(n, len(top[m]))}: {', '.join(h)})" for m, h in flagged.items()]
        out.append(f"Sex: the top {n} genes of {_list(parts)} include Y-chromosome or X-inactivation genes, "
                   "which separate the samples by sex, not by the classes asked about.")
    return out


# ---- GLFS: convergence, path, side by side --------------------------------------------------


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


def convergence_table(metas: dict) -> pd.DataFrame:
    """Converged or not for every GLFS selection.

    ``metas``: (dataset, method) -> selection JSON (dict).  Rows: dataset,
    method, kind, converged ("yes", "no", "k of n path points", "not recorded")
    and details (swaps and criterion for ``glfs``; lam and the chosen point for
    the path variants).
    """
    rows = []
    for (ds, m), meta in metas.items():
        p = meta.get("params") or {}
        if m == "glfs" or "greedy_criterion" in p:
            conv = p.get("converged")
            conv_s = "not recorded" if conv is None else ("yes" if conv else "no")
            det = (f"{p.get('n_swaps', '?')} swaps from the greedy start; Tr(H_S^-1) {_g(p['criterion'])} "
                   f"(greedy {_g(p['greedy_criterion'])})" if "criterion" in p and "greedy_criterion" in p else "")
            rows.append({"dataset": ds, "method": m, "kind": "budgeted design (greedy + exchange)",
                         "converged": conv_s, "details": det})
            continue
        path = path_frame(meta)
        det = ""
        if path is not None and "converged" in path and path["converged"].notna().any():
            c = path["converged"].fillna(False).astype(bool)
            conv_s = f"{int(c.sum())} of {len(c)} path points"
            if "lam" in p:
                at = path.index[np.isclose(path["lam"].astype(float), float(p["lam"]))]
                if len(at):
                    det = f"chosen lam {_g(p['lam'])}: {'converged' if c.loc[at[0]] else 'NOT converged'}"
        elif "converged" in p:
            conv_s = "yes" if p["converged"] else "no"
        else:
            conv_s = "not recorded"
        if path is not None and "kkt_residual" in path and path["kkt_residual"].notna().any():
            det += ("; " if det else "") + f"largest KKT residual {_g(path['kkt_residual'].max())}"
        if not det and "lam" in p:
            det = f"chosen lam {_g(p['lam'])}, {p.get('n_selected_at_lam', '?')} genes with beta > 0"
        rows.append({"dataset": ds, "method": m, "kind": "lam path (published readings)", "converged": conv_s,
                     "details": det})
    return pd.DataFrame(rows, columns=["dataset", "method", "kind", "converged", "details"])


def convergence_findings(table: pd.DataFrame) -> list[str]:
    """One sentence on which GLFS selections converged."""
    if table is None or table.empty:
        return []
    out = []
    design = table[table["kind"].str.startswith("budgeted")]
    if not design.empty:
        ok = design[design["converged"] == "yes"]
        out.append(f"The well-posed glfs converged (no single swap lowers its criterion) on {len(ok)} of "
                   f"{len(design)} datasets" + (f"; not on {_list(design.loc[design['converged'] != 'yes', 'dataset'])}."
                                                 if len(ok) < len(design) else "."))
    paths = table[~table["kind"].str.startswith("budgeted")]
    if not paths.empty:
        rec = paths[paths["converged"].str.contains(" of ")]
        if rec.empty:
            out.append("The published GLFS readings record no convergence flag for their path points in this run.")
        else:
            parts = []
            for _, r in rec.iterrows():
                a, b = r["converged"].split(" of ")[0], r["converged"].split(" of ")[1].split()[0]
                parts.append((r["dataset"], r["method"], int(a), int(b)))
            bad = [f"{m} on {d} ({a} of {b})" for d, m, a, b in parts if a < b]
            if bad:
                out.append(f"Published GLFS paths with unconverged points: {_list(bad)}.")
            else:
                out.append("Every recorded point of the published GLFS paths converged.")
    return out


def path_findings(path: pd.DataFrame | None, method: str, dataset: str) -> list[str]:
    """Sentences on a published GLFS path: does the support grow or shrink as lam falls, and where it ends."""
    if path is None or len(path) == 0:
        return []
    p = path.sort_values("lam", ascending=False).reset_index(drop=True)
    n = p["n_selected"].astype(int).to_numpy()
    lam = p["lam"].astype(float).to_numpy()
    out = []
    desc = f"from {n[0]} genes at lam = {_g(lam[0])} to {n[-1]} at lam = {_g(lam[-1])}"
    d = np.diff(n)
    if len(n) < 2 or np.all(d == 0):
        out.append(f"The {method} path on {dataset} keeps {n[0]} gene{'' if n[0] == 1 else 's'} at every lam "
                   f"({len(n)} points).")
    elif np.all(d >= 0):
        out.append(f"The {method} path on {dataset} grows as lam falls ({desc}), as the paper's Fig. 2A describes.")
    elif np.all(d <= 0):
        out.append(f"The {method} path on {dataset} shrinks as lam falls ({desc}): the opposite of the paper's "
                   "Fig. 2A, where genes enter as lam decreases.")
    else:
        out.append(f"The {method} path on {dataset} is not monotone in lam ({desc}; support sizes "
                   f"{', '.join(str(int(v)) for v in n)}).")
    if "converged" in p and p["converged"].notna().any():
        c = p["converged"].fillna(False).astype(bool).to_numpy()
        if c.all():
            out.append(f"All {len(c)} points converged.")
        elif c.any():
            sizes = sorted({int(v) for v in n[c]})
            out.append(f"{int(c.sum())} of {len(c)} points converged, with support sizes "
                       f"{', '.join(map(str, sizes))}.")
        else:
            out.append(f"None of its {len(c)} points converged: its supports are where the solver stopped.")
    return out


def collapse_findings(paths: dict) -> list[str]:
    """Numbers for why the published relaxation collapses: beta = 0 is the exact objective's global minimum.

    ``paths``: (dataset, method) -> path table.  For the exact reading the
    smooth part V(beta) = Tr Cov >= 0 and V(0) = 0, so with lam >= 0 the value
    at every path point, V + lam sum(beta), is at least the empty set's 0.
    """
    out = []
    single: dict = {}
    for (ds, m), p in paths.items():
        if p is None or len(p) == 0 or "objective" not in p:
            continue
        obj = p["objective"].astype(float)
        nonempty = p["n_selected"].astype(int) > 0
        if m == "glfs_exact" and nonempty.any() and obj.notna().any():
            o = obj[nonempty]
            out.append(f"{ds}, {m}: objective {_g(o.min())} to {_g(o.max())} at the {int(nonempty.sum())} non-empty "
                       f"path points, against 0 at beta = 0" + (" (every point is worse than selecting nothing)."
                                                                  if (o > 0).all() else "."))
        elif m in ("glfs_paper", "glfs_printed") and obj.notna().any():
            neg = int((obj < 0).sum())
            if neg:
                out.append(f"{ds}, {m}: the published Eq. 7 value is negative at {neg} of {len(obj)} path points "
                           f"(minimum {_g(obj.min())}): Eq. 7 is not the covariance trace it stands for.")
        sizes = p["n_selected"].astype(int)
        if (sizes == 1).any():
            single.setdefault(ds, []).append(f"{m} {int((sizes == 1).sum())} of {len(sizes)}")
    for ds, items in single.items():
        out.append(f"{ds}: path points that keep a single gene: {_list(items)}.")
    return out


def side_by_side(cdf: pd.DataFrame | None, random_df: pd.DataFrame | None, *, methods=GLFS_SIDE_BY_SIDE,
                 ks=(10, 50, 100)) -> pd.DataFrame:
    """NMI (mean over runs) at a few gene counts for the GLFS family, the Laplacian score, LapAOFS and random genes.

    The last row is the random floor as "mean +- sd".  Columns: method, NMI@k...
    """
    if cdf is None or cdf.empty:
        return pd.DataFrame()
    grid = sorted(int(k) for k in cdf["n_features"].unique())
    use = _pick_ks(grid, ks)
    present = [m for m in methods if m in set(cdf["method"])]
    d = cdf[cdf["method"].isin(present) & cdf["n_features"].isin(use)]
    wide = d.pivot_table(index="method", columns="n_features", values="nmi", aggfunc="mean").reindex(present)
    tab = pd.DataFrame({"method": present})
    for k in use:
        tab[f"NMI@{k}"] = [f"{wide.loc[m, k]:.3f}" if k in wide.columns and pd.notna(wide.loc[m, k]) else ""
                           for m in present]
    fl = floor_summary(random_df).set_index("n_features") if random_df is not None else pd.DataFrame()
    if not fl.empty:
        row = {"method": f"random genes (floor, {int(fl['n_draws'].max())} draws)"}
        for k in use:
            row[f"NMI@{k}"] = (f"{fl.loc[k, 'floor_mean']:.3f} +- {fl.loc[k, 'floor_sd']:.3f}" if k in fl.index else "")
        tab = pd.concat([tab, pd.DataFrame([row])], ignore_index=True)
    return tab


# ---- glfs vs greedy, sensitivity --------------------------------------------------------------


def greedy_findings(tables: dict) -> list[str]:
    """Sentences on the glfs-vs-greedy criterion tables (dataset -> DataFrame of glfs_vs_greedy.tsv)."""
    rows = [t.assign(dataset=ds) for ds, t in tables.items() if t is not None and not t.empty]
    if not rows:
        return []
    df = pd.concat(rows, ignore_index=True)
    worse = df[df["criterion"] > df["greedy_criterion"] * (1 + 1e-12)]
    out = []
    if worse.empty:
        best = df.sort_values("pct_lower", ascending=False).iloc[0]
        out.append(f"glfs reaches a criterion no worse than greedy LapAOFS at every k on every dataset "
                   f"({len(df)} cases); the largest gain is {best['pct_lower']:.2f}% ({best['dataset']}, k = "
                   f"{int(best['k'])}), and {int((df['pct_lower'] <= 1e-9).sum())} cases equal greedy "
                   "(the greedy set was already 1-swap optimal).")
    else:
        out.append("glfs is worse than greedy LapAOFS at " + _list(f"{r['dataset']} k = {int(r['k'])}"
                                                                   for _, r in worse.iterrows()) + ".")
    nc = df[~df["converged"].astype(bool)]
    if len(nc):
        out.append("Not converged (max_swaps reached): " + _list(f"{r['dataset']} k = {int(r['k'])}"
                                                                  for _, r in nc.iterrows()) + ".")
    return out


def sensitivity_findings(sens: pd.DataFrame | None, dataset: str) -> list[str]:
    """Sentences on the post-hoc graph_weight sensitivity of glfs on one dataset."""
    if sens is None or sens.empty:
        return []
    out = []
    for k, g in sens.groupby("k"):
        g = g.sort_values("graph_weight")
        lo, hi = g.loc[g["nmi_mean"].idxmin()], g.loc[g["nmi_mean"].idxmax()]
        s = (f"{dataset}, {int(k)} genes: NMI {_fmt(lo['nmi_mean'])} (graph_weight {_g(lo['graph_weight'])}) to "
             f"{_fmt(hi['nmi_mean'])} (graph_weight {_g(hi['graph_weight'])})")
        dflt = g[g["is_default"].astype(bool)]
        if not dflt.empty:
            rank = int((g["nmi_mean"] > float(dflt["nmi_mean"].iloc[0]) + 1e-12).sum()) + 1
            s += f"; the default {_g(dflt['graph_weight'].iloc[0])} gives {_fmt(float(dflt['nmi_mean'].iloc[0]))} (rank {rank} of {len(g)})"
        zero = g[g["graph_weight"] == 0]
        if not zero.empty:
            s += f"; without the graph (0) {_fmt(float(zero['nmi_mean'].iloc[0]))}"
        out.append(s + ".")
    nc = sens.loc[~sens["converged"].astype(bool), "graph_weight"].unique()
    if len(nc):
        out.append(f"Not converged at graph_weight {_list(_g(v) for v in nc)}.")
    return out


# ---- classification ------------------------------------------------------------------------------


def classification_findings(cls: pd.DataFrame | None, dataset: str) -> list[str]:
    """Sentences on a classification table: the random_genes floor, the best rows, the GLFS rows' numbers."""
    if cls is None or cls.empty:
        return []
    out = []
    ok = cls.dropna(subset=["test_errors"])
    failed = cls.loc[cls["test_errors"].isna(), "method"].tolist()
    if failed:
        out.append(f"Failed on {dataset}: {_list(failed)} (see params).")
    if ok.empty:
        return out
    test_n = int(ok["test_n"].iloc[0])
    best = ok[ok["test_errors"] == ok["test_errors"].min()]
    out.append(f"Fewest test errors on {dataset}: {int(best['test_errors'].iloc[0])}/{test_n}, by {_list(best['method'])}.")
    rnd = ok[ok["method"] == "random_genes"]
    if not rnd.empty:
        r = rnd.iloc[0]
        try:
            rp = json.loads(r["params"]) if isinstance(r.get("params"), str) else {}
        except ValueError:
            rp = {}
        others = ok[ok["method"] != "random_genes"]
        beat = others[others["test_errors"] < r["test_errors"]]
        tie_or_worse = others[others["test_errors"] >= r["test_errors"]]
        rng = rp.get("test_errors_range")
        out.append(f"Random genes ({int(r['n_genes'])}, as many as {rp.get('n_genes_as', 'the GLFS row')}; "
                   f"{rp.get('statistic', 'median over draws')}) give {int(r['test_errors'])}/{test_n} test errors"
                   + (f" (range {rng[0]}-{rng[1]})" if rng else "") + f"; fewer than that: {_list(beat['method'])}; "
                   f"not fewer: {_list(tie_or_worse['method'])}.")
    for m in ("glfs_supervised", "glfs"):
        row = ok[ok["method"] == m]
        if row.empty:
            continue
        r = row.iloc[0]
        out.append(f"{m}: {int(r['n_genes'])} genes, {int(r['test_errors'])}/{test_n} test errors, "
                   f"{int(r['cv_errors'])}/{int(r['cv_n'])} CV errors.")
    return out


# ---- simulation, runtime, provenance ------------------------------------------------------------


def simulation_findings(sim: pd.DataFrame | None, simcfg: dict) -> list[str]:
    """Sentences on the planted-feature simulation: who recovers the planted genes where."""
    if sim is None or sim.empty:
        return []
    out = []
    agg = sim.groupby(["method", "sigma", "n_noise"])["score"].mean().reset_index()
    perfect = [m for m, g in agg.groupby("method", sort=False) if (g["score"] >= 1 - 1e-12).all()]
    out.append(f"Score 1 (the 4 planted genes ranked first) at every grid point: {_list(perfect)}.")
    mean = agg.groupby("method")["score"].mean().sort_values()
    out.append(f"Lowest mean Score over the grid: {mean.index[0]} ({_fmt(mean.iloc[0])}); highest: "
               f"{mean.index[-1]} ({_fmt(mean.iloc[-1])}).")
    return out


def runtime_findings(rt: pd.DataFrame | None) -> list[str]:
    """One sentence on where the run's time went."""
    if rt is None or rt.empty:
        return []
    total = float(rt["total_s"].sum())
    top = rt.sort_values("total_s", ascending=False).iloc[0]
    return [f"Job time summed over rules: {total:.0f} s; the largest share is {top['rule']} "
            f"({float(top['total_s']):.0f} s, {100 * float(top['total_s']) / max(total, 1e-9):.0f}%; slowest job "
            f"{top['slowest_job']}, {float(top['max_s']):.0f} s)."]


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
        rows.append({
            "file": role,
            "source": f.get("source", ""),
            "path": f.get("path", ""),
            "url": f.get("url", ""),
            "size": f.get("size", ""),
            "sha256": (sha or "")[:16] + ("..." if sha else ""),
            "checksum": check,
            "time": f.get("time", ""),
        })
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


def provenance_findings(tables: dict) -> list[str]:
    """One sentence on the checksums and sources of every dataset's inputs.

    Only files with an expected sha256 are counted as checked; the others are said to
    have no checksum given (not a mismatch).
    """
    rows = [t.assign(dataset=ds) for ds, t in tables.items() if t is not None and not t.empty]
    if not rows:
        return []
    df = pd.concat(rows, ignore_index=True)
    if "checksum" not in df:
        return []
    c = checksum_counts(tables)
    said = []
    if c["checked"]:
        said.append(f"{c['match']} of {c['checked']} input files with a checksum match their expected sha256")
    if c["unchecked"]:
        said.append(f"{c['unchecked']} input file{'s' if c['unchecked'] != 1 else ''} with no checksum given "
                    "(not checked)")
    s = "; ".join(said)
    if "source" in df:
        s += "; sources: " + ", ".join(f"{v} {n}" for v, n in df["source"].value_counts().items())
    s = s[0].upper() + s[1:] + "."
    if c["mismatch"]:
        s += " Checksum MISMATCH: " + _list(c["mismatch"]) + "."
    return [s]


def run_summary(layout: dict) -> dict:
    """What this run did, from the report's layout (never from config keys the run did not use).

    ``datasets`` and ``labelled`` (names), ``methods`` (dataset -> the methods it ran: its own
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


def run_findings(layout: dict, config: dict) -> list[str]:
    """One sentence on what was run (datasets, labels, the methods each dataset ran, seed)."""
    s = run_summary(layout)
    per = {tuple(m) for m in s["methods"].values()}
    if len(per) <= 1:
        methods = f"{s['n_methods']} selection methods"
    else:
        methods = (f"{s['n_methods']} selection methods in all ("
                   + ", ".join(f"{len(m)} on {d}" for d, m in s["methods"].items()) + ")")
    n = len(s["datasets"])
    return [f"{n} dataset{'s' if n != 1 else ''} ({len(s['labelled'])} with labels: {_list(s['labelled'])}), "
            f"{methods}, master seed {config.get('seed')}."]


def paper_findings(pvr: pd.DataFrame | None) -> list[str]:
    """Sentences summarising the paper-versus-run table (computed from its 'this run' column)."""
    if pvr is None or pvr.empty:
        return []
    out = []
    ranks = pvr[pvr["item"].str.contains("NMI rank of the best GLFS variant", regex=False)]
    if not ranks.empty:
        pos = [int(str(v).split(" of ")[0]) for v in ranks["this run"] if str(v).split(" of ")[0].isdigit()]
        first = sum(p == 1 for p in pos)
        out.append(f"The paper has GLFS first on GBM at small gene counts; here the best GLFS variant is first among "
                   f"the unsupervised methods at {first} of {len(pos)} (dataset, gene count) points checked.")
    for _, r in pvr.iterrows():  # the Table 3 rows of the GLFS classifiers: "{dataset}: {method} CV / test errors, genes"
        hit = re.fullmatch(r"(.+): (glfs\S*) CV / test errors, genes", str(r["item"]))
        if hit:
            out.append(f"{hit.group(2)} on {hit.group(1)} (CV errors, test errors, genes): "
                       f"{r['this run']} (paper {r['paper']}).")
    return out


# ---- which method, on this dataset (issue 17 item 6) ------------------------------------------

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
    bar = pd.DataFrame({"n_features": hv.loc[idx, "n_features"].to_numpy(),
                        "hvg_best": hv.loc[idx, "method"].to_numpy(),
                        "hvg_mean": hv.loc[idx, "mean"].to_numpy()})
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


def which_method(cdf: pd.DataFrame | None, random_df: pd.DataFrame | None, *, protocol: str,
                 n_genes: int | None = None, supervised=()) -> WhichMethod | None:
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

    per_k = score_means(below, score, grid, side)
    floor = floor_summary(random_df, score)
    floor = floor[floor["n_features"].isin(grid)].reset_index(drop=True)
    per_k["rank"] = rank_within(per_k, exclude=sup)
    per_k["scaled"], bar = scaled_scores(per_k, floor, hvg)
    per_k["floor_mean"] = per_k["n_features"].map(floor.set_index("n_features")["floor_mean"]).astype(float)
    per_k["hvg_best"] = per_k["n_features"].map(bar.set_index("n_features")["hvg_mean"]).astype(float)
    undefined = tuple(int(k) for k in grid if hvg and not (per_k.loc[per_k["n_features"] == k, "scaled"].notna().any()))

    floor_mean = _nanmean(floor["floor_mean"]) if not floor.empty else float("nan")
    floor_sd = _nanmean(floor["floor_sd"]) if not floor.empty else float("nan")
    g = per_k.groupby("method", sort=False)
    methods = pd.DataFrame({
        "mean": g["mean"].mean(),
        "sd": g["sd"].apply(_nanmean),
        # the grid mean of the scaled score is defined only where it is defined at every count
        "scaled": g["scaled"].apply(lambda s: float(s.mean()) if s.notna().all() and len(s) else float("nan")),
        **{c: g[c].mean() for c in side},
    }).reset_index()
    methods["family"] = methods["method"].map(_family)
    methods["supervised"] = methods["method"].isin(sup)
    ranked = ~methods["supervised"]
    methods["rank"] = methods.loc[ranked, "mean"].rank(ascending=False, method="min").reindex(methods.index)
    cand = methods[ranked].sort_values("mean", ascending=False, kind="stable")
    best = str(cand["method"].iloc[0]) if len(cand) else None
    if best is not None:
        b = cand.iloc[0]
        methods["gap"] = float(b["mean"]) - methods["mean"]
        methods["noise"] = [float(np.nanmax([b["sd"], sd, floor_sd])) if not np.isnan([b["sd"], sd, floor_sd]).all()
                            else 0.0 for sd in methods["sd"]]
        methods["within_noise"] = ranked & (methods["gap"] < methods["noise"])
        methods.loc[methods["method"] == best, "within_noise"] = True
    else:
        methods["gap"], methods["noise"], methods["within_noise"] = np.nan, np.nan, False
    methods["above_floor"] = methods["mean"] - floor_mean  # NaN without a floor
    order = methods.assign(_s=methods["supervised"].astype(int)).sort_values(["_s", "mean"], ascending=[True, False],
                                                                                 kind="stable")
    methods = order.drop(columns="_s").reset_index(drop=True)
    within = tuple(m for m in methods.loc[methods["within_noise"], "method"] if m != best)
    all_mean, all_sd = _all_genes_score(cdf, random_df, score, n_genes)
    cols = ["method", "family", "supervised", "mean", "sd", "scaled", "rank", "gap", "noise", "within_noise",
            "above_floor", *side]
    return WhichMethod(
        protocol=protocol, score=score, grid=grid,
        per_k=per_k[["method", "n_features", "mean", "sd", "n_runs", "rank", "scaled", "floor_mean", "hvg_best",
                     *side]],
        methods=methods[cols], floor=floor, hvg_bar=bar, best=best, within_noise=within,
        floor_mean=floor_mean, floor_sd=floor_sd,
        n_draws=int(floor["n_draws"].max()) if not floor.empty else 0,
        n_runs=int(per_k["n_runs"].max()) if not per_k.empty else 0,
        all_genes=all_mean, all_genes_sd=all_sd, n_genes=n_genes, hvg=hvg,
        hvg_bar_mean=_nanmean(bar["hvg_mean"]) if not bar.empty else None,
        scaled_undefined_at=undefined, supervised=sup, side_scores=side,
    )


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
