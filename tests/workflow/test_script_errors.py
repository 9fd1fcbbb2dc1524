"""Script errors always say something (issue 19 item 2): an exception without a message (a
MemoryError) is logged and printed with its type and the dataset, never as an empty line."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_prepare_script_error_with_an_empty_message_says_what_happened(tmp_path, monkeypatch, capsys, restore_logging):
    import glfs_workflow.datasets as datasets

    def oom(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(datasets, "prepare_dataset", oom)
    prov = tmp_path / "provenance.json"
    prov.write_text(json.dumps({"dataset": "d", "files": {}}))
    import glfs_workflow.fetch as fetch

    monkeypatch.setattr(fetch, "check_provenance", lambda p, path: {})
    smk = NS(
        wildcards=NS(dataset="d"),
        params=NS(dataset={}, max_expanded_gb=10),
        resources=NS(mem_mb=1000),
        input=NS(provenance=str(prov)),
        output=NS(h5ad=str(tmp_path / "prepared.h5ad")),
        log=[str(tmp_path / "p.log")],
    )
    with pytest.raises(SystemExit):
        runpy.run_path(str(REPO / "scripts/prepare_dataset.py"), init_globals={"snakemake": smk})
    text = (tmp_path / "p.log").read_text()
    assert "MemoryError (no further message) while preparing dataset 'd'" in text
    assert "prepare_dataset d: MemoryError (no further message)" in capsys.readouterr().err
    assert not (tmp_path / "prepared.h5ad").exists()


def test_count_method_without_counts_names_the_dataset_and_the_layer(tmp_path, restore_logging):
    """Issue 17: a count-based method on a dataset whose input held no raw counts stops with an error
    naming the dataset, the missing layers['counts'] and the config keys to change."""
    import anndata as ad
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    a = ad.AnnData(rng.normal(size=(30, 12)))  # log-scale values: no counts layer was kept
    a.write_h5ad(tmp_path / "prepared.h5ad")
    sp.save_npz(tmp_path / "graph.npz", sp.identity(30, format="csr"))
    smk = NS(
        wildcards=NS(dataset="cells"),
        input=NS(adata=str(tmp_path / "prepared.h5ad"), graph=str(tmp_path / "graph.npz")),
        output=NS(
            tables=[str(tmp_path / "variance.tsv"), str(tmp_path / "deviance.tsv")],
            metas=[str(tmp_path / "variance.json"), str(tmp_path / "deviance.json")],
        ),
        params=NS(
            methods=["variance", "deviance"],
            methods_named=True,
            n_features=5,
            method_params={"variance": {}, "deviance": {}},
            seed=0,
        ),
        log=[str(tmp_path / "s.log")],
    )
    with pytest.raises(
        ValueError, match=r"dataset 'cells': method 'deviance' scores raw counts, but .* has no layers\['counts'\]"
    ):
        runpy.run_path(str(REPO / "scripts/select_features.py"), init_globals={"snakemake": smk})
    text = (tmp_path / "s.log").read_text()
    assert "datasets.cells.layer: counts" in text and "datasets.cells.methods" in text
    assert not (tmp_path / "deviance.tsv").exists()
    assert not (tmp_path / "variance.tsv").exists()  # the job's methods are checked before the first one runs


def test_count_method_of_a_default_list_without_counts_is_recorded_failed(tmp_path, restore_logging):
    """Issue 40: a count method that came from a default method list (singlecell_methods), on a dataset
    without counts, is recorded as failed with the same reason; the dataset's other methods still run."""
    import anndata as ad
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    a = ad.AnnData(rng.normal(size=(30, 12)))
    a.write_h5ad(tmp_path / "prepared.h5ad")
    sp.save_npz(tmp_path / "graph.npz", sp.identity(30, format="csr"))
    smk = NS(
        wildcards=NS(dataset="cells"),
        input=NS(adata=str(tmp_path / "prepared.h5ad"), graph=str(tmp_path / "graph.npz")),
        output=NS(
            tables=[str(tmp_path / "variance.tsv"), str(tmp_path / "deviance.tsv")],
            metas=[str(tmp_path / "variance.json"), str(tmp_path / "deviance.json")],
            adata=str(tmp_path / "adata.h5ad"),
        ),
        params=NS(
            methods=["variance", "deviance"],
            methods_named=False,
            n_features=5,
            method_params={"variance": {}, "deviance": {}},
            seed=0,
            graph={},
        ),
        log=[str(tmp_path / "s.log")],
    )
    runpy.run_path(str(REPO / "scripts/select_features.py"), init_globals={"snakemake": smk})
    meta = json.loads((tmp_path / "deviance.json").read_text())
    assert meta["status"] == "failed" and "has no layers['counts']" in meta["error"]
    assert "datasets.cells.layer: counts" in meta["error"]
    variance = pd.read_csv(tmp_path / "variance.tsv", sep="\t")
    assert variance["selected"].sum() == 5
    out = ad.read_h5ad(tmp_path / "adata.h5ad")
    assert set(out.uns["failed_selections"]) == {"deviance"}
