"""Tests of the panel's cross-set tables (glfs_workflow.panel) on planted Leiden tables whose answers are known."""

import numpy as np
import pandas as pd
import pytest

from glfs_workflow.panel import leave_one_dataset_out, panel_scores, panel_summary


def _leiden(values: dict, runs=2) -> pd.DataFrame:
    """A clustering_leiden.tsv: method -> {k: score}; every ARI of every run equals the score
    (so the panel score, their mean, is it); rare_f1 = score / 2; batch_mixing absent."""
    rows = []
    for m, per_k in values.items():
        for k, v in per_k.items():
            for r in range(runs):
                rows.append({"method": m, "n_features": k, "run": r, "ari": v, "ari_nlabels": v, "kmeans_ari": v,
                             "rare_f1": v / 2, "rare_f1_nlabels": v / 2})  # fmt: skip
    return pd.DataFrame(rows)


def _floor(random: dict, all_genes: float, n_genes: int) -> pd.DataFrame:
    """A leiden_random.tsv: two random draws around ``random[k]`` (+-0.1: their mean is it), all genes once."""
    rows = [
        {"method": "random_genes", "n_features": k, "draw": d, "run": 0, "ari": v + s, "ari_nlabels": v + s,
         "kmeans_ari": v + s, "rare_f1": 0.0, "rare_f1_nlabels": 0.0}
        for k, v in random.items() for d, s in enumerate((-0.1, 0.1))
    ]  # fmt: skip
    rows.append({"method": "all_genes", "n_features": n_genes, "draw": 0, "run": 0, "ari": all_genes,
                 "ari_nlabels": all_genes, "kmeans_ari": all_genes, "rare_f1": 0.4, "rare_f1_nlabels": 0.4})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture
def tables():
    # a wins on A and B, b on C; on C (600 genes) k=1000 is all genes
    return {
        "A": (
            _leiden({"a": {100: 0.9, 1000: 0.8}, "b": {100: 0.5, 1000: 0.6}}),
            _floor({100: 0.3, 1000: 0.4}, 0.7, 5000),
        ),
        "B": (
            _leiden({"a": {100: 0.7, 1000: 0.7}, "b": {100: 0.6, 1000: 0.5}}),
            _floor({100: 0.2, 1000: 0.3}, 0.6, 3000),
        ),
        "C": (_leiden({"a": {100: 0.2}, "b": {100: 0.9}}), _floor({100: 0.1}, 0.5, 600)),
    }


def test_scores_are_the_tables_means_and_all_genes_fills_the_counts_at_or_above_a_sets_genes(tables):
    S = panel_scores(tables, [100, 1000])
    cell = S.set_index(["set", "method", "n_features"])
    assert cell.loc[("A", "a", 100), "score"] == pytest.approx(0.9)
    assert cell.loc[("A", "a", 100), "rare_f1_nlabels"] == pytest.approx(0.45)
    assert cell.loc[("A", "random_genes", 1000), "score"] == pytest.approx(0.4)  # mean of the two draws
    assert cell.loc[("A", "all_genes", 100), "score"] == pytest.approx(0.7)
    # C has 600 genes: at 1,000 every method is all genes
    for m in ("a", "b", "random_genes", "all_genes"):
        assert cell.loc[("C", m, 1000), "score"] == pytest.approx(0.5)
        assert bool(cell.loc[("C", m, 1000), "at_all_genes"])
    assert not bool(cell.loc[("C", "a", 100), "at_all_genes"])
    assert len(S) == 3 * 4 * 2
    assert S["batch_mixing"].isna().all()


def test_summary_is_the_mean_over_sets(tables):
    summ = panel_summary(panel_scores(tables, [100, 1000])).set_index(["method", "n_genes"])
    assert summ.loc[("a", 100), "mean_score"] == pytest.approx((0.9 + 0.7 + 0.2) / 3)
    assert summ.loc[("b", 1000), "mean_score"] == pytest.approx((0.6 + 0.5 + 0.5) / 3)
    assert summ.loc[("a", 100), "rare_f1"] == pytest.approx((0.45 + 0.35 + 0.1) / 3)
    assert (summ["n_sets"] == 3).all()


def test_leave_one_dataset_out_chooses_on_the_other_sets(tables):
    S = panel_scores(tables, [100, 1000])
    lodo = leave_one_dataset_out(S)
    per = lodo[lodo["n_features"] == "mean"].set_index("held_out")
    # held out A: on B and C, a has mean (0.7 + 0.7 + 0.2 + 0.5) / 4 = 0.525, b (0.6 + 0.5 + 0.9 + 0.5) / 4 = 0.625
    assert per.loc["A", "chosen"] == "b" and per.loc["A", "train_score"] == pytest.approx(0.625)
    assert per.loc["A", "score"] == pytest.approx((0.5 + 0.6) / 2)  # b's score on A
    # held out C: on A and B, a (0.9 + 0.8 + 0.7 + 0.7) / 4 beats b
    assert per.loc["C", "chosen"] == "a" and per.loc["C", "score"] == pytest.approx((0.2 + 0.5) / 2)
    assert per.loc["B", "chosen"] == "b"  # on A and C: a (0.9 + 0.8 + 0.2 + 0.5) / 4 = 0.6, b 0.625
    at = lodo[(lodo["held_out"] == "C") & (lodo["n_features"] == 100)].iloc[0]
    assert at["best"] == "b" and at["best_score"] == pytest.approx(0.9)
    assert at["random_genes"] == pytest.approx(0.1) and at["all_genes"] == pytest.approx(0.5)
    last = lodo.iloc[-1]
    assert last["held_out"] == "mean" and last["score"] == pytest.approx(np.mean(per["score"]))


def test_a_method_missing_on_a_set_is_nan_there_and_bad_inputs_are_named(tables):
    leiden, floor = tables["C"]
    tables["C"] = (leiden[leiden["method"] != "a"], floor)
    S = panel_scores(tables, [100])
    assert np.isnan(S.set_index(["set", "method", "n_features"]).loc[("C", "a", 100), "score"])
    assert panel_summary(S).set_index(["method", "n_genes"]).loc[("a", 100), "n_sets"] == 2
    with pytest.raises(ValueError, match="at least 2 panel sets"):
        leave_one_dataset_out(S[S["set"] == "A"])
    with pytest.raises(ValueError, match="not in it: \\['zz'\\]"):
        leave_one_dataset_out(S, family=["a", "zz"])
    with pytest.raises(ValueError, match="no all_genes row"):
        panel_scores({"A": (leiden, floor[floor["method"] != "all_genes"])}, [100])
