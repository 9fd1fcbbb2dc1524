"""A dataset with batches through the workflow (issue 29): ``batch_column`` names an obs column of the
.h5ad; the batch-aware methods select within its batches, the Leiden evaluation writes batch_mixing and the
report shows it beside the ARI.  scanpy's pbmc68k_reduced (700 cells, louvain clusters) with the cell-cycle
phase (G1 / S / G2M) as the batches."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
METHODS = ["variance", "laplacian_score", "graph_moran"]


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory, snakemake_run, pbmc_workdir):
    work = pbmc_workdir(tmp_path_factory.mktemp("batches"))
    config = {
        "run": ["pbmc"],
        "graph": {"n_neighbors": 5},
        "selection": {"n_features": 20},
        "leiden": {
            "n_runs": 1,
            "resolutions": [0.5, 1.0],
            "n_pcs": 10,
            "n_neighbors": 10,
            "feature_grid": [20],
            "max_samples": None,
            "random_draws": 2,
        },
        "classification": {"datasets": []},
        "simulation": {"enabled": False},
        "datasets": {
            "pbmc": {
                "expression": "data/pbmc.h5ad",
                "label_column": "louvain",
                "batch_column": "phase",
                "evaluation": "leiden",
                "methods": METHODS,
                "size_hint": {"n_samples": 700, "n_genes": 765},
            }
        },
    }
    proc = snakemake_run(REPO / "Snakefile", work, config, ["--forceall"], timeout=3000)
    return work, proc


@pytest.mark.workflow
def test_batches_reach_selection_evaluation_and_report(batch_run):
    work, proc = batch_run
    assert proc.returncode == 0, proc.stderr[-4000:]
    for m in METHODS:
        meta = json.loads((work / f"results/pbmc/selection/{m}.json").read_text())
        assert meta["params"]["batches"] == ["G1", "G2M", "S"], m
        assert len(meta["extra"]["nbatches"]) == 765
    leiden = pd.read_csv(work / "results/pbmc/clustering_leiden.tsv", sep="\t")
    assert leiden["batch_mixing"].between(0, 1.2).all() and set(leiden["method"]) == set(METHODS)
    html = (work / "results/report.html").read_text()
    assert "Batch mixing within cell types" in html and "mixing@20" in html
