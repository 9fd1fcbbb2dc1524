"""Findings of the report (glfs_workflow.findings) and the report's floor and GLFS tables, on small hand-made result tables.

Every expected sentence part follows from the fake numbers written here (e.g. a
method whose NMI is below the random mean must be named as not clearing the
floor), not from the code's own output.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from glfs_workflow import findings as F
from glfs_workflow.report import nmi_summary_with_floor, sensitivity_table


def _clustering(means: dict, grid=(10, 50, 200), runs=3, spread=0.01):
    """clustering_nmi.tsv rows: method -> {k: mean NMI}; runs spread symmetrically around the mean."""
    rows = []
    for m, by_k in means.items():
        for k in grid:
            for r in range(runs):
                rows.append({"method": m, "n_features": k, "run": r, "nmi": by_k[k] + spread * (r - (runs - 1) / 2),
                             "nmi_max": by_k[k] / 2, "kmeans_acc": 0.5, "kmeans_nmi": 0.1, "loo_1nn_acc": 0.6})
    return pd.DataFrame(rows)


def _random(means: dict, sds: dict, draws=5):
    """clustering_random.tsv rows with exactly the given mean and (ddof=1) sd over draws per k."""
    rows = []
    z = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])[:draws]
    z = (z - z.mean()) / z.std(ddof=1)
    for k in means:
        for i in range(draws):
            rows.append({"method": "random_genes", "n_features": k, "draw": i, "run": 0,
                         "nmi": means[k] + sds[k] * z[i], "nmi_max": 0.0, "kmeans_acc": 0.3, "kmeans_nmi": 0.0,
                         "loo_1nn_acc": 0.4, "seed": i})
    return pd.DataFrame(rows)


GRID = (10, 50, 200)
FLOOR = _random({10: 0.20, 50: 0.20, 200: 0.30}, {10: 0.05, 50: 0.05, 200: 0.0})
CDF = _clustering({
    "good": {10: 0.60, 50: 0.50, 200: 0.30},     # far above mean + sd everywhere
    "within": {10: 0.22, 50: 0.24, 200: 0.30},   # above the mean, below mean + sd
    "bad": {10: 0.05, 50: 0.10, 200: 0.30},      # below the random mean
    "sup": {10: 0.90, 50: 0.90, 200: 0.30},      # a supervised reference
}, grid=GRID)


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


def test_clustering_findings_name_methods_below_the_floor():
    text = " ".join(F.clustering_findings(CDF, FLOOR, "toy", supervised=["sup"]))
    s10 = next(s for s in F.clustering_findings(CDF, FLOOR, "toy", supervised=["sup"]) if s.startswith("At 10 genes"))
    assert "2 of 4 methods clear the random floor" in s10
    clears = s10.split("Within")[0]
    assert "good" in clears and "sup" in clears and "bad" not in clears and "within" not in clears
    assert "Within the spread of random genes: within." in s10  # 0.22 in [0.15, 0.25]
    assert "Below it (under the mean - 1 sd): bad." in s10  # 0.05 < 0.15
    assert "Never above the floor at any grid size below all genes: within and bad." in text
    assert "0.200 + 0.050" in s10
    # best unsupervised is 'good', not the supervised reference
    assert "best unsupervised result at <= 100 genes is good with NMI 0.600 at 10 genes" in text
    assert "supervised reference sup" in text
    assert "With all 200 genes NMI is 0.300" in text


def test_clustering_findings_near_zero_only_when_every_unsupervised_method_is():
    low = _clustering({"a": {10: 0.02, 50: 0.05, 200: 0.3}, "b": {10: 0.01, 50: 0.08, 200: 0.3},
                       "sup": {10: 0.9, 50: 0.9, 200: 0.3}}, grid=GRID)
    text = " ".join(F.clustering_findings(low, FLOOR, "golubish", supervised=["sup"]))
    assert "Every unsupervised method is near NMI 0 on golubish at <= 100 genes" in text
    assert "highest b with 0.080 at 50 genes" in text
    high = _clustering({"a": {10: 0.02, 50: 0.15, 200: 0.3}}, grid=GRID)
    assert "near NMI 0" not in " ".join(F.clustering_findings(high, FLOOR, "x"))
    # some but not all near 0: they are counted and named
    mixed = _clustering({"a": {10: 0.02, 50: 0.15, 200: 0.3}, "b": {10: 0.01, 50: 0.05, 200: 0.3},
                         "c": {10: 0.03, 50: 0.09, 200: 0.3}}, grid=GRID)
    text = " ".join(F.clustering_findings(mixed, FLOOR, "x"))
    assert "2 of 3 unsupervised methods stay near NMI 0 (below 0.1 at every gene count <= 100): b and c." in text
    assert "Every unsupervised method" not in text


def test_clustering_findings_without_floor_say_so():
    text = " ".join(F.clustering_findings(CDF, None, "toy"))
    assert "No random-genes floor" in text and "clear the random floor" not in text


@pytest.mark.parametrize(
    ("top", "descriptions", "flagged"),
    [
        ({"glfs": ["RPS4Y1", "DDX3Y", "EGFR"], "ls": ["EGFR", "PDGFRA"]}, None, {"glfs": ["RPS4Y1", "DDX3Y"]}),
        ({"glfs": ["EGFR", "PDGFRA"]}, None, {}),
        # probe ids: the symbol is in the data's description
        ({"glfs": ["M58459_at", "X00351_at"]}, {"M58459_at": "RPS4Y1 Ribosomal protein S4, Y-linked"}, {"glfs": ["M58459_at"]}),
        # a symbol inside a longer word is not a hit
        ({"glfs": ["UTYX1", "XISTR"]}, None, {}),
        # Golub-style descriptions: the first word is the (old) symbol, or the text says Y-linked;
        # "Sry-Related ..." (SOX12) is not SRY
        ({"glfs": ["a_at", "b_at", "c_at"]}, {"a_at": "TDF Zinc finger protein Y-linked (ZFY)",
                                               "b_at": "Sry-Related Hmg-Box 12 Protein (Gb:X73039)",
                                               "c_at": "TSPY Testis specific protein"}, {"glfs": ["a_at", "c_at"]}),
        ({"v": ["XIST", "KDM5D"]}, None, {"v": ["XIST", "KDM5D"]}),
    ],
)
def test_sex_genes_are_flagged(top, descriptions, flagged):
    for m, genes in top.items():
        assert F.sex_genes_in(genes, descriptions) == flagged.get(m, [])
    text = " ".join(F.top_gene_findings(top, "gbm", descriptions=descriptions))
    assert ("Sex:" in text) == bool(flagged)
    for m, hits in flagged.items():
        assert f"{m} ({len(hits)} of {len(top[m])}: {', '.join(hits)})" in text


def test_top_gene_findings_name_the_recommended_methods_top_genes():
    text = F.top_gene_findings({"glfs": list("ABCDEFG")}, "gbm")[0]
    assert text == "Top genes of glfs on gbm: A, B, C, D and E."
    text = F.top_gene_findings({"glfs": ["p1_at", "p2_at"]}, "golub", descriptions={"p1_at": "HSPB1 Heat shock 27kD protein 1"})[0]
    assert text == "Top genes of glfs on golub: p1_at (HSPB1 Heat shock 27kD protein ) and p2_at."


def _path(lams, sizes, objective=None, converged=None):
    df = pd.DataFrame({"lam": lams, "n_selected": sizes, "objective": objective or [1.0] * len(lams)})
    if converged is not None:
        df["converged"] = converged
    return df


@pytest.mark.parametrize(
    ("sizes", "word"),
    [([1368, 454, 30, 1], "shrinks as lam falls"), ([1, 5, 7, 7], "grows as lam falls"),
     ([3, 1, 4, 2], "is not monotone"), ([2, 2, 2, 2], "keeps 2 genes at every lam"),
     ([1, 1, 1, 1], "keeps 1 gene at every lam")],
)
def test_path_findings_direction(sizes, word):
    p = _path([27.7, 16.6, 9.95, 5.97], sizes)
    text = F.path_findings(p.sample(frac=1.0, random_state=1), "glfs_exact", "gbm")[0]  # row order must not matter
    assert word in text
    if not word.startswith("keeps"):
        assert f"from {sizes[0]} genes at lam = 27.7 to {sizes[-1]} at lam = 5.97" in text


def test_path_findings_converged_points():
    p = _path([4, 2, 1], [1, 3, 9], converged=[True, False, True])
    assert "2 of 3 points converged, with support sizes 1, 9." in " ".join(F.path_findings(p, "m", "d"))
    p = _path([4, 2, 1], [1, 3, 9], converged=[True, True, True])
    assert "All 3 points converged." in " ".join(F.path_findings(p, "m", "d"))
    p = _path([4, 2, 1], [1, 3, 9], converged=[False, False, False])
    assert "None of its 3 points converged" in " ".join(F.path_findings(p, "m", "d"))


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


def test_convergence_table_and_findings():
    metas = {
        ("a", "glfs"): {"params": {"converged": True, "n_swaps": 3, "criterion": 1.0, "greedy_criterion": 1.1}},
        ("b", "glfs"): {"params": {"converged": False, "n_swaps": 50, "criterion": 1.0, "greedy_criterion": 1.2}},
        ("a", "glfs_exact"): _meta_path([[2.0, 1, 0.5, True, 1e-9], [1.0, 4, 0.7, False, 0.3]], lam=1.0),
        ("a", "glfs_paper"): _meta_path([[2.0, 1, 0.5], [1.0, 4, 0.7]], lam=2.0, n_selected_at_lam=1),
    }
    t = F.convergence_table(metas).set_index(["dataset", "method"])
    assert t.loc[("a", "glfs"), "converged"] == "yes" and t.loc[("b", "glfs"), "converged"] == "no"
    assert "3 swaps" in t.loc[("a", "glfs"), "details"]
    assert t.loc[("a", "glfs_exact"), "converged"] == "1 of 2 path points"
    assert "chosen lam 1: NOT converged" in t.loc[("a", "glfs_exact"), "details"]
    assert "largest KKT residual 0.3" in t.loc[("a", "glfs_exact"), "details"]
    assert t.loc[("a", "glfs_paper"), "converged"] == "not recorded"
    text = " ".join(F.convergence_findings(t.reset_index()))
    assert "converged (no single swap lowers its criterion) on 1 of 2 datasets; not on b." in text
    assert "glfs_exact on a (1 of 2)" in text


def test_collapse_findings_use_the_path_numbers():
    paths = {("gbm", "glfs_exact"): _path([3.0, 2.0, 1.0], [0, 1, 1], objective=[0.0, 0.25, 0.5]),
             ("gbm", "glfs_paper"): _path([3.0, 2.0], [2, 5], objective=[-0.1, 0.2])}
    text = " ".join(F.collapse_findings(paths))
    assert "gbm, glfs_exact: objective 0.25 to 0.5 at the 2 non-empty path points, against 0 at beta = 0" in text
    assert "every point is worse than selecting nothing" in text
    assert "gbm: path points that keep a single gene: glfs_exact 2 of 3." in text
    assert "negative at 1 of 2 path points (minimum -0.1)" in text


def test_side_by_side_has_the_floor_row():
    tab = F.side_by_side(_clustering({"glfs": {10: 0.4, 50: 0.4, 200: 0.3}, "laplacian_score": {10: 0.3, 50: 0.3, 200: 0.3},
                                      "variance": {10: 0.9, 50: 0.9, 200: 0.3}}, grid=GRID), FLOOR)
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


def test_greedy_findings():
    ok = pd.DataFrame({"k": [10, 25], "greedy_criterion": [1.0, 2.0], "criterion": [1.0, 1.9], "pct_lower": [0.0, 5.0],
                       "n_swaps": [0, 2], "converged": [True, True]})
    text = " ".join(F.greedy_findings({"d": ok}))
    assert "no worse than greedy LapAOFS at every k on every dataset (2 cases)" in text
    assert "largest gain is 5.00% (d, k = 25)" in text and "1 cases equal greedy" in text
    bad = ok.assign(criterion=[1.1, 1.9], converged=[True, False])
    text = " ".join(F.greedy_findings({"d": bad}))
    assert "worse than greedy LapAOFS at d k = 10" in text and "Not converged (max_swaps reached): d k = 25" in text


def test_sensitivity_findings_and_table():
    rows = []
    for gw, nmi10 in [(0.0, 0.30), (0.1, 0.20), (1.0, 0.40)]:
        for k, nmi in [(10, nmi10), (50, 0.5)]:
            rows.append({"graph_weight": gw, "is_default": gw == 0.1, "lambda1": gw / 5, "lambda2": 1.0,
                         "n_selected": 50, "criterion": 1 + gw, "greedy_criterion": 1 + gw, "converged": True,
                         "n_swaps": 0, "k": k, "nmi_mean": nmi, "nmi_sd": 0.01, "nmi_max_mean": nmi, "n_runs": 3})
    sens = pd.DataFrame(rows)
    s10 = F.sensitivity_findings(sens, "gbm")[0]
    assert s10 == ("gbm, 10 genes: NMI 0.200 (graph_weight 0.1) to 0.400 (graph_weight 1); the default 0.1 gives "
                   "0.200 (rank 3 of 3); without the graph (0) 0.300.")
    tab = sensitivity_table(sens)
    assert tab["graph_weight"].tolist() == [0.0, 0.1, 1.0]
    assert tab["default"].tolist() == ["", "default", ""]
    assert tab["NMI@10"].tolist() == [0.3, 0.2, 0.4]


def _cls(rows):
    cols = ["method", "cv_errors", "cv_n", "test_errors", "test_n", "n_genes", "params"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_classification_findings_compare_with_random_genes():
    rnd = json.dumps({"statistic": "median over 21 seeded random gene sets", "n_genes_as": "glfs_supervised",
                      "test_errors_range": [2, 12]})
    c = _cls([("glfs_supervised", 1, 38, 1, 34, 8, "{}"), ("glfs", 5, 38, 9, 34, 16, "{}"),
              ("elastic_net", 2, 38, 2, 34, 20, "{}"), ("random_genes", 6, 38, 6, 34, 8, rnd),
              ("linear_svm", None, 38, None, 34, None, "{}")])
    text = " ".join(F.classification_findings(c, "golub"))
    assert "Fewest test errors on golub: 1/34, by glfs_supervised." in text
    assert "Random genes (8, as many as glfs_supervised; median over 21 seeded random gene sets) give 6/34" in text
    assert "(range 2-12)" in text
    assert "fewer than that: glfs_supervised and elastic_net; not fewer: glfs." in text
    assert "glfs_supervised: 8 genes, 1/34 test errors, 1/38 CV errors." in text
    assert "glfs: 16 genes, 9/34 test errors, 5/38 CV errors." in text
    assert "Failed on golub: linear_svm" in text


def test_provenance_table_and_findings():
    prov = {"created": "t", "files": {
        "expression": {"sha256": "ab" * 32, "expected_sha256": "AB" * 32, "source": "mirror", "path": "p", "size": 3},
        "labels": {"sha256": "cd" * 32, "expected_sha256": "ef" * 32, "source": "download"},
        "extra": {"sha256": "12" * 32, "source": "mirror"},
    }}
    t = F.provenance_table(prov).set_index("file")
    assert t.loc["expression", "checksum"] == "matches expected"
    assert t.loc["labels", "checksum"] == "MISMATCH"
    assert t.loc["extra", "checksum"] == "no checksum given"
    assert t.loc["expression", "sha256"] == "ab" * 8 + "..."
    text = " ".join(F.provenance_findings({"ds": t.reset_index()}))
    assert "1 of 2 input files with a checksum match their expected sha256" in text
    assert "1 input file with no checksum given" in text
    assert "mirror 2" in text and "Checksum MISMATCH: ds/labels." in text


def test_simulation_and_runtime_findings():
    sim = pd.DataFrame({"method": ["a", "a", "b", "b"], "sigma": [0.1, 0.5, 0.1, 0.5], "n_noise": [10] * 4,
                        "replicate": [0] * 4, "score": [1.0, 1.0, 1.0, 0.25]})
    text = " ".join(F.simulation_findings(sim, {}))
    assert "at every grid point: a." in text and "Lowest mean Score over the grid: b (0.625)" in text
    rt = pd.DataFrame({"rule": ["x", "y"], "jobs": [1, 2], "total_s": [30.0, 10.0], "max_s": [30.0, 6.0],
                       "slowest_job": ["x1", "y2"], "max_rss_mb": [1.0, 1.0]})
    assert F.runtime_findings(rt) == ["Job time summed over rules: 40 s; the largest share is x (30 s, 75%; "
                                      "slowest job x1, 30 s)."]


def test_paper_findings_count_rank_one_points():
    pvr = pd.DataFrame({
        "item": ["gbm: NMI rank of the best GLFS variant among unsupervised methods at 5 genes",
                 "gbm: NMI rank of the best GLFS variant among unsupervised methods at 10 genes",
                 "golub: glfs_supervised CV / test errors, genes", "simulation, largest sigma with Score = 1 (glfs)"],
        "paper": ["1", "1", "GLFS: 0/38, 0/34, 16", "0.415"],
        "this run": ["1 of 9 (glfs 0.4; best glfs 0.4)", "3 of 9 (glfs 0.3; best x 0.5)", "4/38, 15/34, 16", "0.3"],
        "note": [""] * 4,
    })
    text = " ".join(F.paper_findings(pvr))
    assert "first among the unsupervised methods at 1 of 2 (dataset, gene count) points" in text
    assert "glfs_supervised on golub (CV errors, test errors, genes): 4/38, 15/34, 16 (paper GLFS: 0/38, 0/34, 16)." in text


def test_report_names_methods_that_did_not_converge():
    import anndata

    from glfs_workflow.report import _not_converged_html

    ad = anndata.AnnData(np.zeros((3, 2)))
    ad.uns["q_alpha"] = {"params": {"method": "q_alpha", "converged": np.bool_(False), "n_iter": np.int64(30)}}
    ad.uns["spca"] = {"params": {"method": "spca", "converged": np.bool_(True), "n_iter": 12}}
    ad.uns["variance"] = {"params": {"method": "variance"}}
    d = {"methods": ["variance", "spca", "q_alpha"]}
    (note,) = _not_converged_html(d, ad)
    assert "Not converged" in note and "q_alpha (30 iterations)" in note and "spca" not in note
    ad.uns["q_alpha"]["params"]["converged"] = True
    assert _not_converged_html(d, ad) == []
