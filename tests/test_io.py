"""Readers on the real vendored files; expected numbers are independent facts
from ../shared/data/MANIFEST.md (and the papers), not the code's own output."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import glfs.io as gio

RES = Path(__file__).resolve().parents[1] / "resources"
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
}


@pytest.mark.parametrize("rel", sorted(SHA))
def test_vendored_files_match_manifest(rel):
    assert hashlib.sha256((RES / rel).read_bytes()).hexdigest() == SHA[rel]


@pytest.fixture(scope="module")
def golub():
    return gio.read_golub(GOLUB / "data_set_ALL_AML_train.csv", GOLUB / "data_set_ALL_AML_independent.csv")


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
    labels = gio.read_labels(GOLUB / "actual.csv", "patient", "cancer")
    m, rep = gio.attach_labels(golub, labels)
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
    X, keep, used = gio.preprocess(golub.X, golub.genes, "dudoit")
    assert X.shape == (72, 3571) and keep.sum() == 3571
    assert used == {"floor": 100.0, "ceiling": 16000.0, "min_fold": 5.0, "min_diff": 500.0}
    assert np.allclose(X.max(), np.log10(16000)) and np.allclose(X.min(), 2.0)


def test_log2_and_zscore():
    X = np.array([[1.0, 100.0], [40.0, 400.0], [30000.0, 800.0]])
    L, keep, _ = gio.preprocess(X, ["a", "b"], "log2")
    assert np.allclose(L[:, 0], np.log2([20, 40, 16000]))
    Z, _, _ = gio.preprocess(X, ["a", "b"], "zscore")
    assert np.allclose(Z.mean(0), 0) and np.allclose(Z.std(0), 1)
    with pytest.raises(gio.DataError, match="gene 'a'.*floor"):
        gio.preprocess(np.array([[-1.0], [2.0]]), ["a"], "log2", {"floor": None})


def test_stategra_tcga_gbm():
    m = gio.read_stategra(GBM / "STATegRa_S1.rda", GBM / "STATegRa_S1_sample_map.derived.tsv")
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
    s = gio.read_stategra(GBM / "STATegRa_S1.rda", GBM / "STATegRa_S1_sample_map.derived.tsv")
    c = gio.read_clanc840(GBM / "TCGA_unified_CORE_ClaNC840.txt")
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
    m = gio.read_clanc840(GBM / "TCGA_unified_CORE_ClaNC840.txt")
    assert m.X.shape == (173, 840)
    assert m.obs["label"].value_counts().to_dict() == {"Proneural": 53, "Neural": 26, "Classical": 38, "Mesenchymal": 56}
    assert m.var["go_subtype"].value_counts().to_dict() == {"MES": 216, "PN": 178, "CL": 162, "": 155, "NL": 129}
    assert -10.06 < m.X.min() < -10.04 and 13.21 < m.X.max() < 13.23
    assert "DHRS9" in m.genes and "FLJ22655" in m.genes  # around the empty line 251


def test_prepare_golub_anndata():
    cfg = {
        "format": "golub", "sample_column": "patient", "label_column": "cancer", "preprocess": "none",
        "split": {"train_patients": list(range(1, 39))}, "note": "n",
    }
    paths = {
        "expression": GOLUB / "data_set_ALL_AML_train.csv",
        "independent": GOLUB / "data_set_ALL_AML_independent.csv",
        "labels": GOLUB / "actual.csv",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        a = gio.prepare_dataset("golub", cfg, paths, n_neighbors=5)
    assert a.shape == (72, 7129) and a.X.dtype == np.float64
    assert isinstance(a.obs["label"].dtype, pd.CategoricalDtype)
    assert list(a.obs["split"].iloc[[0, 37, 38, 71]]) == ["train", "train", "test", "test"]
    assert set(a.var.columns) >= {"probe_id", "description"}
    assert a.uns["dataset"]["n_samples"] == 72 and a.uns["dataset"]["preprocess"] == "none"


def test_tcga_patient_matching_and_drop_unlabelled():
    tab = gio.read_labels(GBM / "TCGAbiolinks_lgg.gbm.subtype.tsv", "patient", "Original.Subtype")
    m = gio.Matrix(
        np.zeros((3, 2)), ["TCGA-02-0003-01", "TCGA.06.0132.01", "TCGA-XX-0000-01"], ["g1", "g2"],
        pd.DataFrame(index=["g1", "g2"]),
    )
    out, rep = gio.attach_labels(m, tab, match="tcga_patient", label_map={"G-CIMP": "Proneural"}, drop_unlabelled=True)
    assert out.samples == ["TCGA-02-0003-01", "TCGA.06.0132.01"]
    assert rep["n_samples_unlabelled_dropped"] == 1
    assert rep["n_label_rows_unmatched"] > 1000  # LGG patients etc. ignored
    # MANIFEST: TCGA-02-0003 is Proneural in ClaNC840 and Ceccarelli agrees; 06-0132 is Neural
    assert list(out.obs["label"]) == ["Proneural", "Neural"]


def _u133a_like(tmp_path):
    """A small file in the layout of Xena's HT_HG-U133A.gz (genes x samples, gzip TSV)."""
    import gzip

    samples = ["TCGA-02-0003-01", "TCGA-02-0010-01", "TCGA-DU-7014-01", "TCGA-ZZ-9999-01", "TCGA-02-0004-01", "TCGA-06-0132-01", "TCGA-02-0014-01", "TCGA-02-0003-11"]
    rng = np.random.default_rng(0)
    X = rng.normal(7, 1, (5, len(samples))).round(4)
    lines = ["sample\t" + "\t".join(samples)] + [f"GENE{i}\t" + "\t".join(map(str, r)) for i, r in enumerate(X)]
    p = tmp_path / "HT_HG-U133A.gz"
    p.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return p, samples, X


def test_u133a_config_entry_on_xena_like_file(tmp_path):
    """The tcga_gbm_u133a config entry: patient-barcode matching, G-CIMP -> Proneural, NA and unknown dropped."""
    import yaml

    cfg = yaml.safe_load((RES.parent / "config.yaml").read_text())["datasets"]["tcga_gbm_u133a"]
    p, samples, X = _u133a_like(tmp_path)
    paths = {"expression": p, "labels": GBM / "TCGAbiolinks_lgg.gbm.subtype.tsv"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        a = gio.prepare_dataset("tcga_gbm_u133a", cfg, paths, n_neighbors=2)
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
    ad.AnnData(X=df.to_numpy(), obs=pd.DataFrame(index=df.index), var=pd.DataFrame(index=df.columns)).write_h5ad(tmp_path / "d.h5ad")
    got = [
        gio.read_matrix(tmp_path / "a.tsv"),
        gio.read_matrix(tmp_path / "b.csv.gz", orientation="samples_by_genes"),
        gio.read_matrix(tmp_path / "c.gct"),
        gio.read_matrix(tmp_path / "d.h5ad"),
    ]
    for m in got:
        assert m.samples == list(df.index) and m.genes == list(df.columns)
        assert np.allclose(m.X, df.to_numpy())
    assert list(got[2].var["description"]) == [f"desc {g}" for g in df.columns]


def test_wrong_orientation_is_not_transposed(tmp_path):
    df = _planted_frame()
    df.to_csv(tmp_path / "m.tsv", sep="\t")  # samples x genes, declared genes_by_samples
    m = gio.read_matrix(tmp_path / "m.tsv", orientation="genes_by_samples")
    assert m.samples == list(df.columns) and m.X.shape == (5, 8)


def test_check_provenance_names_vanished_or_changed_file(tmp_path):
    f = tmp_path / "m.tsv"
    f.write_text("gene\ta\n")
    prov = {"files": {"expression": {"path": str(f), "size": f.stat().st_size}}}
    assert gio.check_provenance(prov) == {"expression": str(f)}
    f.write_text("gene\ta\tb\n")
    with pytest.raises(gio.DataError, match=r"m\.tsv .*has 9 bytes, 7 when fetched.*forcerun fetch_dataset"):
        gio.check_provenance(prov)
    f.unlink()
    with pytest.raises(gio.DataError, match=r"m\.tsv .*no longer exists"):
        gio.check_provenance(prov)
