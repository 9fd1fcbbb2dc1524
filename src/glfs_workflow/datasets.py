"""The workflow's datasets: which reader a config selects, label matching, preparation.

The vendored datasets' own readers (Golub, STATegRa GBM, ClaNC840) are in :mod:`glfs_workflow.vendored`.

:func:`prepare_dataset` reads, labels, preprocesses and checks one dataset of
the config and returns an AnnData (obs = samples, var = genes).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from glfs.api import method_info
from glfs.core import SCALE_RANGE, looks_like_counts, scale_problem
from glfs.tl import COUNTS_LAYER
from glfs_workflow.preprocessing import preprocess
from glfs_workflow.readers import _NA_STRINGS, DataError, Matrix, id_warnings, infer_format, read_labels, read_matrix
from glfs_workflow.singlecell import (  # noqa: F401
    _holds_raw_counts,
    _raw_counts,
    expression_format,
    filter_genes,
    h5ad_holds_counts,
    is_singlecell,
)
from glfs_workflow.vendored import read_clanc840, read_golub, read_stategra

log = logging.getLogger(__name__)


def dataset_has_labels(cfg: dict) -> bool:
    """Whether a dataset has class labels, from its config alone.

    True with a ``labels`` table; for the stategra and clanc840 readers (the
    labels are in the file); for an ``.h5ad`` whose config names an ``obs``
    column with ``label_column``.  An ``.h5ad`` without ``label_column`` is
    unlabelled even if its ``obs`` has a column called ``label``:
    :func:`prepare_dataset` says so in a warning.  The workflow (rules
    ``common.smk``) and :func:`prepare_dataset` both decide with this function.
    """
    if cfg.get("labels"):
        return True
    fmt = expression_format(cfg)
    if fmt in ("stategra", "clanc840"):
        return True
    return fmt == "h5ad" and cfg.get("label_column") is not None


def _tcga_key(s: str) -> str | None:
    """Patient barcode of a TCGA id; None for a non-primary-tumour sample.

    ``TCGA-02-0003`` -> itself; ``TCGA-02-0003-01A-01`` (sample type 01,
    primary solid tumour) -> ``TCGA-02-0003``; other sample types (02
    recurrent, 10-19 normal, ...) -> None, so a patient's subtype is never
    given to a normal or recurrent sample.
    """
    t = str(s).replace(".", "-").upper()
    if len(t) >= 15 and t[12] == "-" and t[13:15].isdigit() and t[13:15] != "01":
        return None
    return t[:12]


def text_label_map(label_map) -> dict:
    """``label_map`` with its keys as the text labels they stand for.

    YAML reads an unquoted key ``1`` as a number and ``no``, ``yes``, ``on``, ``off``, ``true``, ``false`` as
    booleans, which never equal a text label.  A number becomes its text (``1`` -> ``"1"``); a boolean is
    refused, since the word it was written as is lost (``no`` and ``false`` both read as False).
    """
    out = {}
    for key, value in dict(label_map or {}).items():
        if isinstance(key, bool):
            msg = (
                f"config key label_map: the key {key!r} is a boolean, as YAML reads an unquoted no, yes, on, off, "
                f"true or false; quote the label (e.g. 'no': {value}) so that it matches the text label"
            )
            raise DataError(msg)
        if isinstance(key, (int, float)):
            key = str(key)
        out[key] = value
    return out


def _unused_label_map_keys(label_map: dict, values, path) -> None:
    """Warn about ``label_map`` keys that match no label (a typo, or a key YAML read other than written)."""
    present = {v for v in values if isinstance(v, str)}
    unused = [k for k in label_map if k not in present]
    if unused:
        log.warning("%s: label_map keys %s match no label (the labels are e.g. %s)", path, unused, sorted(present)[:5])


def attach_labels(
    m: Matrix,
    labels: pd.Series,
    *,
    path="labels",
    match: str = "exact",
    label_map: dict | None = None,
    drop_unlabelled: bool = False,
) -> tuple[Matrix, dict]:
    """Put ``labels`` into ``m.obs['label']``; return (matrix, report dict).

    Strict by default: a sample without a label, and a label row for a sample
    that is not in the matrix, are errors that list the ids.  With
    ``drop_unlabelled``, unlabelled samples are dropped and extra rows are
    ignored; both counts go into the report.
    """
    label_map = text_label_map(label_map)
    samples = list(m.samples)
    if match == "tcga_patient":
        keyed = {}
        for sid, lab in labels.items():
            keyed.setdefault(_tcga_key(sid), lab)
        keys = [_tcga_key(s) for s in samples]
        lab_index = set(keyed)
        if any(k is None for k in keys):
            log.info(
                "%s: %d non-primary-tumour samples (TCGA sample type != 01) get no label",
                path,
                sum(k is None for k in keys),
            )
    else:
        keyed = labels.to_dict()
        keys = samples
        lab_index = set(labels.index)
    values = [keyed.get(k, np.nan) for k in keys]
    _unused_label_map_keys(label_map, values, path)
    values = [label_map.get(v, v) if isinstance(v, str) else v for v in values]
    missing = [s for s, v in zip(samples, values) if not isinstance(v, str)]
    extra = sorted(lab_index - {k for k in keys if k is not None})
    report = {"n_label_rows_unmatched": len(extra), "n_samples_unlabelled_dropped": 0}
    if extra and not drop_unlabelled:
        msg = f"{path}: labels for {len(extra)} samples that are not in the expression matrix: {extra[:10]}; every labelled sample must be in the matrix (or set drop_unlabelled: true)"
        raise DataError(msg)
    if missing:
        if not drop_unlabelled:
            msg = f"{path}: no label for {len(missing)} of {len(samples)} samples: {missing[:10]}; every sample needs a label (or set drop_unlabelled: true)"
            raise DataError(msg)
        keep = np.array([isinstance(v, str) for v in values])
        log.warning("%s: dropping %d unlabelled samples: %s", path, len(missing), missing[:10])
        report["n_samples_unlabelled_dropped"] = len(missing)
        m = Matrix(
            m.X[keep],
            [s for s, k in zip(samples, keep) if k],
            m.genes,
            m.var,
            None if m.obs is None else m.obs.loc[[s for s, k in zip(samples, keep) if k]],
        )
        values = [v for v, k in zip(values, keep) if k]
    if extra:
        log.warning("%s: ignored %d label rows for samples not in the matrix", path, len(extra))
    obs = m.obs.copy() if m.obs is not None else pd.DataFrame(index=pd.Index(m.samples))
    obs["label"] = values
    m.obs = obs
    return m, report


def _h5ad_labels(m: Matrix, expr, cfg: dict) -> tuple[Matrix, dict]:
    """Labels of an .h5ad from the ``obs`` column named by ``label_column``.

    A column that does not exist, or samples without a label (NaN, empty or
    an NA spelling), are errors naming the column and the samples (or, with
    ``drop_unlabelled``, the samples are dropped), as for a labels table.
    """
    col = cfg["label_column"]
    where = f"{expr}: obs column {col!r} (config key label_column)"
    if m.obs is None or col not in m.obs.columns:
        cols = [] if m.obs is None else list(m.obs.columns)
        msg = f"{where} not found; obs columns are {cols[:20]}"
        raise DataError(msg)
    raw = m.obs[col]
    text = raw.astype(object).where(raw.notna(), None)
    values = [None if v is None else str(v).strip() for v in text]
    values = [np.nan if v is None or v.lower() in _NA_STRINGS else v for v in values]
    if col != "label" and "label" in m.obs.columns:
        log.warning("%s: obs column 'label' is replaced by the labels of column %r", expr, col)
    labels = pd.Series(values, index=pd.Index(m.samples), name="label", dtype=object)
    return attach_labels(
        m,
        labels,
        path=where,
        label_map=cfg.get("label_map"),
        drop_unlabelled=bool(cfg.get("drop_unlabelled", False)),
    )


#: The obs column of prepared.h5ad that holds the batches named by a dataset's ``batch_column``.
BATCH_OBS = "batch"


def _batch_column(name: str, fmt: str, expr: Path, m: Matrix, cfg: dict) -> Matrix:
    """``obs['batch']`` from the ``obs`` column ``batch_column`` names (an .h5ad only), checked like the labels.

    A column that does not exist, or samples without a batch (NaN, empty or an NA spelling), are
    errors naming the column and the samples; the values are kept as text.
    """
    col = cfg.get("batch_column")
    if col is None:
        return m
    where = f"{expr}: obs column {col!r} (config key datasets.{name}.batch_column)"
    if fmt in ("golub", "stategra", "clanc840") or infer_format(expr, fmt) != "h5ad":
        msg = f"{where}: batch_column names an obs column of an .h5ad; {expr} is not an .h5ad"
        raise DataError(msg)
    if m.obs is None or col not in m.obs.columns:
        cols = [] if m.obs is None else list(m.obs.columns)
        msg = f"{where} not found; obs columns are {cols[:20]}"
        raise DataError(msg)
    raw = m.obs[col].astype(object)
    text = [None if pd.isna(v) else str(v).strip() for v in raw]
    missing = [s for s, v in zip(m.samples, text) if v is None or v.lower() in _NA_STRINGS]
    if missing:
        msg = f"{where}: no batch for {len(missing)} of {len(text)} samples: {missing[:10]}"
        raise DataError(msg)
    if col != BATCH_OBS and BATCH_OBS in m.obs.columns:
        log.warning("%s: obs column %r is replaced by the batches of column %r", expr, BATCH_OBS, col)
    m.obs = m.obs.copy()
    m.obs[BATCH_OBS] = text
    sizes = pd.Series(text).value_counts()
    log.info("%s: %d batches from obs column %r: %s", expr, sizes.size, col, sizes.to_dict())
    return m


def _plain(x):
    """Make a value storable in AnnData.uns (no None; nested plain types)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items() if v is not None}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x if v is not None]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    return x


def prepare_dataset(
    name: str,
    cfg: dict,
    paths: dict,
    *,
    provenance: dict | None = None,
    max_expanded_gb: float | None = None,
    mem_mb: float | None = None,
):
    """Read, label, preprocess and check one dataset; return an AnnData.

    Parameters
    ----------
    name : dataset key.
    cfg : the dataset's config entry (see workflow/schemas/config.schema.yaml).
    paths : role -> local path (``expression``, optional ``labels``, extra files).
    provenance : fetched-file records, stored in ``uns['dataset']['files']``.
    max_expanded_gb : config ``fetch.max_expanded_gb``, the largest size a gzip'd text matrix may expand to
        (None: the reader's default, ``glfs_workflow.readers.MAX_EXPANDED_BYTES``).
    mem_mb : the job's ``resources: mem_mb``; a text matrix whose parsing would take more is refused
        before it is parsed (None: the machine's available memory; ``glfs_workflow.memory``).

    Returns
    -------
    AnnData with X float64 (n_samples, n_genes): dense, or CSR when the input
    is a sparse ``.h5ad`` (kept sparse throughout: log1p and normalize_log1p
    keep the non-zeros; a preprocessing that would make it dense is refused
    above the size limit, naming the file and the sizes, before anything dense
    is allocated), obs_names = sample ids, ``obs['label']`` categorical when
    labelled, ``obs['batch']`` categorical (text) when ``batch_column`` names the batches,
    ``uns['dataset']`` plain values; raw counts in ``layers['counts']`` (CSR float32).
    """
    import anndata as ad

    fmt = cfg.get("format", "auto") or "auto"
    expr = Path(paths["expression"])
    limits = {
        "max_expanded_bytes": None if max_expanded_gb is None else int(float(max_expanded_gb) * 2**30),
        "mem_mb": mem_mb,
    }
    m = _read_dataset(name, fmt, expr, cfg, paths, limits)
    m, labelled, label_report, notes = _label_dataset(name, fmt, expr, m, cfg, paths, limits)
    m = _batch_column(name, fmt, expr, m, cfg)
    d_input = m.X.shape[1]
    m, gene_filter = filter_genes(name, expr, m, cfg.get("min_cells"))
    n, d = m.X.shape
    notes += _check_size(expr, n, d, cfg, h5ad=infer_format(expr, fmt) == "h5ad")  # n_neighbors: build_graph checks it
    if labelled:
        _check_classes(_label_source(fmt, expr, cfg, paths), m.obs["label"], cfg)
    notes += _id_notes(expr, m)
    method = cfg.get("preprocess", "none") or "none"
    _check_dense_step(expr, m.X, method)
    notes += _counts_notes(name, expr, m.X, method)
    counts = _raw_counts(m)
    if method == "zscore":  # squares the raw values: check them first
        _check_scale(expr, m.X, m.var, m.samples, method)
    X, var, used, keep = _preprocess_dataset(expr, m, method, cfg)
    _check_scale(expr, X, var, m.samples, method)
    const_names = _constant_genes(expr, X, var, n)
    obs = _obs_frame(name, m, cfg, labelled, n)
    var, obs = _text_frames(var, obs)
    info = _dataset_info(
        name,
        fmt,
        cfg,
        n=n,
        d=d_input,
        n_genes=X.shape[1],
        labelled=labelled,
        obs=obs,
        method=method,
        used=used,
        const_names=const_names,
        notes=notes,
        label_report=label_report,
        provenance=provenance,
    )
    X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)
    adata = ad.AnnData(X=X, obs=obs, var=var)
    if counts is not None:
        # scanpy's convention: the raw counts beside the normalised X, for the methods and
        # evaluations that score counts (glfs.METHODS[m].needs_counts)
        adata.layers[COUNTS_LAYER] = counts[:, keep] if not keep.all() else counts
        log.info("kept the raw counts in layers[%r] (%d non-zeros)", COUNTS_LAYER, adata.layers[COUNTS_LAYER].nnz)
    info["counts_layer"] = counts is not None
    if gene_filter is not None:  # a single-cell dataset: what the gene filter removed
        info["gene_filter"] = gene_filter
    adata.uns["dataset"] = _plain(info)
    return adata


SPARSE_PREPROCESS = ("none", "log1p", "normalize_log1p")


def _check_dense_step(expr: Path, X, method: str) -> None:
    """Refuse, naming the file and the sizes, a preprocessing that would make a large sparse X dense."""
    if not sp.issparse(X) or method in SPARSE_PREPROCESS:
        return
    from glfs.core import limits

    n, d = X.shape
    need = 8.0 * n * d / 2**30
    if need > limits.DENSE_LIMIT_GB:
        msg = (
            f"{expr}: preprocess {method!r} would make the sparse matrix of {n} samples x {d} genes "
            f"({X.nnz} non-zeros) dense: {need:.1f} GB of float64, above the size limit of "
            f"{limits.DENSE_LIMIT_GB:g} GB (docs/methods/size-limits.md, 'Size limits'); use preprocess 'log1p' or "
            "'normalize_log1p' (they keep it sparse), or 'none' for data already normalised"
        )
        raise DataError(msg)


#: How to raise the reader's limits, named in its messages.
LIMIT_KEYS = {
    "expanded": "fetch.max_expanded_gb",
    "memory": "resources.prepare.mem_mb in the config, or --set-resources prepare_dataset:mem_mb=N, on a machine that has it",
}


def _read_dataset(name: str, fmt: str, expr: Path, cfg: dict, paths: dict, limits: dict | None = None) -> Matrix:
    """Read the expression matrix with the reader ``fmt`` names (a vendored reader or :func:`read_matrix`).

    ``limits``: ``max_expanded_bytes`` and ``mem_mb`` for :func:`read_matrix` (a text matrix).
    """
    if fmt == "golub":
        if "independent" not in paths:
            msg = f"datasets.{name}.extra_files.independent is required for format 'golub'"
            raise DataError(msg)
        split = cfg.get("split") or {}
        return read_golub(expr, paths["independent"], train_patients=split.get("train_patients"))
    if fmt == "stategra":
        if "sample_map" not in paths:
            msg = f"datasets.{name}.extra_files.sample_map is required for format 'stategra'"
            raise DataError(msg)
        return read_stategra(expr, paths["sample_map"])
    if fmt == "clanc840":
        return read_clanc840(expr)
    return read_matrix(
        expr,
        fmt=fmt,
        orientation=cfg.get("orientation", "genes_by_samples"),
        layer=cfg.get("layer"),
        **(limits or {}),
        keys=LIMIT_KEYS,
    )


def _label_dataset(name: str, fmt: str, expr: Path, m: Matrix, cfg: dict, paths: dict, limits: dict | None = None):
    """Attach the class labels the config names; return (matrix, labelled, label report, notes).

    From a labels table, an ``.h5ad`` ``obs`` column (``label_column``), or the
    vendored file itself (stategra, clanc840); otherwise unlabelled, with a note
    when an ``obs`` column called ``label`` is left unused.
    """
    notes = []
    label_report = {}
    labelled = True
    is_h5ad = fmt not in ("golub", "stategra", "clanc840") and infer_format(expr, fmt) == "h5ad"
    if paths.get("labels"):
        labels = read_labels(  # bounded as the matrix is: fetch.max_expanded_gb and the job's memory
            paths["labels"],
            cfg.get("sample_column", "sample"),
            cfg.get("label_column", "label"),
            **(limits or {}),
            keys=LIMIT_KEYS,
        )
        m, label_report = attach_labels(
            m,
            labels,
            path=paths["labels"],
            match=cfg.get("labels_match", "exact"),
            label_map=cfg.get("label_map"),
            drop_unlabelled=bool(cfg.get("drop_unlabelled", False)),
        )
    elif is_h5ad and cfg.get("label_column") is not None:
        m, label_report = _h5ad_labels(m, expr, cfg)
    elif fmt in ("stategra", "clanc840") and m.obs is not None and "label" in m.obs:
        lm = text_label_map(cfg.get("label_map"))
        _unused_label_map_keys(lm, list(m.obs["label"]), expr)
        m.obs["label"] = [lm.get(v, v) for v in m.obs["label"]]
    else:
        labelled = False
        if m.obs is not None and "label" in m.obs:
            note = (
                f"obs column 'label' is not used as class labels: datasets.{name}.label_column is not set, "
                f"so the dataset is unlabelled (set label_column: label to evaluate against it)"
            )
            log.warning("%s: %s", expr, note)
            notes.append(note)
    return m, labelled, label_report, notes


def _check_size(expr: Path, n: int, d: int, cfg: dict, *, h5ad: bool = False) -> list:
    """Refuse too few samples (fewer than 2); a note when n > d in a text matrix (an .h5ad has no
    `orientation`: its obs are the samples, and single cells outnumber genes)."""
    if n < 2:
        where = (
            "an .h5ad's obs are the samples"
            if h5ad
            else f"check `orientation`: {cfg.get('orientation', 'genes_by_samples')}"
        )
        msg = f"{expr}: only {n} sample(s); at least 2 are needed ({where})"
        raise DataError(msg)
    if n > d and not h5ad:
        note = f"{n} samples > {d} genes: orientation {cfg.get('orientation', 'genes_by_samples')!r} kept as configured (not transposed); check it is right"
        log.warning("%s: %s", expr, note)
        return [note]
    return []


def _label_source(fmt: str, expr: Path, cfg: dict, paths: dict) -> str:
    """Where a dataset's labels come from, for messages: the file and the column (and its config key)."""
    if paths.get("labels"):
        return f"{paths['labels']}: column {cfg.get('label_column', 'label')!r} (config key label_column)"
    if fmt == "stategra":
        return f"{expr}: ed$classname"
    if fmt == "clanc840":
        return f"{expr}: line 2 ('Subtype')"
    return f"{expr}: obs column {cfg.get('label_column')!r} (config key label_column)"


def _check_classes(where: str, labels, cfg: dict) -> None:
    """Refuse labels that cannot be clustered: one class (also after ``label_map``), or one class per sample.

    The clustering evaluation (and the Fisher score) need at least 2 classes
    and fewer classes than samples; later jobs would otherwise fail without
    naming the dataset.
    """
    counts = pd.Series(list(labels), dtype=object).value_counts()
    n = int(counts.sum())
    mapped = " after label_map" if cfg.get("label_map") else ""
    if counts.size < 2:
        msg = (
            f"{where}: all {n} samples have the label {counts.index[0]!r}{mapped} (label counts "
            f"{ {str(k): int(v) for k, v in counts.items()} }); "
            "the clustering evaluation needs at least 2 classes (check the column and `label_map`, or leave "
            "`labels`/`label_column` unset for an unlabelled run)"
        )
        raise DataError(msg)
    if counts.size == n:
        shown = " ..." if n > 5 else ""
        msg = (
            f"{where}: each of the {n} samples has a label of its own ({n} classes of 1 sample: "
            f"{sorted(map(str, counts.index))[:5]}{shown}); the clustering evaluation needs fewer classes than "
            "samples (is this a column of sample ids?)"
        )
        raise DataError(msg)


def _check_scale(expr: Path, X, var: pd.DataFrame, samples, method: str) -> None:
    """Refuse values whose squares and products leave float64 (glfs.core._value_checks.SCALE_RANGE), naming the largest."""
    problem = scale_problem(X)
    if problem:
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            t = int(np.argmax(np.abs(X.data)))
            i, j = int(np.searchsorted(X.indptr, t, side="right") - 1), int(X.indices[t])
        else:
            i, j = np.unravel_index(int(np.argmax(np.abs(X))), X.shape)
        lo, hi = SCALE_RANGE
        msg = (
            f"{expr}: {problem} (gene {str(var.index[j])!r}, sample {str(samples[i])!r}); the methods need the "
            f"largest |value| in [{lo:g}, {hi:g}] (beyond it squares and products of values leave float64; "
            f"preprocess: {method}): divide the values in the file by a constant"
        )
        raise DataError(msg)


def _id_notes(expr: Path, m: Matrix) -> list:
    """Warnings about the gene and sample ids (glfs_workflow.readers.id_warnings), logged and returned."""
    notes = []
    for kind, ids in (("gene", m.genes), ("sample", m.samples)):
        for note in id_warnings(ids, kind):
            log.warning("%s: %s", expr, note)
            notes.append(note)
    return notes


def _counts_notes(name: str, expr: Path, X, method: str) -> list:
    """A note (logged and returned) when values look like raw counts and no preprocessing is configured."""
    if sp.issparse(X):
        X = X.data.reshape(-1, 1)  # the non-zeros (read in blocks): the zeros change neither the check nor the median
    if method != "none" or not looks_like_counts(X):
        return []
    pos = X[X > 0]
    note = (
        f"values look like raw counts (non-negative integers up to {X.max():.4g}, "
        f"{X.max() / np.median(pos):.3g} times the median non-zero value {np.median(pos):.4g}): "
        "distances, variances and GLFS are then driven by a few very highly expressed genes; "
        f"set datasets.{name}.preprocess: normalize_log1p (library-size normalisation + log1p) "
        "or log1p (docs/guides/data.md)"
    )
    log.warning("%s: %s", expr, note)
    return [note]


def _preprocess_dataset(expr: Path, m: Matrix, method: str, cfg: dict):
    """Preprocess the matrix (glfs_workflow.preprocessing.preprocess); return (X, var of the kept genes, params used, kept mask).

    An error names the file before the sample or gene it names (was: the sample alone)."""
    try:
        X, keep, used = preprocess(m.X, m.genes, method, cfg.get("preprocess_params"), samples=m.samples)
    except DataError as exc:
        msg = f"{expr}: {exc}"
        raise DataError(msg) from None
    var = m.var.loc[np.asarray(m.genes)[keep]].copy() if not keep.all() else m.var.copy()
    if not keep.all():
        log.info("preprocess %s kept %d of %d genes", method, int(keep.sum()), m.X.shape[1])
    return X, var, used, keep


def _constant_genes(expr: Path, X, var: pd.DataFrame, n: int) -> list:
    """Names of the constant genes (logged); an error when every gene is constant."""
    if sp.issparse(X):
        from glfs.scores import sparse_stats

        const = sparse_stats(X)[1]  # O(nnz), no dense copy
        all_zero = X.count_nonzero() == 0
    else:
        const = np.ptp(X, axis=0) == 0
        all_zero = not X.any()
    const_names = list(np.asarray(var.index)[const])
    if const.all():
        zero = " (all zero)" if all_zero else ""
        msg = (
            f"{expr}: every one of the {X.shape[1]} genes is constant across the {n} samples{zero}; "
            "nothing to select (check the file, `orientation` and `preprocess`)"
        )
        raise DataError(msg)
    if const.any():
        log.warning(
            "%s: %d constant genes (allowed; they get NaN scores from score-based methods): %s",
            expr,
            len(const_names),
            const_names[:10],
        )
    return const_names


def _obs_frame(name: str, m: Matrix, cfg: dict, labelled: bool, n: int) -> pd.DataFrame:
    """obs indexed by the sample ids as text; ``label`` categorical when labelled (n_clusters checked against n)."""
    obs = m.obs.copy() if m.obs is not None else pd.DataFrame(index=pd.Index(m.samples))
    obs.index = pd.Index([str(s) for s in m.samples])
    if BATCH_OBS in obs and cfg.get("batch_column") is not None:
        obs[BATCH_OBS] = pd.Categorical(obs[BATCH_OBS].astype(str))
    if labelled:
        obs["label"] = pd.Categorical(obs["label"].astype(str))
        nc = cfg.get("n_clusters")
        if nc is not None and nc >= n:
            msg = (
                f"config key datasets.{name}.n_clusters = {nc}: must be smaller than the {n} samples "
                "(spectral clustering needs fewer clusters than samples)"
            )
            raise DataError(msg)
    return obs


def _text_frames(var: pd.DataFrame, obs: pd.DataFrame):
    """var ids and the object columns of var and obs as str (what .h5ad stores)."""
    var.index = pd.Index([str(g) for g in var.index])
    for c in var.columns:
        if var[c].dtype == object:
            var[c] = var[c].astype(str)
    for c in obs.columns:
        if obs[c].dtype == object:
            obs[c] = obs[c].astype(str)
    return var, obs


def _dataset_info(
    name,
    fmt,
    cfg,
    *,
    n,
    d,
    n_genes,
    labelled,
    obs,
    method,
    used,
    const_names,
    notes,
    label_report,
    provenance,
) -> dict:
    """The ``uns['dataset']`` record: sizes, labels, preprocessing, constant genes, warnings, input files."""
    n_classes = int(obs["label"].nunique()) if labelled else 0
    info = {
        "name": name,
        "format": fmt,
        "n_samples": int(n),
        "n_genes": int(n_genes),
        "n_genes_raw": int(d),
        "labelled": bool(labelled),
        "n_clusters": int(cfg.get("n_clusters") or (n_classes if labelled else 0)),
        "preprocess": method,
        "preprocess_params": used,
        "orientation": cfg.get("orientation", "genes_by_samples"),
        "note": cfg.get("note", ""),
        "n_constant_genes": len(const_names),
        "constant_genes": ", ".join(const_names[:50]),
        "warnings": "; ".join(notes),
        "labels": label_report,
        "batch_column": cfg.get("batch_column") or "",
        "n_batches": int(obs[BATCH_OBS].nunique()) if cfg.get("batch_column") is not None else 0,
        "files": {k: {kk: vv for kk, vv in v.items()} for k, v in (provenance or {}).get("files", {}).items()},
    }
    if labelled:
        # two parallel lists, not a dict: labels may hold "/" (an HDF5 group separator) or anything else
        counts = obs["label"].value_counts().sort_index()
        info["label_counts"] = {"labels": [str(k) for k in counts.index], "counts": [int(v) for v in counts.to_numpy()]}
    return info


def check_counts_kept(adata, method: str, dataset: str, source) -> None:
    """Refuse a method that scores raw counts on a prepared dataset that kept none (no ``layers[COUNTS_LAYER]``),
    naming the dataset's config keys to change (the library's own message names only the layer)."""
    if not method_info(method).needs_counts or COUNTS_LAYER in adata.layers:
        return
    msg = (
        f"dataset {dataset!r}: method {method!r} scores raw counts, but {source} has no layers[{COUNTS_LAYER!r}]: "
        f"the input of datasets.{dataset}.expression does not hold raw counts (non-negative integers). "
        f"Name the .h5ad layer with the counts (datasets.{dataset}.layer: {COUNTS_LAYER}) or leave {method!r} "
        f"out of datasets.{dataset}.methods"
    )
    raise ValueError(msg)
