"""Designs that remove graph_moran's mean bias, as candidates for the panel (``real_panel.py --candidates``).

Each candidate is ``fn(panel) -> scores`` (higher = better, NaN last) on a
:class:`real_panel.Panel` (``panel.X`` log-normalised, ``panel.counts`` raw, ``panel.graph``
scanpy's standard graph).  Chosen by leave-one-dataset-out (``panel_lodo.py``); the winner
becomes a registered method, the rest stay here with their held-out numbers in docs/methods.md
("The real development panel").

- ``moran_bin_scanpy``: Moran's I on scanpy's graph, standardised within mean bins as
  cell_ranger standardises dispersion (20 bins at the 10th, 15th, ..., 100th percentiles of the
  gene means of the log-normalised X; (I - bin median) / bin MAD).
- ``moranz_bin_scanpy``: the same with the randomisation z-score instead of I.
- ``moran_bin_own``: I standardised in bins, on graph_moran's own graph.
- ``rank_cr_moran``: mean of the ranks of cell_ranger's normalised dispersion and of I on scanpy's graph.
- ``rank_v3_moran``: mean of the ranks of seurat_v3's standardised variance and of I on scanpy's graph
  (added after the first five had run, when seurat_v3 was the best HVG flavour on the panel).
- ``rank_cr_moranbin``: mean of the ranks of cell_ranger's and of ``moran_bin_scanpy``.
- ``moran_crgraph`` / ``moran_bin_crgraph``: I (raw / in bins) on a graph built from cell_ranger's
  top 2,000 genes (PCA 50, 15-NN).
- ``moran_residuals_scanpy``: I of the Pearson residuals of the counts (a count-model null per gene)
  on scanpy's graph.
- ``smoothdisp_bin_scanpy``: the dispersion of the graph-smoothed signal in bins: cell_ranger's
  normalisation applied to log(I * var / mean) of expm1(X), i.e. the share of the dispersion that
  follows the graph.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _memo(panel, key, fn):
    store = panel.__dict__.setdefault("_memo", {})
    if key not in store:
        store[key] = fn()
    return store[key]


def mean_bin_standardise(score, mean):
    """cell_ranger's normalisation of a per-gene score: (score - median of its mean bin) / MAD of the bin."""
    from glfs.scores._binned import bin_standardise

    return bin_standardise(score, mean)


def gene_means(panel):
    """Mean of the log-normalised X per gene (cell_ranger's means: scanpy bins the log data's means)."""
    return _memo(panel, "means", lambda: np.asarray(panel.X.mean(axis=0)).ravel())


def _moran(panel, which="scanpy"):
    from glfs.scores._moran import graph_autocorrelation

    return _memo(panel, f"moran_{which}", lambda: graph_autocorrelation(panel.X, _graph(panel, which)))


def _graph(panel, which):
    if which == "scanpy":
        return panel.graph
    if which == "own":
        import glfs

        return _memo(
            panel, "own_graph", lambda: glfs.select(panel.X, "graph_moran", n_features_to_select=1).extra["graph"]
        )
    if which == "crgraph":
        from glfs.scores._moran import cell_graph

        top = np.argsort(-np.nan_to_num(_cell_ranger(panel), nan=-np.inf), kind="stable")[:2000]
        return _memo(panel, "crgraph", lambda: cell_graph(panel.X, top, random_state=0))
    raise ValueError(which)


def _cell_ranger(panel):
    import glfs

    return _memo(
        panel,
        "cr",
        lambda: glfs.select(panel.X, "hvg_cell_ranger", n_features_to_select=min(2000, panel.X.shape[1])).scores,
    )


def _ranks(s):
    """Rank 1 = best (highest); NaN last."""
    s = np.where(np.isfinite(s), s, -np.inf)
    order = np.argsort(-s, kind="stable")
    r = np.empty(s.size)
    r[order] = np.arange(1, s.size + 1)
    return r


def moran_bin_scanpy(p):
    return mean_bin_standardise(_moran(p, "scanpy").moran_i, gene_means(p))


def moranz_bin_scanpy(p):
    return mean_bin_standardise(_moran(p, "scanpy").z, gene_means(p))


def moran_bin_own(p):
    return mean_bin_standardise(_moran(p, "own").moran_i, gene_means(p))


def rank_cr_moran(p):
    return -(_ranks(_cell_ranger(p)) + _ranks(_moran(p, "scanpy").moran_i))


def _seurat_v3(panel):
    import glfs

    return _memo(
        panel,
        "v3",
        lambda: (
            glfs.select(
                panel.X, "hvg_seurat_v3", counts=panel.counts, n_features_to_select=min(2000, panel.X.shape[1])
            ).scores
        ),
    )


def rank_v3_moran(p):
    """Added after the first five had run (seurat_v3 was then the best HVG flavour on the panel): the mean of
    the ranks of seurat_v3's standardised variance and of I on scanpy's graph."""
    return -(_ranks(_seurat_v3(p)) + _ranks(_moran(p, "scanpy").moran_i))


def rank_cr_moranbin(p):
    return -(_ranks(_cell_ranger(p)) + _ranks(moran_bin_scanpy(p)))


def moran_crgraph(p):
    return _moran(p, "crgraph").moran_i


def moran_bin_crgraph(p):
    return mean_bin_standardise(_moran(p, "crgraph").moran_i, gene_means(p))


def moran_residuals_scanpy(p):
    from glfs.scores._moran import pearson_residual_autocorrelation

    return pearson_residual_autocorrelation(p.counts, p.graph).moran_i


def smoothdisp_bin_scanpy(p):
    from glfs.scores._moran import graph_autocorrelation

    def f():
        E = p.X.copy()
        E.data = np.expm1(E.data)
        mean = np.asarray(E.mean(axis=0)).ravel()
        var = np.asarray(E.multiply(E).mean(axis=0)).ravel() - mean**2
        res = graph_autocorrelation(sp.csr_matrix(E), p.graph)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(np.clip(res.moran_i, 1e-12, None) * var / mean)

    return mean_bin_standardise(_memo(p, "smoothdisp", f), gene_means(p))


CANDIDATES = {
    "moran_bin_scanpy": moran_bin_scanpy,
    "moranz_bin_scanpy": moranz_bin_scanpy,
    "moran_bin_own": moran_bin_own,
    "rank_cr_moran": rank_cr_moran,
    "moran_residuals_scanpy": moran_residuals_scanpy,
    "rank_v3_moran": rank_v3_moran,
    # the last four were run later (2026-11-28 03:30, same seeds, subsample and cache): the rank mean with the
    # binned I, I on a graph of cell_ranger's top genes (scanpy's graph is built on a first HVG selection,
    # seurat's) and the binned share of the dispersion that follows the graph
    "rank_cr_moranbin": rank_cr_moranbin,
    "moran_crgraph": moran_crgraph,
    "moran_bin_crgraph": moran_bin_crgraph,
    "smoothdisp_bin_scanpy": smoothdisp_bin_scanpy,
}
