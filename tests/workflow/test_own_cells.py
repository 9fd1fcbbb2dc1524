"""The README's own-cells config alone (issue 40): an .h5ad of raw counts with labels and batches,
``preprocess: normalize_log1p`` and ``evaluation: leiden``, no methods list and no gene filter named.

The dataset gets the config's single-cell methods, scanpy's gene filter (min_cells 3) runs before selection
(planted: rare genes seen in 0-2 cells), and one method made to fail (seurat_v3's loess with a span that needs
more genes than the data hold: 3 / span > n_genes) is recorded as failed while the others run and are
evaluated.  The report names this run's result before the panel's advice.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
N_TYPES, CELLS_PER_TYPE, N_BATCHES, N_MARKED, N_RARE = 3, 80, 3, 300, 300
SPAN = 0.001  # seurat_v3's loess needs ceil(3 / span) = 3000 varying genes: more than the data hold


def _counts(rng):
    """Counts (cells x genes): N_MARKED genes with cell-type means, then N_RARE genes seen in 0, 1 or 2 cells."""
    import scipy.sparse as sp

    n = N_TYPES * CELLS_PER_TYPE
    labels = np.repeat([f"type{t}" for t in range(N_TYPES)], CELLS_PER_TYPE)
    means = rng.gamma(0.6, 2.0, size=(N_TYPES, N_MARKED))
    means[:, :60] *= rng.choice([0.1, 8.0], size=(N_TYPES, 60))  # markers
    X = rng.poisson(means[np.repeat(np.arange(N_TYPES), CELLS_PER_TYPE)]).astype(np.float32)
    seen = rng.choice([0, 1, 2], size=N_RARE)
    R = np.zeros((n, N_RARE), dtype=np.float32)
    for j, k in enumerate(seen):
        R[rng.choice(n, size=k, replace=False), j] = 1.0
    X = np.hstack([X, R])
    X[:, 0] += 1  # every cell has a count
    batches = np.tile([f"donor{b}" for b in range(N_BATCHES)], n // N_BATCHES)
    return sp.csr_matrix(X), labels, batches


@pytest.fixture(scope="module")
def own_cells(tmp_path_factory, snakemake_run):
    import anndata as ad

    work = tmp_path_factory.mktemp("own_cells")
    (work / "data").mkdir()
    (work / "resources").symlink_to(REPO / "resources")
    X, labels, batches = _counts(np.random.default_rng(3))
    genes = [f"g{j}" for j in range(X.shape[1])]
    a = ad.AnnData(
        X=X, obs=pd.DataFrame({"cell_type": labels, "donor": batches}, index=[f"c{i}" for i in range(X.shape[0])])
    )
    a.var_names = genes
    a.write_h5ad(work / "data" / "cells.h5ad")
    config = {
        "run": ["mycells"],
        "report_dir": "results/mycells_report",
        "selection": {"params": {"hvg_seurat_v3": {"span": SPAN}}},
        "leiden": {"n_runs": 1, "random_draws": 2, "n_pcs": 10, "feature_grid": [50, 100]},
        "classification": {"datasets": []},
        "simulation": {"enabled": False},
        "datasets": {  # the README's "Your own data" keys, nothing more
            "mycells": {
                "expression": "data/cells.h5ad",
                "label_column": "cell_type",
                "batch_column": "donor",
                "preprocess": "normalize_log1p",
                "evaluation": "leiden",
            }
        },
    }
    proc = snakemake_run(REPO / "Snakefile", work, config, [], timeout=3000)
    detected = np.asarray((X > 0).sum(axis=0)).ravel()
    return work, proc, detected


def _read(path):
    import anndata as ad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ad.read_h5ad(path)


def _singlecell_methods():
    import yaml

    return yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())["properties"][
        "singlecell_methods"
    ]["default"]


@pytest.mark.workflow
def test_own_cells_filter_and_methods(own_cells):
    work, proc, detected = own_cells
    assert proc.returncode == 0, proc.stderr[-4000:]
    a = _read(work / "results/mycells/adata.h5ad")
    # scanpy's sc.pp.filter_genes(min_cells=3), counted here on the generated counts
    assert a.n_vars == int((detected >= 3).sum())
    rec = a.uns["dataset"]["gene_filter"]
    assert int(rec["min_cells"]) == 3 and int(rec["n_removed"]) == int((detected < 3).sum())
    assert int(_read(work / "results/mycells/prepared.h5ad").uns["dataset"]["gene_filter"]["n_removed"]) == int(
        rec["n_removed"]
    )
    methods = _singlecell_methods()
    ran = [m for m in methods if m != "hvg_seurat_v3"]
    for m in ran:
        assert f"{m}_rank" in a.var, m
    assert "hvg_seurat_v3" in a.uns["failed_selections"]


@pytest.mark.workflow
def test_own_cells_failed_method_recorded(own_cells):
    work, proc, _ = own_cells
    assert proc.returncode == 0, proc.stderr[-4000:]
    sel = pd.read_csv(work / "results/mycells/selection/hvg_seurat_v3.tsv", sep="\t")
    assert sel["status"].tolist() == ["failed"] and "span" in sel["error"].iloc[0]
    leiden = pd.read_csv(work / "results/mycells/clustering_leiden.tsv", sep="\t")
    bad = leiden[leiden["method"] == "hvg_seurat_v3"]
    assert bad["status"].tolist() == ["failed"] and bad["ari"].isna().all()
    good = leiden[leiden["method"] != "hvg_seurat_v3"]
    assert set(good["method"]) == {m for m in _singlecell_methods() if m != "hvg_seurat_v3"}
    assert (good["status"] == "ok").all() and good["ari"].notna().all()


@pytest.mark.workflow
def test_own_cells_report_answers_from_the_run(own_cells):
    work, proc, _ = own_cells
    assert proc.returncode == 0, proc.stderr[-4000:]
    page = (work / "results/mycells_report/report.html").read_text()
    measured, advice = page.find("What this run measured"), page.find("The standing advice")
    assert 0 <= measured < advice
    top = page[measured:advice]
    assert "<b>mycells:</b>" in top and "Failed on this dataset" in top and "hvg_seurat_v3" in top
    assert "gene filter (min_cells=3" in top
    assert "studies/real-panel.md" in page[advice:]
    assert "Bulk expression" not in page  # no bulk dataset in this run
