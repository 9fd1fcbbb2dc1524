"""One selection job per dataset (scripts/select_features.py runs all its methods) writes each method's
table and JSON sidecar byte for byte as a job of that method alone: the methods share the prepared
data and the graph read once, and none of them may change what the next one sees.  Likewise one
simulation job per grid (scripts/simulate_recovery.py) against one method at a time."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

anndata = pytest.importorskip("anndata")

REPO = Path(__file__).resolve().parents[2]
# methods of every kind that run on a small dense set: graph scores, the greedy design and the published
# GLFS's lam path, the Laplacian-regularised designs, a supervised one, gene-wise ones, one on counts
METHODS = [
    "glfs",
    "glfs_exact",
    "laplacian_score",
    "lapaofs",
    "lkr_score",
    "ufi",
    "fisher_score",
    "variance",
    "deviance",
]


def _prepared(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n, d = 40, 60
    counts = rng.poisson(3.0, size=(n, d)).astype(np.float64)
    counts[:20, :5] += rng.poisson(6.0, size=(20, 5))
    a = anndata.AnnData(np.log1p(counts))
    a.var_names = [f"g{j}" for j in range(d)]
    a.obs["label"] = np.repeat(["a", "b"], n // 2)
    a.layers["counts"] = counts
    a.write_h5ad(tmp_path / "prepared.h5ad")
    sp.save_npz(tmp_path / "graph.npz", glfs.similarity_graph(np.asarray(a.X), n_neighbors=5))


def _select(tmp_path: Path, methods, out: Path) -> None:
    out.mkdir()
    smk = NS(
        wildcards=NS(dataset="d"),
        input=NS(adata=str(tmp_path / "prepared.h5ad"), graph=str(tmp_path / "graph.npz")),
        output=NS(
            tables=[str(out / f"{m}.tsv") for m in methods],
            metas=[str(out / f"{m}.json") for m in methods],
            adata=str(out / "adata.h5ad"),
        ),
        params=NS(
            methods=list(methods),
            n_features=5,
            method_params={m: {} for m in methods},
            seed=0,
            graph={"n_neighbors": 5, "t": None},
        ),
        log=[str(out / "s.log")],
    )
    runpy.run_path(str(REPO / "scripts/select_features.py"), init_globals={"snakemake": smk})


def test_one_job_for_all_methods_writes_what_one_job_per_method_writes(tmp_path, restore_logging):
    _prepared(tmp_path)
    _select(tmp_path, METHODS, tmp_path / "together")
    for i, m in enumerate(reversed(METHODS)):
        _select(tmp_path, [m], tmp_path / f"alone{i}")
        for ext in ("tsv", "json"):
            alone = (tmp_path / f"alone{i}" / f"{m}.{ext}").read_bytes()
            assert (tmp_path / "together" / f"{m}.{ext}").read_bytes() == alone, (m, ext)
    assert "glfs_exact: selected 5 genes" in (tmp_path / "together" / "s.log").read_text()
    # the job's AnnData: the prepared data, the dataset's graph and every method's selection as its table says
    from glfs._anndata_writers import GRAPH_KEY
    from glfs_workflow.files import read_tsv

    a = anndata.read_h5ad(tmp_path / "together" / "adata.h5ad")
    prepared = anndata.read_h5ad(tmp_path / "prepared.h5ad")
    np.testing.assert_array_equal(np.asarray(a.X), np.asarray(prepared.X))
    assert (a.obsp[GRAPH_KEY] != sp.load_npz(tmp_path / "graph.npz")).nnz == 0
    assert a.uns["patient_similarity"]["params"] == {"n_neighbors": 5}  # the graph settings given, without None
    for m in METHODS:
        table = read_tsv(tmp_path / "together" / f"{m}.tsv")
        np.testing.assert_array_equal(a.var[f"{m}_rank"].to_numpy(), table["rank"].to_numpy())
        np.testing.assert_array_equal(a.var[m].to_numpy(), table["selected"].to_numpy().astype(bool))


def test_one_simulation_job_writes_what_one_job_per_method_writes(tmp_path, restore_logging):
    sim = {
        "n_samples": 60,
        "replicates": 1,
        "sigma_grid": [0.3],
        "n_noise_at_sigma": 30,
        "n_noise_grid": [20],
        "sigma_at_n_noise": 0.2,
    }
    methods = ["glfs", "laplacian_score", "variance"]

    def run(names, out: Path):
        out.mkdir()
        smk = NS(
            params=NS(
                methods=list(names),
                simulation=sim,
                graph={"n_neighbors": 5, "t": None},
                method_params={m: {} for m in names},
                seed=0,
            ),
            output=[str(out / f"{m}.tsv") for m in names],
            log=[str(out / "s.log")],
        )
        runpy.run_path(str(REPO / "scripts/simulate_recovery.py"), init_globals={"snakemake": smk})

    run(methods, tmp_path / "together")
    for i, m in enumerate(reversed(methods)):
        run([m], tmp_path / f"alone{i}")
        assert (tmp_path / "together" / f"{m}.tsv").read_bytes() == (
            tmp_path / f"alone{i}" / f"{m}.tsv"
        ).read_bytes(), m
    assert (tmp_path / "together" / "variance.tsv").read_text().count("\n") == 3  # header and 2 grid points
