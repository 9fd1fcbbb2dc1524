"""Every statement of the report is computed from this run, and each configuration keeps its own report.

- What was run: the methods each dataset ran (not the top-level ``methods``), the
  classification and simulation of this run only (not what config.yaml names).
- Runtime: only the benchmark files of this run's jobs (report_layout lists them),
  not every file under logs/benchmarks/.
- Provenance: a file without an expected checksum is "no checksum given", not a
  mismatch, and is not counted as checked.
- No internal references (issue numbers) in the report's text.
- The sparsity-path figure: plain numbers on both axes, no negative gene counts.
- The report's own directory (config ``report_dir``) and the record of the
  configuration that made a report (a warning when another one replaces it).

The workflow parts (marked ``workflow``) build the DAG in a dry run and check
that report_layout's benchmark files are exactly those of the DAG's jobs.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from glfs_workflow import figures as G
from glfs_workflow import findings as F
from glfs_workflow import record as Rec
from glfs_workflow import report_tables as T
from glfs_workflow import sections as S

REPO = Path(__file__).resolve().parents[2]

ALL_METHODS = [
    "glfs",
    "glfs_paper",
    "glfs_exact",
    "glfs_printed",
    "laplacian_score",
    "lapaofs",
    "lapdofs",
    "lkr_score",
    "ufi",
    "variance",
    "spca",
    "q_alpha",
    "fisher_score",
]


def _layout(**kw) -> dict:
    """A layout of a user's run: 'mine' (labelled, 4 methods) and 'cells' (unlabelled, 2 methods); no
    classification, no simulation (config.yaml's golub and simulation are not part of it)."""
    lay = {
        "datasets": [
            {"name": "mine", "labelled": True, "methods": ["glfs", "laplacian_score", "variance", "fisher_score"]},
            {"name": "cells", "labelled": False, "methods": ["variance", "laplacian_score"]},
        ],
        "glfs_method": None,
        "supervised": ["fisher_score", "lkr_score_supervised"],
        "classification": {},
        "simulation": None,
        "simulation_methods": [],
        "benchmarks": [],
        "provenance": {},
    }
    lay.update(kw)
    return lay


CONFIG = {  # config.yaml merged with a user's file: top-level methods, golub and the simulation are config.yaml's
    "run": ["mine", "cells"],
    "seed": 0,
    "methods": ALL_METHODS,
    "classification": {"datasets": ["golub"], "cv_folds": 10},
    "simulation": {"enabled": True, "methods": ["glfs", "variance"], "replicates": 2},
    "datasets": {
        "golub": {"format": "golub"},
        "mine": {"expression": "m.tsv", "methods": ["glfs", "laplacian_score", "variance", "fisher_score"]},
        "cells": {"expression": "c.h5ad", "methods": ["variance", "laplacian_score"]},
    },
}


# ---- what was run ------------------------------------------------------------------------------


def test_run_summary_counts_what_each_dataset_ran():
    s = F.run_summary(_layout())
    assert s["methods"] == {
        "mine": ["glfs", "laplacian_score", "variance", "fisher_score"],
        "cells": ["variance", "laplacian_score"],
    }
    assert s["n_methods"] == 4  # distinct methods run over the datasets, not config["methods"] (13)
    assert s["labelled"] == ["mine"] and s["classification"] == [] and s["simulation_methods"] == []
    run = S.run_section(s, CONFIG)
    assert run["summary"]["n_methods"] == 4 and not run["one_method_list"] and run["seed"] == 0


def test_what_was_run_names_only_this_runs_datasets_classification_and_simulation():
    run = S.run_section(F.run_summary(_layout()), CONFIG)
    assert run["classification"] is None and run["simulation"] is None  # neither ran
    shown = json.loads(run["config"])
    assert set(shown["datasets"]) == {"mine", "cells"} and shown["classification"]["datasets"] == []
    assert "golub" not in run["config"]  # not run: not in the configuration shown either
    # with a classification and a simulation in the run, they are shown
    lay = _layout(
        classification={"mine": "results/mine/classification.tsv"},
        simulation="results/simulation/recovery.tsv",
        simulation_methods=["glfs", "variance"],
    )
    run = S.run_section(F.run_summary(lay), CONFIG)
    assert json.loads(run["classification"]) == {"datasets": ["mine"], "cv_folds": 10}
    assert run["simulation"]["methods"] == ["glfs", "variance"]
    assert json.loads(run["simulation"]["json"]) == {"replicates": 2}  # enabled and methods said apart


def test_what_was_run_states_the_run_counts_of_the_evaluations_that_ran():
    """Issue 27: the default run's protocol is lighter than the full one; the report says its run counts."""
    cfg = {
        **CONFIG,
        "clustering": {"n_runs": 3},
        "random_floor": {"n_draws": 10},
        "leiden": {"n_runs": 2, "random_draws": 3},
    }
    run = S.run_section(F.run_summary(_layout()), cfg)  # "mine" is labelled and spectral; "cells" has no labels
    assert run["counts"] == (
        "spectral clustering 3 runs per gene count, random floor 10 draws "
        "(the full protocol: --configfile config/full.yaml)"
    )
    cfg["datasets"] = {**cfg["datasets"], "mine": {**cfg["datasets"]["mine"], "evaluation": "leiden"}}
    lay = _layout(simulation="results/simulation/recovery.tsv", simulation_methods=["glfs"])
    run = S.run_section(F.run_summary(lay), cfg)
    assert run["counts"] == (
        "Leiden 2 runs per gene count, 3 random draws; simulation 2 replicates per grid point "
        "(the full protocol: --configfile config/full.yaml)"
    )
    cfg["simulation"] = {**cfg["simulation"], "replicates": 1}
    assert "simulation 1 replicate per grid point" in S.run_section(F.run_summary(lay), cfg)["counts"]


# ---- runtime -------------------------------------------------------------------------------------


def _bench(path: Path, s: float):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"s\th:m:s\tmax_rss\n{s}\t0:00:01\t10.0\n")


def test_runtime_table_counts_only_the_jobs_of_this_run(tmp_path):
    b = tmp_path / "benchmarks"
    _bench(b / "prepare_dataset/mine.tsv", 1.0)
    _bench(b / "select_features/mine_variance.tsv", 2.0)
    _bench(b / "select_features/mine_glfs_exact.tsv", 100.0)  # an earlier run's method
    _bench(b / "classify_samples/golub.tsv", 50.0)  # an earlier run's dataset
    this_run = [
        str(b / "prepare_dataset/mine.tsv"),
        str(b / "select_features/mine_variance.tsv"),
        str(b / "select_features/mine_glfs.tsv"),
    ]  # the last: no file (e.g. benchmarks/ cleaned)
    rt = T.runtime_table(this_run).set_index("rule")
    assert sorted(rt.index) == ["prepare_dataset", "select_features"]
    assert rt["jobs"].sum() == 2 and rt["total_s"].sum() == pytest.approx(3.0)
    assert rt.loc["select_features", "slowest_job"] == "mine_variance"
    sec = S.runtime_section(this_run)
    assert (sec["n_jobs"], sec["n_missing"]) == (3, 1) and not sec["from_dir"]
    assert sec["facts"]["total"] == pytest.approx(3.0) and sec["facts"]["rule"] == "select_features"


# ---- provenance ----------------------------------------------------------------------------------


def test_no_checksum_given_is_not_counted_as_a_failure():
    none_given = F.provenance_table({"files": {"expression": {"sha256": "ab" * 32, "source": "local"}}})
    assert none_given["checksum"].tolist() == ["no checksum given"]
    assert F.checksum_counts({"mine": none_given}) == {"checked": 0, "match": 0, "mismatch": [], "unchecked": 1}
    f = F.provenance_facts({"mine": none_given})
    assert (f["checked"], f["unchecked"]) == (0, 1)
    mixed = F.provenance_table(
        {
            "files": {
                "expression": {"sha256": "ab" * 32, "expected_sha256": "ab" * 32},
                "labels": {"sha256": "cd" * 32, "expected_sha256": "ef" * 32},
                "extra": {"sha256": "12" * 32},
            }
        }
    )
    assert F.checksum_counts({"mine": mixed}) == {"checked": 2, "match": 1, "mismatch": ["mine/labels"], "unchecked": 1}
    assert F.provenance_facts({"mine": mixed})["checked"] == 2


# ---- no internal references ----------------------------------------------------------------------

INTERNAL = re.compile(r"\bissues?\b|\bitem \d|\bround (one|two|three)\b|\bsession\b", re.I)


def _user_facing_strings(path: Path) -> list[str]:
    """String constants of a module that are not docstrings (docstrings are for developers)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


REPORT_MODULES = ["report", "findings", "which", "report_tables", "sections", "figures", "render", "record"]
TEMPLATES = sorted((REPO / "src/glfs_workflow/templates").iterdir())


@pytest.mark.parametrize("module", REPORT_MODULES)
def test_no_internal_references_in_the_reports_code(module):
    assert [s for s in _user_facing_strings(REPO / f"src/glfs_workflow/{module}.py") if INTERNAL.search(s)] == []


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_no_internal_references_in_the_reports_templates(template):
    text = re.sub(r"\{#.*?#\}", "", template.read_text(), flags=re.S)  # template comments are for developers
    assert INTERNAL.findall(text) == []


# ---- the sparsity-path figure --------------------------------------------------------------------


def _drawn(monkeypatch, fn, *args):
    """The figure ``fn`` draws (drawn, so its tick labels are set), instead of its PNG."""
    pytest.importorskip("matplotlib")  # the workflow extra
    figs = []

    def keep(fig):
        fig.canvas.draw()
        figs.append(fig)
        return b""

    monkeypatch.setattr(G, "_png", keep)
    fn(*args)
    return figs[0]


def _number(label: str) -> float:
    return float(label.replace(",", "").replace("\u2212", "-"))


@pytest.mark.parametrize(
    "counts, lam_range",
    [
        ([30, 20, 12, 6, 3, 1, 1, 0], (-3, 1)),
        ([7000, 900, 120, 30, 6, 1, 0, 0], (-3, 1)),
        ([3, 2, 1], (np.log10(0.2), np.log10(0.5))),
    ],
)
def test_sparsity_path_axes_are_plain_numbers_and_counts_not_negative(monkeypatch, counts, lam_range):
    lam = np.logspace(*lam_range, len(counts))
    fig = _drawn(monkeypatch, G.figure_paths, {"glfs_exact": pd.DataFrame({"lam": lam, "n_selected": counts})}, "d")
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert -1 < lo <= 0 and hi >= max(counts)
    yticks = [t for t in ax.get_yticks() if lo <= t <= hi]
    assert min(yticks) >= 0 and 0 in yticks
    for axis, (vmin, vmax) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, (lo, hi))):
        shown = [
            (loc, t.get_text())
            for loc, t in zip(axis.get_majorticklocs(), axis.get_ticklabels())
            if vmin <= loc <= vmax and t.get_text()
        ]
        assert len(shown) >= 2
        for loc, text in shown:  # no '$\mathdefault{10^{-1}}$': the number itself
            assert _number(text) == pytest.approx(loc), text
    import matplotlib.pyplot as plt

    plt.close(fig)


# ---- the configuration that made a report --------------------------------------------------------


def test_config_digest_ignores_resources_and_key_order():
    a = {"run": ["x"], "seed": 0, "resources": {"select": {"mem_mb": 1000}}}
    b = {"seed": 0, "run": ["x"], "resources": {"select": {"mem_mb": 16000}}}
    assert Rec.config_digest(a) == Rec.config_digest(b)
    assert Rec.config_digest(a) != Rec.config_digest({**a, "seed": 1})


def test_replaced_report_is_the_record_of_another_configuration(tmp_path):
    record = tmp_path / "report_config.json"
    default = {"run": ["golub"], "seed": 0}
    mine = {"run": ["mine"], "seed": 0}
    assert Rec.replaced_report(record, default) is None  # no record: nothing to say
    Rec.write_report_record(record, default, report_html="results/report.html")
    assert Rec.replaced_report(record, default) is None  # the same configuration again
    prev = Rec.replaced_report(record, mine)
    assert prev["config_sha256"] == Rec.config_digest(default) and prev["run"] == ["golub"]
    record.write_text("not json")
    assert Rec.replaced_report(record, mine)["config_sha256"] is None  # unreadable: from an unknown configuration
    msg = Rec.replaced_message(prev, "results/report.html")
    assert Rec.config_digest(default)[:12] in msg and "golub" in msg


def test_report_config_leaves_out_what_does_not_change_the_report():
    cfg = {"run": ["x"], "seed": 0, "resources": {"select": {"mem_mb": 1000}}}
    assert Rec.report_config(cfg) == {"run": ["x"], "seed": 0}
    assert Rec.config_digest(Rec.report_config(cfg)) == Rec.config_digest(cfg)  # the record's digest is unchanged


# ---- the workflow: report_layout against the DAG (dry run) ----------------------------------------

_DAG_SCRIPT = r"""
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

wd = Path(sys.argv[1]).resolve()
with SnakemakeApi(OutputSettings()) as api:
    wapi = api.workflow(resource_settings=ResourceSettings(cores=1),
                        config_settings=ConfigSettings(configfiles=[Path(c).resolve() for c in sys.argv[2:]]),
                        snakefile=wd / "Snakefile", workdir=wd)
    wapi.dag(DAGSettings(forceall=True))
    wf = wapi._workflow  # no public API returns the jobs
    wf._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
    wf._build_dag()
    out = {"benchmarks": sorted(str(j.benchmark) for j in wf.dag.jobs if j.benchmark)}
    (rep,) = [j for j in wf.dag.jobs if j.rule.name == "make_report"]
    out["params"] = {k: rep.params[k] for k in ("run", "config", "benchmarks", "record")}
    out["inputs"] = dict(rep.input.items())
    out["report_outputs"] = sorted(str(f) for f in rep.output)
    print("JSON" + json.dumps(out, default=str))
"""


def _copy_workflow(wd: Path):
    for item in ["Snakefile", "config.yaml", "workflow", "scripts", "envs"]:
        (shutil.copytree if (REPO / item).is_dir() else shutil.copy)(REPO / item, wd / item)
    shutil.copytree(REPO / "tests/workflow/tiny", wd / "tests/workflow/tiny")
    (wd / "resources").mkdir()
    shutil.copy(REPO / "resources/paper_table3.tsv", wd / "resources")


def _dag(wd: Path, cfg: dict) -> dict:
    (wd / "test_config.json").write_text(json.dumps(cfg))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _DAG_SCRIPT,
            str(wd),
            str(wd / "tests/workflow/tiny/config.yaml"),
            str(wd / "test_config.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=wd,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("JSON")]
    return json.loads(line[4:])


@pytest.mark.workflow
def test_layout_benchmarks_are_the_dags_jobs_and_report_dir_holds_the_report(tmp_path):
    _copy_workflow(tmp_path)
    cfg = {  # every kind of job: own methods, glfs (greedy, sensitivity), Leiden, classification, simulation
        "methods": ["glfs", "laplacian_score", "variance", "fisher_score"],
        "classification": {"datasets": ["tiny"], "cv_folds": 3},
        "simulation": {"enabled": True, "methods": ["variance", "laplacian_score", "fisher_score"]},
        "report_dir": "results/mine",
        "datasets": {
            "tiny": {"evaluation": "both", "feature_grid": [3, 9]},
            "tiny_unlabelled": {"methods": ["variance", "fisher_score"]},
        },
    }
    dag = _dag(tmp_path, cfg)
    par = dag["params"]
    assert sorted(par["benchmarks"]) == dag["benchmarks"]
    # one selection job per dataset (all its methods), one simulation job for the grid
    assert "logs/benchmarks/select_features/tiny_unlabelled.tsv" in dag["benchmarks"]
    assert "logs/benchmarks/simulate_recovery/simulation.tsv" in dag["benchmarks"]
    assert par["run"]["simulation_methods"] == ["variance", "laplacian_score"]
    outs = dag["report_outputs"]
    assert "results/mine/report.html" in outs and "results/mine/which_method.md" in outs
    assert all(o.startswith("results/mine/") for o in outs), outs
    assert par["config"]["report_dir"] == "results/mine" and par["record"] == "results/mine/report_config.json"
    # params: no compute resources (editing them does not rerun the report); inputs: the files it reads, by name
    assert "resources" not in par["config"]
    ins = dag["inputs"]
    assert ins["datasets/tiny/leiden"] == "results/tiny/clustering_leiden.tsv"
    assert ins["datasets/tiny/classification"] == "results/tiny/classification.tsv"
    assert ins["datasets/tiny_unlabelled/selections/variance"] == "results/tiny_unlabelled/selection/variance.tsv"
    assert "datasets/tiny_unlabelled/selections/fisher_score" not in ins  # supervised: not run without labels
    assert "datasets/tiny_unlabelled/clustering" not in ins  # no labels: no clustering against them
    assert ins["simulation"] == "results/simulation/recovery.tsv"
    # the figure outputs are the figures of the datasets' results
    assert {Path(o).name for o in outs if "/figures/" in o} == {
        "nmi_tiny.png",
        "leiden_tiny.png",
        "heatmap_tiny.png",
        "simulation.png",
    }
