"""Findings of the report (glfs_workflow.findings: numbers, names and flags) and its tables
(glfs_workflow.report_tables), on small hand-made result tables.

Every expected value follows from the fake numbers written here (e.g. a method whose
NMI is below the random mean must be listed below the floor), not from the code's own
output; the words the report puts around them are its templates' (tested by the
rendering tests in tests/workflow/test_report_glfs.py).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from glfs.api import METHODS, classifier_rows
from glfs_workflow import findings as F
from glfs_workflow import report_tables as T
from glfs_workflow.report_tables import nmi_summary_with_floor, sensitivity_table


def _clustering(means: dict, grid=(10, 50, 200), runs=3, spread=0.01):
    """clustering_nmi.tsv rows: method -> {k: mean NMI}; runs spread symmetrically around the mean."""
    rows = []
    for m, by_k in means.items():
        for k in grid:
            for r in range(runs):
                rows.append(
                    {
                        "method": m,
                        "n_features": k,
                        "run": r,
                        "nmi": by_k[k] + spread * (r - (runs - 1) / 2),
                        "nmi_max": by_k[k] / 2,
                        "kmeans_acc": 0.5,
                        "kmeans_nmi": 0.1,
                        "loo_1nn_acc": 0.6,
                    }
                )
    return pd.DataFrame(rows)


def _random(means: dict, sds: dict, draws=5):
    """clustering_random.tsv rows with exactly the given mean and (ddof=1) sd over draws per k."""
    rows = []
    z = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])[:draws]
    z = (z - z.mean()) / z.std(ddof=1)
    for k in means:
        for i in range(draws):
            rows.append(
                {
                    "method": "random_genes",
                    "n_features": k,
                    "draw": i,
                    "run": 0,
                    "nmi": means[k] + sds[k] * z[i],
                    "nmi_max": 0.0,
                    "kmeans_acc": 0.3,
                    "kmeans_nmi": 0.0,
                    "loo_1nn_acc": 0.4,
                    "seed": i,
                }
            )
    return pd.DataFrame(rows)


GRID = (10, 50, 200)
FLOOR = _random({10: 0.20, 50: 0.20, 200: 0.30}, {10: 0.05, 50: 0.05, 200: 0.0})
CDF = _clustering(
    {
        "good": {10: 0.60, 50: 0.50, 200: 0.30},  # far above mean + sd everywhere
        "within": {10: 0.22, 50: 0.24, 200: 0.30},  # above the mean, below mean + sd
        "bad": {10: 0.05, 50: 0.10, 200: 0.30},  # below the random mean
        "sup": {10: 0.90, 50: 0.90, 200: 0.30},  # a supervised reference
    },
    grid=GRID,
)


def test_floor_summary_mean_and_sd_over_draws():
    fl = F.floor_summary(FLOOR).set_index("n_features")
    assert fl.loc[10, "floor_mean"] == pytest.approx(0.20)
    assert fl.loc[10, "floor_sd"] == pytest.approx(0.05)
    assert (fl["n_draws"] == 5).all()
    # runs within a draw are averaged before the sd over draws
    two_runs = pd.concat([FLOOR.assign(run=0, nmi=FLOOR["nmi"] - 0.1), FLOOR.assign(run=1, nmi=FLOOR["nmi"] + 0.1)])
    fl2 = F.floor_summary(two_runs).set_index("n_features")
    assert fl2.loc[10, "floor_sd"] == pytest.approx(0.05)


def test_floor_comparison_classifies_methods():
    comp = F.floor_comparison(CDF, FLOOR).set_index(["method", "n_features"])
    assert comp.loc[("good", 10), "clears"] and comp.loc[("sup", 50), "clears"]
    assert not comp.loc[("within", 10), "clears"]  # 0.22 < 0.20 + 0.05
    assert not comp.loc[("bad", 10), "clears"]
    assert comp.loc[("bad", 10), "margin"] == pytest.approx(0.05 - 0.20)


def _at(facts, k):
    return next(f for f in facts["floor"]["at"] if f["k"] == k)


def test_clustering_facts_sort_methods_against_the_floor():
    f = F.clustering_facts(CDF, FLOOR, supervised=["sup"])
    at10 = _at(f, 10)
    # at 10 genes the floor is 0.20 +- 0.05: sup 0.90 and good 0.60 above 0.25 (best first); within 0.22 in
    # [0.15, 0.25]; bad 0.05 below 0.15
    assert at10["above"] == ["sup", "good"] and at10["within"] == ["within"] and at10["below"] == ["bad"]
    assert at10["n"] == 4 and at10["n_draws"] == 5
    assert at10["floor_mean"] == pytest.approx(0.20) and at10["floor_sd"] == pytest.approx(0.05)
    # below all genes (200): within (0.22, 0.24 vs 0.25) and bad never clear it, in the table's order
    assert f["floor"]["never"] == ["within", "bad"]
    # the best unsupervised result at <= 100 genes is good's 0.60 at 10, not the supervised reference
    assert f["unsupervised"]["best"] == {"method": "good", "nmi": pytest.approx(0.60), "k": 10}
    assert not f["unsupervised"]["all_near_zero"] and f["unsupervised"]["near"] == []
    assert f["supervised_best"]["method"] == "sup" and f["supervised_best"]["nmi"] == pytest.approx(0.90)
    assert f["all_genes"] == {"k": 200, "nmi": pytest.approx(0.30)}


def test_clustering_facts_near_zero_only_when_every_unsupervised_method_is():
    low = _clustering(
        {"a": {10: 0.02, 50: 0.05, 200: 0.3}, "b": {10: 0.01, 50: 0.08, 200: 0.3}, "sup": {10: 0.9, 50: 0.9, 200: 0.3}},
        grid=GRID,
    )
    u = F.clustering_facts(low, FLOOR, supervised=["sup"])["unsupervised"]
    assert u["all_near_zero"] and u["best"] == {"method": "b", "nmi": pytest.approx(0.08), "k": 50}
    high = _clustering({"a": {10: 0.02, 50: 0.15, 200: 0.3}}, grid=GRID)
    assert not F.clustering_facts(high, FLOOR)["unsupervised"]["all_near_zero"]
    # some but not all near 0: they are named, lowest peak first
    mixed = _clustering(
        {"a": {10: 0.02, 50: 0.15, 200: 0.3}, "b": {10: 0.01, 50: 0.05, 200: 0.3}, "c": {10: 0.03, 50: 0.09, 200: 0.3}},
        grid=GRID,
    )
    u = F.clustering_facts(mixed, FLOOR)["unsupervised"]
    assert not u["all_near_zero"] and u["near"] == ["b", "c"] and u["n_methods"] == 3
    assert u["threshold"] == F.NEAR_ZERO_NMI


def test_clustering_facts_without_floor():
    f = F.clustering_facts(CDF, None)
    assert f["floor"] is None and f["unsupervised"]["best"]["method"] == "sup"  # nothing named supervised here
    assert F.clustering_facts(None, FLOOR) is None


@pytest.mark.parametrize(
    ("top", "descriptions", "flagged"),
    [
        ({"glfs": ["RPS4Y1", "DDX3Y", "EGFR"], "ls": ["EGFR", "PDGFRA"]}, None, {"glfs": ["RPS4Y1", "DDX3Y"]}),
        ({"glfs": ["EGFR", "PDGFRA"]}, None, {}),
        # probe ids: the symbol is in the data's description
        (
            {"glfs": ["M58459_at", "X00351_at"]},
            {"M58459_at": "RPS4Y1 Ribosomal protein S4, Y-linked"},
            {"glfs": ["M58459_at"]},
        ),
        # a symbol inside a longer word is not a hit
        ({"glfs": ["UTYX1", "XISTR"]}, None, {}),
        # Golub-style descriptions: the first word is the (old) symbol, or the text says Y-linked;
        # "Sry-Related ..." (SOX12) is not SRY
        (
            {"glfs": ["a_at", "b_at", "c_at"]},
            {
                "a_at": "TDF Zinc finger protein Y-linked (ZFY)",
                "b_at": "Sry-Related Hmg-Box 12 Protein (Gb:X73039)",
                "c_at": "TSPY Testis specific protein",
            },
            {"glfs": ["a_at", "c_at"]},
        ),
        ({"v": ["XIST", "KDM5D"]}, None, {"v": ["XIST", "KDM5D"]}),
    ],
)
def test_sex_genes_are_flagged(top, descriptions, flagged):
    for m, genes in top.items():
        assert F.sex_genes_in(genes, descriptions) == flagged.get(m, [])
    sex = F.top_gene_facts(top, descriptions=descriptions)["sex"]
    assert sex == [{"method": m, "hits": h, "n": len(top[m])} for m, h in flagged.items()]


def test_top_gene_facts_name_the_recommended_methods_top_genes():
    t = F.top_gene_facts({"glfs": list("ABCDEFG"), "variance": list("XYZ")})
    assert t["highlight"] == "glfs" and t["top"] == [[g, None] for g in "ABCDE"]
    t = F.top_gene_facts({"glfs": ["p1_at", "p2_at"]}, descriptions={"p1_at": "HSPB1 Heat shock 27kD protein 1"})
    assert t["top"] == [["p1_at", "HSPB1 Heat shock 27kD protein 1"[:30]], ["p2_at", None]]
    assert F.top_gene_facts({"variance": list("XYZ")})["highlight"] is None  # the recommended method did not run


def _path(lams, sizes, objective=None, converged=None):
    df = pd.DataFrame({"lam": lams, "n_selected": sizes, "objective": objective or [1.0] * len(lams)})
    if converged is not None:
        df["converged"] = converged
    return df


@pytest.mark.parametrize(
    ("sizes", "direction"),
    [
        ([1368, 454, 30, 1], "shrinks"),
        ([1, 5, 7, 7], "grows"),
        ([3, 1, 4, 2], "mixed"),
        ([2, 2, 2, 2], "flat"),
        ([1, 1, 1, 1], "flat"),
    ],
)
def test_path_facts_direction(sizes, direction):
    lams = [27.7, 16.6, 9.95, 5.97]
    p = _path(lams, sizes)
    f = F.path_facts(p.sample(frac=1.0, random_state=1), "glfs_exact", "gbm")  # row order must not matter
    assert f["direction"] == direction
    assert f["sizes"] == sizes and f["lams"] == lams  # largest lam first
    assert f["converged"] is None


def test_path_facts_converged_points():
    p = _path([4, 2, 1], [1, 3, 9], converged=[True, False, True])
    assert F.path_facts(p, "m", "d")["converged"] == {"n": 3, "n_converged": 2, "sizes": [1, 9]}
    p = _path([4, 2, 1], [1, 3, 9], converged=[True, True, True])
    assert F.path_facts(p, "m", "d")["converged"]["n_converged"] == 3
    p = _path([4, 2, 1], [1, 3, 9], converged=[False, False, False])
    assert F.path_facts(p, "m", "d")["converged"] == {"n": 3, "n_converged": 0, "sizes": []}
    assert F.path_facts(_path([], []), "m", "d") is None


def _meta_path(rows, **params):
    return {"method": "glfs_exact", "params": params, "extra": {"path": rows}}


def test_path_frame_reads_lists_with_and_without_convergence_and_records():
    p3 = F.path_frame(_meta_path([[2.0, 1, 0.5], [1.0, 4, 0.7]]))
    assert list(p3.columns) == ["lam", "n_selected", "objective"]
    p5 = F.path_frame(_meta_path([[2.0, 1, 0.5, True, 1e-9], [1.0, 4, 0.7, False, 0.3]]))
    assert list(p5.columns) == ["lam", "n_selected", "objective", "converged", "kkt_residual"]
    assert p5["converged"].tolist() == [True, False]
    rec = F.path_frame(_meta_path([{"lam": 2.0, "n_selected": 1, "objective": 0.5, "converged": 1}]))
    assert rec["converged"].tolist() == [True]
    assert F.path_frame({"method": "glfs", "params": {}, "extra": {"history": [1.0]}}) is None


def test_convergence_records_table_and_facts():
    metas = {
        ("a", "glfs"): {"params": {"converged": True, "n_swaps": 3, "criterion": 1.0, "greedy_criterion": 1.1}},
        ("b", "glfs"): {"params": {"converged": False, "n_swaps": 50, "criterion": 1.0, "greedy_criterion": 1.2}},
        ("a", "glfs_exact"): _meta_path([[2.0, 1, 0.5, True, 1e-9], [1.0, 4, 0.7, False, 0.3]], lam=1.0),
        ("a", "glfs_paper"): _meta_path([[2.0, 1, 0.5], [1.0, 4, 0.7]], lam=2.0, n_selected_at_lam=1),
    }
    rec = {(r["dataset"], r["method"]): r for r in F.convergence_records(metas)}
    assert rec[("a", "glfs")]["kind"] == "design" and rec[("a", "glfs")]["n_swaps"] == 3
    exact = rec[("a", "glfs_exact")]
    assert (exact["kind"], exact["n_points"], exact["n_converged"]) == ("path", 2, 1)
    assert exact["lam"] == 1.0 and exact["lam_converged"] is False and exact["kkt_max"] == pytest.approx(0.3)
    assert rec[("a", "glfs_paper")]["n_converged"] is None and rec[("a", "glfs_paper")]["converged"] is None
    f = F.convergence_facts(list(rec.values()))
    assert f["design"] == {"n": 2, "n_ok": 1, "not_ok": ["b"]}
    assert f["paths"] == {"recorded": True, "bad": [("glfs_exact", "a", 1, 2)]}
    t = T.convergence_table(list(rec.values())).set_index(["dataset", "method"])
    assert t.loc[("a", "glfs"), "converged"] == "yes" and t.loc[("b", "glfs"), "converged"] == "no"
    assert t.loc[("a", "glfs_exact"), "converged"] == "1 of 2 path points"
    assert t.loc[("a", "glfs_paper"), "converged"] == "not recorded"


def test_collapse_facts_use_the_path_numbers():
    paths = {
        ("gbm", "glfs_exact"): _path([3.0, 2.0, 1.0], [0, 1, 1], objective=[0.0, 0.25, 0.5]),
        ("gbm", "glfs_paper"): _path([3.0, 2.0], [2, 5], objective=[-0.1, 0.2]),
    }
    f = F.collapse_facts(paths)
    exact, paper = f["entries"]
    # the exact reading: objective 0.25..0.5 at its 2 non-empty points, all above beta = 0's 0
    assert exact == {
        "kind": "exact",
        "dataset": "gbm",
        "method": "glfs_exact",
        "min": 0.25,
        "max": 0.5,
        "n_nonempty": 2,
        "all_positive": True,
    }
    assert paper == {"kind": "negative", "dataset": "gbm", "method": "glfs_paper", "n_negative": 1, "n": 2, "min": -0.1}
    assert f["single"] == [("gbm", [("glfs_exact", 2, 3)])]


def test_side_by_side_methods_come_from_the_registry():
    glfs = [m for m, info in METHODS.items() if info.is_glfs]
    methods = F.side_by_side_methods()
    assert methods[: len(glfs)] == glfs and len(methods) == len(glfs) + 2
    for m in methods[len(glfs) :]:
        info = METHODS[m]
        assert info.needs_graph and not info.needs_labels and not info.is_glfs
    assert {METHODS[m].family for m in methods[len(glfs) :]} == {"score", "optimal_design"}


def test_classifier_rows_of_the_registry():
    for m, info in METHODS.items():
        rows = classifier_rows(m)
        if not info.is_glfs:
            assert rows == ()
        elif info.objective == "design":  # the budgeted design also gives the class-graph row
            assert rows == (m, f"{m}_supervised")
        else:
            assert rows == (m,)
    assert "glfs_supervised" in F.glfs_classifier_rows()


def test_side_by_side_has_the_floor_row():
    tab = T.side_by_side(
        _clustering(
            {
                "glfs": {10: 0.4, 50: 0.4, 200: 0.3},
                "laplacian_score": {10: 0.3, 50: 0.3, 200: 0.3},
                "variance": {10: 0.9, 50: 0.9, 200: 0.3},
            },
            grid=GRID,
        ),
        FLOOR,
    )
    assert tab["method"].tolist()[:2] == ["glfs", "laplacian_score"]  # variance is not in the side-by-side set
    assert tab.columns.tolist() == ["method", "NMI@10", "NMI@50"]
    assert tab.iloc[-1]["method"].startswith("random genes (floor, 5 draws)")
    assert tab.iloc[-1]["NMI@10"] == "0.200 +- 0.050"
    assert tab.iloc[0]["NMI@10"] == "0.400"


def test_nmi_summary_with_floor_marks_where_methods_clear_it():
    tab = nmi_summary_with_floor(CDF, FLOOR).set_index("method")
    assert tab.loc["good", "clears floor at"] == "every k"
    assert tab.loc["bad", "clears floor at"] == "never"
    assert tab.loc["random genes (floor)", "NMI@10"] == pytest.approx(0.20)
    assert tab.loc["random genes: sd over draws", "NMI@10"] == pytest.approx(0.05)


def test_greedy_facts():
    ok = pd.DataFrame(
        {
            "k": [10, 25],
            "greedy_criterion": [1.0, 2.0],
            "criterion": [1.0, 1.9],
            "pct_lower": [0.0, 5.0],
            "n_swaps": [0, 2],
            "converged": [True, True],
        }
    )
    f = F.greedy_facts({"d": ok})
    assert f["n_cases"] == 2 and f["worse"] == [] and f["n_equal"] == 1 and f["not_converged"] == []
    assert f["best"] == {"pct": 5.0, "dataset": "d", "k": 25}
    bad = ok.assign(criterion=[1.1, 1.9], converged=[True, False])
    f = F.greedy_facts({"d": bad})
    assert f["worse"] == [("d", 10)] and f["not_converged"] == [("d", 25)]


def test_sensitivity_facts_and_table():
    rows = []
    for gw, nmi10 in [(0.0, 0.30), (0.1, 0.20), (1.0, 0.40)]:
        for k, nmi in [(10, nmi10), (50, 0.5)]:
            rows.append(
                {
                    "graph_weight": gw,
                    "is_default": gw == 0.1,
                    "lambda1": gw / 5,
                    "lambda2": 1.0,
                    "n_selected": 50,
                    "criterion": 1 + gw,
                    "greedy_criterion": 1 + gw,
                    "converged": True,
                    "n_swaps": 0,
                    "k": k,
                    "nmi_mean": nmi,
                    "nmi_sd": 0.01,
                    "nmi_max_mean": nmi,
                    "n_runs": 3,
                }
            )
    sens = pd.DataFrame(rows)
    k10 = F.sensitivity_facts(sens, "gbm")["per_k"][0]
    # at 10 genes: lowest 0.20 (weight 0.1, the default: two weights above it, rank 3 of 3), highest 0.40 (weight 1)
    assert k10 == {
        "k": 10,
        "lo_nmi": 0.2,
        "lo_weight": 0.1,
        "hi_nmi": 0.4,
        "hi_weight": 1.0,
        "default": {"weight": 0.1, "nmi": 0.2, "rank": 3, "n": 3},
        "without_graph": 0.3,
    }
    assert F.sensitivity_facts(sens, "gbm")["not_converged"] == []
    tab = sensitivity_table(sens)
    assert tab["graph_weight"].tolist() == [0.0, 0.1, 1.0]
    assert tab["default"].tolist() == ["", "default", ""]
    assert tab["NMI@10"].tolist() == [0.3, 0.2, 0.4]


def _cls(rows):
    cols = ["method", "cv_errors", "cv_n", "test_errors", "test_n", "n_genes", "params"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_classification_facts_compare_with_random_genes():
    rnd = json.dumps(
        {
            "statistic": "median over 21 seeded random gene sets",
            "n_genes_as": "glfs_supervised",
            "test_errors_range": [2, 12],
        }
    )
    c = _cls(
        [
            ("glfs_supervised", 1, 38, 1, 34, 8, "{}"),
            ("glfs", 5, 38, 9, 34, 16, "{}"),
            ("elastic_net", 2, 38, 2, 34, 20, "{}"),
            ("random_genes", 6, 38, 6, 34, 8, rnd),
            ("linear_svm", None, 38, None, 34, None, "{}"),
        ]
    )
    f = F.classification_facts(c)
    assert f["failed"] == ["linear_svm"] and f["test_n"] == 34
    assert f["best_errors"] == 1 and f["best"] == ["glfs_supervised"]
    r = f["random"]
    assert (r["n_genes"], r["test_errors"], r["range"], r["n_genes_as"]) == (8, 6, [2, 12], "glfs_supervised")
    # fewer test errors than random genes' 6: glfs_supervised (1) and elastic_net (2); glfs (9) not
    assert r["fewer"] == ["glfs_supervised", "elastic_net"] and r["not_fewer"] == ["glfs"]
    # the GLFS rows, the supervised one first, with the table's numbers
    assert [(g["method"], g["n_genes"], g["test_errors"], g["cv_errors"], g["cv_n"]) for g in f["glfs"]] == [
        ("glfs_supervised", 8, 1, 1, 38),
        ("glfs", 16, 9, 5, 38),
    ]
    every_failed = _cls([("glfs", None, 38, None, 34, None, "{}")])
    assert F.classification_facts(every_failed) == {"failed": ["glfs"], "test_n": None}


def test_provenance_table_and_facts():
    prov = {
        "created": "t",
        "files": {
            "expression": {
                "sha256": "ab" * 32,
                "expected_sha256": "AB" * 32,
                "source": "mirror",
                "path": "p",
                "size": 3,
            },
            "labels": {"sha256": "cd" * 32, "expected_sha256": "ef" * 32, "source": "download"},
            "extra": {"sha256": "12" * 32, "source": "mirror"},
        },
    }
    t = F.provenance_table(prov).set_index("file")
    assert t.loc["expression", "checksum"] == "matches expected"
    assert t.loc["labels", "checksum"] == "MISMATCH"
    assert t.loc["extra", "checksum"] == "no checksum given"
    assert t.loc["expression", "sha256"] == "ab" * 8 + "..."
    f = F.provenance_facts({"ds": t.reset_index()})
    assert (f["checked"], f["match"], f["unchecked"], f["mismatch"]) == (2, 1, 1, ["ds/labels"])
    assert dict(f["sources"]) == {"mirror": 2, "download": 1}


def test_simulation_and_runtime_facts():
    sim = pd.DataFrame(
        {
            "method": ["a", "a", "b", "b"],
            "sigma": [0.1, 0.5, 0.1, 0.5],
            "n_noise": [10] * 4,
            "replicate": [0] * 4,
            "score": [1.0, 1.0, 1.0, 0.25],
        }
    )
    f = F.simulation_facts(sim)
    assert f["perfect"] == ["a"] and f["lowest"] == ("b", pytest.approx((1.0 + 0.25) / 2))
    assert f["highest"] == ("a", 1.0)
    rt = pd.DataFrame(
        {
            "rule": ["x", "y"],
            "jobs": [1, 2],
            "total_s": [30.0, 10.0],
            "max_s": [30.0, 6.0],
            "slowest_job": ["x1", "y2"],
            "max_rss_mb": [1.0, 1.0],
        }
    )
    assert F.runtime_facts(rt) == {
        "total": 40.0,
        "rule": "x",
        "rule_s": 30.0,
        "pct": pytest.approx(75.0),
        "slowest_job": "x1",
        "max_s": 30.0,
    }


def test_paper_facts_count_rank_one_points():
    rows = [
        {"kind": "gbm_rank", "rank": 1},
        {"kind": "gbm_rank", "rank": 3},
        {"kind": "classification", "glfs": True, "method": "glfs_supervised", "dataset": "golub"},
        {"kind": "classification", "glfs": False, "method": "elastic_net", "dataset": "golub"},
        {"kind": "sigma", "method": "glfs"},
    ]
    f = F.paper_facts(rows)
    assert f["ranks"] == [1, 3] and f["n_first"] == 1
    assert [r["method"] for r in f["glfs_rows"]] == ["glfs_supervised"]


def test_paper_vs_run_rows_carry_their_values():
    cdf = _clustering(
        {
            "glfs": {10: 0.5, 50: 0.4, 200: 0.3},
            "variance": {10: 0.6, 50: 0.3, 200: 0.3},
            "fisher_score": {10: 0.9, 50: 0.9, 200: 0.3},
        },
        grid=GRID,
    )
    rows = T.paper_vs_run_rows({"clustering": {"tcga_gbm": cdf, "golub": cdf}, "supervised": ["fisher_score"]})
    # GBM only; at 10 genes variance (0.6) is above glfs (0.5): rank 2 of the 2 unsupervised methods
    assert [(r["kind"], r["dataset"], r["rank"]) for r in rows] == [("gbm_rank", "tcga_gbm", 2)]
    assert list(T.paper_vs_run(rows).columns) == T.PAPER_COLUMNS


def test_report_names_methods_that_did_not_converge():
    import anndata

    from glfs_workflow.sections import _not_converged

    ad = anndata.AnnData(np.zeros((3, 2)))
    ad.uns["q_alpha"] = {"params": {"method": "q_alpha", "converged": np.bool_(False), "n_iter": np.int64(30)}}
    ad.uns["spca"] = {"params": {"method": "spca", "converged": np.bool_(True), "n_iter": 12}}
    ad.uns["lkr_score"] = {"params": {"method": "lkr_score", "converged": False}}
    ad.uns["variance"] = {"params": {"method": "variance"}}
    d = SimpleNamespace(methods=("variance", "spca", "q_alpha", "lkr_score"), adata=ad)
    assert _not_converged(d) == [("q_alpha", 30), ("lkr_score", None)]
    ad.uns["q_alpha"]["params"]["converged"] = True
    assert _not_converged(d) == [("lkr_score", None)]


def test_sections_need_no_other_section_first():
    """Issue 27 item 3: the GLFS and paper-versus-run sections are functions of the datasets' records; made
    before (or without) the dataset sections they show the same side-by-side and GBM rows (they read a
    shared object the dataset section filled before, and were empty when called first)."""
    import anndata

    from glfs_workflow.report_inputs import DatasetResults, Provenance
    from glfs_workflow.sections import dataset_section, glfs_section, paper_vs_run_section

    rows = [
        {
            "method": m,
            "n_features": k,
            "run": 0,
            "nmi": v,
            "nmi_max": v,
            "kmeans_acc": v,
            "kmeans_nmi": v,
            "loo_1nn_acc": v,
            "seed": 0,
        }
        for m, v in (("glfs", 0.6), ("laplacian_score", 0.4), ("lapaofs", 0.5))
        for k in (10, 50, 100)
    ]
    ad = anndata.AnnData(np.zeros((4, 3)))
    ds = DatasetResults(
        name="tcga_gbm",
        labelled=True,
        methods=("glfs", "laplacian_score", "lapaofs"),
        heatmap_method=None,
        adata=ad,
        given=frozenset({"adata", "clustering"}),
        tables={"clustering": pd.DataFrame(rows)},
        selections={},
        metas={},
        provenance=Provenance(None),
    )
    first = glfs_section([ds], "glfs_exact", None)
    paper_first = paper_vs_run_section([ds], "glfs_exact", [], {}, None, None, None)
    section, figures = dataset_section(ds, [])
    assert section["clustering"]["fig"] in figures and callable(figures[section["clustering"]["fig"]])
    [(name, table)] = first["sbs_tables"]
    assert name == "tcga_gbm" and list(table["method"]) == ["glfs", "laplacian_score", "lapaofs"]
    assert list(table["NMI@10"]) == ["0.600", "0.400", "0.500"]
    assert paper_first["facts"]["ranks"] == [1]  # GLFS first by NMI at k = 10 (the GBM claim's k <= 25)
    again = glfs_section([ds], "glfs_exact", None)
    pd.testing.assert_frame_equal(again["sbs_tables"][0][1], table)


# ---- the figures on several processes ----------------------------------------------------------


def _bars(values, title):
    """A figure drawn as the report's are (PNG bytes): bars of ``values`` under ``title``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from glfs_workflow.figures import _png

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.bar(range(len(values)), values)
    ax.set_title(title)
    return _png(fig)


def test_figures_are_drawn_in_order_and_a_failed_figure_fails_the_call():
    """draw_figures: one PNG per drawing, in the drawings' order, each the figure drawn alone; a figure that
    fails fails the call."""
    from functools import partial

    pytest.importorskip("jinja2")  # glfs_workflow.report renders with Jinja2 and draws with matplotlib (the workflow
    pytest.importorskip("matplotlib")  # extra; .ci/minimums installs the library alone)
    from glfs_workflow.report import draw_figures

    rng = np.random.default_rng(0)
    values = [rng.random(5 + i) for i in range(5)]
    drawings = {f"fig{i}": (lambda v=values[i], t=f"figure {i}": _bars(v, t)) for i in range(5)}
    got = draw_figures(drawings)
    assert list(got) == list(drawings)
    assert got["fig3"] == _bars(values[3], "figure 3")
    assert len(set(got.values())) == len(got) and all(png.startswith(b"\x89PNG") for png in got.values())

    def broken():
        raise ValueError("no data for this figure")

    with pytest.raises(ValueError, match="no data for this figure"):
        draw_figures({**drawings, "broken": broken, "after": partial(_bars, [1, 2], "after")})
