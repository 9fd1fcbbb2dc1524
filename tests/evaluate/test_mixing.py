"""Batch mixing within cell types (glfs.evaluate._mixing.knn_batch_mixing), against hand-worked examples,
and the Leiden protocol reporting it with ``batches=``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from glfs.evaluate import knn_batch_mixing


def _graph(neighbours, n):
    rows = [i for i, js in enumerate(neighbours) for _ in js]
    cols = [j for js in neighbours for j in js]
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))


def test_hand_worked_example():
    # types A A A A B B C C; batches 0 0 1 1 0 1 0 0 (type C lies in one batch: not counted)
    types = np.array(list("AAAABBCC"))
    batches = np.array([0, 0, 1, 1, 0, 1, 0, 0])
    nbrs = [[1, 2], [0, 4], [3, 0], [2, 5], [5, 0], [4, 3], [7, 0], [6, 1]]
    out = knn_batch_mixing(_graph(nbrs, 8), types, batches)
    # A: same-type neighbours 0:{b0,b1} ln2, 1:{b0} 0, 2:{b1,b0} ln2, 3:{b1} 0; composition 2:2 -> ln2; mean/ln2 = 0.5
    # B: 4:{b1} 0, 5:{b0} 0 -> 0
    assert out["per_type"] == pytest.approx({"A": 0.5, "B": 0.0})
    assert out["batch_mixing"] == pytest.approx(0.25)
    assert out["n_types"] == 2


def test_uneven_composition_scales_by_the_type_entropy():
    # one type, batches 3:1; cell 0 sees {b0, b0, b1} -> H = -(2/3 ln 2/3 + 1/3 ln 1/3); H_type = -(.75 ln .75 + .25 ln .25)
    types = np.zeros(4, int)
    batches = np.array([0, 0, 0, 1])
    nbrs = [[1, 2, 3], [0], [1], [0]]
    h0 = -(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3))
    ht = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    out = knn_batch_mixing(_graph(nbrs, 4), types, batches)
    assert out["batch_mixing"] == pytest.approx(h0 / 4 / ht)


def test_separated_batches_score_zero_and_random_neighbours_near_one():
    rng = np.random.default_rng(0)
    n, k = 600, 15
    types = rng.integers(0, 3, n)
    batches = rng.integers(0, 4, n)
    own = [
        rng.choice(np.flatnonzero((types == types[i]) & (batches == batches[i]) & (np.arange(n) != i)), k)
        for i in range(n)
    ]
    assert knn_batch_mixing(_graph(own, n), types, batches)["batch_mixing"] == 0.0
    rand = [rng.choice(np.flatnonzero((types == types[i]) & (np.arange(n) != i)), k, replace=False) for i in range(n)]
    mixed = knn_batch_mixing(_graph(rand, n), types, batches)["batch_mixing"]
    assert 0.85 < mixed <= 1.0


def test_no_type_in_two_batches_is_nan_and_bad_shapes_are_refused():
    out = knn_batch_mixing(_graph([[1], [0]], 2), ["a", "b"], [0, 1])
    assert np.isnan(out["batch_mixing"]) and out["n_types"] == 0
    with pytest.raises(ValueError, match=r"graph must have shape \(3, 3\)"):
        knn_batch_mixing(_graph([[1], [0]], 2), ["a", "a", "b"], [0, 1, 1])
    with pytest.raises(ValueError, match="batches must have length 2"):
        knn_batch_mixing(_graph([[1], [0]], 2), ["a", "a"], [0])


def test_the_leiden_protocol_reports_batch_mixing():
    pytest.importorskip("scanpy")
    from glfs.evaluate import evaluate_ranking_leiden

    rng = np.random.default_rng(1)
    n, d = 300, 20
    types = np.repeat([0, 1, 2], 100)
    batches = np.tile([0, 1], 150)
    X = rng.normal(size=(n, d))
    X[:, :3] += 4.0 * np.eye(3)[types]  # genes 0-2 mark the types
    X[:, 3] += 6.0 * batches  # gene 3 separates the batches
    with_batch = evaluate_ranking_leiden(
        X, types, np.r_[3, 0, 1, 2, np.arange(4, d)], feature_grid=[4], n_runs=1, batches=batches
    )
    without = evaluate_ranking_leiden(X, types, np.arange(d), feature_grid=[3], n_runs=1, batches=batches)
    assert with_batch[0]["batch_mixing"] < 0.2 < 0.8 < without[0]["batch_mixing"]
    assert "batch_mixing" not in evaluate_ranking_leiden(X, types, np.arange(d), feature_grid=[3], n_runs=1)[0]


def test_the_report_table_puts_batch_mixing_beside_the_ari_and_is_absent_without_batches():
    import pandas as pd

    from glfs_workflow.report_tables import batch_mixing_table

    cdf = pd.DataFrame(
        {
            "method": ["a", "a", "a", "b"],
            "n_features": [500, 500, 2000, 500],
            "run": [0, 1, 0, 0],
            "ari_nlabels": [0.5, 0.7, 0.8, 0.4],
            "batch_mixing": [0.2, 0.4, 0.9, 0.6],
        }
    )
    rdf = pd.DataFrame(
        {
            "method": ["random_genes"] * 2,
            "n_features": [500, 500],
            "draw": [0, 1],
            "ari_nlabels": [0.1, 0.3],
            "batch_mixing": [0.8, 1.0],
        }
    )
    t = batch_mixing_table(cdf, rdf)
    assert list(t.columns) == ["ARI@500", "mixing@500", "ARI@2000", "mixing@2000"]
    assert t.loc["a", "ARI@500"] == 0.6 and t.loc["a", "mixing@500"] == 0.3 and t.loc["a", "mixing@2000"] == 0.9
    assert t.loc["random_genes", "mixing@500"] == 0.9 and np.isnan(t.loc["b", "ARI@2000"])
    assert batch_mixing_table(cdf.assign(batch_mixing=np.nan), None) is None
    assert batch_mixing_table(cdf.drop(columns="batch_mixing"), None) is None
