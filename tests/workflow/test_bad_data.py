"""Bad data, table test (issue 5 item 1, issue 3 "Bad input").

Every case writes its bad file, names it in one config, and the fetch and
prepare steps run through snakemake (`--keep-going`, one run for all cases
to keep the file fast).  For each case: the dataset's step fails (the run's
exit status is non-zero), its log names the file and the row/column or config
key, and no prepared.h5ad or temporary file is left for that dataset.  The
allowed-but-reported cases (a constant gene, more samples than genes) must
succeed and carry the report in the log and in `uns["dataset"]`.  A missing
input file stops snakemake before any job runs, so it has its own run.

Issue 11 (inputs as users really have them) adds: labels in an .h5ad's obs,
ids with trailing spaces, all-constant matrices, unclosed quotes, raw
counts, spreadsheet-mangled gene names (prepare step), and a second run
through the whole workflow (`odd_run`) with the names that used to break a
later step: gene ids pandas reads as NA or numbers, `$` and `/` in genes and
labels, an .h5ad whose labels come from `label_column`.  Config-level cases
(unsafe `filename`, a dataset name with a newline) are in test_config.py;
the full disk is simulated in tests/test_io.py.  docs/guides/data.md lists every case.
"""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest

N_NEIGHBORS = 3


def _matrix(n_samples=12, n_genes=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(5.0, 1.0, (n_genes, n_samples)).round(3)
    genes = [f"G{i:03d}" for i in range(n_genes)]
    samples = [f"S{j:02d}" for j in range(n_samples)]
    return X, genes, samples


def _tsv(X, rows, cols, corner="gene"):
    lines = ["\t".join([corner, *cols])]
    lines += ["\t".join([r, *(str(v) for v in row)]) for r, row in zip(rows, X)]
    return "\n".join(lines) + "\n"


def _labels(samples, label=lambda i: f"c{i % 2}"):
    return "sample\tsubtype\n" + "".join(f"{s}\t{label(i)}\n" for i, s in enumerate(samples))


def _cell(text, line, col, value):
    """Replace field `col` (0-based) of line `line` (0-based) of a TSV text."""
    lines = text.splitlines()
    f = lines[line].split("\t")
    f[col] = value
    lines[line] = "\t".join(f)
    return "\n".join(lines) + "\n"


X0, GENES, SAMPLES = _matrix()
GOOD = _tsv(X0, GENES, SAMPLES)


def _h5ad(obs):
    """A writer of an .h5ad with X0 (samples x genes) and the given obs columns."""

    def write(path):
        import anndata as ad
        import pandas as pd

        ad.AnnData(X0.T.copy(), obs=pd.DataFrame(obs, index=SAMPLES), var=pd.DataFrame(index=GENES)).write_h5ad(path)

    return write


def _raw_counts():
    rng = np.random.default_rng(5)
    mean = np.exp(rng.normal(1.0, 2.0, len(GENES)))
    mean[:2] = 1e5
    return rng.negative_binomial(2, 2 / (2 + mean[:, None]), size=(len(GENES), len(SAMPLES)))


CELL = ["a", "b", None, "a", "b", "a", "b", None, "a", "b", "a", "b"]


def _gct(version="#1.2", dims=None):
    """GOOD as a .gct (genes x samples, a Description column)."""
    head = [version] if version is not None else []
    head.append(dims or f"{len(GENES)}\t{len(SAMPLES)}")
    head.append("\t".join(["Name", "Description", *SAMPLES]))
    rows = ["\t".join([g, f"d{g}", *(str(v) for v in row)]) for g, row in zip(GENES, X0)]
    return "\n".join(head + rows) + "\n"


def _gzip_bomb():
    """GOOD's header, then unique gene rows of zeros: ~3 MB of text in a ~100 kB gzip."""
    rows = "".join(f"Z{i:06d}" + "\t0" * len(SAMPLES) + "\n" for i in range(110_000))
    return gzip.compress((GOOD + rows).encode(), 9)


# issue 19 item 2: the bad run's fetch.max_expanded_gb (0.001 GB = 1,073,741 bytes); every other case's file is far smaller
MAX_EXPANDED_GB = 0.001

# name: (files {name: text or bytes}, dataset config (paths relative to data/), expected log regex or None = must succeed)
CASES = {
    "empty": ({"m.tsv": ""}, {}, r"data/m\.tsv: file is empty"),
    "header_only": ({"m.tsv": GOOD.splitlines()[0] + "\n"}, {}, r"data/m\.tsv: header only"),
    "non_numeric": (
        {"m.tsv": _cell(GOOD, 6, 4, "1.2.3")},
        {},
        r"data/m\.tsv: non-numeric value '1\.2\.3' at gene 'G005' \(line 7\), sample 'S03'",
    ),
    "nan": (
        {"m.tsv": _cell(GOOD, 3, 2, "NaN")},
        {},
        r"data/m\.tsv: missing/NaN value 'NaN' at gene 'G002'.*sample 'S01'",
    ),
    "na_empty": ({"m.tsv": _cell(GOOD, 3, 2, "")}, {}, r"data/m\.tsv: missing/NaN value .*gene 'G002'.*sample 'S01'"),
    "infinite": (
        {"m.tsv": _cell(GOOD, 10, 12, "-inf")},
        {},
        r"data/m\.tsv: infinite value '-inf' at gene 'G009'.*sample 'S11'",
    ),
    "dup_gene": (
        {"m.tsv": _cell(GOOD, 4, 0, "G001")},
        {},
        r"data/m\.tsv: duplicate gene ids in the first column: \['G001'\]",
    ),
    "dup_sample": (
        {"m.tsv": _cell(GOOD, 0, 5, "S02")},
        {},
        r"data/m\.tsv: duplicate sample ids in the header line: \['S02'\]",
    ),
    "labels_missing": (
        {"m.tsv": GOOD, "l.tsv": _labels(SAMPLES[:10])},
        {"labels": "l.tsv"},
        r"data/l\.tsv: no label for 2 of 12 samples: \['S10', 'S11'\]",
    ),
    "labels_na": (
        {"m.tsv": GOOD, "l.tsv": _labels(SAMPLES, lambda i: "NA" if i == 4 else "c")},
        {"labels": "l.tsv"},
        r"data/l\.tsv: no label for 1 of 12 samples: \['S04'\]",
    ),
    "labels_unknown": (
        {"m.tsv": GOOD, "l.tsv": _labels([*SAMPLES, "X99"])},
        {"labels": "l.tsv"},
        r"data/l\.tsv: labels for 1 samples that are not in the expression matrix: \['X99'\]",
    ),
    "labels_bad_column": (
        {"m.tsv": GOOD, "l.tsv": _labels(SAMPLES)},
        {"labels": "l.tsv", "label_column": "kind"},
        r"data/l\.tsv: column 'kind' \(config key label_column\) not found",
    ),
    "single_sample": ({"m.tsv": _tsv(X0[:, :1], GENES, SAMPLES[:1])}, {}, r"data/m\.tsv: only 1 sample"),
    # fewer samples than graph.n_neighbors: checked by build_graph, not here
    # (test_config_defaults.py::test_fewer_samples_than_neighbours_stops_the_graph)
    "truncated_gzip": (
        {"m.tsv.gz": gzip.compress(GOOD.encode())[:-40]},
        {},
        r"data/m\.tsv\.gz: truncated or corrupt gzip",
    ),
    "checksum": ({"m.tsv": GOOD}, {"sha256": "0" * 64}, r"data/m\.tsv: expected sha256 0{64}, got"),
    "unreadable": ({"m.tsv/placeholder": ""}, {}, r"data/m\.tsv is not a readable file"),
    "bad_extension": ({"m.dat": GOOD}, {}, r"data/m\.dat: cannot tell the format from the file name"),
    # issue 11
    "h5ad_label_column_absent": (
        {"m.h5ad": _h5ad({"cell_type": ["a", "b"] * 6})},
        {"label_column": "kind"},
        r"data/m\.h5ad: obs column 'kind' \(config key label_column\) not found; obs columns are \['cell_type'\]",
    ),
    "h5ad_label_missing": (
        {"m.h5ad": _h5ad({"cell_type": CELL})},
        {"label_column": "cell_type"},
        r"data/m\.h5ad: obs column 'cell_type' \(config key label_column\): no label for 2 of 12 samples: \['S02', 'S07'\]",
    ),
    "all_zero": (
        {"m.tsv": _tsv(np.zeros((20, 12)), GENES, SAMPLES)},
        {},
        r"data/m\.tsv: every one of the 20 genes is constant across the 12 samples \(all zero\)",
    ),
    "header_id_spaces": (
        {"m.tsv": _cell(GOOD, 0, 5, "S03 ")},
        {},
        r"data/m\.tsv: duplicate sample ids in the header line: \['S03'\]",
    ),
    "unclosed_quote": (
        {"m.tsv": _cell(GOOD, 13, 3, '"5.1')},
        {},
        r"data/m\.tsv: unclosed quote: the '\"' opened on line 14 is never closed",
    ),
    # issue 19
    "gzip_bomb": (
        {"m.tsv.gz": _gzip_bomb()},
        {},
        r"data/m\.tsv\.gz is gzip-compressed and expands to more than 1073741 bytes \(fetch\.max_expanded_gb = 0\.001\)",
    ),
    "gct_no_version": ({"m.gct": _gct(version=None)}, {}, r"data/m\.gct: line 1 is '20\\t12', expected '#1\.2'"),
    "gct_dims": (
        {"m.gct": _gct(dims="21\t12")},
        {},
        r"data/m\.gct: line 2 says 21 rows x 12 sample columns, but the file has 20 data rows \(lines 4-23\)",
    ),
    "utf16": (
        {"m.tsv": GOOD.encode("utf-16")},
        {},
        r"data/m\.tsv: this file is UTF-16 text \(byte-order mark\); convert it to UTF-8",
    ),
    "bz2": (
        {"m.tsv": __import__("bz2").compress(GOOD.encode())},
        {},
        r"data/m\.tsv: this file is bz2-compressed; convert it to gzip",
    ),
    "overflow": (
        {"m.tsv": _cell(GOOD, 5, 7, "1e309")},
        {},
        r"data/m\.tsv: value '1e309' at gene 'G004' \(line 6\), sample 'S06' \(column 8\) overflows",
    ),
    # allowed, reported
    "utf8_bom_r_header": (
        {"m.tsv": "\ufeff" + GOOD.split("\t", 1)[1], "l.tsv": "\ufeff" + _labels(SAMPLES)},
        {"labels": "l.tsv", "drop_unlabelled": True},
        None,
    ),
    "constant_gene": ({"m.tsv": _tsv(np.vstack([X0[:5], np.full((1, 12), 7.0), X0[6:]]), GENES, SAMPLES)}, {}, None),
    "more_samples_than_genes": (
        {"m.tsv": _tsv(_matrix(30, 8)[0].T, _matrix(30, 8)[2], _matrix(30, 8)[1], "sample")},
        {"orientation": "samples_by_genes"},
        None,
    ),
    "raw_counts": ({"m.tsv": _tsv(_raw_counts(), GENES, SAMPLES)}, {}, None),
    "spreadsheet_dates": ({"m.tsv": _tsv(X0, ["1-Mar", "2-Sep", *GENES[2:]], SAMPLES)}, {}, None),
}


# ---- issue 19 items 4 and 6: labels that cannot be clustered, values at extreme scales (prepare_dataset)
LABEL_AND_SCALE_CASES = {
    "one_class": (
        {"m.tsv": GOOD, "l.tsv": _labels(SAMPLES, lambda i: "c")},
        {"labels": "l.tsv"},
        r"data/l\.tsv: column 'subtype' \(config key label_column\): all 12 samples have the label 'c' \(label counts \{'c': 12\}\); "
        r"the clustering evaluation needs at least 2 classes",
    ),
    "one_class_after_label_map": (
        {"m.tsv": GOOD, "l.tsv": _labels(SAMPLES)},
        {"labels": "l.tsv", "label_map": {"c0": "x", "c1": "x"}},
        r"data/l\.tsv: column 'subtype' \(config key label_column\): all 12 samples have the label 'x' after label_map",
    ),
    "own_class_each": (
        {"m.tsv": GOOD, "l.tsv": _labels(SAMPLES, lambda i: f"k{i}")},
        {"labels": "l.tsv"},
        r"data/l\.tsv: column 'subtype' \(config key label_column\): each of the 12 samples has a label of its own \(12 classes of 1 sample",
    ),
    "n_clusters_eq_n": (
        {"m.tsv": GOOD, "l.tsv": _labels(SAMPLES)},
        {"labels": "l.tsv", "n_clusters": 12},
        r"config key datasets\.n_clusters_eq_n\.n_clusters = 12: must be smaller than the 12 samples",
    ),
    "scale_huge": (
        {"m.tsv": _tsv(X0 * 1e154, GENES, SAMPLES)},
        {},
        r"data/m\.tsv: values up to \d\.\d+e\+154 in absolute value \(gene 'G\d+', sample 'S\d+'\); the methods need the largest "
        r"\|value\| in \[1e-50, 1e\+50\]",
    ),
    "scale_tiny": (
        {"m.tsv": _tsv(X0 * 1e-200, GENES, SAMPLES)},
        {},
        r"data/m\.tsv: values only up to \d\.\d+e-200 in absolute value",
    ),
}
CASES.update(LABEL_AND_SCALE_CASES)


@pytest.fixture(scope="module")
def bad_run(tmp_path_factory, mini_workflow, snakemake_run):
    work = tmp_path_factory.mktemp("bad")
    datasets = {}
    for name, (files, extra, _) in CASES.items():
        d = work / "data" / name
        d.mkdir(parents=True)
        for fname, content in files.items():
            (d / fname).parent.mkdir(parents=True, exist_ok=True)
            if callable(content):
                content(d / fname)
            else:
                (d / fname).write_bytes(content if isinstance(content, bytes) else content.encode())
        main = next(f for f in files if f.startswith("m.")).split("/")[0]
        cfg = {"expression": f"data/{name}/{main}", **extra}
        if "labels" in cfg:
            cfg["labels"] = f"data/{name}/{cfg['labels']}"
            cfg.setdefault("label_column", "subtype")
        datasets[name] = cfg
    config = {
        "run": sorted(CASES),
        "graph": {"n_neighbors": N_NEIGHBORS},
        "fetch": {"max_expanded_gb": MAX_EXPANDED_GB},
        "datasets": datasets,
    }
    targets = [f"results/{n}/prepared.h5ad" for n in CASES]
    proc = snakemake_run(mini_workflow(work), work, config, targets, "--keep-going", timeout=1200)
    return work, proc


@pytest.mark.workflow
def test_run_fails_overall(bad_run):
    work, proc = bad_run
    assert proc.returncode != 0


@pytest.mark.workflow
@pytest.mark.parametrize("case", [c for c, v in CASES.items() if v[2] is not None])
def test_bad_case_fails_cleanly(bad_run, case):
    work, proc = bad_run
    pattern = CASES[case][2].replace("data/", f"data/{case}/", 1)
    logs = "".join(p.read_text() for p in (work / "logs").glob(f"*/{case}.log"))
    assert __import__("re").search(pattern, logs), f"{case}: {pattern!r} not in logs:\n{logs}"
    out = work / "results" / case
    assert not (out / "prepared.h5ad").exists()
    leftovers = [p.name for p in out.iterdir() if p.name != "provenance.json"] if out.exists() else []
    assert leftovers == []
    if case in ("checksum", "unreadable", "gzip_bomb"):  # the fetch step failed: no provenance either
        assert not (out / "provenance.json").exists()


@pytest.mark.workflow
def test_constant_gene_allowed_and_reported(bad_run):
    import anndata as ad

    work, _ = bad_run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = ad.read_h5ad(work / "results/constant_gene/prepared.h5ad")
    assert a.shape == (12, 20)
    assert a.uns["dataset"]["n_constant_genes"] == 1
    assert a.uns["dataset"]["constant_genes"] == "G005"
    assert "1 constant genes" in (work / "logs/prepare_dataset/constant_gene.log").read_text()


@pytest.mark.workflow
def test_more_samples_than_genes_reported_not_transposed(bad_run):
    import anndata as ad

    work, _ = bad_run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = ad.read_h5ad(work / "results/more_samples_than_genes/prepared.h5ad")
    assert a.shape == (30, 8)
    assert list(a.obs_names[:2]) == ["S00", "S01"]
    assert "30 samples > 8 genes" in a.uns["dataset"]["warnings"]
    assert "30 samples > 8 genes" in (work / "logs/prepare_dataset/more_samples_than_genes.log").read_text()


@pytest.mark.workflow
def test_missing_file_names_it(tmp_path, mini_workflow, snakemake_run):
    config = {"run": ["gone"], "datasets": {"gone": {"expression": "data/nothing_here.tsv"}}}
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, config, ["results/gone/prepared.h5ad"])
    assert proc.returncode != 0
    assert "data/nothing_here.tsv" in proc.stderr + proc.stdout
    assert not (tmp_path / "results/gone").exists()


def _prepared(work, case):
    import anndata as ad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ad.read_h5ad(work / f"results/{case}/prepared.h5ad")


@pytest.mark.workflow
def test_raw_counts_allowed_and_warned(bad_run):
    work, _ = bad_run
    a = _prepared(work, "raw_counts")
    np.testing.assert_array_equal(a.X, _raw_counts().T)  # preprocess none: unchanged
    assert "look like raw counts" in a.uns["dataset"]["warnings"]
    log = (work / "logs/prepare_dataset/raw_counts.log").read_text()
    assert "look like raw counts" in log and "preprocess: normalize_log1p" in log
    assert "raw counts" not in _prepared(work, "constant_gene").uns["dataset"]["warnings"]


@pytest.mark.workflow
def test_spreadsheet_dates_allowed_and_warned(bad_run):
    work, _ = bad_run
    a = _prepared(work, "spreadsheet_dates")
    assert list(a.var_names[:2]) == ["1-Mar", "2-Sep"]
    assert "2 gene ids look like dates a spreadsheet made" in a.uns["dataset"]["warnings"]


@pytest.mark.workflow
def test_utf8_bom_before_an_r_header_is_stripped(bad_run):
    """Issue 19 item 7: the BOM became part of the first sample id, which drop_unlabelled then dropped."""
    work, _ = bad_run
    a = _prepared(work, "utf8_bom_r_header")
    assert list(a.obs_names) == SAMPLES
    assert a.uns["dataset"]["labels"]["n_samples_unlabelled_dropped"] == 0


# ---------------------------------------------------------------- the whole workflow on odd names

ODD_GENES = ["NA", "007", "null", "1e3", "TRUE", "$\\foo$", "a/b", "1-Mar"] + [f"G{j:03d}" for j in range(8, 30)]
ODD_LABELS = ["T/NK", "$\\alpha$ cells", "B"]


def _odd_inputs(d: Path):
    """Three planted groups; the odd gene ids carry them (so they are the top genes)."""
    import anndata as ad
    import pandas as pd

    rng = np.random.default_rng(11)
    n = 24
    groups = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(0.0, 1.0, (n, len(ODD_GENES)))
    for j in range(6):
        X[:, j] += 4.0 * (groups == j % 3)
    samples = [f"p{i:02d}" for i in range(n)]
    pd.DataFrame(X.T, index=pd.Index(ODD_GENES, name="gene"), columns=samples).to_csv(d / "odd.tsv", sep="\t")
    pd.DataFrame({"sample": samples, "kind": [ODD_LABELS[g] for g in groups]}).to_csv(
        d / "odd_labels.tsv", sep="\t", index=False
    )
    obs = pd.DataFrame({"cell_type": pd.Categorical([ODD_LABELS[g] for g in groups])}, index=samples)
    ad.AnnData(X, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(X.shape[1])])).write_h5ad(d / "labelled.h5ad")
    obs = pd.DataFrame({"label": [f"c{g}" for g in groups]}, index=samples)
    ad.AnnData(X, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(X.shape[1])])).write_h5ad(
        d / "own_label.h5ad"
    )
    return X, groups


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory, snakemake_run):
    work = tmp_path_factory.mktemp("odd")
    (work / "data").mkdir()
    X, groups = _odd_inputs(work / "data")
    (work / "resources").symlink_to(Path(__file__).resolve().parents[2] / "resources")
    config = {
        "run": ["odd_ids", "h5ad_labels", "h5ad_own_label"],
        "methods": ["laplacian_score", "variance"],
        "graph": {"n_neighbors": 4},
        "selection": {"n_features": 5},
        "clustering": {"n_runs": 2, "feature_grid": [3, "all"]},
        "classification": {"datasets": []},
        "simulation": {"enabled": False},
        "datasets": {
            "odd_ids": {"expression": "data/odd.tsv", "labels": "data/odd_labels.tsv", "label_column": "kind"},
            "h5ad_labels": {"expression": "data/labelled.h5ad", "label_column": "cell_type"},
            "h5ad_own_label": {"expression": "data/own_label.h5ad"},
        },
    }
    repo = Path(__file__).resolve().parents[2]
    proc = snakemake_run(repo / "Snakefile", work, config, [], timeout=1200)
    return work, proc, X, groups


@pytest.mark.workflow
def test_odd_names_run_end_to_end(odd_run):
    from glfs_workflow.files import read_tsv

    work, proc, _, _ = odd_run
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    a = _read_adata(work / "results/odd_ids/adata.h5ad")
    assert list(a.var_names) == ODD_GENES  # "NA", "007", "1e3" ... are still the genes they were
    t = read_tsv(work / "results/odd_ids/selection/laplacian_score.tsv")
    assert t["gene"].tolist() == ODD_GENES
    top = set(t.sort_values("rank")["gene"].head(6))
    assert top == set(ODD_GENES[:6])  # the planted genes, whatever their names
    assert "spreadsheet" in a.uns["dataset"]["warnings"]


@pytest.mark.workflow
def test_h5ad_label_column_gives_a_labelled_dataset(odd_run):
    work, proc, _, groups = odd_run
    assert proc.returncode == 0
    a = _read_adata(work / "results/h5ad_labels/adata.h5ad")
    assert list(a.obs["label"].astype(str)) == [ODD_LABELS[g] for g in groups]
    lc = a.uns["dataset"]["label_counts"]
    assert dict(zip(lc["labels"], (int(c) for c in lc["counts"]))) == {lab: 8 for lab in ODD_LABELS}
    assert (work / "results/h5ad_labels/clustering_nmi.tsv").exists()  # labels decided at DAG time
    report = (work / "results/report.html").read_text()
    section = report.split("<h2>Dataset h5ad_labels</h2>")[1].split("<h2>")[0]
    assert "Labels: $\\alpha$ cells 8, B 8, T/NK 8." in section
    assert "has no labels" not in section


@pytest.mark.workflow
def test_h5ad_obs_label_without_label_column_is_unlabelled(odd_run):
    work, proc, _, _ = odd_run
    assert proc.returncode == 0
    a = _read_adata(work / "results/h5ad_own_label/adata.h5ad")
    assert a.uns["dataset"]["labelled"] is False
    assert "label_column is not set" in a.uns["dataset"]["warnings"]
    assert not (work / "results/h5ad_own_label/clustering_nmi.tsv").exists()
    report = (work / "results/report.html").read_text()
    section = report.split("<h2>Dataset h5ad_own_label</h2>")[1].split("<h2>")[0]
    assert "has no labels" in section and "Labels:" not in section


def _read_adata(path):
    import anndata as ad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ad.read_h5ad(path)
