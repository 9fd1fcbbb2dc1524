"""The sections of the workflow report's context: what each section shows, read from the result files.

Used by :func:`glfs_workflow.report.collect`; not part of the stable API.  Each
function returns a plain dict (or None when the section is not shown) of findings
(glfs_workflow.findings), tables (glfs_workflow.report_tables) and figure names;
figures are drawn into ``res.figures``.  The templates word them
(``templates/report.html`` and the section templates it includes).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from . import figures as G
from . import findings as F
from . import report_tables as T
from .which import which_facts


def read_tsv_or_none(path):
    """A result table (ids such as genes and methods read as text), or None when there is no such file."""
    from .files import read_tsv

    if not path or not Path(path).exists():
        return None
    return read_tsv(Path(path))


# ---- what was run, provenance --------------------------------------------------------------------


def run_config(config: dict, summary: dict) -> dict:
    """The configuration as this run used it: ``datasets`` and ``classification.datasets`` limited to
    the datasets of the run (``summary``: glfs_workflow.findings.run_summary)."""
    out = dict(config)
    if "datasets" in out:
        out["datasets"] = {k: v for k, v in (out["datasets"] or {}).items() if k in summary["datasets"]}
    if isinstance(out.get("classification"), dict):
        out["classification"] = {**out["classification"], "datasets": summary["classification"]}
    return out


def run_section(summary: dict, config: dict) -> dict:
    """Section "What was run": the run summary, the seed and the configuration parts shown (as JSON).

    Everything is this run's: the methods a dataset ran, not the top-level ``methods``; the
    classification and simulation only when they ran; the configuration shown leaves out the
    definitions of datasets not in ``run``.
    """
    cls = config.get("classification", {})
    sim = None
    if summary["simulation_methods"]:
        rest = {k: v for k, v in (config.get("simulation") or {}).items() if k not in ("enabled", "methods")}
        sim = {"methods": summary["simulation_methods"], "json": json.dumps(rest)}
    return {
        "summary": summary,
        "one_method_list": len({tuple(m) for m in summary["methods"].values()}) <= 1,
        "seed": config.get("seed"),
        "graph": json.dumps(config.get("graph", {})),
        "selection": json.dumps(config.get("selection", {})),
        "clustering": json.dumps(config.get("clustering", {})),
        "classification": (json.dumps({**cls, "datasets": summary["classification"]})
                           if summary["classification"] else None),
        "simulation": sim,
        "config": json.dumps(run_config(config, summary), indent=1, default=str),
    }


def provenance_section(views: list[dict], config: dict) -> dict:
    """Section "Data provenance": each dataset's note and input-file table (or why there is none), and
    the checksum findings over all of them (glfs_workflow.findings.provenance_facts)."""
    datasets, tables = [], {}
    for d in views:
        note = (config.get("datasets", {}).get(d["name"], {}) or {}).get("note")
        entry = {"name": d["name"], "note": note, "path": d.get("provenance"), "found": False, "error": None,
                 "created": None, "table": None}
        path = d.get("provenance")
        if path and Path(path).exists():
            entry["found"] = True
            try:
                prov = json.loads(Path(path).read_text())
                tables[d["name"]] = entry["table"] = F.provenance_table(prov)
                entry["created"] = prov["created"] if prov.get("created") else None
            except (OSError, ValueError, AttributeError) as e:
                entry["error"] = str(e)
        datasets.append(entry)
    return {"facts": F.provenance_facts(tables), "datasets": datasets}


# ---- one dataset -----------------------------------------------------------------------------------


def dataset_section(d: dict, res, supervised) -> dict:
    """Section of one dataset: sizes and labels, methods not converged, top genes, clustering NMI,
    Leiden, GLFS path, heatmap."""
    import anndata

    ad = anndata.read_h5ad(d["adata"])
    labels = split = None
    if d["labelled"] and "label" in ad.obs:  # an unlabelled dataset's own obs 'label' is not its labels
        labels = list(ad.obs["label"].astype(str).value_counts().sort_index().items())
    if "split" in ad.obs:
        split = list(ad.obs["split"].astype(str).value_counts().items())
    return {
        "name": d["name"], "labelled": d["labelled"], "n_obs": ad.n_obs, "n_vars": ad.n_vars,
        "labels": labels, "split": split, "not_converged": _not_converged(d, ad), "top": _top_genes(d, ad),
        "clustering": _clustering(d, res, supervised), "leiden": _leiden(d, res), "paths": _paths(d, res),
        "heatmap": _heatmap(d, ad, res),
    }


def _not_converged(d: dict, ad) -> list:
    """[(method, iterations or None)] of the methods whose solver stopped before its tolerance (uns params)."""
    bad = []
    for m in d["methods"]:
        p = (ad.uns.get(m) or {}).get("params") or {}
        if "converged" in p and not bool(p["converged"]):
            bad.append((m, int(p["n_iter"]) if "n_iter" in p else None))
    return bad


def _top_genes(d: dict, ad) -> dict | None:
    """The top 10 genes of every method (a table, with the symbol or description the data carry) and
    their findings (glfs_workflow.findings.top_gene_facts); None without a selection table."""
    top = {}
    for m, p in d["selections"].items():
        t = read_tsv_or_none(p)
        if t is not None:
            top[m] = t.sort_values("rank")["gene"].astype(str).head(10).tolist()
    notes = T.gene_notes(ad.var, sorted({g for v in top.values() for g in v}))
    if not top:
        return None
    shown = {m: [T.with_note(x, notes) for x in g] for m, g in top.items()}
    table = pd.DataFrame({m: g + [""] * (10 - len(g)) for m, g in shown.items()}, index=range(1, 11))
    return {"facts": F.top_gene_facts(top, descriptions=notes), "has_notes": bool(notes), "table": table}


def _which(name: str, wm) -> dict | None:
    """Subsection "Which method": the facts (glfs_workflow.which.which_facts) and the two tables."""
    facts = which_facts(wm, name)
    if facts is None:
        return None
    return {"facts": facts, "table": T.which_table(wm), "per_k": T.which_per_k_table(wm)}


def _clustering(d: dict, res, supervised) -> dict | None:
    """Spectral-clustering NMI against the labels (figure, findings and table, with the random-genes floor),
    and the which-method answer of the spectral protocol."""
    if not (d["labelled"] and d.get("clustering")):
        return None
    name = d["name"]
    cdf, rdf = res.tables.get((name, "spectral")) or (read_tsv_or_none(d.get("clustering")), read_tsv_or_none(d.get("random_floor")))
    res.clustering[name] = cdf
    res.random[name] = rdf
    wm = res.which.get((name, "spectral"))
    key = f"nmi_{name}"
    res.figures[key] = G.figure_nmi(cdf, name, F.floor_summary(rdf), all_genes=wm.all_genes if wm is not None else None)
    return {"fig": key, "facts": F.clustering_facts(cdf, rdf, supervised=supervised),
            "table": T.nmi_summary_with_floor(cdf, rdf), "which": _which(name, wm)}


def _leiden(d: dict, res) -> dict | None:
    """The single-cell Leiden evaluation against the labels: the figure and the which-method answer."""
    if not (d["labelled"] and d.get("leiden")):
        return None
    name = d["name"]
    wm = res.which.get((name, "leiden"))
    key = f"leiden_{name}"
    res.figures[key] = G.figure_which(wm, name, ylabel="ARI at the label count (ari_nlabels), mean +- sd over runs",
                                      title=f"{name}: Leiden clustering vs labels")
    cdf, rdf = res.tables.get((name, "leiden")) or (None, None)
    return {"fig": key, "results": wm is not None, "which": _which(name, wm) if wm is not None else None,
            "mixing": T.batch_mixing_table(cdf, rdf)}


def _paths(d: dict, res) -> dict | None:
    """The GLFS sparsity paths of the dataset's GLFS selections (figure, findings and tables)."""
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
        res.path_tsvs[name] = read_tsv_or_none(d["glfs_path"])
    if not paths:
        return None
    key = f"glfs_path_{name}"
    res.figures[key] = G.figure_paths(paths, name)
    return {"fig": key, "facts": [f for m, p in paths.items() for f in [F.path_facts(p, m, name)] if f],
            "tables": [(m, p) for m, p in paths.items() if p is not None and len(p)]}


def _heatmap(d: dict, ad, res) -> dict | None:
    """Heatmap of the top genes of ``heatmap_method``, samples grouped by label (labelled datasets)."""
    hm = d.get("heatmap_method")
    if not (hm and d["labelled"] and f"{hm}_rank" in ad.var and "label" in ad.obs):
        return None
    name = d["name"]
    rank = ad.var[f"{hm}_rank"].to_numpy()
    idx = np.argsort(rank, kind="stable")[: min(25, ad.n_vars)]
    X = ad.X[:, idx]
    X = X.toarray() if hasattr(X, "toarray") else X
    key = f"heatmap_{name}"
    genes = list(ad.var_names[idx].astype(str))
    notes = T.gene_notes(ad.var, genes)
    res.figures[key] = G.figure_heatmap(X, [T.with_note(g, notes, 24) for g in genes], ad.obs["label"].to_numpy(),
                                        name, hm)
    return {"fig": key, "n": len(idx), "method": hm}


# ---- classification, GLFS, simulation, paper, runtime --------------------------------------------------


def classification_section(views: list[dict]) -> dict | None:
    """Section "Classification" (Golub protocol): each classified dataset's table and findings; None without."""
    files = [(d["name"], d["classification"]) for d in views if d.get("classification")]
    if not files:
        return None
    tables = [{"dataset": ds, "table": read_tsv_or_none(p)} for ds, p in files]
    for t in tables:
        t["facts"] = F.classification_facts(t["table"])
    return {"tables": tables,
            "random_genes": any(t["table"] is not None and "random_genes" in set(t["table"]["method"])
                                for t in tables)}


def glfs_section(views: list[dict], res, gm, cls: dict | None) -> dict:
    """Section "GLFS": convergence, the published path, why it collapses, side by side, vs greedy, sensitivity."""
    records = F.convergence_records(res.metas)
    path_tsvs = {k: v for k, v in res.path_tsvs.items() if v is not None}
    classification = {t["dataset"]: t["table"] for t in (cls or {}).get("tables", [])}
    greedy = {d["name"]: read_tsv_or_none(d["glfs_vs_greedy"]) for d in views if d.get("glfs_vs_greedy")}
    greedy = {k: v for k, v in greedy.items() if v is not None}
    sens = {d["name"]: read_tsv_or_none(d["sensitivity"]) for d in views if d.get("sensitivity")}
    sens = {k: v for k, v in sens.items() if v is not None and not v.empty}
    sbs = [ds for ds, c in res.clustering.items() if c is not None and not c.empty]
    keep = [*F.glfs_classifier_rows(), "random_genes"]
    cls_rows = []
    for ds, c in classification.items():
        rows = [m for m in keep if c is not None and not c.empty and m in set(c["method"])]
        if rows:
            picked = c.set_index("method").loc[rows].reset_index()
            cols = [x for x in ["method", "cv_errors", "cv_n", "test_errors", "test_n", "n_genes"] if x in picked]
            cls_rows.append((ds, picked[cols]))
    greedy_table = None
    if greedy:
        tab = pd.concat([t.assign(dataset=ds) for ds, t in greedy.items()], ignore_index=True)
        greedy_table = tab[["dataset", *[c for c in tab.columns if c != "dataset"]]]
    return {
        "convergence": {"facts": F.convergence_facts(records), "table": T.convergence_table(records)},
        "glfs_method": gm,
        "published": [{"dataset": ds, "facts": F.path_facts(p, gm, ds), "has_converged": "converged" in p,
                       "table": p[[c for c in p.columns if c != "method"]] if len(p) else None}
                      for ds, p in path_tsvs.items()],
        "collapse": F.collapse_facts(res.paths) if res.paths else None,
        "side_by_side": bool(sbs) or bool(classification),
        "sbs_tables": [(ds, T.side_by_side(res.clustering[ds], res.random.get(ds))) for ds in sbs],
        "cls_tables": cls_rows,
        "greedy": {"facts": F.greedy_facts(greedy), "table": greedy_table} if greedy else None,
        "sensitivity": ({"facts": [F.sensitivity_facts(t, ds) for ds, t in sens.items()],
                         "tables": [(ds, T.sensitivity_table(t)) for ds, t in sens.items()]} if sens else None),
    }


def simulation_section(path, simcfg: dict, res) -> dict | None:
    """Section "Planted-feature simulation" (Figure 1 protocol): figure, findings, mean Score per grid point."""
    if not path:
        return None
    sim_df = read_tsv_or_none(path)
    res.figures["simulation"] = G.figure_simulation(sim_df, simcfg)
    agg = None
    if sim_df is not None and not sim_df.empty:
        agg = sim_df.groupby(["method", "sigma", "n_noise"])["score"].agg(["mean", "std", "count"]).reset_index()
    return {"df": sim_df, "facts": F.simulation_facts(sim_df), "fig": "simulation", "table": agg}


def paper_vs_run_section(res, gm, supervised, config: dict, sim: dict | None, cls: dict | None,
                         paper_table) -> dict:
    """Section "Paper versus this run": the paper's claims beside this run's numbers."""
    tables = [t for t in (cls or {}).get("tables", []) if t["table"] is not None]
    tagged = (pd.concat([t["table"].assign(dataset=t["dataset"]) for t in tables], ignore_index=True)
              if tables else None)
    rows = T.paper_vs_run_rows({
        "simulation_df": sim["df"] if sim else None, "simulation_config": config.get("simulation", {}),
        "clustering": res.clustering, "paths": res.path_tsvs, "glfs_method": gm, "supervised": supervised,
        "classification": tagged, "paper_table": paper_table,
    })
    return {"facts": F.paper_facts(rows), "any": bool(rows), "table": T.paper_vs_run(rows)}


def runtime_section(benchmarks) -> dict:
    """Section "Runtime per rule": the benchmark files of this run's jobs (or of a directory), and findings."""
    rt = T.runtime_table(benchmarks)
    from_dir = isinstance(benchmarks, (str, Path))
    n = 0 if from_dir else len(benchmarks)
    return {"from_dir": from_dir, "dir": str(benchmarks) if from_dir else None, "n_jobs": n,
            "n_missing": 0 if from_dir else n - int(rt["jobs"].sum()), "facts": F.runtime_facts(rt), "table": rt}
