"""The random-genes floor, the glfs sensitivity panel, the glfs-vs-greedy table and the report's
GLFS section and findings.

Two parts:

- ``build_report`` on a small hand-made results set (no workflow run): the
  findings follow the numbers (a method below the floor is named so; moving the
  floor changes the sentence), the floor is shown beside every method, sex genes
  on top are flagged, provenance is a table, the published path and its
  converged column are shown.
- the real workflow on a tiny config with ``glfs``: the new outputs exist with
  their columns, the floor covers every grid point of every labelled dataset,
  the sensitivity panel uses the protocol of clustering_nmi.tsv (at the default
  graph weight it reproduces the glfs rows exactly), glfs is never worse than
  greedy, and the Golub-style table has a random_genes row sized like
  glfs_supervised.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


# ---- build_report on a fake results set ---------------------------------------------------------


def _fake_results(d: Path, *, floor_mean=0.30) -> dict:
    """A labelled dataset 'toy' with methods glfs, glfs_exact, laplacian_score, bad; returns the layout."""
    import anndata

    genes = ["RPS4Y1", "DDX3Y", "G<02>&", *[f"G{i:02d}" for i in range(3, 20)]]  # a name HTML must escape
    n = 12
    rng = np.random.default_rng(0)
    ad = anndata.AnnData(
        X=rng.normal(size=(n, len(genes))),
        obs=pd.DataFrame({"label": np.repeat(["a", "b"], n // 2)}, index=[f"s{i}" for i in range(n)]),
        var=pd.DataFrame(index=genes),
    )
    methods = ["glfs", "glfs_exact", "laplacian_score", "bad"]
    for m in methods:
        order = list(range(len(genes))) if m == "glfs" else list(rng.permutation(len(genes)))
        rank = np.empty(len(genes), dtype=int)
        rank[order] = np.arange(1, len(genes) + 1)
        ad.var[f"{m}_rank"] = rank
        pd.DataFrame(
            {"gene": genes, "score": -rank.astype(float), "rank": rank, "selected": rank <= 5, "weight": np.nan}
        ).to_csv(d / f"{m}.tsv", sep="\t", index=False)
    ad.write_h5ad(d / "adata.h5ad")
    nmi = {"glfs": 0.8, "glfs_exact": 0.5, "laplacian_score": 0.6, "bad": 0.05}
    rows = [
        {
            "method": m,
            "n_features": k,
            "run": r,
            "nmi": (v if k < 20 else 0.4) + 0.01 * r,
            "nmi_max": 0.1,
            "kmeans_acc": 0.5,
            "kmeans_nmi": 0.1,
            "loo_1nn_acc": 0.5,
            "seed": r,
        }
        for m, v in nmi.items()
        for k in (5, 10, 20)
        for r in range(2)
    ]
    pd.DataFrame(rows).to_csv(d / "clustering_nmi.tsv", sep="\t", index=False)
    rnd = [
        {
            "method": "random_genes",
            "n_features": k,
            "draw": i,
            "run": 0,
            "nmi": (floor_mean if k < 20 else 0.4) + 0.02 * (i - 1),
            "nmi_max": 0.0,
            "kmeans_acc": 0.3,
            "kmeans_nmi": 0.0,
            "loo_1nn_acc": 0.4,
            "seed": i,
        }
        for k in (5, 10, 20)
        for i in range(3)
    ]
    pd.DataFrame(rnd).to_csv(d / "clustering_random.tsv", sep="\t", index=False)
    path = [[4.0, 9, 0.9, True, 1e-10], [2.0, 3, 0.5, False, 0.2], [1.0, 1, 0.2, True, 1e-9]]
    metas = {
        "glfs": {
            "method": "glfs",
            "params": {"converged": True, "n_swaps": 2, "criterion": 0.5, "greedy_criterion": 0.6},
            "extra": {"history": [0.6, 0.5]},
        },
        "glfs_exact": {"method": "glfs_exact", "params": {"lam": 2.0}, "extra": {"path": path}},
    }
    for m, meta in metas.items():
        (d / f"{m}.json").write_text(json.dumps(meta))
    pd.DataFrame(path, columns=["lam", "n_selected", "objective", "converged", "kkt_residual"]).assign(
        method="glfs_exact"
    ).to_csv(d / "glfs_path.tsv", sep="\t", index=False)
    pd.DataFrame(
        {
            "k": [5, 10],
            "greedy_criterion": [1.0, 2.0],
            "criterion": [0.9, 2.0],
            "pct_lower": [10.0, 0.0],
            "n_swaps": [1, 0],
            "converged": [True, True],
            "lambda1": 0.1,
            "lambda2": 0.12,
        }
    ).to_csv(d / "glfs_vs_greedy.tsv", sep="\t", index=False)
    sens = [
        {
            "graph_weight": gw,
            "is_default": gw == 0.1,
            "lambda1": gw,
            "lambda2": 0.12,
            "n_selected": 5,
            "criterion": 1.0,
            "greedy_criterion": 1.0,
            "converged": True,
            "n_swaps": 0,
            "k": k,
            "nmi_mean": 0.5 + gw / 10,
            "nmi_sd": 0.0,
            "nmi_max_mean": 0.3,
            "n_runs": 2,
        }
        for gw in (0.0, 0.1, 1.0)
        for k in (5, 10)
    ]
    pd.DataFrame(sens).to_csv(d / "glfs_sensitivity.tsv", sep="\t", index=False)
    (d / "provenance.json").write_text(
        json.dumps(
            {
                "created": "2026-01-01T00:00:00Z",
                "files": {
                    "expression": {
                        "sha256": "ab" * 32,
                        "expected_sha256": "ab" * 32,
                        "source": "mirror",
                        "path": "x.tsv",
                        "size": 10,
                    }
                },
            }
        )
    )
    files = {
        "datasets": {
            "toy": {
                "adata": str(d / "adata.h5ad"),
                "selections": {m: str(d / f"{m}.tsv") for m in methods},
                "metas": {m: str(d / f"{m}.json") for m in metas},
                "clustering": str(d / "clustering_nmi.tsv"),
                "random_floor": str(d / "clustering_random.tsv"),
                "sensitivity": str(d / "glfs_sensitivity.tsv"),
                "glfs_vs_greedy": str(d / "glfs_vs_greedy.tsv"),
                "glfs_path": str(d / "glfs_path.tsv"),
                "provenance": str(d / "provenance.json"),
            }
        }
    }
    run = {
        "datasets": [{"name": "toy", "labelled": True, "methods": methods, "heatmap_method": "glfs_exact"}],
        "glfs_method": "glfs_exact",
        "simulation_methods": [],
    }
    return files, run


def _context(tmp_path, **kw) -> dict:
    from glfs_workflow.report import collect

    files, run = _fake_results(tmp_path, **kw)
    return collect(
        files,
        run=run,
        config={"methods": run["datasets"][0]["methods"], "seed": 0},
        benchmarks=str(tmp_path / "benchmarks"),
    )


def test_fake_report_findings_follow_the_numbers(tmp_path):
    ctx = _context(tmp_path)
    (toy,) = ctx["datasets"]
    # floor 0.30 +- 0.02 below 20 genes: bad (0.05) is below it, the others clear it, best first
    at10 = next(f for f in toy["clustering"]["facts"]["floor"]["at"] if f["k"] == 10)
    assert at10["above"] == ["glfs", "laplacian_score", "glfs_exact"] and at10["below"] == ["bad"]
    assert at10["within"] == [] and toy["clustering"]["facts"]["floor"]["never"] == ["bad"]
    tab = toy["clustering"]["table"].set_index("method")
    assert tab.loc["bad", "clears floor at"] == "never" and "random genes (floor)" in tab.index
    # sex genes among a method's top 10 (read from its selection table) are flagged
    sex = []
    for m in ["glfs", "glfs_exact", "laplacian_score", "bad"]:
        top10 = pd.read_csv(tmp_path / f"{m}.tsv", sep="\t").sort_values("rank")["gene"].head(10).tolist()
        hits = [g for g in top10 if g in ("RPS4Y1", "DDX3Y")]
        sex += [{"method": m, "hits": hits, "n": 10}] if hits else []
    assert sex[0] == {"method": "glfs", "hits": ["RPS4Y1", "DDX3Y"], "n": 10}  # glfs ranks the genes in order
    assert toy["top"]["facts"]["sex"] == sex
    # the published path shrinks as lam falls: 9 genes at lam 4, 3 at 2, 1 at 1; 2 of 3 points converged
    (pub,) = ctx["glfs"]["published"]
    assert pub["facts"]["direction"] == "shrinks" and pub["facts"]["sizes"] == [9, 3, 1]
    assert pub["facts"]["converged"] == {"n": 3, "n_converged": 2, "sizes": [1, 9]} and pub["has_converged"]
    conv = ctx["glfs"]["convergence"]["table"].set_index("method")
    assert conv.loc["glfs_exact", "converged"] == "2 of 3 path points"
    assert conv.loc["glfs_exact", "details"].startswith("chosen lam 2: NOT converged")
    assert ctx["glfs"]["convergence"]["facts"]["design"] == {"n": 1, "n_ok": 1, "not_ok": []}
    # why the relaxation collapses: objectives 0.2..0.9 at the 3 non-empty points, all above 0
    (exact,) = ctx["glfs"]["collapse"]["entries"]
    assert (exact["min"], exact["max"], exact["n_nonempty"], exact["all_positive"]) == (0.2, 0.9, 3, True)
    greedy = ctx["glfs"]["greedy"]["facts"]
    assert (
        greedy["n_cases"] == 2 and greedy["worse"] == [] and greedy["best"] == {"pct": 10.0, "dataset": "toy", "k": 5}
    )
    (sens,) = ctx["glfs"]["sensitivity"]["facts"]
    # NMI 0.5 + graph_weight / 10: the default 0.1 gives 0.51, below 1.0's 0.6: rank 2 of 3
    assert [r["default"] for r in sens["per_k"]] == [{"weight": 0.1, "nmi": pytest.approx(0.51), "rank": 2, "n": 3}] * 2
    # provenance is a table, checked against the expected sha256
    (prov,) = ctx["provenance"]["datasets"]
    assert prov["table"]["checksum"].tolist() == ["matches expected"]
    assert (ctx["provenance"]["facts"]["checked"], ctx["provenance"]["facts"]["match"]) == (1, 1)


def test_fake_report_findings_change_with_the_floor(tmp_path):
    ctx = _context(tmp_path, floor_mean=0.02)  # now every method clears it
    floor = ctx["datasets"][0]["clustering"]["facts"]["floor"]
    at10 = next(f for f in floor["at"] if f["k"] == 10)
    assert len(at10["above"]) == 4 and at10["within"] == at10["below"] == floor["never"] == []


def test_the_page_has_every_section_and_escapes_names(tmp_path):
    from glfs_workflow.report import render_html

    ctx = _context(tmp_path)
    html = render_html(ctx)
    headings = re.findall(r"<h2>(.*?)</h2>", html)
    # the which-method summary (the dataset has a spectral answer), the run, provenance, the dataset, GLFS,
    # paper versus run, runtime and software; no classification nor simulation ran, so their sections are left out
    assert [h.split(":")[0].split(" (")[0] for h in headings] == [
        "Which selection should I use?",
        "What was run",
        "Data provenance",
        "Dataset toy",
        "GLFS",
        "Paper versus this run",
        "Runtime per rule",
        "Software versions",
    ]
    assert "id='which-toy-spectral'" in html
    for block in ("findings", "note"):
        assert f"class='{block}'" in html
    # autoescape: the gene "G<02>&" is written as text, never as markup
    assert "G&lt;02&gt;&amp;" in html and "G<02>" not in html
    # every figure drawn is inline: the dataset's NMI, GLFS path and heatmap
    assert sorted(ctx["figures"]) == ["glfs_path_toy", "heatmap_toy", "nmi_toy"]
    assert html.count("data:image/png;base64,") == 3


# ---- the workflow on a tiny config ------------------------------------------------------------

METHODS = ["glfs", "glfs_exact", "laplacian_score", "lapaofs", "fisher_score"]
GRID = [2, 6, "all"]


def _write_data(d: Path):
    import anndata

    rng = np.random.default_rng(1)
    n, g = 36, 40
    groups = np.repeat(["A", "B"], n // 2)
    X = rng.normal(0.0, 1.0, size=(n, g))
    X[groups == "A", :4] += 3.0  # genes 0-3 carry the classes
    samples = [f"S{i:02d}" for i in range(n)]
    split = np.where(np.arange(n) % 3 == 0, "test", "train")
    ad = anndata.AnnData(
        X=X,
        obs=pd.DataFrame({"split": split, "group": groups}, index=samples),
        var=pd.DataFrame(index=[f"GENE{j:02d}" for j in range(g)]),
    )
    ad.write_h5ad(d / "two.h5ad")
    pd.DataFrame(
        rng.normal(5.0, 1.0, size=(15, 12)), index=[f"g{j}" for j in range(15)], columns=[f"c{i}" for i in range(12)]
    ).to_csv(d / "un.tsv", sep="\t", index_label="gene")


def _config(d: Path) -> dict:
    return {
        "run": ["two", "un"],
        "methods": METHODS,
        "graph": {"n_neighbors": 4},
        "selection": {"n_features": 5},
        "clustering": {"n_runs": 2, "feature_grid": GRID},
        "classification": {"datasets": ["two"], "cv_folds": 3},
        "random_floor": {"n_draws": 3, "classification_draws": 5},
        "glfs_sensitivity": {"graph_weights": [0, 0.1, 1], "feature_grid": [2, 6]},
        "simulation": {"enabled": False},
        "datasets": {
            "two": {"expression": str(d / "two.h5ad"), "label_column": "group", "note": "test: 2 planted classes"},
            "un": {"expression": str(d / "un.tsv"), "orientation": "genes_by_samples"},
        },
    }


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("glfs_report")
    for item in ["Snakefile", "config.yaml", "workflow", "scripts", "envs"]:
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, wd / item)
    (wd / "resources").mkdir()
    shutil.copy(ROOT / "resources" / "paper_table3.tsv", wd / "resources")
    data = wd / "userdata"
    data.mkdir()
    _write_data(data)
    (wd / "test_config.json").write_text(json.dumps(_config(data)))
    r = subprocess.run(
        [SNAKEMAKE, "--cores", "2", "--configfile", "test_config.json"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-8000:]
    return wd


def _tsv(run_dir, rel):
    return pd.read_csv(run_dir / rel, sep="\t")


@pytest.mark.workflow
def test_random_floor_table(run_dir):
    r = _tsv(run_dir, "results/two/clustering_random.tsv")
    assert list(r.columns) == [
        "method",
        "n_features",
        "draw",
        "run",
        "nmi",
        "nmi_max",
        "kmeans_acc",
        "kmeans_nmi",
        "loo_1nn_acc",
        "seed",
    ]
    c = _tsv(run_dir, "results/two/clustering_nmi.tsv")
    assert set(r["n_features"]) == set(c["n_features"]) == {2, 6, 40}
    assert (r.groupby("n_features")["draw"].nunique() == 3).all()
    assert r["nmi"].between(0, 1).all()
    # different draws are different gene sets: at 2 genes the NMI is not the same for every draw
    assert r[r["n_features"] == 2]["nmi"].nunique() > 1 or r[r["n_features"] == 2]["loo_1nn_acc"].nunique() > 1
    assert not (run_dir / "results/un/clustering_random.tsv").exists()  # no labels, no floor


@pytest.mark.workflow
def test_random_genes_classification_row(run_dir):
    t = _tsv(run_dir, "results/two/classification.tsv")
    rows = t.set_index("method")
    assert {"glfs", "glfs_supervised", "random_genes"} <= set(rows.index)
    assert rows.loc["random_genes", "n_genes"] == rows.loc["glfs_supervised", "n_genes"]
    p = json.loads(rows.loc["random_genes", "params"])
    assert p["statistic"] == "median over 5 seeded random gene sets" and p["n_genes_as"] == "glfs_supervised"
    lo, hi = p["test_errors_range"]
    assert lo <= rows.loc["random_genes", "test_errors"] <= hi <= rows.loc["random_genes", "test_n"]


@pytest.mark.workflow
def test_sensitivity_panel_uses_the_clustering_protocol(run_dir):
    s = _tsv(run_dir, "results/two/glfs_sensitivity.tsv")
    assert list(s.columns) == [
        "graph_weight",
        "is_default",
        "lambda1",
        "lambda2",
        "n_selected",
        "criterion",
        "greedy_criterion",
        "converged",
        "n_swaps",
        "k",
        "nmi_mean",
        "nmi_sd",
        "nmi_max_mean",
        "n_runs",
    ]
    assert sorted(s["graph_weight"].unique()) == [0.0, 0.1, 1.0] and set(s["k"]) == {2, 6}
    assert s.loc[s["is_default"], "graph_weight"].unique().tolist() == [0.1]
    assert (s.loc[s["graph_weight"] == 0, "lambda1"] == 0).all() and (
        s.loc[s["graph_weight"] == 1, "lambda1"] > 0
    ).all()
    assert (s["criterion"] <= s["greedy_criterion"] * (1 + 1e-12)).all() and s["converged"].all()
    # the default graph weight with the configured n_features is the workflow's glfs: same NMI as clustering_nmi.tsv
    c = _tsv(run_dir, "results/two/clustering_nmi.tsv")
    ref = c[c["method"] == "glfs"].groupby("n_features")["nmi"].mean()
    got = s[s["is_default"]].set_index("k")["nmi_mean"]
    for k in (2, 6):
        assert got[k] == pytest.approx(ref[k], abs=1e-12)
    assert not (run_dir / "results/un/glfs_sensitivity.tsv").exists()


@pytest.mark.workflow
def test_glfs_vs_greedy_table(run_dir):
    for ds, n_genes in [("two", 40), ("un", 15)]:
        t = _tsv(run_dir, f"results/{ds}/glfs_vs_greedy.tsv")
        assert list(t.columns) == [
            "k",
            "greedy_criterion",
            "criterion",
            "pct_lower",
            "n_swaps",
            "converged",
            "lambda1",
            "lambda2",
        ]
        assert t["k"].tolist() == sorted({min(k, n_genes) for k in (10, 25, 50, 100)})
        assert (t["criterion"] <= t["greedy_criterion"] * (1 + 1e-12)).all() and (t["pct_lower"] >= -1e-9).all()
        assert t["converged"].all()


@pytest.mark.workflow
def test_report_has_the_floor_and_the_glfs_section(run_dir):
    from glfs_workflow import findings as F

    html = (run_dir / "results/report.html").read_text()
    for part in [
        "GLFS: convergence, the published relaxation, and the well-posed glfs",
        "Converged or not",
        "Why the published relaxation collapses",
        "Side by side",
        "lambda1 sensitivity of glfs",
        "glfs against greedy LapAOFS on the same criterion",
        "Findings.",
    ]:
        assert part in html, part
    # every method of the labelled dataset is placed against the floor at every gene count below all genes
    c, r = _tsv(run_dir, "results/two/clustering_nmi.tsv"), _tsv(run_dir, "results/two/clustering_random.tsv")
    facts = F.clustering_facts(c, r)
    assert [f["k"] for f in facts["floor"]["at"]] == [2, 6]
    for f in facts["floor"]["at"]:
        assert sorted(f["above"] + f["within"] + f["below"]) == sorted(set(c["method"]))
    # the well-posed glfs converged on both datasets (its selection records say so)
    metas = {
        (ds, "glfs"): json.loads((run_dir / f"results/{ds}/selection/glfs.json").read_text()) for ds in ("two", "un")
    }
    assert F.convergence_facts(F.convergence_records(metas))["design"] == {"n": 2, "n_ok": 2, "not_ok": []}
    # the random_genes row of the classification table is in the report
    assert "random_genes" in html


# ---- each configuration's report --------------------------------------------------------------


@pytest.mark.workflow
def test_a_report_of_another_configuration_is_replaced_with_a_warning_and_report_dir_keeps_both(run_dir, tmp_path):
    wd = tmp_path / "wd"
    shutil.copytree(run_dir, wd, symlinks=True)
    first = json.loads((wd / "results/report_config.json").read_text())
    assert first["run"] == ["two", "un"] and len(first["config_sha256"]) == 64
    # another configuration that changes only what make_report reads (the simulation does not run)
    (wd / "other.json").write_text(json.dumps({"simulation": {"replicates": 3}}))
    r = subprocess.run(
        [SNAKEMAKE, "--cores", "2", "--configfile", "test_config.json", "other.json"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-8000:]
    second = json.loads((wd / "results/report_config.json").read_text())
    assert second["config_sha256"] != first["config_sha256"]
    warnings = [x for x in (wd / "logs/make_report/results/report.log").read_text().splitlines() if " WARNING: " in x]
    assert len(warnings) == 1 and first["config_sha256"][:12] in warnings[0] and "results/report.html" in warnings[0]
    assert first["config_sha256"][:12] in r.stderr  # on the terminal too
    html = (wd / "results/report.html").read_text()
    assert first["config_sha256"][:12] in html.split("<h2>")[0]  # at the top of the new report, before any section
    # a configuration with its own report_dir leaves results/report.html alone
    before = (wd / "results/report.html").read_bytes()
    (wd / "mine.json").write_text(json.dumps({"report_dir": "results/mine"}))
    r = subprocess.run(
        [SNAKEMAKE, "--cores", "2", "--configfile", "test_config.json", "mine.json"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-8000:]
    assert (wd / "results/report.html").read_bytes() == before
    assert (wd / "results/mine/report.html").is_file() and (wd / "results/mine/which_method.md").is_file()
    assert any((wd / "results/mine/figures").glob("nmi_two.png"))
    mine = json.loads((wd / "results/mine/report_config.json").read_text())
    assert mine["config_sha256"] not in (first["config_sha256"], second["config_sha256"])
    assert " WARNING: " not in (wd / "logs/make_report/results/mine/report.log").read_text()  # its own log (issue 30)
