"""The whole workflow on a tiny configuration, in a temporary copy of the repository.

Two user datasets that this test writes (README, "Your own data"):

- ``user_split``: an .h5ad matrix (36 samples x 50 genes, 3 planted groups),
  labels from a separate table, and ``obs["split"]`` so the classification
  protocol runs on it;
- ``user_unlabelled``: a genes x samples TSV without labels.

Checks every contracted output of the README ("Outputs"), the AnnData in scanpy,
that the report is self-contained, ``snakemake --report``, and determinism
(re-running the selection, clustering and classification jobs gives
identical tables).
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
METHODS = ["laplacian_score", "variance", "fisher_score", "glfs_exact"]
SIM_METHODS = ["variance", "glfs_exact"]
SELECTION_COLUMNS = ["gene", "score", "rank", "selected", "weight"]

pytestmark = pytest.mark.workflow


def _write_user_data(d: Path):
    import anndata

    rng = np.random.default_rng(0)
    n, g = 36, 50
    groups = np.repeat(["A", "B", "C"], n // 3)
    X = rng.normal(0.0, 1.0, size=(n, g))
    for k, grp in enumerate("ABC"):
        X[groups == grp, 2 * k : 2 * k + 2] += 4.0  # genes 0-5 carry the groups
    samples = [f"S{i:02d}" for i in range(n)]
    genes = [f"GENE{j:02d}" for j in range(g)]
    split = np.where(np.arange(n) % 3 == 0, "test", "train")  # 24 train / 12 test, every group in both
    ad = anndata.AnnData(X=X, obs=pd.DataFrame({"split": split}, index=samples), var=pd.DataFrame(index=genes))
    ad.write_h5ad(d / "user_split.h5ad")
    pd.DataFrame({"sample": samples, "group": groups}).to_csv(d / "user_split_labels.tsv", sep="\t", index=False)
    # unlabelled: genes x samples TSV
    U = rng.normal(5.0, 1.0, size=(25, 20))
    pd.DataFrame(U, index=[f"g{j}" for j in range(25)], columns=[f"c{i}" for i in range(20)]).to_csv(
        d / "user_unlabelled.tsv", sep="\t", index_label="gene"
    )


def _config(d: Path) -> dict:
    return {
        "run": ["user_split", "user_unlabelled"],
        "methods": METHODS,
        "graph": {"n_neighbors": 4},
        "selection": {"n_features": 5},
        "clustering": {"n_runs": 2, "feature_grid": [2, 6, "all"]},
        "classification": {"datasets": ["user_split"], "cv_folds": 3},
        "simulation": {
            "enabled": True,
            "n_samples": 24,
            "replicates": 2,
            "sigma_grid": [0.1, 0.6],
            "n_noise_at_sigma": 20,
            "n_noise_grid": [10, 30],
            "sigma_at_n_noise": 0.2,
            "methods": SIM_METHODS,
        },
        "datasets": {
            "user_split": {
                "expression": str(d / "user_split.h5ad"),
                "labels": str(d / "user_split_labels.tsv"),
                "sample_column": "sample",
                "label_column": "group",
                "note": "test-written: 3 planted groups, train/test split in obs",
            },
            "user_unlabelled": {"expression": str(d / "user_unlabelled.tsv"), "orientation": "genes_by_samples"},
        },
    }


def _snakemake(workdir: Path, *args, timeout=600):
    cmd = [SNAKEMAKE, "--cores", "2", "--configfile", "test_config.json", *args]
    r = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-8000:]
    return r


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("e2e")
    for item in ["Snakefile", "config.yaml", "workflow", "scripts", "envs"]:
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, wd / item)
    (wd / "resources").mkdir()
    shutil.copy(ROOT / "resources" / "paper_table3.tsv", wd / "resources")
    data = wd / "userdata"
    data.mkdir()
    _write_user_data(data)
    (wd / "test_config.json").write_text(json.dumps(_config(data)))
    _snakemake(wd)
    return wd


def test_selection_tables(run_dir):
    for ds, n_genes in [("user_split", 50), ("user_unlabelled", 25)]:
        for m in METHODS:
            p = run_dir / f"results/{ds}/selection/{m}.tsv"
            if ds == "user_unlabelled" and m == "fisher_score":
                assert not p.exists()  # supervised method skipped without labels
                continue
            t = pd.read_csv(p, sep="\t")
            assert list(t.columns) == SELECTION_COLUMNS
            assert len(t) == n_genes
            assert sorted(t["rank"]) == list(range(1, n_genes + 1))
            assert 1 <= t["selected"].sum() <= 5
            # the selected genes are the best ranked ones
            assert t.loc[t["selected"], "rank"].max() <= t["selected"].sum() or m.startswith("glfs")
            if not m.startswith("glfs"):
                assert t["weight"].isna().all()
    # planted groups: the Fisher score finds the informative genes 0-5 on top
    t = pd.read_csv(run_dir / "results/user_split/selection/fisher_score.tsv", sep="\t")
    assert set(t.nsmallest(6, "rank")["gene"]) == {f"GENE{j:02d}" for j in range(6)}


def test_graph(run_dir):
    import scipy.sparse as sp

    W = sp.load_npz(run_dir / "results/user_split/graph.npz")
    assert W.shape == (36, 36)
    assert abs(W - W.T).max() < 1e-12
    assert W.diagonal().sum() == 0


def test_clustering_table(run_dir):
    c = pd.read_csv(run_dir / "results/user_split/clustering_nmi.tsv", sep="\t")
    for col in ["method", "n_features", "run", "nmi", "nmi_max", "kmeans_acc", "kmeans_nmi", "loo_1nn_acc"]:
        assert col in c.columns
    assert set(c["method"]) == set(METHODS)
    assert set(c["n_features"]) == {2, 6, 50}
    assert set(c["run"]) == {0, 1}
    assert c[["nmi", "nmi_max", "kmeans_acc", "loo_1nn_acc"]].stack().between(0, 1).all()
    assert (c["nmi_max"] <= c["nmi"] + 1e-12).all()
    # the Fisher score's top 6 genes are the planted ones: perfect clustering
    assert c[(c["method"] == "fisher_score") & (c["n_features"] == 6)]["nmi"].min() > 0.99
    assert not (run_dir / "results/user_unlabelled/clustering_nmi.tsv").exists()


def test_classification_table(run_dir):
    t = pd.read_csv(run_dir / "results/user_split/classification.tsv", sep="\t")
    assert list(t.columns)[:6] == ["method", "cv_errors", "cv_n", "test_errors", "test_n", "n_genes"]
    assert {"elastic_net", "linear_svm", "l2_logistic", "nearest_shrunken_centroids"} <= set(t["method"])
    assert (t["cv_n"] == 24).all() and (t["test_n"] == 12).all()
    assert t["test_errors"].between(0, 12).all() and t["cv_errors"].between(0, 24).all()
    # the sparse methods find the 6 planted genes (groups 4 sd apart); the dense L2
    # models (SVM, L2 logistic) spread weight over 44 noise genes with 24 samples
    sparse = t[t["method"].isin(["elastic_net", "nearest_shrunken_centroids"])]
    assert (sparse["test_errors"] <= 1).all(), t
    # the paper's rows are never in our table
    assert not set(t["method"]) & {"Golub", "SVM", "Penalized LR", "NSC", "Elastic net", "GLFS"}


def test_random_floor(run_dir):
    """The random-genes floor: the grid of clustering_nmi.tsv for the labelled dataset only.  With three
    classes there is no GLFS (LapRLS, two-class) row, so no random_genes row either (the two-class case:
    tests/workflow/test_report_glfs.py)."""
    r = pd.read_csv(run_dir / "results/user_split/clustering_random.tsv", sep="\t")
    c = pd.read_csv(run_dir / "results/user_split/clustering_nmi.tsv", sep="\t")
    assert set(r["n_features"]) == set(c["n_features"]) and (r["method"] == "random_genes").all()
    assert r["draw"].nunique() == 10  # config.yaml random_floor.n_draws
    t = pd.read_csv(run_dir / "results/user_split/classification.tsv", sep="\t")
    assert not {"glfs_exact", "random_genes"} & set(t["method"])
    assert not (run_dir / "results/user_unlabelled/clustering_random.tsv").exists()


def test_simulation_table(run_dir):
    s = pd.read_csv(run_dir / "results/simulation/recovery.tsv", sep="\t")
    assert list(s.columns) == ["method", "sigma", "n_noise", "replicate", "score"]
    assert set(s["method"]) == set(SIM_METHODS)
    # (sigma, N) points: (0.1, 20), (0.6, 20), (0.2, 10), (0.2, 30); 2 replicates each
    assert len(s) == len(SIM_METHODS) * 4 * 2
    assert s["score"].between(0, 1).all()


def test_glfs_path(run_dir):
    for ds in ["user_split", "user_unlabelled"]:
        p = pd.read_csv(run_dir / f"results/{ds}/glfs_path.tsv", sep="\t")
        assert {"lam", "n_selected", "objective"} <= set(p.columns)
        assert len(p) >= 1


def test_adata_contract_and_scanpy(run_dir):
    import anndata
    import scanpy as sc

    ad = anndata.read_h5ad(run_dir / "results/user_split/adata.h5ad")
    assert ad.shape == (36, 50)
    assert "label" in ad.obs and set(ad.obs["label"].astype(str)) == {"A", "B", "C"}
    assert "patient_similarity" in ad.obsp
    for m in METHODS:
        assert ad.var[m].dtype == bool
        assert np.issubdtype(ad.var[f"{m}_rank"].dtype, np.integer)
        assert np.issubdtype(ad.var[f"{m}_score"].dtype, np.floating)
        assert "params" in ad.uns[m]
        # the .h5ad agrees with the selection table
        t = pd.read_csv(run_dir / f"results/user_split/selection/{m}.tsv", sep="\t")
        assert np.array_equal(ad.var[f"{m}_rank"].to_numpy(), t["rank"].to_numpy())
    # weights under the method's key; the plain key "glfs" belongs to the well-posed glfs, not run here
    assert "glfs_exact_weight" in ad.var and "glfs" not in ad.var and "glfs_weight" not in ad.var
    t = pd.read_csv(run_dir / "results/user_split/selection/glfs_exact.tsv", sep="\t")
    assert np.allclose(ad.var["glfs_exact_weight"].to_numpy(), t["weight"].to_numpy())
    sc.pp.pca(ad, n_comps=2, mask_var="glfs_exact")
    assert ad.obsm["X_pca"].shape == (36, 2)
    sc.pp.pca(ad, n_comps=2, mask_var="fisher_score")

    un = anndata.read_h5ad(run_dir / "results/user_unlabelled/adata.h5ad")
    assert un.shape == (20, 25)
    assert "fisher_score" not in un.var and "laplacian_score" in un.var


def test_report_is_self_contained(run_dir):
    html = (run_dir / "results/report.html").read_text()
    srcs = re.findall(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']""", html, flags=re.I)
    assert srcs, "the report should contain inline figures"
    assert all(s.startswith("data:") or s.startswith("#") for s in srcs), [
        s[:60] for s in srcs if not s.startswith("data:")
    ]
    assert "<script" not in html.lower() and "<link" not in html.lower()
    assert html.count("data:image/png;base64,") >= 4
    for section in [
        "What was run",
        "Data provenance",
        "Paper versus this run",
        "Runtime per rule",
        "Software versions",
        "Paper (not this run)",
        "label-based evaluations",
        "Planted-feature simulation",
    ]:
        assert section in html, section
    for fig in ["nmi_user_split", "glfs_path_user_split", "heatmap_user_split", "simulation"]:
        assert (run_dir / f"results/figures/{fig}.png").stat().st_size > 1000


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_report_renders_offline_in_a_real_browser(run_dir, tmp_path):
    """Headless Chromium, all networking off, opens the report: the DOM has every
    section and figure, and the screenshot is not blank (figures drawn)."""
    browser = _chromium()
    if browser is None:
        pytest.skip("Chromium not installed (.ci/run installs Debian's chromium)")
    flags = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
    ]
    url = (run_dir / "results/report.html").as_uri()
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<img") >= 4 and "Paper versus this run" in dom.stdout
    shot = tmp_path / "report.png"
    r = subprocess.run(
        [*flags, "--window-size=1200,3000", "--hide-scrollbars", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(shot)[..., :3]
    dark = (img.mean(axis=2) < 0.5).mean()
    colours = len(np.unique((img.reshape(-1, 3) * 255).astype(np.uint8), axis=0))
    assert dark > 0.01 and colours > 50, (dark, colours)  # text and coloured figures, not a blank page


def test_logs_and_benchmarks(run_dir):
    for rule in [
        "build_graph",
        "select_features",
        "evaluate_clustering",
        "classify_samples",
        "simulate_recovery",
        "make_report",
        "merge_recovery",
    ]:
        assert any((run_dir / "logs" / rule).iterdir()), rule
    for rule in ["build_graph", "select_features", "evaluate_clustering", "classify_samples", "simulate_recovery"]:
        assert any((run_dir / "logs" / "benchmarks" / rule).glob("*.tsv")), rule


def test_snakemake_report_zip(run_dir):
    _snakemake(run_dir, "--report", "report.zip")
    assert (run_dir / "report.zip").stat().st_size > 10_000


def test_rerun_gives_identical_tables(run_dir):
    tables = [
        *[f"results/user_split/selection/{m}.tsv" for m in METHODS],
        "results/user_split/clustering_nmi.tsv",
        "results/user_split/classification.tsv",
    ]
    before = {t: (run_dir / t).read_bytes() for t in tables}
    _snakemake(
        run_dir,
        "--forcerun",
        "select_features_user_split",
        "evaluate_clustering",
        "classify_samples",
        "--",
        *tables[-2:],
    )
    for t in tables:
        assert (run_dir / t).read_bytes() == before[t], t
