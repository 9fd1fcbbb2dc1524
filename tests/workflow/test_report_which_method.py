"""The report's answer to "which method, on this dataset" (glfs_workflow.findings.which_method and the
report built from it), on small synthetic result tables whose answer is known by construction.

Toy Leiden results on a grid of 100 and 200 genes, 3 runs per point with values mean - d, mean,
mean + d (so the sd over runs is exactly d), and a random floor of 5 draws with mean 0.20 and sd
0.02 at both counts:

=========  =====  =====  ==========  ====  ====================================================
method     @100   @200   grid mean   sd    role
=========  =====  =====  ==========  ====  ====================================================
A          0.60   0.70   0.65        0.01  best
B          0.62   0.66   0.64        0.03  within noise: gap 0.01 < max(0.01, 0.03, 0.02) = 0.03
D          0.55   0.55   0.55        0.01  above the floor, not within noise: 0.10 > 0.02
C          0.10   0.12   0.11        0.01  below the floor
hvg1       0.40   0.60   0.50        0.01  HVG flavour, best HVG at 200
hvg2       0.50   0.40   0.45        0.01  HVG flavour, best HVG at 100
sup        0.90   0.90   0.90        0.01  supervised reference (never best, not ranked)
=========  =====  =====  ==========  ====  ====================================================

hvg1/hvg2 are the first two HVG flavours of the registry and sup its first supervised method, so the
code finds them by family and needs_labels, as it must (no method name is spelled in the code).
"""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest

from glfs.api import METHODS, methods_of

pytest.importorskip("jinja2")  # glfs_workflow.report words the page with Jinja2 (the workflow extra)
from glfs_workflow import report as R  # noqa: E402
from glfs_workflow import which as F  # noqa: E402

HVG1, HVG2 = methods_of("hvg")[:2]
SUP = next(m for m, info in METHODS.items() if info.needs_labels)
GRID = (100, 200)
N_GENES = 1000
MEANS = {
    "A": ({100: 0.60, 200: 0.70}, 0.01),
    "B": ({100: 0.62, 200: 0.66}, 0.03),
    "D": ({100: 0.55, 200: 0.55}, 0.01),
    "C": ({100: 0.10, 200: 0.12}, 0.01),
    HVG1: ({100: 0.40, 200: 0.60}, 0.01),
    HVG2: ({100: 0.50, 200: 0.40}, 0.01),
    SUP: ({100: 0.90, 200: 0.90}, 0.01),
}


def _leiden(means=MEANS, grid=GRID, score="ari_nlabels"):
    """clustering_leiden.tsv (or, with score "nmi", clustering_nmi.tsv) rows: runs at mean - d, mean,
    mean + d (sd over runs = d)."""
    rows = []
    for m, (by_k, d) in means.items():
        for k in grid:
            for r, z in enumerate((-1.0, 0.0, 1.0)):
                v = by_k[k] + d * z
                rows.append(
                    {
                        "method": m,
                        "n_features": k,
                        "run": r,
                        "seed": r,
                        "ari": min(v + 0.1, 1.0),
                        "nmi": v,
                        "resolution": 1.0,
                        "n_clusters": 4,
                        score: v,
                        "nmi_nlabels": v,
                        "resolution_nlabels": 1.0,
                        "n_clusters_nlabels": 4,
                        "kmeans_ari": v,
                        "kmeans_nmi": v,
                        # the spectral protocol's further columns (clustering_nmi.tsv)
                        "nmi_max": v,
                        "kmeans_acc": 0.5,
                        "loo_1nn_acc": 0.5,
                    }
                )
    return pd.DataFrame(rows)


def _floor(mean=0.20, sd=0.02, grid=GRID, draws=5, score="ari_nlabels", all_genes=0.58):
    """leiden_random.tsv rows: per k, 5 draws (2 equal runs each) with exactly this mean and sd over draws;
    all_genes rows (3 runs, mean ``all_genes``) at n_features = N_GENES."""
    z = np.arange(draws) - (draws - 1) / 2
    z = z / z.std(ddof=1)
    rows = []
    for k in grid:
        m = mean[k] if isinstance(mean, dict) else mean
        for i in range(draws):
            for r in range(2):
                v = m + sd * z[i]
                rows.append(
                    {
                        "method": "random_genes",
                        "n_features": k,
                        "draw": i,
                        "run": r,
                        "seed": i,
                        "ari": v,
                        "nmi": v,
                        score: v,
                    }
                )
    if all_genes is not None:
        for r, dz in enumerate((-0.01, 0.0, 0.01)):
            rows.append(
                {
                    "method": F.ALL_GENES,
                    "n_features": N_GENES,
                    "draw": 0,
                    "run": r,
                    "seed": r,
                    "ari": all_genes + dz,
                    "nmi": all_genes + dz,
                    score: all_genes + dz,
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def wm():
    return F.which_method(_leiden(), _floor(), protocol="leiden", n_genes=N_GENES)


def test_best_and_within_noise(wm):
    assert wm.score == "ari_nlabels" and wm.grid == GRID
    assert wm.best == "A"  # the supervised reference (0.90) is higher but never best
    assert wm.within_noise == ("B",)
    m = wm.methods.set_index("method")
    assert m.loc["A", "mean"] == pytest.approx(0.65)
    assert m.loc["B", "sd"] == pytest.approx(0.03)
    assert wm.floor_mean == pytest.approx(0.20) and wm.floor_sd == pytest.approx(0.02)
    # noise of B = max(sd A 0.01, sd B 0.03, floor sd 0.02) = 0.03 > gap 0.01
    assert m.loc["B", "noise"] == pytest.approx(0.03) and m.loc["B", "gap"] == pytest.approx(0.01)
    # noise of D = max(0.01, 0.01, 0.02) = 0.02 < gap 0.10: the floor's sd sets it
    assert m.loc["D", "noise"] == pytest.approx(0.02) and not m.loc["D", "within_noise"]
    assert not m.loc["C", "within_noise"] and m.loc["C", "above_floor"] == pytest.approx(0.11 - 0.20)
    assert bool(m.loc[SUP, "supervised"]) and np.isnan(m.loc[SUP, "rank"])
    # best first, then by mean, supervised references last
    assert list(wm.methods["method"]) == ["A", "B", "D", HVG1, HVG2, "C", SUP]
    assert wm.hvg == (HVG1, HVG2) and wm.supervised == (SUP,)


def test_a_wider_floor_brings_d_within_noise():
    # floor sd 0.12 > gap of D (0.10): D is now within noise, C (gap 0.54) still not
    wm = F.which_method(_leiden(), _floor(sd=0.12), protocol="leiden", n_genes=N_GENES)
    assert wm.best == "A" and set(wm.within_noise) == {"B", "D"}
    assert wm.methods.set_index("method").loc["D", "noise"] == pytest.approx(0.12)


def test_scaled_scores_by_hand(wm):
    # scaled_m(k) = (S_m(k) - S_random(k)) / (S_bestHVG(k) - S_random(k)); S_random = 0.20 at both k;
    # best HVG at 100: hvg2 0.50 (denominator 0.30); at 200: hvg1 0.60 (denominator 0.40)
    by_hand = {
        "A": ((0.60 - 0.20) / 0.30, (0.70 - 0.20) / 0.40),  # 1.3333, 1.25
        "B": ((0.62 - 0.20) / 0.30, (0.66 - 0.20) / 0.40),  # 1.4, 1.15
        "D": ((0.55 - 0.20) / 0.30, (0.55 - 0.20) / 0.40),  # 1.1667, 0.875
        "C": ((0.10 - 0.20) / 0.30, (0.12 - 0.20) / 0.40),  # -0.3333, -0.2
        HVG1: ((0.40 - 0.20) / 0.30, 1.0),  # 0.6667, 1
        HVG2: (1.0, (0.40 - 0.20) / 0.40),  # 1, 0.5
    }
    per_k = wm.per_k.set_index(["method", "n_features"])["scaled"]
    means = wm.methods.set_index("method")["scaled"]
    for m, (s100, s200) in by_hand.items():
        assert per_k[(m, 100)] == pytest.approx(s100), m
        assert per_k[(m, 200)] == pytest.approx(s200), m
        assert means[m] == pytest.approx((s100 + s200) / 2), m
    assert means["A"] == pytest.approx(1.2916667, abs=1e-6)
    bar = wm.hvg_bar.set_index("n_features")
    assert bar.loc[100, "hvg_best"] == HVG2 and bar.loc[200, "hvg_best"] == HVG1
    assert wm.hvg_bar_mean == pytest.approx((0.50 + 0.60) / 2)
    assert wm.scaled_undefined_at == ()


def test_rank_table(wm):
    ranks = F.rank_table(wm).set_index("method")
    # at 100: B .62, A .60, D .55, hvg2 .50, hvg1 .40, C .10; at 200: A .70, B .66, hvg1 .60, D .55, hvg2 .40, C .12
    assert ranks["rank@100"].drop(SUP).to_dict() == {"B": 1, "A": 2, "D": 3, HVG2: 4, HVG1: 5, "C": 6}
    assert ranks["rank@200"].drop(SUP).to_dict() == {"A": 1, "B": 2, HVG1: 3, "D": 4, HVG2: 5, "C": 6}
    assert np.isnan(ranks.loc[SUP, "rank@100"])
    assert ranks.loc["D", "mean@200"] == pytest.approx(0.55)
    assert wm.methods.set_index("method").loc["B", "rank"] == 2


def test_tied_means_share_the_smaller_rank():
    means = {"A": ({100: 0.5, 200: 0.5}, 0.01), "B": ({100: 0.5, 200: 0.4}, 0.01), "C": ({100: 0.3, 200: 0.6}, 0.01)}
    wm = F.which_method(_leiden(means), _floor(), protocol="leiden", n_genes=N_GENES)
    ranks = F.rank_table(wm).set_index("method")
    assert ranks["rank@100"].to_dict() == {"A": 1, "B": 1, "C": 3}


def test_without_hvg_the_scaled_score_is_undefined():
    no_hvg = {m: v for m, v in MEANS.items() if m not in (HVG1, HVG2)}
    wm = F.which_method(_leiden(no_hvg), _floor(), protocol="leiden", n_genes=N_GENES)
    assert wm.hvg == () and wm.hvg_bar.empty and wm.hvg_bar_mean is None
    assert wm.methods["scaled"].isna().all() and wm.per_k["scaled"].isna().all()
    assert wm.best == "A" and wm.within_noise == ("B",)  # the answer itself does not need HVG
    facts = F.which_facts(wm, "toy")
    assert facts["n_hvg"] == 0 and facts["best_scaled"] is None and facts["hvg_bar_mean"] is None
    # the markdown says so in the scaled column instead of a number
    md = R.render_markdown({"which": [facts], "report_dir": "results"})
    row = next(line for line in md.splitlines() if line.startswith("| A (best)"))
    assert row.split(" | ")[2] == "no HVG"


def test_which_facts_by_hand(wm):
    f = F.which_facts(wm, "toy")
    assert (f["best"], f["best_mean"], f["best_sd"]) == ("A", pytest.approx(0.65), pytest.approx(0.01))
    assert f["within"] == [("B", pytest.approx(0.64))] and f["grid"] == list(GRID) and f["n_runs"] == 3
    # above the HVG bar on average (scaled > 1): A 1.29, B 1.27, D 1.02 (by hand in test_scaled_scores_by_hand)
    assert set(f["above_hvg"]) == {"A", "B", "D"}
    # above the floor (0.20): A, B, D, hvg1, hvg2 of the 6 unsupervised methods (C 0.11 is not)
    assert (f["n_above_floor"], f["n_unsupervised"]) == (5, 6)
    assert f["supervised"] == [(SUP, pytest.approx(0.90))] and f["all_genes"] == pytest.approx(0.58)
    rows = {r["method"]: r for r in f["rows"]}
    assert rows["A"]["best"] and rows["B"]["within"] and not rows["D"]["within"]
    assert rows["B"]["ranks"] == [1, 2] and rows[SUP]["ranks"] == [None, None] and rows[SUP]["supervised"]
    assert F.which_facts(None, "toy") is None


def test_scaled_undefined_where_no_hvg_flavour_beats_random():
    # floor 0.52 at 100, above both HVG flavours there (0.50, 0.40): the scale is undefined at 100;
    # at 200 the floor is 0.20 and A's scaled score is (0.70 - 0.20) / (0.60 - 0.20) = 1.25 as before
    wm = F.which_method(_leiden(), _floor(mean={100: 0.52, 200: 0.20}), protocol="leiden", n_genes=N_GENES)
    assert wm.scaled_undefined_at == (100,)
    per_k = wm.per_k.set_index(["method", "n_features"])["scaled"]
    assert np.isnan(per_k[("A", 100)]) and per_k[("A", 200)] == pytest.approx(1.25)
    assert np.isnan(wm.methods.set_index("method").loc["A", "scaled"])  # not a mean over part of the grid


def test_all_genes_and_grid():
    wm = F.which_method(_leiden(), _floor(all_genes=0.58), protocol="leiden", n_genes=N_GENES)
    assert wm.all_genes == pytest.approx(0.58) and wm.all_genes_sd == pytest.approx(0.01)
    assert wm.n_genes == N_GENES
    # a gene count one method lacks is not part of the grid
    cdf = _leiden(grid=(100, 200, 500), means={m: ({**v[0], 500: 0.3}, v[1]) for m, v in MEANS.items()})
    cdf = cdf[~((cdf["method"] == "C") & (cdf["n_features"] == 500))]
    assert F.which_method(cdf, _floor(), protocol="leiden", n_genes=N_GENES).grid == GRID


def test_spectral_protocol_excludes_all_genes_from_the_grid():
    # clustering_nmi.tsv: the all-genes point (n_features = N_GENES) is the same for every method
    means = {m: ({**by_k, N_GENES: 0.8}, d) for m, (by_k, d) in MEANS.items()}
    cdf = _leiden(means, grid=(*GRID, N_GENES), score="nmi")
    rnd = _floor(grid=(*GRID, N_GENES), score="nmi", all_genes=None)
    wm = F.which_method(cdf, rnd, protocol="spectral", n_genes=N_GENES)
    assert wm.score == "nmi" and wm.grid == GRID and wm.best == "A" and wm.within_noise == ("B",)
    assert wm.all_genes == pytest.approx(0.8)
    assert list(wm.floor["n_features"]) == list(GRID)


def test_bad_protocol():
    with pytest.raises(ValueError, match="protocol must be one of"):
        F.which_method(_leiden(), None, protocol="louvain")


def test_floor_summary_of_another_score_leaves_out_all_genes():
    fl = F.floor_summary(_floor(), score="ari_nlabels").set_index("n_features")
    assert list(fl.index) == list(GRID)
    assert fl.loc[100, "floor_mean"] == pytest.approx(0.20) and fl.loc[100, "floor_sd"] == pytest.approx(0.02)


# ---- the report ----------------------------------------------------------------------------------


def _png_height(path) -> int:
    data = open(path, "rb").read(24)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])[1]


def _dataset(d, name, *, leiden=True, spectral=False):
    """A labelled dataset with the toy tables of the requested protocols; returns its layout entry."""
    import anndata

    d.mkdir()
    n = 12
    ad = anndata.AnnData(
        X=np.random.default_rng(0).normal(size=(n, N_GENES)),
        obs=pd.DataFrame({"label": np.repeat(["a", "b"], n // 2)}, index=[f"s{i}" for i in range(n)]),
        var=pd.DataFrame(index=[f"g{i}" for i in range(N_GENES)]),
    )
    ad.write_h5ad(d / "adata.h5ad")
    entry = {
        "name": name,
        "labelled": True,
        "methods": list(MEANS),
        "adata": str(d / "adata.h5ad"),
        "selections": {},
        "metas": {},
        "clustering": None,
        "random_floor": None,
        "leiden": None,
        "leiden_random": None,
        "sensitivity": None,
        "glfs_vs_greedy": None,
        "glfs_path": None,
        "heatmap_method": None,
    }
    if leiden:
        _leiden().to_csv(d / "clustering_leiden.tsv", sep="\t", index=False)
        _floor().to_csv(d / "leiden_random.tsv", sep="\t", index=False)
        entry.update(leiden=str(d / "clustering_leiden.tsv"), leiden_random=str(d / "leiden_random.tsv"))
    if spectral:
        # spectral: D is best by construction here (its NMI is raised), so the two protocols differ
        means = {m: ({**by_k, N_GENES: 0.8}, s) for m, (by_k, s) in MEANS.items()}
        means["D"] = ({100: 0.75, 200: 0.75, N_GENES: 0.8}, 0.01)
        _leiden(means, grid=(*GRID, N_GENES), score="nmi").to_csv(d / "clustering_nmi.tsv", sep="\t", index=False)
        _floor(grid=(*GRID, N_GENES), score="nmi", all_genes=None).to_csv(
            d / "clustering_random.tsv", sep="\t", index=False
        )
        entry.update(clustering=str(d / "clustering_nmi.tsv"), random_floor=str(d / "clustering_random.tsv"))
    return entry


def _inputs(tmp_path, datasets):
    """The report's inputs and run facts for these layout entries (no paper table, no simulation)."""
    files = {"datasets": {}, "paper_table": None, "simulation": None}
    for e in datasets:
        files["datasets"][e["name"]] = {
            k: e[k] for k in ("adata", "clustering", "random_floor", "leiden", "leiden_random") if e[k]
        }
    run = {
        "datasets": [{k: e[k] for k in ("name", "labelled", "methods", "heatmap_method")} for e in datasets],
        "glfs_method": None,
        "simulation_methods": [],
    }
    return files, run


def test_report_builds_for_leiden_only_and_both(tmp_path):
    pytest.importorskip("matplotlib")  # the workflow extra draws the figures
    files, run = _inputs(tmp_path, [_dataset(tmp_path / "sc", "sc"), _dataset(tmp_path / "bo", "bo", spectral=True)])
    ctx = R.collect(files, run=run, config={"methods": list(MEANS), "seed": 0}, benchmarks=[])
    answers = {(a["dataset"], a["protocol"]): a for a in ctx["which"]}
    assert list(answers) == [("sc", "leiden"), ("bo", "spectral"), ("bo", "leiden")]
    sc = answers[("sc", "leiden")]
    assert sc["best"] == "A" and sc["best_mean"] == pytest.approx(0.65)
    assert sc["best_scaled"] == pytest.approx(((0.60 - 0.20) / 0.30 + (0.70 - 0.20) / 0.40) / 2)
    assert sc["within"] == [("B", pytest.approx(0.64))]
    # spectral on bo: D raised to 0.75 is best, scaled ((0.75 - 0.2) / 0.30 + (0.75 - 0.2) / 0.40) / 2, alone
    bo = answers[("bo", "spectral")]
    assert bo["best"] == "D" and bo["within"] == []
    assert bo["best_scaled"] == pytest.approx(((0.75 - 0.2) / 0.30 + (0.75 - 0.2) / 0.40) / 2)
    # the figures are drawn, not placeholders (a placeholder is 1.2 inches high)
    figures = {
        "leiden_sc": str(tmp_path / "leiden_sc.png"),
        "leiden_bo": str(tmp_path / "leiden_bo.png"),
        "nmi_bo": str(tmp_path / "nmi_bo.png"),
    }
    R.write_figures(figures, ctx["figures"])
    for path in figures.values():
        assert _png_height(path) > 250, path
    # rendering: a which-method section per (dataset, protocol), the summary before the configuration,
    # the markdown with one section per answer
    html = R.render_html(ctx)
    for anchor in ("which-sc-leiden", "which-bo-leiden", "which-bo-spectral"):
        assert f"id='{anchor}'" in html, anchor
    assert "which-sc-spectral" not in html
    assert (
        html.index("id='which-")
        > html.index("<h2>What was run</h2>")
        > html.index("<h2>Which selection should I use?</h2>")
    )
    md = R.render_markdown(ctx)
    assert md.count("\n## ") == 3
    sc_md = md[md.index("## sc (") : md.index("## bo")]
    row = next(line for line in sc_md.splitlines() if line.startswith("| B (within noise)"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:] == ["0.640", "1.27", "1", "2"]  # mean, scaled (1.4 + 1.15) / 2, rank at 100 and 200


def test_report_without_hvg(tmp_path):
    pytest.importorskip("matplotlib")
    entry = _dataset(tmp_path / "nh", "nh")
    no_hvg = {m: v for m, v in MEANS.items() if m not in (HVG1, HVG2)}
    _leiden(no_hvg).to_csv(entry["leiden"], sep="\t", index=False)
    files, run = _inputs(tmp_path, [entry])
    ctx = R.collect(files, run=run, config={"seed": 0}, benchmarks=[])
    (a,) = ctx["which"]
    assert a["n_hvg"] == 0 and a["best"] == "A" and a["best_scaled"] is None


def test_figures_never_at_the_label_count_are_marked(tmp_path):
    """Issue 30 item 9: a Leiden run whose resolutions never came near the label count (nlabels_reached False)
    is named in the report, with the cluster count it reached; a table without the column marks nothing."""
    pytest.importorskip("matplotlib")
    from glfs_workflow import findings

    entry = _dataset(tmp_path / "sc", "sc")
    cdf = _leiden().assign(nlabels_reached=True)
    miss = (cdf["method"] == "C") & (cdf["n_features"] == 200) & (cdf["run"] == 1)
    cdf.loc[miss, ["nlabels_reached", "n_clusters_nlabels"]] = [False, 9]
    cdf.to_csv(entry["leiden"], sep="\t", index=False)
    assert findings.label_count_misses(_leiden()) == []
    got = findings.label_count_misses(pd.read_csv(entry["leiden"], sep="\t"))
    assert got == [{"method": "C", "k": 200, "runs": 1, "of": 3, "clusters": [9]}]
    files, run = _inputs(tmp_path, [entry])
    html = R.render_html(R.collect(files, run=run, config={"methods": list(MEANS), "seed": 0}, benchmarks=[]))
    assert "Not at the label count." in html and "C at 200 genes (1 of 3 runs; 9 clusters)." in html
    assert "within 20 % of the number of labels" in html
