"""The vendored datasets' own file layouts: Golub et al. (1999), STATegRa GBM, Verhaak's ClaNC840.

Each reader returns a :class:`~glfs_workflow.readers.Matrix` (samples in rows) and refuses a
file that does not have its layout with a :class:`~glfs_workflow.readers.DataError` naming
the file and what is wrong.  :func:`glfs_workflow.datasets.prepare_dataset` calls them for the
formats ``golub``, ``stategra`` and ``clanc840`` (resources/README.md describes the files).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from glfs_workflow.readers import DataError, Matrix, _check_unique, _read_raw_table, _read_text, _to_float, read_table

__all__ = ["read_golub", "read_stategra", "read_clanc840"]


def _read_golub_part(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One Golub CSV -> (values genes x patients (columns = patient int), annotation)."""
    text = _read_text(path)
    if not text.strip():
        msg = f"{path}: file is empty"
        raise DataError(msg)
    df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    need = ["Gene Description", "Gene Accession Number"]
    for c in need:
        if c not in df.columns:
            msg = f"{path}: column {c!r} missing; expected the Golub/Broad layout {need} + (patient, call) pairs"
            raise DataError(msg)
    cols = [c for c in df.columns if c not in need]
    values = [c for c in cols if not str(c).startswith("call")]
    for c in values:
        if not str(c).strip().isdigit():
            msg = f"{path}: column {c!r} is neither a patient number nor a 'call' column"
            raise DataError(msg)
    probes = df["Gene Accession Number"].str.strip().tolist()
    _check_unique(probes, path, "probe", "column 'Gene Accession Number'")
    patients = [int(c) for c in values]
    _check_unique(patients, path, "patient", "the header line")
    X = _to_float(df[values], path, probes, [str(p) for p in patients], "probe", "patient", 2)
    vals = pd.DataFrame(X, index=probes, columns=patients)
    ann = pd.DataFrame({"probe_id": probes, "description": df["Gene Description"].tolist()}, index=probes)
    return vals, ann


def read_golub(train, independent, *, train_patients=None) -> Matrix:
    """Golub et al. (1999) ALL/AML: 72 patients x 7129 probes in patient order.

    ``train`` and ``independent`` are the Broad/Kaggle CSVs (Gene Description,
    Gene Accession Number, then a value and a ``call`` column per patient; the
    column order is not patient order).  Patients are sorted 1..72; obs
    ``patient`` (int) and ``split`` (``train`` for ``train_patients``, default
    1-38, else ``test``); the labels (``actual.csv``) are attached by
    :func:`attach_labels`.  Values are the raw
    "average difference" intensities (not logged).
    """
    train, independent = Path(train), Path(independent)
    v1, a1 = _read_golub_part(train)
    v2, a2 = _read_golub_part(independent)
    if list(a1.index) != list(a2.index):
        msg = f"{independent}: probe ids (column 'Gene Accession Number') differ from those of {train}; expected the same probes in the same order"
        raise DataError(msg)
    both = set(v1.columns) & set(v2.columns)
    if both:
        msg = f"{independent}: patients {sorted(both)[:10]} also appear in {train}; each patient must be in one file"
        raise DataError(msg)
    vals = pd.concat([v1, v2], axis=1)
    vals = vals[sorted(vals.columns)]
    patients = list(vals.columns)
    if train_patients is None:
        train_patients = list(range(1, 39))
    tp = set(int(p) for p in train_patients)
    unknown = sorted(tp - set(patients))
    if unknown:
        msg = f"split.train_patients names patients {unknown[:10]} that are in neither {train} nor {independent}"
        raise DataError(msg)
    samples = [str(p) for p in patients]
    obs = pd.DataFrame(
        {"patient": np.array(patients, dtype=np.int64), "split": ["train" if p in tp else "test" for p in patients]},
        index=samples,
    )
    m = Matrix(vals.to_numpy(dtype=np.float64).T.copy(), samples, list(a1.index), a1.copy(), obs)
    return m


def read_stategra(rda, sample_map) -> Matrix:
    """STATegRa_S1.rda ``Block1`` (1740 genes x 169 samples) with real TCGA ids.

    Labels come from ``ed$classname`` (Verhaak 2010 subtype).  The anonymised
    ``sampleN`` columns are renamed to TCGA sample ids with the derived map
    (``stategra_sample`` -> ``tcga_sample``); the map's ``stategra_classname``
    must agree with ``ed$classname``.  obs: ``label``, ``stategra_sample``;
    var: ``gene_symbol``.
    """
    import rdata

    rda = Path(rda)
    try:
        conv = rdata.conversion.convert(rdata.parser.parse_file(rda))
    except Exception as exc:  # noqa: BLE001 - rdata raises many types
        msg = f"{rda}: cannot read as an R data file ({type(exc).__name__}: {exc})"
        raise DataError(msg) from None
    for key in ("Block1", "ed"):
        if key not in conv:
            msg = f"{rda}: object {key!r} missing; found {sorted(conv)}"
            raise DataError(msg)
    b = conv["Block1"]
    genes = [str(g) for g in b.coords[b.dims[0]].values]
    anon = [str(s) for s in b.coords[b.dims[1]].values]
    X = np.asarray(b.values, dtype=np.float64).T.copy()
    _check_unique(genes, rda, "gene", "Block1 row names")
    _check_unique(anon, rda, "sample", "Block1 column names")
    if not np.isfinite(X).all():
        i, j = np.argwhere(~np.isfinite(X))[0]
        msg = f"{rda}: non-finite value in Block1 at gene {genes[j]!r}, sample {anon[i]!r}"
        raise DataError(msg)
    ed = conv["ed"]
    if "classname" not in ed.columns:
        msg = f"{rda}: data frame 'ed' has no column 'classname'; found {list(ed.columns)}"
        raise DataError(msg)
    cls = ed["classname"].astype(str)
    missing = [s for s in anon if s not in cls.index]
    if missing:
        msg = f"{rda}: samples {missing[:5]} of Block1 have no row in 'ed'"
        raise DataError(msg)
    sample_map = Path(sample_map)
    mp = read_table(sample_map)
    for c in ("stategra_sample", "tcga_sample"):
        if c not in mp.columns:
            msg = f"{sample_map}: column {c!r} missing; found {list(mp.columns)}"
            raise DataError(msg)
    mp = mp.set_index("stategra_sample")
    nomap = [s for s in anon if s not in mp.index]
    if nomap:
        msg = f"{sample_map}: no row (column 'stategra_sample') for Block1 samples {nomap[:5]} ({len(nomap)} missing)"
        raise DataError(msg)
    if "stategra_classname" in mp.columns:
        bad = [s for s in anon if mp.loc[s, "stategra_classname"] != cls[s]]
        if bad:
            msg = f"{sample_map}: column 'stategra_classname' disagrees with {rda} ed$classname for {bad[:5]}"
            raise DataError(msg)
    tcga = [str(mp.loc[s, "tcga_sample"]) for s in anon]
    _check_unique(tcga, sample_map, "sample", "column 'tcga_sample'")
    obs = pd.DataFrame({"label": [cls[s] for s in anon], "stategra_sample": anon}, index=tcga)
    var = pd.DataFrame({"gene_symbol": genes}, index=genes)
    return Matrix(X, tcga, genes, var, obs)


def read_clanc840(path) -> Matrix:
    """Verhaak's TCGA_unified_CORE_ClaNC840.txt: 173 samples x 840 genes.

    Line 1: ``CLID``, a description column, then sample ids; line 2
    (``Subtype``): the subtype of each sample (-> obs ``label``); then one line
    per gene (symbol, GO subtype tag -> var ``go_subtype``, values).
    """
    path = Path(path)
    df = _read_raw_table(path, "\t")
    if df.shape[0] < 3 or df.shape[1] < 3:
        msg = f"{path}: expected a header line, a 'Subtype' line and gene lines with >= 3 columns; got {df.shape[0]} lines x {df.shape[1]} columns"
        raise DataError(msg)
    header = df.iloc[0].tolist()
    samples = [str(s).strip() for s in header[2:]]
    sub = df.iloc[1]
    if str(sub.iloc[0]).strip() != "Subtype":
        msg = f"{path}: line 2 must start with 'Subtype' (the subtype of each sample); got {sub.iloc[0]!r}"
        raise DataError(msg)
    labels = [str(x).strip() for x in sub.iloc[2:].tolist()]
    body = df.iloc[2:]
    genes = body.iloc[:, 0].astype(str).str.strip().tolist()
    _check_unique(samples, path, "sample", "the header line")
    _check_unique(genes, path, "gene", "the first column")
    X = _to_float(body.iloc[:, 2:], path, genes, samples, "gene", "sample", 3)
    obs = pd.DataFrame({"label": labels}, index=samples)
    var = pd.DataFrame(
        {"gene_symbol": genes, "go_subtype": body.iloc[:, 1].fillna("").astype(str).tolist()}, index=genes
    )
    return Matrix(X.T.copy(), samples, genes, var, obs)
