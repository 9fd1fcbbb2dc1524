"""A per-gene score standardised against genes of similar mean, as scanpy's cell_ranger flavour does.

X is (n_samples, n_features) = (cells, genes).  :func:`bin_standardise` takes any per-gene score
and the genes' means and returns (score - median of its mean bin) / MAD of the bin, with the bins
of cell_ranger (Zheng et al., Nat Commun 2017; scanpy's ``flavor="cell_ranger"``): edges at the
10th, 15th, ..., 100th percentiles of the gene means, so the first bin holds the lowest 10 % and
every other about 5 %.  Graph scores such as Moran's I have no mean reference: a gene's share of
variance that follows the cell graph grows with its mean (less sampling noise), so the raw score
ranks broad, highly expressed genes above the markers of small populations.  In bins, each gene is
compared with genes of its own mean.  On the real development panel Moran's I in these bins lost
to scanpy's seurat_v3 held out (studies/real-panel.md, "The real development panel"); the function serves
the panel's candidate designs (studies/mean-bias-candidates.md).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from scipy.stats import median_abs_deviation

log = logging.getLogger(__name__)

__all__ = ["bin_standardise", "mean_bins", "BIN_PERCENTILES"]

#: cell_ranger's bin edges: percentiles of the gene means (scanpy, ``_get_mean_bins``).
BIN_PERCENTILES = tuple(range(10, 105, 5))


def mean_bins(means) -> np.ndarray:
    """The cell_ranger bin (0 = lowest) of each gene mean: edges at :data:`BIN_PERCENTILES` of the means.

    A bin is the half-open interval (edge_{b-1}, edge_b], as ``pandas.cut`` makes them.
    """
    means = np.asarray(means, dtype=np.float64)
    edges = np.percentile(means, BIN_PERCENTILES)
    return np.searchsorted(edges, means, side="left")


def bin_standardise(score, means) -> np.ndarray:
    """Each gene's score relative to the genes of similar mean: (s - bin median) / bin MAD.

    Parameters
    ----------
    score : array-like of shape (n_features,)
        Any per-gene score, higher = more structure; NaN for genes that cannot be scored.
    means : array-like of shape (n_features,)
        The genes' means, finite (cell_ranger: the means of the log-normalised X), the reference of the bins.

    Returns
    -------
    ndarray of shape (n_features,)
        The standardised score; NaN where ``score`` is NaN.  The bins are those of :func:`mean_bins`
        over all the genes' means (as scanpy's), the median and MAD over the genes with a finite
        score in each bin; the MAD is scaled to a normal SD (1.4826 x the median
        absolute deviation, as statsmodels' ``mad`` that scanpy uses); a bin whose MAD is 0
        (one gene, or ties) is divided by 1 instead.

    Notes
    -----
    Cost O(n_features log n_features).  The ranks within one bin are those of the score; across bins
    the median and MAD put every bin on one scale, so no mean range dominates the top.
    """
    score = np.asarray(score, dtype=np.float64)
    means = np.asarray(means, dtype=np.float64)
    if score.ndim != 1 or means.shape != score.shape:
        msg = f"score and means must be 1-d arrays of the same length; got shapes {score.shape} and {means.shape}"
        raise ValueError(msg)
    if not np.isfinite(means).all():
        msg = "means must be finite for every gene (the bins are percentiles of all the genes' means)"
        raise ValueError(msg)
    ok = np.isfinite(score)
    out = np.full(score.shape, np.nan)
    if not ok.any():
        return out
    df = pd.DataFrame({"s": score[ok], "bin": mean_bins(means)[ok]})
    g = df.groupby("bin")["s"]
    med = g.transform("median").to_numpy()
    mad = g.transform(lambda v: median_abs_deviation(v, scale="normal")).to_numpy()
    mad = np.where(np.isfinite(mad) & (mad > 0), mad, 1.0)
    out[ok] = (df["s"].to_numpy() - med) / mad
    return out
