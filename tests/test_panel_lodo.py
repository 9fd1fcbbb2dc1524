"""benchmarks/panel_lodo.py: leave-one-dataset-out on the development panel's table, on written-out tables."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from panel_lodo import head_to_head, leave_one_dataset_out, lodo_table, score_matrix  # noqa: E402

PANEL = ["a", "b", "c", "d"]
GRID = [200, 500]


def _table(values, n_genes=None):
    """Rows of the panel table from {(method, set, k): [score per run]} (+ all_genes per set)."""
    n_genes = n_genes or {}
    rows = []
    for (m, s, k), scores in values.items():
        for r, v in enumerate(scores):
            rows.append(
                {
                    "method": m,
                    "labels": s,
                    "set": s,
                    "n_features": k,
                    "run": r,
                    "score": v,
                    "n_genes": n_genes.get(s, 10_000),
                }
            )
    return pd.DataFrame(rows)


def test_score_matrix_means_runs_and_fills_all_genes_where_k_reaches_the_set():
    vals = {
        ("m1", "a", 200): [0.2, 0.4],
        ("m1", "a", 500): [0.5],
        ("all_genes", "a", 300): [0.9],
        ("m1", "b", 200): [0.1],
        ("all_genes", "b", 9000): [0.7],
        ("m1", "b", 500): [0.6],
    }
    S = score_matrix(_table(vals, {"a": 300, "b": 9000}), GRID)
    assert S.loc["m1", ("a", 200)] == pytest.approx(0.3)
    assert S.loc["m1", ("a", 500)] == pytest.approx(0.9)  # 500 >= the set's 300 genes: all genes
    assert S.loc["m1", ("b", 500)] == pytest.approx(0.6)
    assert S.loc["all_genes", ("b", 200)] == pytest.approx(0.7)


def _matrix(rows):
    cols = pd.MultiIndex.from_product([PANEL, GRID], names=["labels", "k"])
    return pd.DataFrame([[v for v in r for _ in GRID] for r in rows.values()], index=list(rows), columns=cols)


def test_each_fold_chooses_on_the_other_sets_and_reports_the_held_out_set():
    # x is best on a, b, c; y is best on d only.  Held out d: x chosen (trained on a, b, c), scores .1.
    # Held out a: on b, c, d the means are x (.9 + .9 + .1) / 3 = .633 and y (.2 + .2 + .95) / 3 = .45: x.
    S = _matrix({"x": [0.9, 0.9, 0.9, 0.1], "y": [0.2, 0.2, 0.2, 0.95]})
    res = leave_one_dataset_out(S, ["x", "y"], PANEL, GRID)
    assert list(res["held_out"]) == PANEL
    assert list(res["chosen"]) == ["x", "x", "x", "x"]
    np.testing.assert_allclose(res["held_out_mean"], [0.9, 0.9, 0.9, 0.1])
    np.testing.assert_allclose(res.loc[0, "train_score"], (0.9 + 0.9 + 0.1) / 3)


def test_the_choice_changes_with_the_fold():
    # y wins on a and b by .4, x on c and d by .1: every fold's training sets hold a or b, so y is chosen
    # (held out a: x (.5 + .6 + .6) / 3 = .567 < y (.9 + .5 + .5) / 3 = .633).
    S = _matrix({"x": [0.5, 0.5, 0.6, 0.6], "y": [0.9, 0.9, 0.5, 0.5]})
    res = leave_one_dataset_out(S, ["x", "y"], PANEL, GRID)
    assert list(res["chosen"]) == ["y", "y", "y", "y"]
    S = _matrix({"x": [0.5, 0.5, 0.6, 0.6], "y": [0.9, 0.5, 0.5, 0.5]})
    res = leave_one_dataset_out(S, ["x", "y"], PANEL, GRID)
    # held out a: x .567 > y .5 -> x (held out .5); the others have a in training: b: x .567 < y .633 -> y
    assert list(res["chosen"]) == ["x", "y", "y", "y"]
    np.testing.assert_allclose(res["held_out_mean"], [0.5, 0.5, 0.5, 0.5])


def test_lodo_table_compares_with_hvg_chosen_the_same_way_and_random():
    S = _matrix(
        {
            "x": [0.8, 0.8, 0.8, 0.3],
            "hvg_a": [0.7, 0.7, 0.7, 0.7],
            "hvg_b": [0.1, 0.1, 0.1, 0.9],
            "random": [0.2, 0.2, 0.2, 0.4],
        }
    )
    res = leave_one_dataset_out(S, ["x"], PANEL, GRID)
    t = lodo_table(res, S, PANEL, GRID)
    assert list(t["hvg"][:4]) == ["hvg_a"] * 4
    assert list(t["wins"][:4]) == [True, True, True, False]  # d: .3 < hvg_a's .7
    assert t["wins"].iloc[-1] == "3/4"
    assert t["held_out_mean"].iloc[-1] == pytest.approx((0.8 * 3 + 0.3) / 4)


def test_bad_family_or_panel_is_refused():
    S = _matrix({"x": [0.5] * 4})
    with pytest.raises(ValueError, match="missing"):
        leave_one_dataset_out(S, ["nope"], PANEL, GRID)
    with pytest.raises(ValueError, match="at least 2"):
        leave_one_dataset_out(S, ["x"], ["a"], GRID)


def test_head_to_head_counts_only_the_folds_that_choose_the_design():
    # ref .5 everywhere.  x: .8 on a, .3 on b, .5 on c and d.  Held out a: x's training mean (.3 + .5 + .5) / 3
    # < .5, ref kept; held out b: (.8 + .5 + .5) / 3 = .6 > .5, x chosen, and loses on b (.3); held out c and d:
    # (.8 + .3 + .5) / 3 = .533 > .5, x chosen, and ties (.5): a tie is no win.  z: tied everywhere, never chosen.
    S = _matrix({"ref": [0.5, 0.5, 0.5, 0.5], "x": [0.8, 0.3, 0.5, 0.5], "z": [0.5, 0.5, 0.5, 0.5]})
    h = head_to_head(S, "ref", ["x", "z"], PANEL, GRID).set_index("design")
    assert h.loc["x", "chosen in folds"] == "b, c, d" and h.loc["x", "wins held out"] == "0/3"
    np.testing.assert_allclose([h.loc["x", f"{s} - ref"] for s in PANEL], [0.3, -0.2, 0.0, 0.0], atol=1e-12)
    assert h.loc["x", "mean - ref"] == pytest.approx(0.025)
    assert h.loc["z", "chosen in folds"] == "-" and h.loc["z", "wins held out"] == "0/0"
    S = _matrix({"ref": [0.5, 0.5, 0.5, 0.5], "x": [0.8, 0.3, 0.6, 0.5]})  # now x wins held out on c (.6)
    assert head_to_head(S, "ref", ["x"], PANEL, GRID).iloc[0]["wins held out"] == "1/3"
