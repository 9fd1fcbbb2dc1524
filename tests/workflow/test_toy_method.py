"""A new method is one function plus one registry row (docs/guides/architecture.md, "Adding a method").

A toy method registered by a fixture (one ``MethodInfo`` row, removed afterwards) runs through
``glfs.tl.select``, the workflow's ``select_features`` script and the report's tables, with no
other edit.  The toy score of gene j is ``sum_i deg_i (x_ij + offset)`` with ``deg = W 1``, the
graph's degrees: checked against that sum written out.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.api as api
from glfs.core._result import make_selection
from glfs.tl import CONNECTIVITIES_KEY

anndata = pytest.importorskip("anndata")

REPO = Path(__file__).resolve().parents[2]
TOY = "toy_degree"


def toy_degree_score(X, W, offset: float = 0.0):
    """The toy score: degree-weighted column sums of X + offset (the function whose signature names the parameters)."""
    deg = np.asarray(W.sum(axis=1)).ravel()
    return np.asarray(X, dtype=np.float64).T @ deg + offset * deg.sum()


def select_toy_degree(X, W, *, n_features, labels=None, random_state=None, **params):
    return make_selection(TOY, toy_degree_score(X, W, **params), higher_is_better=True, n_features=n_features)


@pytest.fixture
def toy_method():
    row = api.MethodInfo(
        name=TOY,
        fn=select_toy_degree,
        family="score",
        needs_graph=True,
        params_from=toy_degree_score,
        description="toy: degree-weighted gene sums",
    )
    api.METHODS[TOY] = row
    yield row
    del api.METHODS[TOY]


def _written_out(X, W, offset=0.0):
    """sum_i deg_i (x_ij + offset), by loops."""
    X, W = np.asarray(X), W.toarray()
    n, d = X.shape
    deg = [sum(W[i, k] for k in range(n)) for i in range(n)]
    return np.array([sum(deg[i] * (X[i, j] + offset) for i in range(n)) for j in range(d)])


def _adata(n=30, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 2] += 3.0  # the planted top gene: largest mean
    a = anndata.AnnData(X=X)
    a.var_names = [f"g{j}" for j in range(d)]
    a.obs_names = [f"s{i}" for i in range(n)]
    a.obs["label"] = np.repeat(["a", "b"], n // 2)
    return a


def test_a_registered_method_runs_through_tl_select(toy_method):
    a = _adata()
    glfs.tl.select(a, TOY, 3, offset=0.5)
    W = a.obsp[CONNECTIVITIES_KEY]  # the default graph tl.select built, as for any graph-based method
    np.testing.assert_allclose(a.var[f"{TOY}_score"].to_numpy(), _written_out(a.X, W, 0.5), rtol=1e-12)
    assert a.var[f"{TOY}_rank"].to_numpy()[2] == 1 and a.var[TOY].sum() == 3
    assert glfs.api.method_params(TOY).keys() == {"offset"}
    glfs.api.check_method_params(TOY, {"offset": 1})
    with pytest.raises(ValueError, match=f"parameter 'offset' of method '{TOY}' must be a number"):
        glfs.api.check_method_params(TOY, {"offset": [1]})
    with pytest.raises(ValueError, match=f"parameter 'scale' is not a parameter of method '{TOY}'; its parameters are"):
        glfs.tl.select(a, TOY, 3, key_added="again", scale=2)
    assert "again" not in a.var


def test_a_registered_method_runs_through_the_workflow_and_the_report(toy_method, tmp_path, restore_logging):
    import pandas as pd

    from glfs.evaluate import evaluate_ranking
    from glfs_workflow.files import read_tsv
    from glfs_workflow.report_tables import nmi_summary
    from glfs_workflow.which import rank_table, which_method

    a = _adata()
    a.write_h5ad(tmp_path / "prepared.h5ad")
    W = glfs.similarity_graph(np.asarray(a.X), n_neighbors=5, kernel="heat")
    sp.save_npz(tmp_path / "graph.npz", W)
    smk = NS(
        wildcards=NS(dataset="d"),
        input=NS(adata=str(tmp_path / "prepared.h5ad"), graph=str(tmp_path / "graph.npz")),
        output=NS(
            tables=[str(tmp_path / f"{TOY}.tsv")],
            metas=[str(tmp_path / f"{TOY}.json")],
            adata=str(tmp_path / "adata.h5ad"),
        ),
        params=NS(methods=[TOY], n_features=3, method_params={TOY: {"offset": 0.25}}, seed=0, graph={"n_neighbors": 5}),
        log=[str(tmp_path / "s.log")],
    )
    runpy.run_path(str(REPO / "scripts/select_features.py"), init_globals={"snakemake": smk})
    table = read_tsv(tmp_path / f"{TOY}.tsv")
    np.testing.assert_allclose(table["score"].to_numpy(), _written_out(a.X, W, 0.25), rtol=1e-12)
    meta = json.loads((tmp_path / f"{TOY}.json").read_text())
    assert meta["method"] == TOY and meta["graph"] == str(tmp_path / "graph.npz")  # the dataset's graph was used
    written = anndata.read_h5ad(tmp_path / "adata.h5ad")  # and the job's AnnData carries it as any method
    assert int(written.var[TOY].sum()) == 3 and f"{TOY}_score" in written.var

    # the report's tables take it as any method: the clustering summary and the which-method ranks
    labels = a.obs["label"].to_numpy()
    rows = []
    for method, ranking in (
        (TOY, np.argsort(table["rank"].to_numpy(), kind="stable")),
        ("variance", glfs.select(a.X, "variance", n_features_to_select=3).ranking),
    ):
        recs = evaluate_ranking(np.asarray(a.X), labels, ranking, feature_grid=(2, 4, "all"), n_runs=2)
        rows += [{"method": method, **r} for r in recs]
    cdf = pd.DataFrame(rows)
    assert TOY in set(nmi_summary(cdf)["method"])
    wm = which_method(cdf, None, protocol="spectral", n_genes=a.n_vars)
    assert TOY in set(rank_table(wm)["method"])
