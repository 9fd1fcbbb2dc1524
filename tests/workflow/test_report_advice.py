"""The report's opening advice (glfs_workflow.which.advice_facts and templates/which.html's advice_block):
which selection to use for cells, from the development panel's summary, and for bulk data, from this
run's spectral-protocol answers.  Synthetic panel summaries whose answer is known by construction."""

from __future__ import annotations

import pandas as pd
import pytest

from glfs.api import METHODS, methods_of

pytest.importorskip("jinja2")
from glfs_workflow import render as Rn  # noqa: E402
from glfs_workflow import which as F  # noqa: E402

HVG1, HVG2, HVG3 = methods_of("hvg")[:3]
GRAPH = next(m for m, info in METHODS.items() if info.family == "score" and info.needs_graph)


def _panel(means: dict, n_sets=4) -> pd.DataFrame:
    """method -> (score at 500, score at 2,000)."""
    return pd.DataFrame(
        [
            {"method": m, "n_genes": k, "mean_score": v[i], "n_sets": n_sets}
            for m, v in means.items()
            for i, k in enumerate(F.ADVICE_COUNTS)
        ]
    )


def _bulk(dataset, best_mean, floor, all_genes, order=(GRAPH, HVG1, HVG2)):
    return {
        "dataset": dataset,
        "protocol": "spectral",
        "best": order[0],
        "best_mean": best_mean,
        "floor_mean": floor,
        "all_genes_better": all_genes is not None and all_genes > best_mean,
        "grid": [5, 200],
        "rows": [{"method": m, "supervised": False} for m in order] + [{"method": "sup", "supervised": True}],
    }


def test_an_hvg_flavour_best_on_the_panel_is_recommended_as_scanpy():
    panel = _panel({HVG1: (0.70, 0.72), HVG2: (0.60, 0.61), GRAPH: (0.65, 0.69), F.RANDOM_GENES: (0.40, 0.50)})
    a = F.advice_facts([], panel)
    c = a["cells"]
    assert c["best"] == HVG1 and c["best_is_hvg"] and c["best_scanpy"] == HVG1.removeprefix("hvg_")
    assert c["others"] == [HVG2] and c["random"] == [0.40, 0.50] and c["n_sets"] == 4 and c["best_own"] == GRAPH
    html = Rn.environment(True).from_string('{% import "which.html" as wh %}{{ wh.advice_block(a, []) }}').render(a=a)
    assert f'flavor="{c["best_scanpy"]}"' in html and "no selection of this package beats it" in html
    assert f"this package, {GRAPH}, 0.650 / 0.690" in html


def test_a_graph_selection_best_on_the_panel_is_recommended_by_name():
    panel = _panel(
        {HVG1: (0.60, 0.62), HVG2: (0.61, 0.60), HVG3: (0.50, 0.50), GRAPH: (0.66, 0.63), F.RANDOM_GENES: (0.4, 0.5)}
    )
    c = F.advice_facts([], panel)["cells"]
    # mean over the two counts: GRAPH .645 > HVG1 .61 > HVG2 .605 > HVG3 .50; the flavours best first
    assert c["best"] == GRAPH and not c["best_is_hvg"] and c["others"] == [HVG1, HVG2, HVG3] and c["best_own"] is None
    html = (
        Rn.environment(True)
        .from_string('{% import "which.html" as wh %}{{ wh.advice_block(a, []) }}')
        .render(a={"cells": c, "bulk": []})
    )
    assert f'<b>Single cells (UMI counts):</b> use <code>{GRAPH}</code> (<code>glfs.tl.select(adata, "{GRAPH}"' in html


def test_no_panel_no_cell_advice_and_a_panel_without_random_genes_is_not_used():
    assert F.advice_facts([], None)["cells"] is None
    assert F.advice_facts([], _panel({HVG1: (0.7, 0.7)}))["cells"] is None


def test_bulk_advice_says_where_all_genes_beat_every_selection():
    which = [_bulk("g1", 0.5, 0.4, 0.6), _bulk("g2", 0.5, 0.6, 0.4), {"protocol": "leiden", "dataset": "cells"}]
    b = F.advice_facts(which, None)["bulk"]
    assert [(x["dataset"], x["above_random"], x["all_genes_better"]) for x in b] == [
        ("g1", True, True),
        ("g2", False, False),
    ]
    html = (
        Rn.environment(True)
        .from_string('{% import "which.html" as wh %}{{ wh.advice_block(a, []) }}')
        .render(a=F.advice_facts(which, None))
    )
    assert "on g1 clustering on all genes beats every selection of at most 200 genes" in html
    assert "g2 " + GRAPH + " (not above random genes)" in html


def test_bulk_overall_is_the_best_mean_rank_over_the_datasets():
    which = [
        _bulk("g1", 0.5, 0.4, None, (HVG1, GRAPH, HVG2)),
        _bulk("g2", 0.5, 0.4, None, (HVG2, GRAPH, HVG1)),
        _bulk("g3", 0.5, 0.4, None, (GRAPH, HVG2, HVG1)),
    ]
    a = F.advice_facts(which, None)
    # mean ranks: GRAPH (2+2+1)/3 = 1.67, HVG1 (1+3+3)/3 = 2.33, HVG2 (3+1+2)/3 = 2: GRAPH, though best on one set only
    assert a["bulk_overall"] == GRAPH and a["bulk_overall_rank"] == pytest.approx(5 / 3)
    assert F.advice_facts(which[:1], None)["bulk_overall"] is None
