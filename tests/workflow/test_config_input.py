"""Config values as YAML really reads them, and the labels table under the reader's limits (issue 41, items 5, 8, 9).

YAML 1.1 (PyYAML, which Snakemake uses) reads an unquoted ``1`` as an integer and ``no`` as False; the labels of
a table are text.  ``key_added``/``graph_key`` name elements of the saved .h5ad, an HDF5 file, where "/" separates
groups: the expected outcome of each is what reading the saved file back gives."""

from __future__ import annotations

import gzip
import logging
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml

import glfs
from glfs_workflow import datasets
from glfs_workflow.errors import DataError
from glfs_workflow.memory import rss_bytes

ad = pytest.importorskip("anndata")

N, D = 8, 5


def _files(tmp_path, labels):
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(N, D)).round(6), index=[f"s{i}" for i in range(N)])
    df.columns = [f"g{j}" for j in range(D)]
    df.T.to_csv(tmp_path / "m.tsv", sep="\t")
    pd.DataFrame({"sample": df.index, "kind": labels}).to_csv(tmp_path / "l.tsv", sep="\t", index=False)
    return {"expression": tmp_path / "m.tsv", "labels": tmp_path / "l.tsv"}


def _prepare(tmp_path, labels, cfg_yaml, **limits):
    cfg = {"expression": "m.tsv", "labels": "l.tsv", "label_column": "kind", **yaml.safe_load(cfg_yaml)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return datasets.prepare_dataset("d", cfg, _files(tmp_path, labels), **limits)


@pytest.mark.parametrize(
    ("labels", "cfg_yaml", "want"),
    [
        (["1", "2"] * 4, "label_map: {1: one, 2: two}", ["one", "two"] * 4),
        (["1.5", "2"] * 4, "label_map: {1.5: low, '2': high}", ["low", "high"] * 4),
    ],
)
def test_numeric_label_map_keys_match_the_text_labels(tmp_path, labels, cfg_yaml, want):
    a = _prepare(tmp_path, labels, cfg_yaml)
    assert a.obs["label"].astype(str).tolist() == want


def test_boolean_label_map_key_is_refused_naming_the_key(tmp_path):
    with pytest.raises(DataError, match=r"label_map.*boolean.*'no': normal"):
        _prepare(tmp_path, ["no", "yes"] * 4, "label_map: {no: normal}")


def test_a_label_map_key_matching_no_label_is_warned(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="glfs_workflow.datasets"):
        _prepare(tmp_path, ["a", "b"] * 4, "label_map: {A: x}")
    assert any("label_map keys ['A'] match no label" in r.getMessage() for r in caplog.records)


def _big_labels(tmp_path, mb):
    """A labels.tsv.gz whose text is ``mb`` MB (a few kB on disk): the matrix's samples, then padding rows."""
    files = _files(tmp_path, ["a", "b"] * 4)
    head = (tmp_path / "l.tsv").read_text()
    pad = "x" * 1000 + "\tz\n"
    with gzip.open(tmp_path / "l.tsv.gz", "wt") as fh:
        fh.write(head)
        for _ in range(mb * 2**20 // len(pad)):
            fh.write(pad)
    files["labels"] = tmp_path / "l.tsv.gz"
    return files


def test_the_labels_table_is_bounded_by_max_expanded_gb(tmp_path):
    files = _big_labels(tmp_path, 12)
    cfg = {"expression": "m.tsv", "labels": "l.tsv.gz", "label_column": "kind"}
    with pytest.raises(DataError, match=r"l\.tsv\.gz.*fetch\.max_expanded_gb"):
        datasets.prepare_dataset("d", cfg, files, max_expanded_gb=0.01)


def test_the_labels_table_is_bounded_by_the_jobs_memory(tmp_path):
    files = _big_labels(tmp_path, 12)  # 12 MB of text: about 160 MB to parse (13 bytes per byte of text)
    cfg = {"expression": "m.tsv", "labels": "l.tsv.gz", "label_column": "kind"}
    with pytest.raises(DataError, match=r"l\.tsv\.gz.*mem_mb"):
        datasets.prepare_dataset("d", cfg, files, mem_mb=rss_bytes() / 2**20 + 40)


def _adata():
    rng = np.random.default_rng(0)
    return ad.AnnData(rng.poisson(3.0, size=(40, 6)).astype(np.float64))


@pytest.mark.parametrize("bad", ["/x", "x/", ".", "a/b", ".."])
@pytest.mark.parametrize("arg", ["key_added", "graph_key"])
def test_keys_that_cannot_name_an_hdf5_element_are_refused_up_front(tmp_path, arg, bad):
    a = _adata()
    with pytest.raises(ValueError, match=rf"^{arg} must be a name without '/'"):
        glfs.tl.select(a, "laplacian_score", 2, **{arg: bad})
    assert list(a.var.columns) == [] and not a.uns and not a.obsp  # nothing written


@pytest.mark.parametrize("arg", ["key_added", "graph_key"])
def test_a_plain_key_is_written_and_read_back(tmp_path, arg):
    a = _adata()
    glfs.tl.select(a, "laplacian_score", 2, **{arg: "mine.v2"})
    a.write_h5ad(tmp_path / "a.h5ad")
    b = ad.read_h5ad(tmp_path / "a.h5ad")
    assert ("mine.v2" in b.var.columns) if arg == "key_added" else ("mine.v2" in b.obsp)


def _schema_error(change):
    """The message of Snakemake's schema validation (as common.smk runs it) of the shipped config.yaml with
    ``change(cfg)`` applied, or None."""
    from pathlib import Path

    from snakemake.utils import validate

    repo = Path(__file__).resolve().parents[2]
    cfg = yaml.safe_load((repo / "config.yaml").read_text())
    change(cfg)
    try:
        validate(cfg, str(repo / "workflow/schemas/config.schema.yaml"))
    except Exception as exc:  # noqa: BLE001 - snakemake's WorkflowError
        return str(exc)
    return None


def test_a_seed_beyond_numpys_range_is_refused_by_the_schema_naming_the_key():
    """Item 13: numpy takes seeds in [0, 2**32 - 1]; 2**32 passed the schema and failed naming random_state."""
    assert _schema_error(lambda c: c.update(seed=2**32 - 1)) is None
    err = _schema_error(lambda c: c.update(seed=2**32))
    assert err is not None and "seed" in err and "4294967296" in err


def test_a_method_listed_twice_for_a_dataset_is_refused_by_the_schema():
    """Item 14: a dataset's own ``methods`` list took duplicates (evaluated twice, duplicate rows)."""

    def methods(listed):
        return lambda c: next(iter(c["datasets"].values())).update(methods=listed)

    assert _schema_error(methods(["variance", "laplacian_score"])) is None
    err = _schema_error(methods(["variance", "variance"]))
    assert err is not None and "non-unique" in err


@pytest.mark.parametrize("span", [0, 0.0, float("nan"), -0.3])
def test_hvg_seurat_v3_span_that_is_not_positive_is_a_value_error_naming_span(span):
    """Item 23: span=0 raised ZeroDivisionError, span=nan "cannot convert float NaN to integer"."""
    pytest.importorskip("scanpy")
    pytest.importorskip("skmisc")
    X = np.random.default_rng(0).poisson(2.0, size=(60, 40)).astype(np.float64)
    with pytest.raises(ValueError, match=r"^span must be a positive number"):
        glfs.select(X, method="hvg_seurat_v3", n_features_to_select=5, counts=X, span=span)
