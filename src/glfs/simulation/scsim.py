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

from glfs.core._progress import Progress
from glfs.core._validation import ParameterTypeError, check_int, check_real

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
_STREAMS = ("groups", "library", "gene_means", "de", "bcv", "cell_means", "counts")


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
    """

    counts: sp.csr_matrix
    groups: np.ndarray
    programme: np.ndarray
    de_factor: np.ndarray
    gene_mean: np.ndarray
    library_size: np.ndarray
    params: dict = field(default_factory=dict)

    @property
    def structured(self) -> np.ndarray:
        """Bool (n_genes,): genes in at least one group's programme (``programme.any(axis=0)``)."""
        return self.programme.any(axis=0)

    @property
    def n_groups(self) -> int:
        """Number of groups (cell types)."""
        return int(self.programme.shape[0])


def _per_group(value, name: str, n_groups: int, min_val=None, max_val=None, include_boundaries="both") -> np.ndarray:
    """A scalar or one value per group, each a finite number in range; returns float64 (n_groups,)."""
    if np.ndim(value) == 0:
        v = check_real(value, name, min_val, max_val, include_boundaries=include_boundaries)
        return np.full(n_groups, v)
    values = list(value)
    if len(values) != n_groups:
        msg = f"{name} must be a number or a sequence of one number per group ({n_groups}, the length of group_prob); got {len(values)} values"
        raise ValueError(msg)
    return np.array(
        [check_real(v, f"{name}[{i}]", min_val, max_val, include_boundaries=include_boundaries) for i, v in enumerate(values)]
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
    """Splat's log-normal factors: selected with ``prob``; log factor = +-|N(loc, scale^2)|, negative with ``down_prob``.

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
       m_j = median(m) * exp(|N(``out_fac_loc``, ``out_fac_scale``^2)|)
       (high outliers only, scaled from the median mean as in splatter).
    4. Programmes: in group g, gene j is differentially expressed with
       probability ``de_prob[g]``, with factor f_gj = exp(+-|N(``de_fac_loc[g]``,
       ``de_fac_scale[g]``^2)|), down-regulated (minus sign) with probability
       ``de_down_prob[g]``; f_gj = 1 otherwise.  DE is relative to a
       fictional base cell, so a gene can be in several programmes.
    5. Cell means scaled to the library size:
       mu_cj = L_c * m_j f_gj / sum_i m_i f_gi  (g = g_c).
    6. Biological coefficient of variation with a mean trend:
       BCV_cj = (``bcv_common`` + 1 / sqrt(mu_cj)) * sqrt(``bcv_df`` / chi2_j),
       chi2_j ~ chi-squared(``bcv_df``) drawn once per gene (no chi2 factor
       when ``bcv_df`` is infinite); trended mean
       lambda_cj ~ Gamma(shape 1 / BCV_cj^2, scale mu_cj BCV_cj^2), so that
       E[lambda_cj] = mu_cj and Var[lambda_cj] = (mu_cj BCV_cj)^2.
    7. Counts: x_cj ~ Poisson(lambda_cj).

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
        strength (at the default scale 0.4, the mean |natural log-fold change|
        E|N(loc, 0.4^2)| is 0.33 for loc 0.1 and 0.40 for loc 0.3).
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
        ``library_size``, ``params``; ``.structured`` is
        ``programme.any(axis=0)``, the genes a selection should find.

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
    a normal library-size option, and parameter estimation from data.

    **Choices the paper leaves open**: the outlier median is taken over the
    base gamma means (as splatter does); the DE magnitude |N(loc, scale^2)| is
    drawn for every gene and used where the gene is selected (splatter draws
    it for the selected genes only: same distribution, other random numbers,
    so the draws are not splatter's for a given seed); cells are assigned to
    groups independently (group sizes are multinomial, a rare group can be
    empty at small ``n_cells``).

    Cost: O(n_cells n_genes) time (a gamma and a Poisson draw per entry);
    memory: the sparse result (8 bytes per nonzero: float32 value, int32
    column) plus the dense float64 arrays of one block (about six of 32 MB by
    default) and one 64 MB chunk of the growing nonzero storage.  Measured
    (2 shared cores, load 5.4-5.9): 50,000 cells x 20,000 genes at the
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
        n_cells, n_genes, group_prob, de_prob=de_prob, de_down_prob=de_down_prob, de_fac_loc=de_fac_loc,
        de_fac_scale=de_fac_scale, mean_shape=mean_shape, mean_rate=mean_rate, out_prob=out_prob,
        out_fac_loc=out_fac_loc, out_fac_scale=out_fac_scale, lib_loc=lib_loc, lib_scale=lib_scale,
        bcv_common=bcv_common, bcv_df=bcv_df, block_cells=block_cells,
    )
    n_cells, n_genes, p = prm["n_cells"], prm["n_genes"], prm["group_prob"]
    k = p.size
    seq = _seed_sequence(random_state)
    rngs = dict(zip(_STREAMS, (np.random.default_rng(s) for s in seq.spawn(len(_STREAMS)))))

    groups = rngs["groups"].choice(k, size=n_cells, p=p).astype(np.int64)
    library_size = rngs["library"].lognormal(prm["lib_loc"], prm["lib_scale"], size=n_cells)
    gene_mean = _gene_means(rngs["gene_means"], prm)
    programme, de_factor = _programmes(rngs["de"], prm)
    group_mean = gene_mean[None, :] * de_factor
    proportion = group_mean / group_mean.sum(axis=1, keepdims=True)  # (k, n_genes): each row sums to 1
    bcv_gene = _bcv_per_gene(rngs["bcv"], n_genes, prm["bcv_df"])

    counts = _draw_counts(rngs, library_size, proportion, groups, prm["bcv_common"], bcv_gene, prm["block_cells"])
    params = _params_record(prm, int(seq.entropy))
    log.info(
        "simulate_counts: %d cells x %d genes, %d groups, %d programme genes, %.1f%% nonzero",
        n_cells, n_genes, k, int(programme.any(axis=0).sum()), 100.0 * counts.nnz / max(1, n_cells * n_genes),
    )
    return SimulatedCounts(counts, groups, programme, de_factor, gene_mean, library_size, params)


#: The per-group parameters of :func:`simulate_counts` (a number or one per group) and its scalar
#: model parameters, in the order of its signature (and of ``SimulatedCounts.params``).
_PER_GROUP = ("de_prob", "de_down_prob", "de_fac_loc", "de_fac_scale")
_SCALARS = ("mean_shape", "mean_rate", "out_prob", "out_fac_loc", "out_fac_scale", "lib_loc", "lib_scale", "bcv_common", "bcv_df")


def _checked_params(
    n_cells, n_genes, group_prob, *, de_prob, de_down_prob, de_fac_loc, de_fac_scale, mean_shape, mean_rate,
    out_prob, out_fac_loc, out_fac_scale, lib_loc, lib_scale, bcv_common, bcv_df, block_cells,
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


def _gene_means(rng, prm: dict) -> np.ndarray:
    """Step 3 of the model: gamma gene means, high expression outliers scaled from their median; float64 (n_genes,)."""
    n_genes = prm["n_genes"]
    base_mean = rng.gamma(prm["mean_shape"], 1.0 / prm["mean_rate"], size=n_genes)
    is_outlier, out_fac = _lognormal_factors(rng, n_genes, prm["out_prob"], 0.0, prm["out_fac_loc"], prm["out_fac_scale"])
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


def _draw_counts(rngs, library_size, proportion, groups, bcv_common: float, bcv_gene, block_cells: int):
    """Steps 5-7 for every cell, in blocks of ``block_cells`` cells: the counts as CSR float32 (n_cells, n_genes).

    Dense float64 only for one block; the nonzeros grow in fixed chunks (:class:`_Chunks`).
    """
    n_cells, n_genes = groups.size, proportion.shape[1]
    data, indices = _Chunks(np.float32), _Chunks(np.int32)
    indptr_parts, offset = [np.zeros(1, dtype=np.int64)], 0
    n_blocks = -(-n_cells // block_cells)
    progress = Progress(log, "simulate_counts", n_blocks)
    for b, start in enumerate(range(0, n_cells, block_cells)):
        stop = min(start + block_cells, n_cells)
        block = _block_counts(rngs, library_size[start:stop], proportion, groups[start:stop], bcv_common, bcv_gene)
        rows, cols = np.nonzero(block)
        data.append(block[rows, cols])
        indices.append(cols)
        indptr_parts.append(offset + np.cumsum(np.bincount(rows, minlength=stop - start)))
        offset += rows.size
        del block, rows, cols
        progress.step(b + 1, f"{stop} of {n_cells} cells")
    counts = sp.csr_matrix((n_cells, n_genes), dtype=np.float32)
    counts.data = data.concatenate()
    counts.indices = indices.concatenate()
    idx_type = np.int32 if offset < 2**31 else np.int64
    counts.indptr = np.concatenate(indptr_parts).astype(idx_type)
    if idx_type is np.int64:
        counts.indices = counts.indices.astype(np.int64)
    counts.check_format(full_check=False)
    return counts


def _block_counts(rngs, library_size, proportion, groups, bcv_common: float, bcv_gene) -> np.ndarray:
    """Steps 5-7 for one block of cells: cell means, gamma trended means, Poisson counts; dense (cells, n_genes).

    Draws from the ``cell_means`` and ``counts`` streams in cell-major order,
    so the counts do not depend on the block size.
    """
    mu = library_size[:, None] * proportion[groups]
    with np.errstate(divide="ignore", invalid="ignore"):
        bcv = (bcv_common + 1.0 / np.sqrt(mu)) * bcv_gene
        shape = 1.0 / bcv**2
        scale = mu * bcv**2
    positive = mu > 0  # a gene mean that underflowed to 0 gives 0 counts
    shape = np.where(positive, shape, 1.0)
    scale = np.where(positive, scale, 0.0)
    del mu, bcv
    lam = rngs["cell_means"].gamma(shape, scale)
    del shape, scale
    block = rngs["counts"].poisson(lam)
    del lam
    return block


def _params_record(prm: dict, entropy: int) -> dict:
    """``SimulatedCounts.params``: every parameter as plain Python values, and the seed entropy used."""
    return {
        "n_cells": prm["n_cells"],
        "n_genes": prm["n_genes"],
        "group_prob": [float(x) for x in prm["group_prob"]],
        **{name: _plain(prm[name]) for name in _PER_GROUP},
        **{name: prm[name] for name in _SCALARS},
        "entropy": entropy,
    }


def _plain(values: np.ndarray):
    """A per-group parameter as given: one float when all groups share it, else a list."""
    return float(values[0]) if np.all(values == values[0]) else [float(v) for v in values]


class _Chunks:
    """Growing 1-d storage in fixed chunks of ``CHUNK_ELEMENTS`` values, concatenated at the end.

    The chunks (64 MB for 4-byte values) are above glibc's largest mmap threshold
    (32 MB), so each is its own mapping and freeing it returns the memory at once:
    concatenating chunk by chunk into the result keeps the peak near one copy of the
    result (block-sized pieces would stay in the heap until all are freed: twice
    the result, measured 6.7 GB for a 3.1 GB result at 50,000 x 20,000).
    """

    CHUNK_ELEMENTS = 2**24

    def __init__(self, dtype):
        self.dtype, self.chunks, self.fill = np.dtype(dtype), [], self.CHUNK_ELEMENTS

    def append(self, x: np.ndarray) -> None:
        x = np.asarray(x)
        pos = 0
        while pos < x.size:
            if self.fill == self.CHUNK_ELEMENTS:
                self.chunks.append(np.empty(self.CHUNK_ELEMENTS, dtype=self.dtype))
                self.fill = 0
            take = min(x.size - pos, self.CHUNK_ELEMENTS - self.fill)
            self.chunks[-1][self.fill : self.fill + take] = x[pos : pos + take]
            self.fill += take
            pos += take

    def concatenate(self) -> np.ndarray:
        """All values in order; the chunks are freed one by one as they are copied."""
        n = len(self.chunks) * self.CHUNK_ELEMENTS - (self.CHUNK_ELEMENTS - self.fill if self.chunks else 0)
        out = np.empty(n, dtype=self.dtype)
        pos = 0
        while self.chunks:
            chunk = self.chunks.pop(0)
            take = min(chunk.size, n - pos)
            out[pos : pos + take] = chunk[:take]
            pos += take
            del chunk
        return out
