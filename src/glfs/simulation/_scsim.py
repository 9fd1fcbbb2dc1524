"""Single-cell count simulation with cell-type programmes: the Splat model of splatter.

:func:`simulate_counts` draws raw UMI-like counts, cells x genes, from the
"groups" form of the Splat model (Zappia, Phipson & Oshlack, Genome Biology
2017, 18:174, "Splatter: simulation of single-cell RNA sequencing data",
Figure 1 and Methods; splatter's ``splatSimulateGroups``).  Each group's
differentially expressed genes are its *programme*: they are the ground truth
of "structure" that a gene selection should find (``programme.any(axis=0)``).

Pure numpy/scipy; the counts are built in blocks of cells and returned as a
sparse CSR matrix, so that no dense (n_cells, n_genes) array of the whole
matrix is ever held.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from glfs.core._validation import ParameterTypeError, check_int, check_real
from glfs.simulation._counts import Chunks as _Chunks  # noqa: F401 (the tests set its chunk size here)
from glfs.simulation._counts import draw_counts

log = logging.getLogger(__name__)

__all__ = ["SimulatedCounts", "simulate_counts", "DEFAULT_GROUP_PROB", "BLOCK_ELEMENTS"]

#: Default cell-type proportions: five equal groups (splatter's vignette example "Five groups";
#: splatter's own default is one group, i.e. no structure).
DEFAULT_GROUP_PROB = (0.2, 0.2, 0.2, 0.2, 0.2)

#: Cells x genes per block when ``block_cells`` is not given: 2**22 values, 32 MB per float64 block array
#: (about six such arrays are alive at once while a block is built).
BLOCK_ELEMENTS = 2**22

# Independent random streams (numpy SeedSequence children), one per part of the model, so that e.g. the
# gene means do not depend on n_cells and the counts do not depend on the block size.
# New streams go at the end: SeedSequence.spawn gives the same first children, so earlier draws do not change.
_STREAMS = ("groups", "library", "gene_means", "de", "bcv", "cell_means", "counts", "batch", "dropout")


@dataclass(frozen=True)
class SimulatedCounts:
    """A simulated single-cell count matrix and its ground truth.

    Attributes
    ----------
    counts : scipy.sparse.csr_matrix of float32, shape (n_cells, n_genes)
        Raw counts (non-negative integers stored as float32), cells in rows:
        the X of shape (n_samples, n_features) of the rest of the library.
    groups : ndarray of int64, shape (n_cells,)
        Group (cell type) of each cell, 0 .. n_groups - 1.
    programme : ndarray of bool, shape (n_groups, n_genes)
        ``programme[g, j]``: gene j is differentially expressed in group g
        (its DE factor was drawn; it can be close to 1 when the drawn
        log-fold change is small).
    de_factor : ndarray of float64, shape (n_groups, n_genes)
        Multiplicative DE factor of each gene in each group (1 outside the programme).
    gene_mean : ndarray of float64, shape (n_genes,)
        Gene means after expression outliers (before DE and library scaling).
    library_size : ndarray of float64, shape (n_cells,)
        Expected library size (total count) of each cell; the observed row
        sums scatter around it.
    params : dict
        Every parameter of the call as plain Python values, including the
        seed entropy actually used (``"entropy"``), which reproduces the
        simulation when passed as ``random_state``.
    batches : ndarray of int64, shape (n_cells,)
        Batch of each cell, 0 .. n_batches - 1, in blocks of ``batch_cells``
        (all 0 with one batch).
    batch_factor : ndarray of float64, shape (n_batches, n_genes)
        Multiplicative batch factor of each gene in each batch (all 1 with one batch).
    """

    counts: sp.csr_matrix
    groups: np.ndarray
    programme: np.ndarray
    de_factor: np.ndarray
    gene_mean: np.ndarray
    library_size: np.ndarray
    params: dict = field(default_factory=dict)
    batches: np.ndarray | None = None
    batch_factor: np.ndarray | None = None

    @property
    def structured(self) -> np.ndarray:
        """Bool (n_genes,): genes in at least one group's programme (``programme.any(axis=0)``)."""
        return self.programme.any(axis=0)

    @property
    def n_groups(self) -> int:
        """Number of groups (cell types)."""
        return int(self.programme.shape[0])


def _per_group(
    value, name: str, n_groups: int, min_val=None, max_val=None, include_boundaries="both", per="group_prob"
) -> np.ndarray:
    """A scalar or one value per group (or batch: ``per="batch_cells"``), each a finite number in range; float64 (n,)."""
    if np.ndim(value) == 0:
        v = check_real(value, name, min_val, max_val, include_boundaries=include_boundaries)
        return np.full(n_groups, v)
    values = list(value)
    if len(values) != n_groups:
        msg = f"{name} must be a number or a sequence of one number per {per.split('_')[0]} ({n_groups}, the length of {per}); got {len(values)} values"
        raise ValueError(msg)
    return np.array(
        [
            check_real(v, f"{name}[{i}]", min_val, max_val, include_boundaries=include_boundaries)
            for i, v in enumerate(values)
        ]
    )


def _check_group_prob(group_prob) -> np.ndarray:
    try:
        values = [float(p) if not isinstance(p, (bool, np.bool_)) else None for p in group_prob]
    except (TypeError, ValueError):
        msg = f"group_prob must be a sequence of positive numbers that sum to 1; got {group_prob!r}"
        raise ValueError(msg) from None
    p = np.array([np.nan if v is None else v for v in values], dtype=float)
    if p.size == 0 or not np.all(np.isfinite(p)) or np.any(p <= 0) or abs(p.sum() - 1.0) > 1e-6:
        msg = f"group_prob must be a non-empty sequence of positive numbers that sum to 1; got {group_prob!r}"
        raise ValueError(msg)
    return p / p.sum()


def _check_bcv_df(bcv_df) -> float:
    if isinstance(bcv_df, numbers.Real) and not isinstance(bcv_df, (bool, np.bool_)) and bcv_df == math.inf:
        return math.inf
    return check_real(bcv_df, "bcv_df", 0, include_boundaries="neither")


def _seed_sequence(random_state) -> np.random.SeedSequence:
    """SeedSequence from an int >= 0, None (fresh entropy) or a numpy Generator (one draw from it)."""
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2**63)))
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, numbers.Integral):
        msg = f"random_state must be a non-negative integer, None or a numpy Generator; got {random_state!r} ({type(random_state).__name__})"
        raise ParameterTypeError(msg)
    if random_state < 0:
        msg = f"random_state must be a non-negative integer, None or a numpy Generator; got {random_state!r}"
        raise ValueError(msg)
    return np.random.SeedSequence(int(random_state))


def _lognormal_factors(rng, n: int, prob: float, down_prob: float, loc: float, scale: float):
    """Splat's log-normal factors: selected with ``prob``; log factor = ``+-|N(loc, scale^2)|``, negative with ``down_prob``.

    Splatter draws f ~ LogNormal(loc, scale) and a direction (down with
    ``down_prob``), and inverts the direction when f < 1, so the log factor is
    the direction times |log f| (splatter's ``getLNormFactors``).
    """
    selected = rng.random(n) < prob
    down = rng.random(n) < down_prob
    magnitude = np.abs(rng.normal(loc, scale, size=n))
    log_fac = np.where(selected, np.where(down, -magnitude, magnitude), 0.0)
    return selected, np.exp(log_fac)


def simulate_counts(
    n_cells: int = 2000,
    n_genes: int = 5000,
    *,
    group_prob=DEFAULT_GROUP_PROB,
    de_prob=0.1,
    de_down_prob=0.5,
    de_fac_loc=0.1,
    de_fac_scale=0.4,
    mean_shape: float = 0.6,
    mean_rate: float = 0.3,
    out_prob: float = 0.05,
    out_fac_loc: float = 4.0,
    out_fac_scale: float = 0.5,
    lib_loc: float = 11.0,
    lib_scale: float = 0.2,
    bcv_common: float = 0.1,
    bcv_df: float = 60.0,
    bcv_trend: float = 1.0,
    batch_cells=None,
    batch_fac_loc=0.1,
    batch_fac_scale=0.1,
    dropout_mid: float | None = None,
    dropout_shape: float = -1.0,
    random_state=0,
    block_cells: int | None = None,
) -> SimulatedCounts:
    """Simulate raw single-cell counts with cell-type programmes (the Splat model, groups).

    The model (Zappia et al. 2017, Figure 1 and Methods; splatter's
    ``splatSimulateGroups``), for cells c and genes j:

    1. Group of each cell: g_c ~ Categorical(``group_prob``).
    2. Expected library size: L_c ~ LogNormal(``lib_loc``, ``lib_scale``)
       (meanlog, sdlog).
    3. Gene means: m_j ~ Gamma(shape ``mean_shape``, rate ``mean_rate``);
       with probability ``out_prob`` gene j is an expression outlier and
       ``m_j = median(m) * exp(|N(out_fac_loc, out_fac_scale^2)|)``
       (high outliers only, scaled from the median mean as in splatter).
    4. Programmes: in group g, gene j is differentially expressed with
       probability ``de_prob[g]``, with factor ``f_gj = exp(+-|N(de_fac_loc[g],
       de_fac_scale[g]^2)|)``, down-regulated (minus sign) with probability
       ``de_down_prob[g]``; f_gj = 1 otherwise.  DE is relative to a
       fictional base cell, so a gene can be in several programmes.
    5. Cell means scaled to the library size:
       mu_cj = L_c * m_j b_bj f_gj / sum_i m_i b_bi f_gi  (g = g_c, b = b_c),
       where b_bj is gene j's batch factor in the cell's batch b (below; 1
       with one batch).
    6. Biological coefficient of variation with a mean trend:
       BCV_cj = (``bcv_common`` + ``bcv_trend`` / sqrt(mu_cj)) * sqrt(``bcv_df`` / chi2_j),
       chi2_j ~ chi-squared(``bcv_df``) drawn once per gene (no chi2 factor
       when ``bcv_df`` is infinite); trended mean
       lambda_cj ~ Gamma(shape 1 / BCV_cj^2, scale mu_cj BCV_cj^2), so that
       E[lambda_cj] = mu_cj and Var[lambda_cj] = (mu_cj BCV_cj)^2.
    7. Counts: x_cj ~ Poisson(lambda_cj).
    8. Dropout (only when ``dropout_mid`` is given; splatter's
       ``dropout.type = "experiment"``): x_cj is set to 0 with probability
       1 / (1 + exp(-``dropout_shape`` (log lambda_cj - ``dropout_mid``))).

    **Batches** (splatter's ``batchCells``, ``batch.facLoc``,
    ``batch.facScale``): cells come in blocks of ``batch_cells`` (batch 0
    first); every gene has a factor in every batch,
    ``b_bj = exp(+-|N(batch_fac_loc[b], batch_fac_scale[b]^2)|)``, up or
    down with probability 1/2 each (splatter's ``getLNormFactors`` with
    selection probability 1).  With one batch no factor is drawn (b = 1): the
    counts are exactly those of a call without batches (splatter draws a
    factor for a single batch too, which only rescales the gene means).

    So, given the gene's chi2_j, Var[x_cj] = mu_cj + mu_cj^2 BCV_cj^2
    (gamma-Poisson, i.e. negative binomial), well above the Poisson variance
    mu_cj even at low means (there BCV^2 mu^2 ~ mu).

    Parameters
    ----------
    n_cells : int, default 2000
        Number of cells (rows of the returned X of shape (n_samples, n_features)).
    n_genes : int, default 5000
        Number of genes (columns).
    group_prob : sequence of positive float summing to 1, default (0.2,) * 5
        Probability of each group (cell type); its length is the number of
        groups.  Rare types: e.g. (0.4, 0.3, 0.2, 0.07, 0.03).
    de_prob : float or sequence of float (one per group) in [0, 1], default 0.1
        Probability that a gene is in a group's programme.
    de_down_prob : float or sequence (per group) in [0, 1], default 0.5
        Probability that a programme gene is down-regulated in that group.
    de_fac_loc : float or sequence (per group), default 0.1
        Location (meanlog) of the DE factor's log-normal: the programme's
        strength (at the default scale 0.4, the mean absolute natural log-fold change
        ``E|N(loc, 0.4^2)|`` is 0.33 for loc 0.1 and 0.40 for loc 0.3).
    de_fac_scale : float or sequence (per group) >= 0, default 0.4
        Scale (sdlog) of the DE factor's log-normal.
    mean_shape, mean_rate : float > 0, default 0.6 and 0.3
        Shape and rate of the gamma distribution of gene means (mean 2, and
        means spanning orders of magnitude: 1st and 99th percentiles 0.0013
        and 12, median 1.05).
    out_prob : float in [0, 1], default 0.05
        Probability that a gene is a (high) expression outlier.
    out_fac_loc, out_fac_scale : float, default 4.0 and 0.5
        Location and scale (>= 0) of the outlier factor's log-normal
        (exp(4) = 55 times the median mean).
    lib_loc, lib_scale : float, default 11.0 and 0.2
        Location and scale (>= 0) of the log-normal library sizes (median
        exp(11) = 59,874 counts per cell).
    bcv_common : float >= 0, default 0.1
        Common biological coefficient of variation.
    bcv_df : float > 0 or math.inf, default 60.0
        Degrees of freedom of the inverse chi-squared spread of the BCV
        across genes.
    bcv_trend : float >= 0, default 1.0
        Weight of the mean trend 1 / sqrt(mu) in the BCV: 1 is Splat's
        model; 0 gives a negative binomial of dispersion
        (``bcv_common`` phi_j)^2 at every mean (the model of UMI counts, e.g.
        Svensson 2020; real droplet sets are far less dispersed at low means
        than Splat's trend, docs/methods/simulation.md "Simulator calibration").  Not a
        splatter parameter.
    batch_cells : sequence of int >= 1 summing to ``n_cells``, optional
        Cells in each batch (splatter's ``batchCells``); default one batch.
    batch_fac_loc, batch_fac_scale : float or sequence (one per batch), default 0.1 and 0.1
        Location and scale (>= 0) of the batch factor's log-normal
        (splatter's defaults).  Estimated from real donors by
        :func:`glfs.simulation._estimate_batch.estimate_batch_params`.
    dropout_mid : float, optional
        Midpoint (in natural log of the trended mean) of the dropout
        logistic; default None: no dropout (splatter's default).
    dropout_shape : float, default -1.0
        Shape of the dropout logistic (negative: low means drop more).
    random_state : int >= 0, None or numpy.random.Generator, default 0
        Seeds everything.  One ``numpy.random.SeedSequence`` gives an
        independent stream to each part of the model (groups, library sizes,
        gene means, DE, BCV, trended means, counts), so for example the gene
        means and programmes do not depend on ``n_cells``.  None draws fresh
        entropy; a Generator gives one draw.  Either way the entropy used is
        in ``params["entropy"]``.
    block_cells : int >= 1, optional
        Cells per block while the counts are drawn; default
        ``max(1, BLOCK_ELEMENTS // n_genes)`` (2**22 values per block).  It
        changes memory, never the result: the per-entry draws come from two
        streams consumed in cell-major order, so any block size gives the
        same counts.

    Returns
    -------
    SimulatedCounts
        ``counts`` (CSR float32, n_cells x n_genes), ``groups``,
        ``programme`` and ``de_factor`` (n_groups x n_genes), ``gene_mean``,
        ``library_size``, ``params``, ``batches`` and ``batch_factor``;
        ``.structured`` is ``programme.any(axis=0)``, the genes a selection
        should find.

    Raises
    ------
    ValueError
        A parameter out of range, or a per-group parameter whose length is
        not that of ``group_prob``; the message names the parameter.

    Notes
    -----
    **Defaults** are splatter's (``SplatParams`` prototype in splatter's
    ``R/AllClasses.R``, described as "fairly realistic" in its vignette "Splat
    simulation parameters"): ``mean_shape`` 0.6, ``mean_rate`` 0.3,
    ``lib_loc`` 11, ``lib_scale`` 0.2, ``out_prob`` 0.05, ``out_fac_loc`` 4,
    ``out_fac_scale`` 0.5, ``de_prob`` 0.1, ``de_down_prob`` 0.5,
    ``de_fac_loc`` 0.1, ``de_fac_scale`` 0.4, ``bcv_common`` 0.1, ``bcv_df`` 60.
    Not splatter's: ``group_prob`` (splatter's default is one group, i.e. no
    programme; ours is five equal groups), and ``n_cells`` / ``n_genes``
    (splatter: 100 cells, 10,000 genes).

    **Left out** of the Splat model: dropout (splatter's default
    ``dropout.type = "none"`` too; droplet data show no zero inflation
    beyond a negative binomial, Svensson, Nat Biotechnol 38:147, 2020), batches (one batch), differentiation paths,
    and a normal library-size option.  Parameters are estimated from a real
    count matrix by :func:`glfs.simulation._estimate.estimate_params`.

    **Choices the paper leaves open**: the outlier median is taken over the
    base gamma means (as splatter does); the DE magnitude ``|N(loc, scale^2)|`` is
    drawn for every gene and used where the gene is selected (splatter draws
    it for the selected genes only: same distribution, other random numbers,
    so the draws are not splatter's for a given seed); cells are assigned to
    groups independently (group sizes are multinomial, a rare group can be
    empty at small ``n_cells``).

    Cost: O(n_cells n_genes) time (a gamma and a Poisson draw per entry);
    memory: the sparse result (8 bytes per nonzero: float32 value, int32
    column) plus the dense float64 arrays of one block (about six of 32 MB by
    default) and one 64 MB chunk of the growing nonzero storage.  Measured
    (studies/size-limits.md): 50,000 cells x 20,000 genes at the
    defaults and ``group_prob=(0.4, 0.3, 0.2, 0.07, 0.03)``, 41 % nonzero
    (4.1e8), result 3.1 GB, peak RSS 3.8 GB, 166 s.  Shallower libraries
    (smaller ``lib_loc``) give fewer nonzeros.

    References
    ----------
    Zappia L, Phipson B, Oshlack A. Splatter: simulation of single-cell RNA
    sequencing data. Genome Biology 18:174 (2017), doi:10.1186/s13059-017-1305-0.
    McCarthy DJ, Chen Y, Smyth GK. Differential expression analysis of
    multifactor RNA-Seq experiments with respect to biological variation.
    Nucleic Acids Res 40:4288 (2012) (the BCV).

    Examples
    --------
    >>> sim = simulate_counts(500, 1000, group_prob=(0.5, 0.3, 0.2), random_state=1)
    >>> sim.counts.shape, sim.programme.shape
    ((500, 1000), (3, 1000))
    """
    prm = _checked_params(
        n_cells,
        n_genes,
        group_prob,
        de_prob=de_prob,
        de_down_prob=de_down_prob,
        de_fac_loc=de_fac_loc,
        de_fac_scale=de_fac_scale,
        mean_shape=mean_shape,
        mean_rate=mean_rate,
        out_prob=out_prob,
        out_fac_loc=out_fac_loc,
        out_fac_scale=out_fac_scale,
        lib_loc=lib_loc,
        lib_scale=lib_scale,
        bcv_common=bcv_common,
        bcv_df=bcv_df,
        block_cells=block_cells,
    )
    prm.update(
        _checked_batches_dropout(
            prm["n_cells"], batch_cells, batch_fac_loc, batch_fac_scale, dropout_mid, dropout_shape
        ),
        bcv_trend=check_real(bcv_trend, "bcv_trend", 0),
    )
    return _simulate(prm, _seed_sequence(random_state))


def _simulate(prm: dict, seq: np.random.SeedSequence) -> SimulatedCounts:
    """The steps of :func:`simulate_counts` on its checked parameters ``prm``, seeded by ``seq``."""
    n_cells, n_genes, p = prm["n_cells"], prm["n_genes"], prm["group_prob"]
    k = p.size
    rngs = dict(zip(_STREAMS, (np.random.default_rng(s) for s in seq.spawn(len(_STREAMS)))))

    groups = rngs["groups"].choice(k, size=n_cells, p=p).astype(np.int64)
    library_size = rngs["library"].lognormal(prm["lib_loc"], prm["lib_scale"], size=n_cells)
    gene_mean = _gene_means(rngs["gene_means"], prm)
    programme, de_factor = _programmes(rngs["de"], prm)
    batches, batch_factor = _batch_factors(rngs["batch"], prm)
    proportion = _class_proportions(gene_mean, batch_factor, de_factor)
    bcv_gene = _bcv_per_gene(rngs["bcv"], n_genes, prm["bcv_df"])

    dropout = None if prm["dropout_mid"] is None else (prm["dropout_mid"], prm["dropout_shape"])
    counts = draw_counts(
        rngs,
        library_size,
        proportion,
        batches * k + groups,
        (prm["bcv_common"], prm["bcv_trend"]),
        bcv_gene,
        prm["block_cells"],
        dropout,
    )
    params = _params_record(prm, int(seq.entropy))
    log.info(
        "simulate_counts: %d cells x %d genes, %d groups, %d programme genes, %.1f%% nonzero",
        n_cells,
        n_genes,
        k,
        int(programme.any(axis=0).sum()),
        100.0 * counts.nnz / max(1, n_cells * n_genes),
    )
    return SimulatedCounts(counts, groups, programme, de_factor, gene_mean, library_size, params, batches, batch_factor)


def _class_proportions(gene_mean, batch_factor, de_factor) -> np.ndarray:
    """One row per (batch, group), batch-major: m_j b_bj f_gj scaled to sum 1; (n_batches * n_groups, n_genes)."""
    group_mean = (gene_mean[None, None, :] * batch_factor[:, None, :] * de_factor[None, :, :]).reshape(
        -1, gene_mean.size
    )
    return group_mean / group_mean.sum(axis=1, keepdims=True)


#: The per-group parameters of :func:`simulate_counts` (a number or one per group) and its scalar
#: model parameters, in the order of its signature (and of ``SimulatedCounts.params``).
_PER_GROUP = ("de_prob", "de_down_prob", "de_fac_loc", "de_fac_scale")
_SCALARS = (
    "mean_shape",
    "mean_rate",
    "out_prob",
    "out_fac_loc",
    "out_fac_scale",
    "lib_loc",
    "lib_scale",
    "bcv_common",
    "bcv_df",
)


def _checked_params(
    n_cells,
    n_genes,
    group_prob,
    *,
    de_prob,
    de_down_prob,
    de_fac_loc,
    de_fac_scale,
    mean_shape,
    mean_rate,
    out_prob,
    out_fac_loc,
    out_fac_scale,
    lib_loc,
    lib_scale,
    bcv_common,
    bcv_df,
    block_cells,
) -> dict:
    """:func:`simulate_counts`' parameters, checked in the order of its signature (the first bad one raises).

    Returns them by name: ``group_prob`` normalised, the per-group ones as
    float64 (n_groups,), ``block_cells`` with its default filled in.
    """
    n_cells = check_int(n_cells, "n_cells", 1)
    n_genes = check_int(n_genes, "n_genes", 1)
    p = _check_group_prob(group_prob)
    k = p.size
    return {
        "n_cells": n_cells,
        "n_genes": n_genes,
        "group_prob": p,
        "de_prob": _per_group(de_prob, "de_prob", k, 0, 1),
        "de_down_prob": _per_group(de_down_prob, "de_down_prob", k, 0, 1),
        "de_fac_loc": _per_group(de_fac_loc, "de_fac_loc", k),
        "de_fac_scale": _per_group(de_fac_scale, "de_fac_scale", k, 0),
        "mean_shape": check_real(mean_shape, "mean_shape", 0, include_boundaries="neither"),
        "mean_rate": check_real(mean_rate, "mean_rate", 0, include_boundaries="neither"),
        "out_prob": check_real(out_prob, "out_prob", 0, 1),
        "out_fac_loc": check_real(out_fac_loc, "out_fac_loc"),
        "out_fac_scale": check_real(out_fac_scale, "out_fac_scale", 0),
        "lib_loc": check_real(lib_loc, "lib_loc"),
        "lib_scale": check_real(lib_scale, "lib_scale", 0),
        "bcv_common": check_real(bcv_common, "bcv_common", 0),
        "bcv_df": _check_bcv_df(bcv_df),
        "block_cells": (
            max(1, BLOCK_ELEMENTS // n_genes) if block_cells is None else check_int(block_cells, "block_cells", 1)
        ),
    }


def _checked_batches_dropout(n_cells, batch_cells, batch_fac_loc, batch_fac_scale, dropout_mid, dropout_shape) -> dict:
    """The batch and dropout parameters, checked: ``batch_cells`` as int64 (n_batches,), the factors per batch."""
    if batch_cells is None:
        sizes = np.array([n_cells], dtype=np.int64)
    else:
        try:
            sizes = np.array([check_int(b, f"batch_cells[{i}]", 1) for i, b in enumerate(batch_cells)], dtype=np.int64)
        except TypeError:
            msg = f"batch_cells must be None or a sequence of positive integers summing to n_cells; got {batch_cells!r}"
            raise ValueError(msg) from None
        if sizes.size == 0 or int(sizes.sum()) != n_cells:
            msg = f"batch_cells must be a non-empty sequence of positive integers summing to n_cells ({n_cells}); got {batch_cells!r}"
            raise ValueError(msg)
    b = sizes.size
    return {
        "batch_cells": sizes,
        "batch_fac_loc": _per_group(batch_fac_loc, "batch_fac_loc", b, per="batch_cells"),
        "batch_fac_scale": _per_group(batch_fac_scale, "batch_fac_scale", b, 0, per="batch_cells"),
        "dropout_mid": None if dropout_mid is None else check_real(dropout_mid, "dropout_mid"),
        "dropout_shape": check_real(dropout_shape, "dropout_shape"),
    }


def _batch_factors(rng, prm: dict):
    """Each cell's batch (blocks of ``batch_cells``) and the factors (n_batches, n_genes); no draw with one batch."""
    sizes, n_genes = prm["batch_cells"], prm["n_genes"]
    batches = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    factor = np.ones((sizes.size, n_genes))
    if sizes.size > 1:
        for b in range(sizes.size):
            factor[b] = _lognormal_factors(rng, n_genes, 1.0, 0.5, prm["batch_fac_loc"][b], prm["batch_fac_scale"][b])[
                1
            ]
    return batches, factor


def _gene_means(rng, prm: dict) -> np.ndarray:
    """Step 3 of the model: gamma gene means, high expression outliers scaled from their median; float64 (n_genes,)."""
    n_genes = prm["n_genes"]
    base_mean = rng.gamma(prm["mean_shape"], 1.0 / prm["mean_rate"], size=n_genes)
    is_outlier, out_fac = _lognormal_factors(
        rng, n_genes, prm["out_prob"], 0.0, prm["out_fac_loc"], prm["out_fac_scale"]
    )
    return np.where(is_outlier, np.median(base_mean) * out_fac, base_mean)


def _programmes(rng, prm: dict):
    """Step 4: each group's programme (bool) and DE factors (1 outside it), both (n_groups, n_genes), group by group."""
    k, n_genes = prm["group_prob"].size, prm["n_genes"]
    programme = np.zeros((k, n_genes), dtype=bool)
    de_factor = np.ones((k, n_genes))
    for g in range(k):
        programme[g], de_factor[g] = _lognormal_factors(
            rng, n_genes, prm["de_prob"][g], prm["de_down_prob"][g], prm["de_fac_loc"][g], prm["de_fac_scale"][g]
        )
    return programme, de_factor


def _bcv_per_gene(rng, n_genes: int, bcv_df: float) -> np.ndarray:
    """Step 6's per-gene factor sqrt(bcv_df / chi2_j) (ones when ``bcv_df`` is infinite); float64 (n_genes,)."""
    if math.isinf(bcv_df):
        return np.ones(n_genes)
    return np.sqrt(bcv_df / rng.chisquare(bcv_df, size=n_genes))


def _params_record(prm: dict, entropy: int) -> dict:
    """``SimulatedCounts.params``: every parameter as plain Python values, and the seed entropy used."""
    return {
        "n_cells": prm["n_cells"],
        "n_genes": prm["n_genes"],
        "group_prob": [float(x) for x in prm["group_prob"]],
        **{name: _plain(prm[name]) for name in _PER_GROUP},
        **{name: prm[name] for name in _SCALARS},
        "bcv_trend": prm["bcv_trend"],
        "batch_cells": None if prm["batch_cells"].size == 1 else [int(b) for b in prm["batch_cells"]],
        "batch_fac_loc": _plain(prm["batch_fac_loc"]),
        "batch_fac_scale": _plain(prm["batch_fac_scale"]),
        "dropout_mid": prm["dropout_mid"],
        "dropout_shape": prm["dropout_shape"],
        "entropy": entropy,
    }


def _plain(values: np.ndarray):
    """A per-group parameter as given: one float when all groups share it, else a list."""
    return float(values[0]) if np.all(values == values[0]) else [float(v) for v in values]
