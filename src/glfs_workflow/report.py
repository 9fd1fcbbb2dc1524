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

import datetime as _dt
import logging
from pathlib import Path

from glfs.api import METHODS

from . import findings as F
from . import report_tables as T
from . import sections
from .record import replaced_message
from .render import render_html, render_markdown
from .report_inputs import read_datasets, read_tsv_or_none
from .which import advice_facts, which_facts

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

    Three steps, in this order: every file is read once (:func:`glfs_workflow.report_inputs.read_datasets`
    and the run-wide tables); each section is computed from those records alone (:mod:`glfs_workflow.sections`,
    in any order); the figures the sections show are drawn here, in one place.
    """
    import matplotlib

    matplotlib.use("Agg")

    supervised = sorted(m for m, info in METHODS.items() if info.needs_labels)
    # 1. read
    datasets = read_datasets(inputs, run, supervised)
    sim_df = read_tsv_or_none(inputs.get("simulation"))
    paper_table = read_tsv_or_none(inputs.get("paper_table"))
    panel_summary = read_tsv_or_none(inputs.get("panel_summary"))
    # 2. the sections
    report_dir = config.get("report_dir") or "results"
    summary = F.run_summary(
        {
            "datasets": [{"name": ds.name, "labelled": ds.labelled, "methods": list(ds.methods)} for ds in datasets],
            "classification": [ds.name for ds in datasets if "classification" in ds.given],
            "simulation": inputs.get("simulation"),
            "simulation_methods": run.get("simulation_methods"),
        }
    )
    which = [
        f for ds in datasets for protocol, wm in ds.which.items() for f in [which_facts(wm, ds.name)] if f is not None
    ]
    for f in which:  # what the answer leaves out: failed methods, and the gene filter before selection
        ds = next(d for d in datasets if d.name == f["dataset"])
        f["failed"] = list(ds.failed.items())
        f["gene_filter"] = gene_filter_facts(ds.adata)
    shown = [sections.dataset_section(ds, supervised) for ds in datasets]
    cls = sections.classification_section(datasets)
    sim, sim_figures = sections.simulation_section(sim_df, bool(inputs.get("simulation")), config.get("simulation", {}))
    ctx = {
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "report_dir": report_dir,
        "replaced": replaced_message(replaced, f"{report_dir}/report.html") if replaced else None,
        "which": which,
        "run": sections.run_section(summary, config),
        "provenance": sections.provenance_section(datasets, config),
        "datasets": [section for section, _ in shown],
        "classification": cls,
        "paper_table": paper_table if (paper_table is not None and cls) else None,
        "glfs": sections.glfs_section(datasets, run.get("glfs_method"), cls),
        "simulation": sim,
        "paper_vs_run": sections.paper_vs_run_section(
            datasets, run.get("glfs_method"), supervised, config, sim, cls, paper_table
        ),
        "runtime": sections.runtime_section(benchmarks),
        "software": T.software_versions(),
        "advice": advice_facts(which, panel_summary),
        "failed": [{"dataset": ds.name, "method": m, "reason": r} for ds in datasets for m, r in ds.failed.items()],
        "gene_filters": [
            {"dataset": ds.name, **g} for ds in datasets for g in [gene_filter_facts(ds.adata)] if g is not None
        ],
    }
    # 3. the figures, drawn in one place
    drawings = {name: draw for _, figs in shown for name, draw in figs.items()} | sim_figures
    ctx["figures"] = draw_figures(drawings)
    return ctx


def gene_filter_facts(adata) -> dict | None:
    """The gene filter's record of a single-cell dataset (``uns["dataset"]["gene_filter"]`` of its AnnData,
    glfs_workflow.datasets.filter_genes) as plain values, or None (a bulk dataset, or no AnnData)."""
    if adata is None:
        return None
    rec = (adata.uns.get("dataset") or {}).get("gene_filter")
    if not rec:
        return None
    return {k: (int(v) if k != "counted_on" and k != "removed" else str(v)) for k, v in dict(rec).items()}


def draw_figures(drawings: dict) -> dict:
    """name -> PNG bytes of every drawing (name -> a function of no arguments), in the drawings' order, drawn
    in this process one by one (a pool of forked processes hung at its shutdown, now and then)."""
    return {name: draw() for name, draw in drawings.items()}


def write_figures(figures_out: dict, figs: dict) -> None:
    """Write every requested figure (name -> PNG path) (a placeholder for one not produced in this run)."""
    from .figures import _placeholder
    from .files import atomic_path

    for name, path in figures_out.items():
        png = figs.get(name) or _placeholder(f"{name}: not produced in this run")
        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(png)


def build_report(
    inputs: dict,
    *,
    run: dict,
    config: dict,
    benchmarks=(),
    figures_out: dict | None = None,
    which_method_out=None,
    replaced: dict | None = None,
) -> str:
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
