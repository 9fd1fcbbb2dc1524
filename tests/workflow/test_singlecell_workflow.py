"""A single-cell AnnData through the whole workflow via config (issue 9 item 5).

scanpy's bundled pbmc68k_reduced (700 cells x 765 genes, louvain clusters in
``obs``) is written as an ``.h5ad`` and named in a config like a user's own
data, with a ``size_hint``; every method of the library runs on it (GLFS
variants with a short lam path), the clustering evaluation uses the
label-stratified subsample fallback (``clustering.max_samples``), and the
resulting ``adata.h5ad`` carries every method's columns.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import glfs

REPO = Path(__file__).resolve().parents[2]
# pbmc68k_reduced holds scaled values, not counts: the methods that score raw counts refuse it (by
# design, tests/workflow/test_script_errors.py); the vendored mouse bladder runs them in the default run
METHODS = sorted(m for m, info in glfs.METHODS.items() if not info.needs_counts)
GLFS_FAST = {"n_lams": 3, "max_iter": 30}


@pytest.fixture(scope="module")
def pbmc_run(tmp_path_factory, snakemake_run, pbmc_workdir):
    work = pbmc_workdir(tmp_path_factory.mktemp("pbmc"))  # data/pbmc.h5ad and the static tables the report reads
    config = {
        "run": ["pbmc"],
        "methods": METHODS,
        "graph": {"n_neighbors": 5},
        "selection": {
            "n_features": 20,
            "params": {m: dict(GLFS_FAST) for m in ("glfs_exact", "glfs_paper", "glfs_printed")},
        },
        "clustering": {"n_runs": 1, "feature_grid": [20, "all"], "max_samples": 500},
        "random_floor": {"n_draws": 3},
        "classification": {"datasets": []},
        "simulation": {"enabled": False},
        "datasets": {
            "pbmc": {
                "expression": "data/pbmc.h5ad",
                "label_column": "louvain",
                "size_hint": {"n_samples": 700, "n_genes": 765},
                "note": "scanpy pbmc68k_reduced (700 cells, 765 genes)",
            }
        },
    }
    proc = snakemake_run(REPO / "Snakefile", work, config, ["--forceall"], timeout=3000)
    return work, proc


def _read(path):
    import anndata as ad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ad.read_h5ad(path)


@pytest.mark.workflow
def test_pbmc_runs_through_the_workflow(pbmc_run):
    work, proc = pbmc_run
    assert proc.returncode == 0, proc.stderr[-4000:]
    a = _read(work / "results/pbmc/adata.h5ad")
    assert a.shape == (700, 765)
    for m in METHODS:
        assert f"{m}_rank" in a.var and m in a.var, m
        assert sorted(a.var[f"{m}_rank"].tolist()) == list(range(1, 766)), m
    assert a.obsp["patient_similarity"].shape == (700, 700)


@pytest.mark.workflow
def test_pbmc_clustering_on_the_stratified_subsample(pbmc_run):
    work, _ = pbmc_run
    nmi = pd.read_csv(work / "results/pbmc/clustering_nmi.tsv", sep="\t")
    assert set(nmi["method"]) == set(METHODS)
    assert set(nmi["n_features"]) == {20, 765}
    log = (work / "logs/evaluate_clustering/pbmc.log").read_text()
    assert log.count("evaluating a stratified subsample of 500") == len(METHODS)
    assert (
        log.count("k=765 (2/2)") == len(METHODS) + 3
    )  # progress lines, per gene count: the methods, the floor's 3 draws
    assert f"laplacian_score ({METHODS.index('laplacian_score') + 1}/{len(METHODS)})" in log  # and per method
    # the random floor and the sensitivity panel evaluate on the same subsample, not on every cell
    floor_log = log  # the spectral floor is evaluated in the clustering job
    assert "random floor: 700 samples; evaluating the stratified subsample of 500" in floor_log
    sens_log = (work / "logs/glfs_sensitivity/pbmc.log").read_text()
    assert "evaluating a stratified subsample of 500" in sens_log
    graph_log = (work / "logs/build_graph/pbmc.log").read_text()
    assert "building the graph of 700 samples x 765 genes" in graph_log
