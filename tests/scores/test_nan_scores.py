"""A method whose scores are NaN for so many genes that fewer than asked remain, or whose selection marks a
gene with a NaN score, refuses and names the reason (issue 30, item 3); scanpy's Pearson residuals with an
empty cell (every residual variance NaN, genes then marked in gene order) are refused before scanpy runs."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
from glfs.core._result import make_selection

REPO = Path(__file__).resolve().parents[2]


def _counts_with_empty_cell(n=60, d=30, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.poisson(2.0, size=(n, d)).astype(np.float64)
    C[[3, 17], :] = 0.0  # two cells without counts
    return sp.csr_matrix(C)


def test_pearson_residuals_refuse_empty_cells():
    pytest.importorskip("scanpy")
    C = _counts_with_empty_cell()
    with pytest.raises(
        ValueError, match=r"hvg_pearson_residuals: 2 of 60 cells have no counts \(e.g. rows \[3, 17\]\).*filter_cells"
    ):
        glfs.select(C, method="hvg_pearson_residuals", n_features_to_select=5)


def test_pearson_residuals_all_nan_are_never_selected_in_gene_order(monkeypatch):
    """Past the empty-cell check (bypassed here), scanpy's all-NaN scores reach the general rule."""
    pytest.importorskip("scanpy")
    from glfs.scores import _hvg as hvg

    monkeypatch.setattr(hvg, "_refuse_empty_cells", lambda X: None)
    with pytest.raises(
        ValueError,
        match=r"hvg_pearson_residuals: scores are NaN for 30 of 30 genes .* of the selected genes have no score",
    ):
        glfs.select(_counts_with_empty_cell(), method="hvg_pearson_residuals", n_features_to_select=5)


def _with_constant_genes(n=40, d=10, constant=(0, 2, 3, 5, 6, 7, 8, 9), seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, list(constant)] = 1.5
    return X


def test_fewer_scored_genes_than_asked_is_refused_with_the_reason():
    X = _with_constant_genes()
    W = glfs.similarity_graph(X[:, [1, 4]], n_neighbors=5)
    with pytest.raises(
        ValueError,
        match=r"laplacian_score: scores are NaN for 8 of 10 genes \(e.g. columns \[0, 2, 3, 5, 6\]\), "
        r"so only 2 can be selected by their score, fewer than the 5 asked; .*constant.*Ask for at most 2 genes",
    ):
        glfs.select(X, graph=W, method="laplacian_score", n_features_to_select=5)
    sel = glfs.select(X, graph=W, method="laplacian_score", n_features_to_select=2)  # as many as can be scored: allowed
    assert sorted(sel.indices.tolist()) == [1, 4]


def test_make_selection_refuses_a_selected_gene_without_score_and_keeps_explicit_rankings():
    scores = np.array([np.nan, 2.0, 1.0, np.nan])
    with pytest.raises(
        ValueError, match=r"m: scores are NaN for 2 of 4 genes .*1 of the selected genes have no score .*; because\."
    ):
        make_selection(
            "m", scores, higher_is_better=True, n_features=2, selected=[True, True, False, False], nan_reason="because"
        )
    # a method with its own ranking (GLFS: the genes that never enter the path have no entry lam) is not refused
    sel = make_selection(
        "m", scores, higher_is_better=True, n_features=3, ranking=[1, 2, 0, 3], selected=[False, True, True, False]
    )
    assert sel.indices.tolist() == [1, 2]


def test_the_workflow_select_step_records_the_failure_with_the_reason(tmp_path, restore_logging):
    """The refusal above, in the workflow's select step: the method is recorded as failed with the reason
    (its table and sidecar), and the step still writes the dataset's AnnData."""
    import json

    import anndata as ad

    X = _with_constant_genes()
    ad.AnnData(X).write_h5ad(tmp_path / "prepared.h5ad")
    sp.save_npz(tmp_path / "graph.npz", glfs.similarity_graph(X[:, [1, 4]], n_neighbors=5))
    smk = NS(
        wildcards=NS(dataset="d"),
        input=NS(adata=str(tmp_path / "prepared.h5ad"), graph=str(tmp_path / "graph.npz")),
        output=NS(tables=[str(tmp_path / "ls.tsv")], metas=[str(tmp_path / "ls.json")], adata=str(tmp_path / "a.h5ad")),
        params=NS(
            methods=["laplacian_score"],
            n_features=5,
            method_params={"laplacian_score": {}},
            seed=0,
            graph={"n_neighbors": 5, "kernel": "heat", "t": None},
        ),
        log=[str(tmp_path / "s.log")],
    )
    runpy.run_path(str(REPO / "scripts/select_features.py"), init_globals={"snakemake": smk})
    assert "only 2 can be selected by their score" in (tmp_path / "s.log").read_text()
    meta = json.loads((tmp_path / "ls.json").read_text())
    assert meta["status"] == "failed" and "scores are NaN for 8 of 10 genes" in meta["error"]
    assert "scores are NaN for 8 of 10 genes" in (tmp_path / "ls.tsv").read_text()
    assert "laplacian_score" in ad.read_h5ad(tmp_path / "a.h5ad").uns["failed_selections"]


def test_lapaofs_at_huge_graph_weights_is_refused_not_filled_in_gene_order():
    """Issue 30 (low): LapAOFS on graph weights near 1e300 gave NaN for 59 of 60 genes and picked genes by index."""
    X = np.random.default_rng(0).normal(size=(40, 60))
    W = glfs.similarity_graph(X, n_neighbors=5) * 1e300
    with pytest.raises(ValueError, match=r"lapaofs: scores are NaN for \d+ of 60 genes .*overflowed"):
        glfs.select(X, graph=W, method="lapaofs", n_features_to_select=5)
