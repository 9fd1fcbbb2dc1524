"""The benchmark inputs (samples x genes), written once to the ``.npy`` cache.

- ``gbm_clanc840``: 173 x 840, real (``TCGA_unified_CORE_ClaNC840.txt``).
- ``gbm_stategra``: 169 x 1740, real (``STATegRa_S1.rda``, ``Block1``).
- ``golub``: 72 x 7129, real (train + independent CSVs, raw intensities).
- ``synth_{n}x{d}``: N(0, 1) genes, 4 sample clusters shifting 40 planted
  genes by +-1.5 (seed 0).

Each input is stored as ``{name}.npy`` (float64, samples x genes) and
``{name}.labels.npy`` (one label per sample) under :data:`CACHE`.
"""

from __future__ import annotations

import os

import numpy as np

from bench.settings import CACHE, DATA

LABEL_DTYPE = "U32"
SYNTH_PREFIX = "synth_"
SYNTH_SEED = 0
SYNTH_CLUSTERS = 4
SYNTH_PLANTED = 40
SYNTH_SHIFT = 1.5  # in standard deviations of the N(0, 1) genes
GOLUB_FILES = ("data_set_ALL_AML_train.csv", "data_set_ALL_AML_independent.csv")


def _save(path, a):
    """np.save, atomic, so a concurrent run never reads half a file."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npy")
    np.save(tmp, a)
    os.replace(tmp, path)


def read_clanc840():
    """GBM ClaNC840: first data row holds the subtype labels; genes x samples in the file."""
    import pandas as pd

    df = pd.read_csv(DATA / "tcga_gbm" / "TCGA_unified_CORE_ClaNC840.txt", sep="\t", index_col=0)
    labels = df.iloc[0, 1:].astype(str).to_numpy()
    return df.iloc[1:, 1:].astype(float).to_numpy().T, labels


def read_stategra():
    """GBM STATegRa ``Block1`` (genes x samples) and the ``ed`` class names."""
    import rdata

    r = rdata.read_rda(str(DATA / "tcga_gbm" / "STATegRa_S1.rda"))
    return np.asarray(r["Block1"].values, dtype=float).T, r["ed"]["classname"].astype(str).to_numpy()


def read_golub():
    """Golub train + independent sets (raw intensities), samples in patient order, ALL/AML labels."""
    import pandas as pd

    parts = []
    for fn in GOLUB_FILES:
        df = pd.read_csv(DATA / "golub" / fn)
        parts.append(df[[c for c in df.columns if c.strip().isdigit()]])
    allv = pd.concat(parts, axis=1)
    allv.columns = [int(c) for c in allv.columns]
    allv = allv[sorted(allv.columns)]
    act = pd.read_csv(DATA / "golub" / "actual.csv").set_index("patient")["cancer"]
    return allv.to_numpy(dtype=float).T, act.loc[allv.columns].astype(str).to_numpy()


def synthetic_shape(name):
    """(n, d) from a name ``synth_{n}x{d}``."""
    n, d = (int(v) for v in name[len(SYNTH_PREFIX) :].split("x"))
    return n, d


def make_synthetic(n, d):
    """N(0, 1) genes; SYNTH_CLUSTERS sample clusters shift SYNTH_PLANTED genes by +-SYNTH_SHIFT."""
    rng = np.random.default_rng(SYNTH_SEED)
    X = rng.standard_normal((n, d))
    clusters = np.arange(n) % SYNTH_CLUSTERS
    rng.shuffle(clusters)
    planted = rng.choice(d, size=min(SYNTH_PLANTED, d), replace=False)
    shift = rng.choice([-SYNTH_SHIFT, SYNTH_SHIFT], size=(SYNTH_CLUSTERS, planted.size))
    X[:, planted] += shift[clusters]
    return X, clusters.astype(str)


SYNTH_SOURCE = (
    f"synthetic: N(0,1) genes, {SYNTH_CLUSTERS} sample clusters shifting {SYNTH_PLANTED} planted genes "
    f"by +-{SYNTH_SHIFT} sd, seed {SYNTH_SEED}"
)
REAL = {  # name: (source as reported, reader)
    "gbm_clanc840": ("real: TCGA_unified_CORE_ClaNC840.txt", read_clanc840),
    "gbm_stategra": ("real: STATegRa_S1.rda (Block1)", read_stategra),
    "golub": ("real: golub train + independent CSV (raw intensities)", read_golub),
}


def _source_and_reader(name):
    if name in REAL:
        return REAL[name]
    if name.startswith(SYNTH_PREFIX):
        return SYNTH_SOURCE, lambda: make_synthetic(*synthetic_shape(name))
    msg = f"unknown dataset {name!r}"
    raise ValueError(msg)


def prepare_dataset(name):
    """Write input ``name`` and its labels to the cache unless there; returns its shape and source."""
    path = CACHE / f"{name}.npy"
    source, read = _source_and_reader(name)
    if not path.exists():
        X, labels = read()
        _save(path, X)
        _save(CACHE / f"{name}.labels.npy", labels.astype(LABEL_DTYPE))
        del X
    X = np.load(path, mmap_mode="r")
    return {"shape": tuple(int(s) for s in X.shape), "source": source}


def prepare_datasets(names):
    """Write each input matrix (samples x genes) and its labels to the .npy cache; {name: shape and source}."""
    CACHE.mkdir(parents=True, exist_ok=True)
    return {name: prepare_dataset(name) for name in names}
