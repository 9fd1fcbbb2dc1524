"""The sections of the workflow report's context: what each section shows, from the records read once.

Used by :func:`glfs_workflow.report.collect`; not part of the stable API.  Each section is a
function of named, typed inputs (the datasets' :class:`~glfs_workflow.report_inputs.DatasetResults`,
tables, the configuration) and reads no file; it returns a plain dict (or None when the section
is not shown) of findings (glfs_workflow.findings), tables (glfs_workflow.report_tables) and
figure names, and a section with figures also returns them as name -> a call that draws it
(``collect`` draws every figure in one place).  No section depends on another having run.  The
templates word them (``templates/report.html`` and the section templates it includes).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from glfs.evaluate import LABEL_COUNT_TOLERANCE

from . import figures as G
from . import findings as F
from . import report_tables as T
from .report_inputs import DatasetResults
from .which import which_facts

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
        "counts": run_counts(config, summary),
        "classification": (
            json.dumps({**cls, "datasets": summary["classification"]}) if summary["classification"] else None
        ),
        "simulation": sim,
        "config": json.dumps(run_config(config, summary), indent=1, default=str),
    }


def _count(n, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def run_counts(config: dict, summary: dict) -> str:
    """The run counts of the evaluations this run made, as the report states them: config.yaml's light
    protocol by default, the full one with ``--configfile config/full.yaml``."""
    kinds = {(config.get("datasets", {}).get(d) or {}).get("evaluation", "spectral") for d in summary["labelled"]}
    cl, le, fl, sim = ({**config.get(k, {})} for k in ("clustering", "leiden", "random_floor", "simulation"))
    parts = []
    if kinds & {"spectral", "both"}:
        parts.append(
            f"spectral clustering {_count(cl.get('n_runs'), 'run')} per gene count, random floor "
            f"{_count(fl.get('n_draws'), 'draw')}"
        )
    if kinds & {"leiden", "both"}:
        parts.append(
            f"Leiden {_count(le.get('n_runs'), 'run')} per gene count, {_count(le.get('random_draws'), 'random draw')}"
        )
    if summary["simulation_methods"]:
        parts.append(f"simulation {_count(sim.get('replicates'), 'replicate')} per grid point")
    return "; ".join(parts) + " (the full protocol: --configfile config/full.yaml)" if parts else "no evaluation"


def provenance_section(datasets: list[DatasetResults], config: dict) -> dict:
    """Section "Data provenance": each dataset's note and input-file table (or why there is none), and
    the checksum findings over all of them (glfs_workflow.findings.provenance_facts)."""
    entries, tables = [], {}
    for ds in datasets:
        note = (config.get("datasets", {}).get(ds.name, {}) or {}).get("note")
        prov = ds.provenance
        entry = {
            "name": ds.name,
            "note": note,
            "path": prov.path,
            "found": prov.found,
            "error": prov.error,
            "created": None,
            "table": None,
        }
        if prov.record is not None:
            try:
                tables[ds.name] = entry["table"] = F.provenance_table(prov.record)
                entry["created"] = prov.record["created"] if prov.record.get("created") else None
            except (ValueError, AttributeError) as e:
                entry["error"] = str(e)
        entries.append(entry)
    return {"facts": F.provenance_facts(tables), "datasets": entries}


# ---- one dataset -----------------------------------------------------------------------------------
# Each part returns its section (a dict, or None when not shown) and the figures it shows as
# name -> a call that draws it; glfs_workflow.report.collect draws them all in one place.


def dataset_section(ds: DatasetResults, supervised) -> tuple[dict, dict]:
    """Section of one dataset: sizes and labels, methods not converged, top genes, clustering NMI,
    Leiden, GLFS path, heatmap; and its figures (name -> drawing call)."""
    ad = ds.adata
    labels = split = None
    if ds.labelled and "label" in ad.obs:  # an unlabelled dataset's own obs 'label' is not its labels
        labels = list(ad.obs["label"].astype(str).value_counts().sort_index().items())
    if "split" in ad.obs:
        split = list(ad.obs["split"].astype(str).value_counts().items())
    figures: dict = {}
    section = {
        "name": ds.name,
        "labelled": ds.labelled,
        "n_obs": ad.n_obs,
        "n_vars": ad.n_vars,
        "labels": labels,
        "split": split,
        "not_converged": _not_converged(ds),
        "top": _top_genes(ds),
        "clustering": _clustering(ds, supervised, figures),
        "leiden": _leiden(ds, figures),
        "paths": _paths(ds, figures),
        "heatmap": _heatmap(ds, figures),
    }
    return section, figures


def _not_converged(ds: DatasetResults) -> list:
    """[(method, iterations or None)] of the methods whose solver stopped before its tolerance (uns params)."""
    bad = []
    for m in ds.methods:
        p = (ds.adata.uns.get(m) or {}).get("params") or {}
        if "converged" in p and not bool(p["converged"]):
            bad.append((m, int(p["n_iter"]) if "n_iter" in p else None))
    return bad


def _top_genes(ds: DatasetResults) -> dict | None:
    """The top 10 genes of every method (a table, with the symbol or description the data carry) and
    their findings (glfs_workflow.findings.top_gene_facts); None without a selection table."""
    top = {m: t.sort_values("rank")["gene"].astype(str).head(10).tolist() for m, t in ds.selections.items()}
    notes = T.gene_notes(ds.adata.var, sorted({g for v in top.values() for g in v}))
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


def shows_clustering(ds: DatasetResults) -> bool:
    """Whether the dataset's section shows the spectral-clustering results (labelled, with the table given)."""
    return ds.labelled and "clustering" in ds.given


def _clustering(ds: DatasetResults, supervised, figures: dict) -> dict | None:
    """Spectral-clustering NMI against the labels (figure, findings and table, with the random-genes floor),
    and the which-method answer of the spectral protocol."""
    if not shows_clustering(ds):
        return None
    cdf, rdf, wm = ds.table("clustering"), ds.table("random_floor"), ds.which.get("spectral")
    key = f"nmi_{ds.name}"
    figures[key] = partial(
        G.figure_nmi, cdf, ds.name, F.floor_summary(rdf), all_genes=wm.all_genes if wm is not None else None
    )
    return {
        "fig": key,
        "facts": F.clustering_facts(cdf, rdf, supervised=supervised),
        "table": T.nmi_summary_with_floor(cdf, rdf),
        "which": _which(ds.name, wm),
    }


def _leiden(ds: DatasetResults, figures: dict) -> dict | None:
    """The single-cell Leiden evaluation against the labels: the figure and the which-method answer."""
    if not (ds.labelled and "leiden" in ds.given):
        return None
    wm = ds.which.get("leiden")
    key = f"leiden_{ds.name}"
    figures[key] = partial(
        G.figure_which,
        wm,
        ds.name,
        ylabel="ARI at the label count (ari_nlabels), mean +- sd over runs",
        title=f"{ds.name}: Leiden clustering vs labels",
    )
    return {
        "fig": key,
        "results": wm is not None,
        "which": _which(ds.name, wm) if wm is not None else None,
        "mixing": T.batch_mixing_table(ds.table("leiden"), ds.table("leiden_random")),
        "misses": F.label_count_misses(ds.table("leiden")),
        "tolerance": LABEL_COUNT_TOLERANCE,
    }


def _paths(ds: DatasetResults, figures: dict) -> dict | None:
    """The GLFS sparsity paths of the dataset's GLFS selections (figure, findings and tables)."""
    paths = ds.paths
    if not paths:
        return None
    key = f"glfs_path_{ds.name}"
    figures[key] = partial(G.figure_paths, paths, ds.name)
    return {
        "fig": key,
        "facts": [f for m, p in paths.items() for f in [F.path_facts(p, m, ds.name)] if f],
        "tables": [(m, p) for m, p in paths.items() if p is not None and len(p)],
    }


def _heatmap(ds: DatasetResults, figures: dict) -> dict | None:
    """Heatmap of the top genes of ``heatmap_method``, samples grouped by label (labelled datasets)."""
    hm, ad = ds.heatmap_method, ds.adata
    if not (hm and ds.labelled and f"{hm}_rank" in ad.var and "label" in ad.obs):
        return None
    rank = ad.var[f"{hm}_rank"].to_numpy()
    idx = np.argsort(rank, kind="stable")[: min(25, ad.n_vars)]
    X = ad.X[:, idx]
    X = X.toarray() if hasattr(X, "toarray") else X
    key = f"heatmap_{ds.name}"
    genes = list(ad.var_names[idx].astype(str))
    notes = T.gene_notes(ad.var, genes)
    figures[key] = partial(
        G.figure_heatmap, X, [T.with_note(g, notes, 24) for g in genes], ad.obs["label"].to_numpy(), ds.name, hm
    )
    return {"fig": key, "n": len(idx), "method": hm}


# ---- classification, GLFS, simulation, paper, runtime --------------------------------------------------


def classification_section(datasets: list[DatasetResults]) -> dict | None:
    """Section "Classification" (Golub protocol): each classified dataset's table and findings; None without."""
    tables = [
        {"dataset": ds.name, "table": ds.table("classification")} for ds in datasets if "classification" in ds.given
    ]
    if not tables:
        return None
    for t in tables:
        t["facts"] = F.classification_facts(t["table"])
    return {
        "tables": tables,
        "random_genes": any(t["table"] is not None and "random_genes" in set(t["table"]["method"]) for t in tables),
    }


def clustering_tables(datasets: list[DatasetResults]) -> dict:
    """dataset -> its clustering_nmi.tsv rows, for the datasets whose section shows them (:func:`shows_clustering`)."""
    return {ds.name: ds.table("clustering") for ds in datasets if shows_clustering(ds)}


def _given_tables(datasets: list[DatasetResults], kind: str) -> dict:
    """dataset -> its table of ``kind``, for the datasets given one that was found."""
    return {ds.name: t for ds in datasets if kind in ds.given for t in [ds.table(kind)] if t is not None}


def glfs_section(datasets: list[DatasetResults], gm, cls: dict | None) -> dict:
    """Section "GLFS": convergence, the published path, why it collapses, side by side, vs greedy, sensitivity."""
    records = F.convergence_records({(ds.name, m): meta for ds in datasets for m, meta in ds.metas.items()})
    path_tsvs = _given_tables(datasets, "glfs_path")
    paths = {(ds.name, m): p for ds in datasets for m, p in ds.paths.items()}
    classification = {t["dataset"]: t["table"] for t in (cls or {}).get("tables", [])}
    greedy = _given_tables(datasets, "glfs_vs_greedy")
    sens = {k: v for k, v in _given_tables(datasets, "sensitivity").items() if not v.empty}
    random = {ds.name: ds.table("random_floor") for ds in datasets}
    sbs = {ds: c for ds, c in clustering_tables(datasets).items() if c is not None and not c.empty}
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
        "published": [
            {
                "dataset": ds,
                "facts": F.path_facts(p, gm, ds),
                "has_converged": "converged" in p,
                "table": p[[c for c in p.columns if c != "method"]] if len(p) else None,
            }
            for ds, p in path_tsvs.items()
        ],
        "collapse": F.collapse_facts(paths) if paths else None,
        "side_by_side": bool(sbs) or bool(classification),
        "sbs_tables": [(ds, T.side_by_side(c, random.get(ds))) for ds, c in sbs.items()],
        "cls_tables": cls_rows,
        "greedy": {"facts": F.greedy_facts(greedy), "table": greedy_table} if greedy else None,
        "sensitivity": (
            {
                "facts": [F.sensitivity_facts(t, ds) for ds, t in sens.items()],
                "tables": [(ds, T.sensitivity_table(t)) for ds, t in sens.items()],
            }
            if sens
            else None
        ),
    }


def simulation_section(sim_df: pd.DataFrame | None, given: bool, simcfg: dict) -> tuple[dict | None, dict]:
    """Section "Planted-feature simulation" (Figure 1 protocol): findings and mean Score per grid point, and
    its figure; (None, {}) when the simulation did not run (``given``: the rule names its table)."""
    if not given:
        return None, {}
    agg = None
    if sim_df is not None and not sim_df.empty:
        agg = sim_df.groupby(["method", "sigma", "n_noise"])["score"].agg(["mean", "std", "count"]).reset_index()
    section = {"df": sim_df, "facts": F.simulation_facts(sim_df), "fig": "simulation", "table": agg}
    return section, {"simulation": partial(G.figure_simulation, sim_df, simcfg)}


def paper_vs_run_section(
    datasets: list[DatasetResults], gm, supervised, config: dict, sim: dict | None, cls: dict | None, paper_table
) -> dict:
    """Section "Paper versus this run": the paper's claims beside this run's numbers."""
    tables = [t for t in (cls or {}).get("tables", []) if t["table"] is not None]
    tagged = pd.concat([t["table"].assign(dataset=t["dataset"]) for t in tables], ignore_index=True) if tables else None
    rows = T.paper_vs_run_rows(
        {
            "simulation_df": sim["df"] if sim else None,
            "simulation_config": config.get("simulation", {}),
            "clustering": clustering_tables(datasets),
            "paths": {ds.name: ds.table("glfs_path") for ds in datasets if "glfs_path" in ds.given},
            "glfs_method": gm,
            "supervised": supervised,
            "classification": tagged,
            "paper_table": paper_table,
        }
    )
    return {"facts": F.paper_facts(rows), "any": bool(rows), "table": T.paper_vs_run(rows)}


def runtime_section(benchmarks) -> dict:
    """Section "Runtime per rule": the benchmark files of this run's jobs (or of a directory), and findings."""
    rt = T.runtime_table(benchmarks)
    from_dir = isinstance(benchmarks, (str, Path))
    n = 0 if from_dir else len(benchmarks)
    return {
        "from_dir": from_dir,
        "dir": str(benchmarks) if from_dir else None,
        "n_jobs": n,
        "n_missing": 0 if from_dir else n - int(rt["jobs"].sum()),
        "facts": F.runtime_facts(rt),
        "table": rt,
    }
