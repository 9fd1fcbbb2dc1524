"""Readers on the real vendored files (expected numbers are independent facts
from the files' documentation in resources/README.md and the papers, not the
code's own output), and the input cases users really have (issue 11): labels
in an .h5ad, raw counts, odd ids, unsafe file names, a full disk."""

from __future__ import annotations

import hashlib
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from glfs.core._value_checks import looks_like_counts
from glfs_workflow import datasets, fetch, files, preprocessing, readers, vendored

RES = Path(__file__).resolve().parents[2] / "resources"
GOLUB = RES / "golub"
GBM = RES / "tcga_gbm"

# sha256 from MANIFEST.md / resources/README.md
SHA = {
    "golub/data_set_ALL_AML_train.csv": "df442daf35e5fb6230ee06a1fce0f4f9d8de9b8f0e325c61ed50ab79f43dbd01",
    "golub/data_set_ALL_AML_independent.csv": "d89649c714ae356ff3f9ea79aef024e3932096d71b72600592c0baaef830de6c",
    "golub/actual.csv": "af291eced4116e257af0b73043e83b55d9b42f0d815440a4c5bc72424d2f44e1",
    "tcga_gbm/STATegRa_S1.rda": "d42e1ecd2d50d7c9aa715c4b5646e49ce9a1b9a2423dcf3c46a5c4f9ed801a22",
    "tcga_gbm/STATegRa_S1_sample_map.derived.tsv": "494e2ce5b26a021a4fb279d4960ac6418ec58d1df8829f72dac092d172265b6e",
    "tcga_gbm/TCGA_unified_CORE_ClaNC840.txt": "c69b92feb65b29d1a3d913818cb480fa8d1b4c8b73dcc3a2df7954855145b86d",
    "tcga_gbm/TCGAbiolinks_lgg.gbm.subtype.tsv": "8c70c2e9468805514b120fd213cecf3f8da1093c67334b3b3f7695ac28df4cbd",
    # the single-cell development panel (studies/real-panel.md)
    "singlecell/mouse_bladder_2100.h5ad": "1336faa6ca5c03afbf3850d0345046c009bd538d202ae8752b045870dc346d71",
    "singlecell/zeisel2015_mouse_cortex_4000g.h5ad": "d77a542df9b1c5a0d991b555e80f4022049363bbf44fc094937ab4875e55b3d0",
    "singlecell/kang2018_pbmc_5donors_2511g.h5ad": "f7c9689455b5857877fea7380938e9535b1261227a525906d0d41e77dc6b43ad",
    "singlecell/stoeckius2017_cbmc_500g.h5ad": "654709383062885be6dd1d55b8bd7cace7e550e6d3be4f340b9688633a9ed815",
}


@pytest.mark.parametrize("rel", sorted(SHA))
def test_vendored_files_match_manifest(rel):
    assert hashlib.sha256((RES / rel).read_bytes()).hexdigest() == SHA[rel]


@pytest.fixture(scope="module")
def golub():
    return vendored.read_golub(GOLUB / "data_set_ALL_AML_train.csv", GOLUB / "data_set_ALL_AML_independent.csv")


def test_golub_shape_and_patient_order(golub):
    assert golub.X.shape == (72, 7129)
    assert golub.samples == [str(p) for p in range(1, 73)]
    assert list(golub.obs["patient"]) == list(range(1, 73))
    assert golub.var["probe_id"].is_unique
    assert golub.genes[0] == "AFFX-BioB-5_at"


def test_golub_values_follow_patients_not_columns(golub):
    # train CSV, first data line, hand-read: value columns 28..34 are patients
    # 34, 35, 36, 37, 38, 28, 29 with values -20, 7, -213, -25, -72, -4, 15
    j = golub.genes.index("AFFX-BioB-5_at")
    assert golub.X[33, j] == -20  # patient 34
    assert golub.X[34, j] == 7  # patient 35
    assert golub.X[27, j] == -4  # patient 28
    assert golub.X[28, j] == 15  # patient 29
    assert golub.X[0, j] == -214  # patient 1


def test_golub_split_and_labels(golub, tmp_path):
    assert (golub.obs["split"] == "train").sum() == 38
    assert (golub.obs["split"] == "test").sum() == 34
    assert list(golub.obs.loc[golub.obs["split"] == "train", "patient"]) == list(range(1, 39))
    labels = readers.read_labels(GOLUB / "actual.csv", "patient", "cancer")
    m, rep = datasets.attach_labels(golub, labels)
    lab = m.obs["label"]
    assert (lab == "ALL").sum() == 47 and (lab == "AML").sum() == 25
    train = m.obs["split"] == "train"
    assert (lab[train] == "ALL").sum() == 27 and (lab[train] == "AML").sum() == 11
    assert (lab[~train] == "ALL").sum() == 20 and (lab[~train] == "AML").sum() == 14
    assert list(lab.iloc[:27]) == ["ALL"] * 27 and list(lab.iloc[27:38]) == ["AML"] * 11


def test_golub_raw_values(golub):
    # MANIFEST: about 29 % of the raw values are <= 0; train range -28400..61228
    frac = float((golub.X <= 0).mean())
    assert 0.27 < frac < 0.31
    assert golub.X[:38].min() == -28400 and golub.X[:38].max() == 61228


def test_dudoit_filter_keeps_3571_genes(golub):
    # Dudoit, Fridlyand & Speed (2002), Sec. 3.1: 3571 genes remain for the leukemia data
    X, keep, used = preprocessing.preprocess(golub.X, golub.genes, "dudoit")
    assert X.shape == (72, 3571) and keep.sum() == 3571
    assert used == {"floor": 100.0, "ceiling": 16000.0, "min_fold": 5.0, "min_diff": 500.0}
    assert np.allclose(X.max(), np.log10(16000)) and np.allclose(X.min(), 2.0)


def test_log2_and_zscore():
    X = np.array([[1.0, 100.0], [40.0, 400.0], [30000.0, 800.0]])
    L, keep, _ = preprocessing.preprocess(X, ["a", "b"], "log2")
    assert np.allclose(L[:, 0], np.log2([20, 40, 16000]))
    Z, _, _ = preprocessing.preprocess(X, ["a", "b"], "zscore")
    assert np.allclose(Z.mean(0), 0) and np.allclose(Z.std(0), 1)
    with pytest.raises(readers.DataError, match="gene 'a'.*floor"):
        preprocessing.preprocess(np.array([[-1.0], [2.0]]), ["a"], "log2", {"floor": None})


def test_stategra_tcga_gbm():
    pytest.importorskip("rdata")  # the workflow extra reads .rda
    m = vendored.read_stategra(GBM / "STATegRa_S1.rda", GBM / "STATegRa_S1_sample_map.derived.tsv")
    assert m.X.shape == (169, 1740)
    counts = m.obs["label"].value_counts().to_dict()
    assert counts == {"Proneural": 52, "Neural": 24, "Classical": 37, "Mesenchymal": 56}
    assert all(s.startswith("TCGA-") and len(s) == 19 for s in m.samples)
    assert len(set(m.samples)) == 169
    assert m.samples[0] == "TCGA-02-0003-01A-01" and m.obs["stategra_sample"].iloc[0] == "sample1"
    # MANIFEST: the 4 core samples missing from Block1
    for missing in ("TCGA-02-0046", "TCGA-06-0132", "TCGA-06-0167", "TCGA-06-0148"):
        assert not any(s.startswith(missing) for s in m.samples)
    # MANIFEST: range -6.99..6.93, per-gene SD 0.48..3.35
    assert -7.0 < m.X.min() < -6.98 and 6.92 < m.X.max() < 6.94
    sd = m.X.std(0, ddof=1)
    assert 0.47 < sd.min() < 0.49 and 3.34 < sd.max() < 3.36


def test_stategra_labels_agree_with_clanc840():
    pytest.importorskip("rdata")
    s = vendored.read_stategra(GBM / "STATegRa_S1.rda", GBM / "STATegRa_S1_sample_map.derived.tsv")
    c = vendored.read_clanc840(GBM / "TCGA_unified_CORE_ClaNC840.txt")
    cl = c.obs["label"]
    assert all(cl[sid] == lab for sid, lab in zip(s.samples, s.obs["label"]))
    # the map is a correlation match: the shared genes must correlate strongly per sample
    shared = sorted(set(s.genes) & set(c.genes))
    assert len(shared) == 300
    a = pd.DataFrame(s.X, index=s.samples, columns=s.genes)[shared]
    b = pd.DataFrame(c.X, index=c.samples, columns=c.genes).loc[s.samples, shared]
    r = [np.corrcoef(a.iloc[i], b.iloc[i])[0, 1] for i in range(len(a))]
    assert min(r) > 0.95


def test_clanc840():
    m = vendored.read_clanc840(GBM / "TCGA_unified_CORE_ClaNC840.txt")
    assert m.X.shape == (173, 840)
    assert m.obs["label"].value_counts().to_dict() == {
        "Proneural": 53,
        "Neural": 26,
        "Classical": 38,
        "Mesenchymal": 56,
    }
    assert m.var["go_subtype"].value_counts().to_dict() == {"MES": 216, "PN": 178, "CL": 162, "": 155, "NL": 129}
    assert -10.06 < m.X.min() < -10.04 and 13.21 < m.X.max() < 13.23
    assert "DHRS9" in m.genes and "FLJ22655" in m.genes  # around the empty line 251


def test_prepare_golub_anndata():
    cfg = {
        "format": "golub",
        "sample_column": "patient",
        "label_column": "cancer",
        "preprocess": "none",
        "split": {"train_patients": list(range(1, 39))},
        "note": "n",
    }
    paths = {
        "expression": GOLUB / "data_set_ALL_AML_train.csv",
        "independent": GOLUB / "data_set_ALL_AML_independent.csv",
        "labels": GOLUB / "actual.csv",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        a = datasets.prepare_dataset("golub", cfg, paths)
    assert a.shape == (72, 7129) and a.X.dtype == np.float64
    assert isinstance(a.obs["label"].dtype, pd.CategoricalDtype)
    assert list(a.obs["split"].iloc[[0, 37, 38, 71]]) == ["train", "train", "test", "test"]
    assert set(a.var.columns) >= {"probe_id", "description"}
    assert a.uns["dataset"]["n_samples"] == 72 and a.uns["dataset"]["preprocess"] == "none"


def test_tcga_patient_matching_and_drop_unlabelled():
    tab = readers.read_labels(GBM / "TCGAbiolinks_lgg.gbm.subtype.tsv", "patient", "Original.Subtype")
    m = readers.Matrix(
        np.zeros((3, 2)),
        ["TCGA-02-0003-01", "TCGA.06.0132.01", "TCGA-XX-0000-01"],
        ["g1", "g2"],
        pd.DataFrame(index=["g1", "g2"]),
    )
    out, rep = datasets.attach_labels(
        m, tab, match="tcga_patient", label_map={"G-CIMP": "Proneural"}, drop_unlabelled=True
    )
    assert out.samples == ["TCGA-02-0003-01", "TCGA.06.0132.01"]
    assert rep["n_samples_unlabelled_dropped"] == 1
    assert rep["n_label_rows_unmatched"] > 1000  # LGG patients etc. ignored
    # MANIFEST: TCGA-02-0003 is Proneural in ClaNC840 and Ceccarelli agrees; 06-0132 is Neural
    assert list(out.obs["label"]) == ["Proneural", "Neural"]


def _u133a_like(tmp_path):
    """A small file in the layout of Xena's HT_HG-U133A.gz (genes x samples, gzip TSV)."""
    import gzip

    samples = [
        "TCGA-02-0003-01",
        "TCGA-02-0010-01",
        "TCGA-DU-7014-01",
        "TCGA-ZZ-9999-01",
        "TCGA-02-0004-01",
        "TCGA-06-0132-01",
        "TCGA-02-0014-01",
        "TCGA-02-0003-11",
    ]
    rng = np.random.default_rng(0)
    X = rng.normal(7, 1, (5, len(samples))).round(4)
    lines = ["sample\t" + "\t".join(samples)] + [f"GENE{i}\t" + "\t".join(map(str, r)) for i, r in enumerate(X)]
    p = tmp_path / "HT_HG-U133A.gz"
    p.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return p, samples, X


def test_u133a_config_entry_on_xena_like_file(tmp_path):
    """The tcga_gbm_u133a config entry: patient-barcode matching, G-CIMP -> Proneural, NA and unknown dropped."""
    yaml = pytest.importorskip("yaml")

    cfg = yaml.safe_load((RES.parent / "config.yaml").read_text())["datasets"]["tcga_gbm_u133a"]
    p, samples, X = _u133a_like(tmp_path)
    paths = {"expression": p, "labels": GBM / "TCGAbiolinks_lgg.gbm.subtype.tsv"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        a = datasets.prepare_dataset("tcga_gbm_u133a", cfg, paths)
    # hand-read from the table (column Original.Subtype): 02-0003 Proneural, 02-0010 and
    # 02-0014 G-CIMP, 02-0004 Mesenchymal, 06-0132 Neural, DU-7014 NA; ZZ-9999 is absent;
    # 02-0003-11 is a normal sample of a labelled patient: no tumour subtype for it
    keep = [s for s in samples if s not in ("TCGA-DU-7014-01", "TCGA-ZZ-9999-01", "TCGA-02-0003-11")]
    assert list(a.obs_names) == keep
    assert list(a.obs["label"]) == ["Proneural", "Proneural", "Mesenchymal", "Neural", "Proneural"]
    assert a.uns["dataset"]["labels"]["n_samples_unlabelled_dropped"] == 3
    cols = [samples.index(s) for s in keep]
    assert np.array_equal(a.X, X[:, cols].T)


def _planted_frame():
    rng = np.random.default_rng(1)
    X = rng.normal(0, 1, (8, 5))  # 8 samples x 5 genes
    return pd.DataFrame(X.round(6), index=[f"s{i}" for i in range(8)], columns=[f"g{j}" for j in range(5)])


def test_generic_formats_agree(tmp_path):
    import gzip

    import anndata as ad

    df = _planted_frame()
    df.T.to_csv(tmp_path / "a.tsv", sep="\t")  # genes x samples
    with gzip.open(tmp_path / "b.csv.gz", "wt") as fh:
        df.to_csv(fh)  # samples x genes
    with open(tmp_path / "c.gct", "w") as fh:
        fh.write("#1.2\n5\t8\nName\tDescription\t" + "\t".join(df.index) + "\n")
        for g in df.columns:
            fh.write(f"{g}\tdesc {g}\t" + "\t".join(map(str, df[g])) + "\n")
    ad.AnnData(X=df.to_numpy(), obs=pd.DataFrame(index=df.index), var=pd.DataFrame(index=df.columns)).write_h5ad(
        tmp_path / "d.h5ad"
    )
    got = [
        readers.read_matrix(tmp_path / "a.tsv"),
        readers.read_matrix(tmp_path / "b.csv.gz", orientation="samples_by_genes"),
        readers.read_matrix(tmp_path / "c.gct"),
        readers.read_matrix(tmp_path / "d.h5ad"),
    ]
    for m in got:
        assert m.samples == list(df.index) and m.genes == list(df.columns)
        assert np.allclose(m.X, df.to_numpy())
    assert list(got[2].var["description"]) == [f"desc {g}" for g in df.columns]


def test_wrong_orientation_is_not_transposed(tmp_path):
    df = _planted_frame()
    df.to_csv(tmp_path / "m.tsv", sep="\t")  # samples x genes, declared genes_by_samples
    m = readers.read_matrix(tmp_path / "m.tsv", orientation="genes_by_samples")
    assert m.samples == list(df.columns) and m.X.shape == (5, 8)


def test_check_provenance_names_vanished_or_changed_file(tmp_path):
    f = tmp_path / "m.tsv"
    f.write_text("gene\ta\n")
    prov = {"files": {"expression": {"path": str(f), "size": f.stat().st_size}}}
    assert fetch.check_provenance(prov) == {"expression": str(f)}
    f.write_text("gene\ta\tb\n")
    with pytest.raises(readers.DataError, match=r"m\.tsv .*has 9 bytes, 7 when fetched.*forcerun fetch_dataset"):
        fetch.check_provenance(prov)
    f.unlink()
    with pytest.raises(readers.DataError, match=r"m\.tsv .*no longer exists"):
        fetch.check_provenance(prov)


# ---------------------------------------------------------------- issue 11: inputs as users have them


def _prepare(cfg, paths, name="d"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return datasets.prepare_dataset(name, cfg, paths)


def _h5ad(path, obs=None, X=None, n=8, d=5):
    import anndata as ad

    if X is None:
        X = np.random.default_rng(3).normal(size=(n, d))
    n, d = X.shape
    obs = pd.DataFrame(obs or {}, index=[f"s{i}" for i in range(n)])
    ad.AnnData(X=X, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(d)])).write_h5ad(path)
    return path


def test_h5ad_labels_from_named_obs_column(tmp_path):
    cell = ["T/NK", "B", "T/NK", "B", "$x$", "B", "T/NK", "$x$"]
    p = _h5ad(tmp_path / "a.h5ad", {"cell_type": pd.Categorical(cell), "label": ["other"] * 8})
    cfg = {"expression": str(p), "label_column": "cell_type"}
    assert datasets.dataset_has_labels(cfg)
    a = _prepare(cfg, {"expression": p})
    assert list(a.obs["label"]) == cell
    assert a.uns["dataset"]["labelled"] is True
    assert a.uns["dataset"]["n_clusters"] == 3
    # label counts survive a write/read round trip whatever the labels contain ("/" made nested groups)
    a.write_h5ad(tmp_path / "b.h5ad")
    import anndata as ad

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # h5py's FutureWarning about "/" in keys must not appear
        b = ad.read_h5ad(tmp_path / "b.h5ad")
    lc = b.uns["dataset"]["label_counts"]
    assert dict(zip(lc["labels"], (int(c) for c in lc["counts"]))) == {"$x$": 2, "B": 3, "T/NK": 3}


def test_h5ad_without_label_column_is_unlabelled_even_with_a_label_column_in_obs(tmp_path, caplog):
    p = _h5ad(tmp_path / "a.h5ad", {"label": ["c0", "c1"] * 4})
    cfg = {"expression": str(p)}
    assert not datasets.dataset_has_labels(cfg)
    with caplog.at_level("WARNING", logger="glfs_workflow.datasets"):
        a = _prepare(cfg, {"expression": p})
    assert a.uns["dataset"]["labelled"] is False
    assert "label_counts" not in a.uns["dataset"]
    assert "label_column" in a.uns["dataset"]["warnings"]
    assert "obs column 'label' is not used" in caplog.text


def test_dataset_has_labels_follows_the_config():
    assert datasets.dataset_has_labels({"expression": "x.tsv", "labels": "l.tsv"})
    assert not datasets.dataset_has_labels({"expression": "x.tsv"})
    assert datasets.dataset_has_labels({"expression": "data/x.h5ad", "label_column": "c"})
    assert not datasets.dataset_has_labels({"expression": "data/x.h5ad"})
    assert not datasets.dataset_has_labels({"expression": "x.tsv", "label_column": "c"})  # needs a labels table
    assert datasets.dataset_has_labels(
        {"expression": {"url": "https://h/get?id=3", "filename": "x.h5ad"}, "label_column": "c"}
    )
    assert datasets.dataset_has_labels({"expression": "x.rda", "format": "stategra", "extra_files": {}})
    assert datasets.dataset_has_labels({"expression": "x.txt", "format": "clanc840"})


@pytest.mark.parametrize(
    "obs,cfg,match",
    [
        (
            {"cell_type": ["a", "b"] * 4},
            {"label_column": "kind"},
            r"a\.h5ad: obs column 'kind' \(config key label_column\) not found; obs columns are \['cell_type'\]",
        ),
        (
            {"cell_type": pd.Categorical(["a", "b", None, "a", "b", "a", None, "b"])},
            {"label_column": "cell_type"},
            r"a\.h5ad: obs column 'cell_type' \(config key label_column\): no label for 2 of 8 samples: \['s2', 's6'\]",
        ),
        (
            {"cell_type": ["a", "b", "a", "NA", "b", "a", "a", "b"]},
            {"label_column": "cell_type"},
            r"obs column 'cell_type'.*no label for 1 of 8 samples: \['s3'\]",
        ),
    ],
)
def test_h5ad_bad_labels(tmp_path, obs, cfg, match):
    p = _h5ad(tmp_path / "a.h5ad", obs)
    with pytest.raises(readers.DataError, match=match):
        _prepare({"expression": str(p), **cfg}, {"expression": p})


def test_h5ad_missing_labels_dropped_when_asked(tmp_path):
    p = _h5ad(tmp_path / "a.h5ad", {"ct": ["a", "b", None, "a", "b", "a", "b", "b"]})
    a = _prepare({"expression": str(p), "label_column": "ct", "drop_unlabelled": True}, {"expression": p})
    assert "s2" not in a.obs_names and a.n_obs == 7
    assert a.uns["dataset"]["labels"]["n_samples_unlabelled_dropped"] == 1


def test_label_counts_round_trip_from_a_labels_table(tmp_path):
    import anndata as ad

    df = _planted_frame()
    df.T.to_csv(tmp_path / "m.tsv", sep="\t")
    pd.DataFrame({"sample": df.index, "kind": ["a/b", "c"] * 4}).to_csv(tmp_path / "l.tsv", sep="\t", index=False)
    a = _prepare(
        {"expression": "m.tsv", "labels": "l.tsv", "label_column": "kind"},
        {"expression": tmp_path / "m.tsv", "labels": tmp_path / "l.tsv"},
    )
    a.write_h5ad(tmp_path / "p.h5ad")
    lc = ad.read_h5ad(tmp_path / "p.h5ad").uns["dataset"]["label_counts"]
    assert list(lc["labels"]) == ["a/b", "c"] and [int(c) for c in lc["counts"]] == [4, 4]


def _counts(n=12, d=30, seed=0):
    """Negative-binomial counts with a few very highly expressed genes (raw RNA-seq-like)."""
    rng = np.random.default_rng(seed)
    mean = np.exp(rng.normal(1.0, 2.0, d))
    mean[:2] = 2e5
    return rng.negative_binomial(2, 2 / (2 + mean), size=(n, d)).astype(float)


def test_count_like_detection():
    assert looks_like_counts(_counts())
    rng = np.random.default_rng(0)
    assert not looks_like_counts(np.log1p(_counts()))  # logged: not integers
    assert not looks_like_counts(rng.normal(5, 1, (10, 20)).round(3))
    assert not looks_like_counts(np.round(rng.normal(100, 300, (10, 20))))  # negative values (Golub-like)
    assert not looks_like_counts(rng.integers(0, 2, (10, 20)).astype(float))  # binary: no dynamic range
    assert not looks_like_counts(np.zeros((4, 3)))


def test_raw_counts_warned_and_preprocess_options(tmp_path, caplog):
    X = _counts()
    df = pd.DataFrame(X, index=[f"s{i}" for i in range(X.shape[0])], columns=[f"g{j}" for j in range(X.shape[1])])
    df.to_csv(tmp_path / "c.csv")
    cfg = {"expression": "c.csv", "orientation": "samples_by_genes"}
    paths = {"expression": tmp_path / "c.csv"}
    with caplog.at_level("WARNING", logger="glfs_workflow.datasets"):
        a = _prepare(cfg, paths)
    assert "look like raw counts" in caplog.text and "preprocess: normalize_log1p" in caplog.text
    assert "raw counts" in a.uns["dataset"]["warnings"]
    np.testing.assert_array_equal(a.X, X)  # preprocess none: unchanged
    # log1p: log(1 + x); normalize_log1p: each sample scaled to the median library size, then log1p
    b = _prepare({**cfg, "preprocess": "log1p"}, paths)
    np.testing.assert_allclose(b.X, np.log(1.0 + X))
    c = _prepare({**cfg, "preprocess": "normalize_log1p"}, paths)
    lib = X.sum(axis=1)
    np.testing.assert_allclose(np.expm1(c.X).sum(axis=1), np.full(X.shape[0], np.median(lib)))
    np.testing.assert_allclose(c.X, np.log1p(X / lib[:, None] * np.median(lib)))
    assert c.uns["dataset"]["preprocess_params"]["target_sum"] == pytest.approx(np.median(lib))
    assert "raw counts" not in c.uns["dataset"]["warnings"]
    d = _prepare({**cfg, "preprocess": "normalize_log1p", "preprocess_params": {"target_sum": 1e4}}, paths)
    np.testing.assert_allclose(np.expm1(d.X).sum(axis=1), 1e4)


def test_normalize_log1p_agrees_with_scanpy():
    sc = pytest.importorskip("scanpy")
    import anndata as ad

    X = _counts(seed=4)
    a = ad.AnnData(X.copy())
    sc.pp.normalize_total(a)
    sc.pp.log1p(a)
    got, _, _ = preprocessing.preprocess(X, [f"g{j}" for j in range(X.shape[1])], "normalize_log1p")
    np.testing.assert_allclose(got, a.X, rtol=1e-10)


@pytest.mark.parametrize(
    "X,method,match",
    [
        (
            np.array([[1.0, -2.0], [3.0, 4.0]]),
            "log1p",
            r"preprocess 'log1p' needs non-negative values; gene 'b' has -2\.0 at sample 's0'",
        ),
        (
            np.array([[0.0, 0.0], [3.0, 4.0]]),
            "normalize_log1p",
            r"preprocess 'normalize_log1p': sample 's0' has a total of 0",
        ),
    ],
)
def test_log1p_bad_values(X, method, match):
    with pytest.raises(readers.DataError, match=match):
        preprocessing.preprocess(X, ["a", "b"], method, samples=["s0", "s1"])


@pytest.mark.parametrize("value", [0.0, 3.5])
def test_all_constant_matrix_rejected_in_preparation(tmp_path, value):
    pd.DataFrame(np.full((4, 6), value), index=[f"g{j}" for j in range(4)], columns=[f"s{i}" for i in range(6)]).to_csv(
        tmp_path / "m.tsv", sep="\t"
    )
    with pytest.raises(
        readers.DataError,
        match=r"m\.tsv: every one of the 4 genes is constant across the 6 samples.*nothing to select",
    ):
        _prepare({"expression": "m.tsv"}, {"expression": tmp_path / "m.tsv"})


def test_header_ids_stripped_like_row_ids(tmp_path):
    (tmp_path / "m.tsv").write_text("sample\tG1 \t G2\tG3\ns1 \t1\t2\t3\n s2\t4\t5\t7\n")
    m = readers.read_matrix(tmp_path / "m.tsv", orientation="samples_by_genes")
    assert m.genes == ["G1", "G2", "G3"] and m.samples == ["s1", "s2"]
    (tmp_path / "d.tsv").write_text("sample\tG1 \tG1\tG3\ns1\t1\t2\t3\ns2\t4\t5\t7\n")
    with pytest.raises(readers.DataError, match=r"d\.tsv: duplicate gene ids in the header line: \['G1'\]"):
        readers.read_matrix(tmp_path / "d.tsv", orientation="samples_by_genes")


def test_spreadsheet_dates_and_control_characters_in_ids_warned(tmp_path, caplog):
    genes = ["1-Mar", "SEPT2", "2-Sep", "Dec-1", "G\tTAB", "G5", "G6"]
    X = np.random.default_rng(0).normal(size=(6, len(genes)))
    pd.DataFrame(X, index=[f"s{i}" for i in range(6)], columns=genes).to_csv(tmp_path / "m.csv")
    with caplog.at_level("WARNING", logger="glfs_workflow.datasets"):
        a = _prepare({"expression": "m.csv", "orientation": "samples_by_genes"}, {"expression": tmp_path / "m.csv"})
    assert list(a.var_names) == genes  # kept as given, only warned
    assert "3 gene ids look like dates a spreadsheet made from gene symbols" in caplog.text
    assert "['1-Mar', '2-Sep', 'Dec-1']" in caplog.text
    assert "1 gene ids contain tabs, newlines or other control characters: ['G\\tTAB']" in caplog.text
    w = a.uns["dataset"]["warnings"]
    assert "spreadsheet" in w and "control characters" in w


@pytest.mark.parametrize("skip,fmt", [(0, "tsv"), (2, "gct")])
def test_unclosed_quote_names_the_file_line(tmp_path, skip, fmt):
    lines = ["#1.2", "30\t2"][:skip] + ["gene\t" + ("Description\t" if fmt == "gct" else "") + "a\tb"]
    lines += [f"G{i}\t" + ("d\t" if fmt == "gct" else "") + "1\t2" for i in range(30)]
    bad = skip + 21  # 0-based index of file line 22 + skip
    lines[bad] = lines[bad].replace("\t1", '\t"1', 1)
    (tmp_path / f"m.{fmt}").write_text("\n".join(lines) + "\n")
    with pytest.raises(
        readers.DataError, match=rf"m\.{fmt}: unclosed quote: the '\"' opened on line {bad + 1} is never closed"
    ):
        readers.read_matrix(tmp_path / f"m.{fmt}")


@pytest.mark.parametrize("name", ["../../../../x", "/tmp/abs", "a/b", "..", ".", "a\\b", "x\ny"])
def test_file_spec_filename_must_be_a_plain_name(tmp_path, name):
    spec = {"url": "https://example.org/data.tsv", "filename": name}
    with pytest.raises(fetch.FetchError, match=r"dataset 'd' file 'expression': filename must be a plain file name"):
        fetch.resolve_file(spec, dataset="d", role="expression", download_dir=str(tmp_path / "dl"))
    assert not any((tmp_path / "dl").rglob("*")) if (tmp_path / "dl").exists() else True


def test_disk_full_is_one_clear_error(tmp_path, monkeypatch):
    import errno

    import anndata as ad

    a = ad.AnnData(np.zeros((3, 2)))

    def full(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ad.AnnData, "write_h5ad", full)
    with pytest.raises(files.DiskFullError, match=r"^no space left on device while writing .*p\.h5ad$"):
        files.write_h5ad_atomic(a, tmp_path / "p.h5ad")
    assert list(tmp_path.iterdir()) == []

    # an h5py-style error (errno in the text, wrapped by anndata) is recognised too
    def wrapped(self, path, *args, **kwargs):
        try:
            raise OSError("Can't write data (file write failed: errno = 28, error message = 'No space left on device')")
        except OSError as e:
            raise OSError(f"{e}\n\nAbove error raised while writing key 'X'") from e

    monkeypatch.setattr(ad.AnnData, "write_h5ad", wrapped)
    with pytest.raises(files.DiskFullError, match=r"no space left on device while writing"):
        files.write_h5ad_atomic(a, tmp_path / "p.h5ad")
    with pytest.raises(files.DiskFullError):
        with files._atomic_path(tmp_path / "t.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
    # any other error passes through unchanged
    with pytest.raises(PermissionError):
        with files._atomic_path(tmp_path / "t.json"):
            raise PermissionError(errno.EACCES, "denied")


def _enospc(self, path, *args, **kwargs):
    import errno

    raise OSError(errno.ENOSPC, "No space left on device")


def test_scripts_report_a_full_disk_in_one_line(tmp_path, monkeypatch, restore_logging):
    """prepare_dataset.py and select_features.py (its AnnData): one log line naming the output, no traceback, no file."""
    import json
    import runpy
    from types import SimpleNamespace as NS

    import anndata as ad
    import scipy.sparse as sp

    import glfs

    scripts = RES.parent / "scripts"
    df = _planted_frame()
    df.T.to_csv(tmp_path / "m.tsv", sep="\t")
    prov = fetch.fetch_dataset_files("d", {"expression": str(tmp_path / "m.tsv")})
    (tmp_path / "prov.json").write_text(json.dumps(prov))
    monkeypatch.setattr(ad.AnnData, "write_h5ad", _enospc)
    mod = runpy.run_path(str(scripts / "prepare_dataset.py"))
    smk = NS(
        wildcards=NS(dataset="d"),
        input=NS(provenance=str(tmp_path / "prov.json")),
        output=NS(h5ad=str(tmp_path / "out/prepared.h5ad")),
        log=[str(tmp_path / "prep.log")],
        params=NS(dataset={"expression": str(tmp_path / "m.tsv")}, max_expanded_gb=10),
        resources=NS(mem_mb=4000),
    )
    with pytest.raises(SystemExit) as e:
        mod["main"](smk)
    assert e.value.code == 1
    text = (tmp_path / "prep.log").read_text()
    assert text.count(f"no space left on device while writing {tmp_path / 'out/prepared.h5ad'}") == 1
    assert "Traceback" not in text and len(text.splitlines()) <= 3
    assert list((tmp_path / "out").iterdir()) == []

    # select_features.py: a script run as snakemake runs it (global `snakemake`); the full disk hits its AnnData
    monkeypatch.undo()
    a = ad.AnnData(df.to_numpy(), obs=pd.DataFrame(index=df.index), var=pd.DataFrame(index=df.columns))
    a.write_h5ad(tmp_path / "prepared.h5ad")
    sp.save_npz(tmp_path / "graph.npz", glfs.similarity_graph(a.X))
    monkeypatch.setattr(ad.AnnData, "write_h5ad", _enospc)
    smk = NS(
        wildcards=NS(dataset="d"),
        input=NS(adata=str(tmp_path / "prepared.h5ad"), graph=str(tmp_path / "graph.npz")),
        params=NS(methods=["variance"], n_features=2, method_params={"variance": {}}, seed=0, graph={"n_neighbors": 2}),
        output=NS(
            tables=[str(tmp_path / "sel/variance.tsv")],
            metas=[str(tmp_path / "sel/variance.json")],
            adata=str(tmp_path / "res/adata.h5ad"),
        ),
        log=[str(tmp_path / "sel.log")],
    )
    (tmp_path / "res").mkdir()
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(scripts / "select_features.py"), init_globals={"snakemake": smk})
    assert e.value.code == 1
    text = (tmp_path / "sel.log").read_text()
    assert text.count("no space left on device while writing") == 1 and "Traceback" not in text
    assert list((tmp_path / "res").iterdir()) == []


# Issue 19: files that lie about their format (items 2, 3, 7 and 9).


def _gct(rows=3, cols=4, head=("#1.2", None)):
    version, dims = head
    dims = f"{rows}\t{cols}" if dims is None else dims
    lines = ([version] if version is not None else []) + [dims]
    lines.append("Name\tDescription\t" + "\t".join(f"S{j}" for j in range(cols)))
    lines += [f"G{i}\td{i}\t" + "\t".join(f"{i + 0.5 * j:.4f}" for j in range(cols)) for i in range(rows)]
    return "\n".join(lines) + "\n"


def test_gct_reference_file_reads(tmp_path):
    (tmp_path / "m.gct").write_text(_gct())
    m = readers.read_matrix(tmp_path / "m.gct")
    assert m.genes == ["G0", "G1", "G2"] and m.samples == ["S0", "S1", "S2", "S3"]


@pytest.mark.parametrize(
    "text,match",
    [
        # no "#1.2": the dimension line would be skipped as the version and a data row read as the header
        (
            _gct(head=(None, None)),
            r"m\.gct: line 1 is '3\\t4', expected '#1\.2': a \.gct file starts with its version line",
        ),
        (_gct(head=("#1.3", None)), r"m\.gct: line 1 is '#1\.3': GCT version 1\.3 is not read here"),
        (
            _gct(head=("#1.2", "3 genes")),
            r"m\.gct: line 2 is '3 genes', expected the numbers of rows and sample columns",
        ),
        (
            _gct(head=("#1.2", "5\t4")),
            r"m\.gct: line 2 says 5 rows x 4 sample columns, but the file has 3 data rows \(lines 4-6\) and 4 sample columns \(line 3\)",
        ),
        (
            _gct(head=("#1.2", "3\t2")),
            r"m\.gct: line 2 says 3 rows x 2 sample columns, but the file has 3 data rows \(lines 4-6\) and 4 sample columns \(line 3\)",
        ),
    ],
    ids=["no_version", "version_1_3", "bad_dims", "rows_disagree", "columns_disagree"],
)
def test_gct_head_checked(tmp_path, text, match):
    (tmp_path / "m.gct").write_text(text)
    with pytest.raises(readers.DataError, match=match):
        readers.read_matrix(tmp_path / "m.gct")


def test_utf8_bom_is_stripped_everywhere(tmp_path):
    bom = "\ufeff"
    # R write.table header (no corner cell) right after the BOM
    (tmp_path / "m.tsv").write_text(bom + "S0\tS1\tS2\nG0\t1\t2\t3\nG1\t4\t5\t7\n", encoding="utf-8")
    assert readers.read_matrix(tmp_path / "m.tsv").samples == ["S0", "S1", "S2"]
    # with a corner cell, and gzip-compressed
    import gzip

    (tmp_path / "c.tsv.gz").write_bytes(gzip.compress((bom + "gene\tS0\tS1\nG0\t1\t2\nG1\t4\t5\n").encode()))
    assert readers.read_matrix(tmp_path / "c.tsv.gz").samples == ["S0", "S1"]
    (tmp_path / "c.gct").write_text(bom + _gct())
    assert readers.read_matrix(tmp_path / "c.gct").genes == ["G0", "G1", "G2"]
    (tmp_path / "l.tsv").write_text(bom + "sample\tsubtype\nS0\ta\nS1\tb\nS2\ta\n", encoding="utf-8")
    lab = readers.read_labels(tmp_path / "l.tsv", "sample", "subtype")
    assert list(lab.index) == ["S0", "S1", "S2"]
    (tmp_path / "l2.tsv").write_text(bom + "subtype\tsample\na\tS0\nb\tS1\n", encoding="utf-8")
    assert list(readers.read_labels(tmp_path / "l2.tsv", "sample", "subtype")) == ["a", "b"]


@pytest.mark.parametrize(
    "name,content,match",
    [
        (
            "m.tsv",
            "gene\tS0\nG0\t1\n".encode("utf-16"),
            r"m\.tsv: this file is UTF-16 text \(byte-order mark\); convert it to UTF-8",
        ),
        (
            "m.tsv",
            "gene\tS0\nG0\t1\n".encode("utf-16-le"),
            r"m\.tsv: this file looks like UTF-16 text without a byte-order mark.*convert it to UTF-8",
        ),
        (
            "m.tsv",
            __import__("bz2").compress(b"gene\tS0\nG0\t1\n"),
            r"m\.tsv: this file is bz2-compressed; convert it to gzip",
        ),
        (
            "m.tsv.bz2",
            __import__("bz2").compress(b"gene\tS0\nG0\t1\n"),
            r"m\.tsv\.bz2: this file is bz2-compressed; convert it to gzip",
        ),
        (
            "m.tsv",
            __import__("lzma").compress(b"gene\tS0\nG0\t1\n"),
            r"m\.tsv: this file is xz-compressed; convert it to gzip",
        ),
        (
            "m.tsv.gz",
            __import__("gzip").compress("gene\tS0\nG0\t1\n".encode("utf-16")),
            r"m\.tsv\.gz: this file is UTF-16 text \(byte-order mark\); convert it to UTF-8",
        ),
    ],
    ids=["utf16_bom", "utf16_no_bom", "bz2_magic", "bz2_name", "xz", "utf16_in_gzip"],
)
def test_other_encodings_and_compressions_are_named(tmp_path, name, content, match):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(readers.DataError, match=match):
        readers.read_matrix(tmp_path / name, fmt="tsv")
    if not name.endswith(".bz2"):
        with pytest.raises(readers.DataError, match=match):
            readers.read_table(tmp_path / name)


@pytest.mark.parametrize("value", ["1e309", "-1e309", "2E+400"])
def test_overflowing_number_is_named_as_such(tmp_path, value):
    (tmp_path / "m.tsv").write_text(f"gene\tS0\tS1\nG0\t1\t2\nG1\t3\t{value}\n")
    with pytest.raises(
        readers.DataError,
        match=rf"m\.tsv: value '{re.escape(value)}' at gene 'G1' \(line 3\), sample 'S1' \(column 3\) overflows: its magnitude is beyond the largest float64",
    ):
        readers.read_matrix(tmp_path / "m.tsv")


def test_gzip_expansion_is_bounded(tmp_path):
    import gzip

    body = b"gene\tS0\tS1\n" + b"G0\t1\t2\n" + b"0" * (4 << 20)
    (tmp_path / "m.tsv.gz").write_bytes(gzip.compress(body))
    assert (tmp_path / "m.tsv.gz").stat().st_size < 50_000
    with pytest.raises(
        readers.DataError,
        match=r"m\.tsv\.gz: gzip-compressed text expands to more than 1048576 bytes \(the limit, max_expanded_bytes\); stopped there",
    ):
        readers.read_matrix(tmp_path / "m.tsv.gz", max_expanded_bytes=1 << 20)
    with pytest.raises(readers.DataError, match=r"m\.tsv\.gz: gzip-compressed text expands to more than 1048576 bytes"):
        readers.read_table(tmp_path / "m.tsv.gz", max_expanded_bytes=1 << 20)
    assert readers.MAX_EXPANDED_BYTES >= 1 << 30  # generous library default


def test_memory_error_and_empty_messages_name_the_file(tmp_path, monkeypatch):
    (tmp_path / "m.tsv").write_text("gene\tS0\tS1\nG0\t1\t2\nG1\t3\t4\n")

    def oom(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(readers.pd, "read_csv", oom)
    with pytest.raises(
        readers.DataError, match=r"m\.tsv: out of memory while reading this file \(\d+ bytes on disk\)"
    ) as err:
        readers.read_matrix(tmp_path / "m.tsv")
    assert str(err.value).strip()
    with pytest.raises(readers.DataError, match=r"m\.tsv: out of memory while reading this file"):
        readers.read_labels(tmp_path / "m.tsv", "gene", "S0")

    def silent(*args, **kwargs):
        raise RuntimeError()

    monkeypatch.setattr(readers.pd, "read_csv", silent)
    with pytest.raises(readers.DataError, match=r"m\.tsv: RuntimeError while reading this file \(no further message\)"):
        readers.read_matrix(tmp_path / "m.tsv")


# ---------------------------------------------------------------- issue 19 item 4: labels that cannot be clustered


def _labelled(tmp_path, labels, extra=None, X=None):
    """An 8 x 5 matrix with a labels table (column 'kind'); prepare it with ``extra`` config keys."""
    df = _planted_frame() if X is None else X
    df.T.to_csv(tmp_path / "m.tsv", sep="\t")
    pd.DataFrame({"sample": df.index, "kind": labels}).to_csv(tmp_path / "l.tsv", sep="\t", index=False)
    cfg = {"expression": "m.tsv", "labels": "l.tsv", "label_column": "kind", **(extra or {})}
    return _prepare(cfg, {"expression": tmp_path / "m.tsv", "labels": tmp_path / "l.tsv"})


@pytest.mark.parametrize(
    "labels,extra,match",
    [
        (
            ["c"] * 8,
            {},
            r"l\.tsv: column 'kind' \(config key label_column\): all 8 samples have the label 'c' \(label counts \{'c': 8\}\); "
            r"the clustering evaluation needs at least 2 classes",
        ),
        (
            ["a", "b"] * 4,
            {"label_map": {"a": "x", "b": "x"}},
            r"l\.tsv: column 'kind' \(config key label_column\): all 8 samples have the label 'x' after label_map \(label counts \{'x': 8\}\)",
        ),
        (
            [f"p{i}" for i in range(8)],
            {},
            r"l\.tsv: column 'kind' \(config key label_column\): each of the 8 samples has a label of its own \(8 classes of 1 sample: "
            r"\['p0', 'p1', 'p2', 'p3', 'p4'\] \.\.\.\); the clustering evaluation needs fewer classes than samples",
        ),
        (
            ["a", "b"] * 4,
            {"n_clusters": 8},
            r"config key datasets\.d\.n_clusters = 8: must be smaller than the 8 samples \(spectral clustering needs fewer clusters than samples\)",
        ),
        (
            ["a", "b"] * 4,
            {"n_clusters": 9},
            r"config key datasets\.d\.n_clusters = 9: must be smaller than the 8 samples",
        ),
    ],
    ids=["one_class", "one_class_after_label_map", "own_class_each", "n_clusters_eq_n", "n_clusters_gt_n"],
)
def test_labels_that_cannot_be_clustered_refused_at_preparation(tmp_path, labels, extra, match):
    with pytest.raises(readers.DataError, match=match):
        _labelled(tmp_path, labels, extra)


def test_labels_that_can_be_clustered_pass(tmp_path):
    a = _labelled(tmp_path, ["a"] * 7 + ["b"], {"n_clusters": 7})  # 2 classes, one of 1 sample; n_clusters n - 1
    assert a.uns["dataset"]["n_clusters"] == 7


def test_h5ad_one_class_names_the_obs_column(tmp_path):
    p = _h5ad(tmp_path / "a.h5ad", {"ct": ["a", "b", None, "a", None, "a", "b", None]})
    with pytest.raises(
        readers.DataError,
        match=r"a\.h5ad: obs column 'ct' \(config key label_column\): all 5 samples have the label 'a' after label_map",
    ):
        _prepare(
            {"expression": str(p), "label_column": "ct", "drop_unlabelled": True, "label_map": {"b": "a"}},
            {"expression": p},
        )


@pytest.mark.parametrize(
    "scale,match",
    [
        (
            1e154,
            r"m\.tsv: values up to \d\.\d+e\+154 in absolute value \(gene 'g\d', sample 's\d'\); the methods need the largest "
            r"\|value\| in \[1e-50, 1e\+50\]",
        ),
        (1e-200, r"m\.tsv: values only up to \d\.\d+e-200 in absolute value \(gene 'g\d', sample 's\d'\)"),
    ],
)
def test_extreme_scales_refused_at_preparation(tmp_path, scale, match):
    for preprocess in ("none", "zscore"):  # zscore squares the raw values: checked before it runs
        with pytest.raises(readers.DataError, match=match + r".*preprocess: " + preprocess + r"\): divide the values"):
            _labelled(tmp_path, ["a", "b"] * 4, {"preprocess": preprocess}, X=_planted_frame() * scale)


def test_h5ad_with_more_cells_than_genes_gets_no_orientation_warning(tmp_path):
    """Issue 30 (low): an .h5ad has no `orientation` (obs are the samples): more cells than genes, as in
    every single-cell file, is no reason for a warning; a text matrix keeps it."""
    p = _h5ad(tmp_path / "cells.h5ad", n=30, d=6)
    a = _prepare({"expression": str(p)}, {"expression": p})
    assert "samples >" not in str(a.uns["dataset"].get("warnings", ""))
    pd.DataFrame(
        np.random.default_rng(1).normal(size=(6, 30)),
        index=[f"g{j}" for j in range(6)],
        columns=[f"s{i}" for i in range(30)],
    ).to_csv(tmp_path / "m.tsv", sep="\t")
    t = _prepare({"expression": "m.tsv"}, {"expression": tmp_path / "m.tsv"})
    assert "30 samples > 6 genes" in str(t.uns["dataset"]["warnings"])


def test_a_preparation_error_names_the_file_and_is_logged_once(tmp_path, capsys, restore_logging):
    """Issue 30 (low): "preprocess 'normalize_log1p': sample 'S2' has a total of 0" named the sample but
    not the file; the script logs it once to its log and writes it once to stderr."""
    import json
    import runpy
    from types import SimpleNamespace as NS

    (tmp_path / "m.tsv").write_text("gene\tS0\tS1\tS2\tS3\nG0\t1\t2\t0\t4\nG1\t3\t1\t0\t2\nG2\t5\t0\t0\t1\n")
    spec = {"expression": str(tmp_path / "m.tsv"), "preprocess": "normalize_log1p"}
    with pytest.raises(
        readers.DataError,
        match=rf"^{re.escape(str(tmp_path / 'm.tsv'))}: preprocess 'normalize_log1p': "
        r"sample 'S2' has a total of 0 over all genes",
    ):
        datasets.prepare_dataset("d", spec, {"expression": tmp_path / "m.tsv"})
    prov = fetch.fetch_dataset_files("d", {"expression": str(tmp_path / "m.tsv")})
    (tmp_path / "prov.json").write_text(json.dumps(prov))
    smk = NS(
        wildcards=NS(dataset="d"),
        input=NS(provenance=str(tmp_path / "prov.json")),
        output=NS(h5ad=str(tmp_path / "out/prepared.h5ad")),
        log=[str(tmp_path / "prep.log")],
        params=NS(dataset=spec, max_expanded_gb=10),
        resources=NS(mem_mb=4000),
    )
    mod = runpy.run_path(str(RES.parent / "scripts" / "prepare_dataset.py"))
    with pytest.raises(SystemExit):
        mod["main"](smk)
    errors = [x for x in (tmp_path / "prep.log").read_text().splitlines() if " ERROR: " in x]
    assert len(errors) == 1 and f"{tmp_path / 'm.tsv'}: preprocess 'normalize_log1p': sample 'S2'" in errors[0]
    assert capsys.readouterr().err.count("has a total of 0") == 1
