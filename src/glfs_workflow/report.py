"""Final workflow report: one self-contained HTML file (figures inline as base64 PNG) and which_method.md.

Used by ``scripts/make_report.py``; not part of the stable API.  The report is a
consumer of the run's result files, in three steps:

1. :func:`collect` reads the named input files and returns the context: structured
   findings (numbers, names and flags: :mod:`glfs_workflow.findings`,
   :mod:`glfs_workflow.which`), the tables shown (:mod:`glfs_workflow.report_tables`)
   and the figures (PNG bytes: :mod:`glfs_workflow.figures`);
2. :func:`render_html` and :func:`render_markdown` word the context with the Jinja2
   templates in ``glfs_workflow/templates/`` (the English is there);
3. :func:`build_report` does both and writes the figures and the markdown.

Everything shown is read from the workflow's result files at run time; the only
hard-coded numbers are the paper's, always labelled as the paper's.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
from pathlib import Path

from glfs.api import METHODS

from . import findings as F
from . import sections
from . import report_tables as T
from .record import replaced_message
from .render import render_html, render_markdown
from .sections import read_tsv_or_none
from .which import advice_facts, which_facts, which_method

log = logging.getLogger(__name__)

# ---- inputs ------------------------------------------------------------------------------------


def nest_inputs(flat: dict) -> dict:
    """Named inputs as the rule names them ("datasets/golub/selections/glfs": path) -> a nested dict."""
    out: dict = {}
    for key, path in flat.items():
        *parents, last = str(key).split("/")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = str(path)
    return out


def _dataset_views(inputs: dict, run: dict) -> list[dict]:
    """One dict per dataset of the run: its facts (name, labelled, methods, heatmap_method) and its input
    files by kind (the kinds of the workflow's RESULT, common.smk, it has: adata, clustering, random_floor,
    leiden, leiden_random, glfs_path, glfs_vs_greedy, sensitivity, classification, provenance; a kind it
    does not have is missing), with ``selections`` and ``metas`` by method."""
    views = []
    for d in run.get("datasets") or []:
        files = (inputs.get("datasets") or {}).get(d["name"], {})
        methods = list(d.get("methods") or [])
        views.append({
            **{k: v for k, v in files.items() if k not in ("selections", "metas")},
            "name": d["name"], "labelled": bool(d.get("labelled")), "methods": methods,
            "heatmap_method": d.get("heatmap_method"),
            "selections": {m: p for m in methods for p in [(files.get("selections") or {}).get(m)] if p},
            "metas": {m: p for m in methods for p in [(files.get("metas") or {}).get(m)] if p},
        })
    return views


@dataclasses.dataclass
class _Results:
    """Result tables read for the dataset sections, used again by the GLFS and paper-versus-run sections."""

    clustering: dict = dataclasses.field(default_factory=dict)  # dataset -> clustering_nmi.tsv rows
    random: dict = dataclasses.field(default_factory=dict)  # dataset -> clustering_random.tsv rows (or None)
    path_tsvs: dict = dataclasses.field(default_factory=dict)  # dataset -> glfs_path.tsv rows (or None)
    metas: dict = dataclasses.field(default_factory=dict)  # (dataset, method) -> selection JSON
    paths: dict = dataclasses.field(default_factory=dict)  # (dataset, method) -> path table of a published reading
    tables: dict = dataclasses.field(default_factory=dict)  # (dataset, protocol) -> (results, random floor) rows
    which: dict = dataclasses.field(default_factory=dict)  # (dataset, protocol) -> which.WhichMethod (or None)
    figures: dict = dataclasses.field(default_factory=dict)  # figure name -> PNG bytes


def _read_results(d: dict, protocol: str) -> tuple:
    """A dataset's results and random floor of one protocol: (clustering_nmi, clustering_random) for
    "spectral", (clustering_leiden, leiden_random) for "leiden"; None for a file it does not have."""
    res_key, floor_key = ("clustering", "random_floor") if protocol == "spectral" else ("leiden", "leiden_random")
    return read_tsv_or_none(d.get(res_key)), read_tsv_or_none(d.get(floor_key))


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


def _which_answers(views: list[dict], res: _Results, supervised) -> None:
    """Every labelled dataset's which-method answers (glfs_workflow.which.which_method), keyed (dataset, protocol)."""
    for d in views:
        protocols = [p for p, key in (("spectral", "clustering"), ("leiden", "leiden")) if d.get(key)]
        if not d["labelled"] or not protocols:
            continue
        n_genes = _n_genes(d.get("adata"))
        for protocol in protocols:
            cdf, rdf = _read_results(d, protocol)
            res.tables[(d["name"], protocol)] = (cdf, rdf)
            res.which[(d["name"], protocol)] = which_method(cdf, rdf, protocol=protocol, n_genes=n_genes,
                                                            supervised=supervised)


# ---- the context -------------------------------------------------------------------------------


def collect(inputs: dict, *, run: dict, config: dict, benchmarks=(), replaced: dict | None = None) -> dict:
    """Read the run's result files and compute everything the report shows (no wording).

    ``inputs``: the named input files, nested (:func:`nest_inputs`): ``datasets`` (name -> kind ->
    path: the kinds of the workflow's RESULT (common.smk) the dataset has, plus ``selections`` and ``metas``: method -> path),
    ``paper_table``, ``simulation``, ``panel_summary`` (the development panel's summary, optional).  ``run``: what ran (``datasets``: [{name, labelled, methods,
    heatmap_method}], ``glfs_method``, ``simulation_methods``).  ``config``: the configuration as the
    report shows it (glfs_workflow.record.report_config).  ``benchmarks``: this run's benchmark files
    (a list), or a directory whose every file is read.  ``replaced``: the record
    (glfs_workflow.record.replaced_report) of a report of another configuration this one replaces.
    """
    import matplotlib

    matplotlib.use("Agg")

    supervised = sorted(m for m, info in METHODS.items() if info.needs_labels)
    views = _dataset_views(inputs, run)
    res = _Results()
    _which_answers(views, res, supervised)
    report_dir = config.get("report_dir") or "results"
    summary = F.run_summary({"datasets": views, "classification": [d["name"] for d in views if d.get("classification")],
                             "simulation": inputs.get("simulation"), "simulation_methods": run.get("simulation_methods")})
    ctx = {
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "report_dir": report_dir,
        "replaced": replaced_message(replaced, f"{report_dir}/report.html") if replaced else None,
        "which": [f for (ds, _), wm in res.which.items() for f in [which_facts(wm, ds)] if f is not None],
        "panel_summary": read_tsv_or_none(inputs.get("panel_summary")),
        "run": sections.run_section(summary, config),
        "provenance": sections.provenance_section(views, config),
        "datasets": [sections.dataset_section(d, res, supervised) for d in views],
    }
    cls = sections.classification_section(views)
    paper_table = read_tsv_or_none(inputs.get("paper_table"))
    ctx["classification"] = cls
    ctx["paper_table"] = paper_table if (paper_table is not None and cls) else None
    ctx["glfs"] = sections.glfs_section(views, res, run.get("glfs_method"), cls)
    sim = sections.simulation_section(inputs.get("simulation"), config.get("simulation", {}), res)
    ctx["simulation"] = sim
    ctx["paper_vs_run"] = sections.paper_vs_run_section(res, run.get("glfs_method"), supervised, config, sim, cls,
                                                 paper_table)
    ctx["runtime"] = sections.runtime_section(benchmarks)
    ctx["software"] = T.software_versions()
    ctx["figures"] = res.figures
    ctx["advice"] = advice_facts(ctx["which"], ctx.pop("panel_summary"))
    return ctx


def write_figures(figures_out: dict, figs: dict) -> None:
    """Write every requested figure (name -> PNG path) (a placeholder for one not produced in this run)."""
    from .figures import _placeholder
    from .files import atomic_path

    for name, path in figures_out.items():
        png = figs.get(name) or _placeholder(f"{name}: not produced in this run")
        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(png)


def build_report(inputs: dict, *, run: dict, config: dict, benchmarks=(), figures_out: dict | None = None,
                 which_method_out=None, replaced: dict | None = None) -> str:
    """Collect, render and write: returns the page; writes ``figures_out`` (name -> PNG path) and, when
    ``which_method_out`` is a path, the which-method answers as markdown there.  Arguments: :func:`collect`."""
    from .files import atomic_path

    ctx = collect(inputs, run=run, config=config, benchmarks=benchmarks, replaced=replaced)
    page = render_html(ctx)
    write_figures(figures_out or {}, ctx["figures"])
    if which_method_out is not None:
        with atomic_path(which_method_out) as tmp:
            Path(tmp).write_text(render_markdown(ctx), encoding="utf-8")
    return page


__all__ = ["collect", "render_html", "render_markdown", "build_report", "nest_inputs", "write_figures"]
