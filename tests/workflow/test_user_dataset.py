"""Swapping in a user's matrix (issue 3 item 10): entries as in DESIGN.md
section 6, one with labels and one without, run end to end through the whole
workflow (the real Snakefile) in a temporary working directory.

The labelled matrix has planted group genes, so the Laplacian score's top
genes are known in advance."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
PLANTED = [f"gene{j}" for j in range(4)]


def _write_inputs(d: Path):
    rng = np.random.default_rng(7)
    n, p = 24, 40
    groups = np.repeat([0, 1], n // 2)
    X = rng.normal(0.0, 1.0, (n, p))
    X[:, :4] += 4.0 * groups[:, None]  # genes 0-3 separate the two groups
    samples = [f"pt{i:02d}" for i in range(n)]
    genes = [f"gene{j}" for j in range(p)]
    pd.DataFrame(X.T, index=pd.Index(genes, name="id"), columns=samples).to_csv(d / "mine.tsv", sep="\t")
    pd.DataFrame({"sample": samples, "subtype": np.where(groups == 1, "B", "A")}).to_csv(d / "mine_labels.tsv", sep="\t", index=False)
    Y = rng.normal(0.0, 1.0, (16, 30))
    pd.DataFrame(Y, index=[f"u{i}" for i in range(16)], columns=[f"g{j}" for j in range(30)]).to_csv(d / "other.csv")


@pytest.fixture(scope="module")
def user_run(tmp_path_factory, snakemake_run):
    work = tmp_path_factory.mktemp("user")
    (work / "data").mkdir()
    _write_inputs(work / "data")
    (work / "resources").symlink_to(REPO / "resources")  # static tables the report reads
    config = {
        "run": ["mydata", "nolabels"],
        "methods": ["laplacian_score", "variance", "fisher_score"],
        "graph": {"n_neighbors": 5},
        "selection": {"n_features": 4},
        "clustering": {"n_runs": 2, "feature_grid": [4, "all"]},
        "classification": {"datasets": []},
        "simulation": {"enabled": False},
        "datasets": {
            "mydata": {
                "expression": "data/mine.tsv",
                "orientation": "genes_by_samples",
                "sha256": None,
                "labels": "data/mine_labels.tsv",
                "sample_column": "sample",
                "label_column": "subtype",
                "n_clusters": None,
            },
            "nolabels": {"expression": "data/other.csv", "orientation": "samples_by_genes"},
        },
    }
    proc = snakemake_run(REPO / "Snakefile", work, config, [], timeout=900)
    return work, proc


def _read(path):
    import anndata as ad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ad.read_h5ad(path)


@pytest.mark.workflow
def test_user_datasets_run_end_to_end(user_run):
    work, proc = user_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (work / "results/report.html").exists()
    for ds in ("mydata", "nolabels"):
        assert (work / f"results/{ds}/adata.h5ad").exists()
        assert (work / f"results/{ds}/provenance.json").exists()


@pytest.mark.workflow
def test_labelled_user_dataset(user_run):
    work, _ = user_run
    a = _read(work / "results/mydata/adata.h5ad")
    assert a.shape == (24, 40)
    assert list(a.obs_names[:2]) == ["pt00", "pt01"]
    assert a.obs["label"].value_counts().to_dict() == {"A": 12, "B": 12}
    rank = a.var["laplacian_score_rank"]
    top4 = set(rank.sort_values().index[:4])
    assert top4 == set(PLANTED)
    assert (work / "results/mydata/selection/fisher_score.tsv").exists()
    assert (work / "results/mydata/clustering_nmi.tsv").exists()


@pytest.mark.workflow
def test_unlabelled_user_dataset(user_run):
    work, _ = user_run
    a = _read(work / "results/nolabels/adata.h5ad")
    assert a.shape == (16, 30)
    assert "label" not in a.obs.columns
    assert "laplacian_score_rank" in a.var.columns
    # supervised methods and label-based evaluations are skipped, not failed
    assert not (work / "results/nolabels/selection/fisher_score.tsv").exists()
    assert (work / "results/nolabels/selection/variance.tsv").exists()
