"""Bad data, table test (issue 5 item 1, issue 3 "Bad input").

Every case writes its bad file, names it in one config, and the fetch and
prepare steps run through snakemake (`--keep-going`, one run for all cases
to keep the file fast).  For each case: the dataset's step fails (the run's
exit status is non-zero), its log names the file and the row/column or config
key, and no prepared.h5ad or temporary file is left for that dataset.  The
allowed-but-reported cases (a constant gene, more samples than genes) must
succeed and carry the report in the log and in `uns["dataset"]`.  A missing
input file stops snakemake before any job runs, so it has its own run.
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

# name: (files {name: text or bytes}, dataset config (paths relative to data/), expected log regex or None = must succeed)
CASES = {
    "empty": ({"m.tsv": ""}, {}, r"data/m\.tsv: file is empty"),
    "header_only": ({"m.tsv": GOOD.splitlines()[0] + "\n"}, {}, r"data/m\.tsv: header only"),
    "non_numeric": ({"m.tsv": _cell(GOOD, 6, 4, "1.2.3")}, {}, r"data/m\.tsv: non-numeric value '1\.2\.3' at gene 'G005' \(line 7\), sample 'S03'"),
    "nan": ({"m.tsv": _cell(GOOD, 3, 2, "NaN")}, {}, r"data/m\.tsv: missing/NaN value 'NaN' at gene 'G002'.*sample 'S01'"),
    "na_empty": ({"m.tsv": _cell(GOOD, 3, 2, "")}, {}, r"data/m\.tsv: missing/NaN value .*gene 'G002'.*sample 'S01'"),
    "infinite": ({"m.tsv": _cell(GOOD, 10, 12, "-inf")}, {}, r"data/m\.tsv: infinite value '-inf' at gene 'G009'.*sample 'S11'"),
    "dup_gene": ({"m.tsv": _cell(GOOD, 4, 0, "G001")}, {}, r"data/m\.tsv: duplicate gene ids in the first column: \['G001'\]"),
    "dup_sample": ({"m.tsv": _cell(GOOD, 0, 5, "S02")}, {}, r"data/m\.tsv: duplicate sample ids in the header line: \['S02'\]"),
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
    "fewer_than_neighbours": (
        {"m.tsv": _tsv(X0[:, :3], GENES, SAMPLES[:3])},
        {},
        rf"data/m\.tsv: 3 samples but graph\.n_neighbors = {N_NEIGHBORS}",
    ),
    "truncated_gzip": ({"m.tsv.gz": gzip.compress(GOOD.encode())[:-40]}, {}, r"data/m\.tsv\.gz: truncated or corrupt gzip"),
    "checksum": ({"m.tsv": GOOD}, {"sha256": "0" * 64}, r"data/m\.tsv: expected sha256 0{64}, got"),
    "unreadable": ({"m.tsv/placeholder": ""}, {}, r"data/m\.tsv is not a readable file"),
    "bad_extension": ({"m.dat": GOOD}, {}, r"data/m\.dat: cannot tell the format from the file name"),
    # allowed, reported
    "constant_gene": ({"m.tsv": _tsv(np.vstack([X0[:5], np.full((1, 12), 7.0), X0[6:]]), GENES, SAMPLES)}, {}, None),
    "more_samples_than_genes": ({"m.tsv": _tsv(_matrix(30, 8)[0].T, _matrix(30, 8)[2], _matrix(30, 8)[1], "sample")}, {"orientation": "samples_by_genes"}, None),
}


@pytest.fixture(scope="module")
def bad_run(tmp_path_factory, mini_workflow, snakemake_run):
    work = tmp_path_factory.mktemp("bad")
    datasets = {}
    for name, (files, extra, _) in CASES.items():
        d = work / "data" / name
        d.mkdir(parents=True)
        for fname, content in files.items():
            (d / fname).parent.mkdir(parents=True, exist_ok=True)
            (d / fname).write_bytes(content if isinstance(content, bytes) else content.encode())
        main = next(f for f in files if f.startswith("m.")).split("/")[0]
        cfg = {"expression": f"data/{name}/{main}", **extra}
        if "labels" in cfg:
            cfg["labels"] = f"data/{name}/{cfg['labels']}"
            cfg.setdefault("label_column", "subtype")
        datasets[name] = cfg
    config = {"run": sorted(CASES), "graph": {"n_neighbors": N_NEIGHBORS}, "datasets": datasets}
    targets = [f"results/{n}/prepared.h5ad" for n in CASES]
    proc = snakemake_run(mini_workflow(work), work, config, targets, "--keep-going")
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
    if case in ("checksum", "unreadable"):  # the fetch step failed: no provenance either
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
