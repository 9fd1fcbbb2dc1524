"""Parameters of the Splat simulator estimated from a real count matrix (splatter's ``splatEstimate``).

:func:`estimate_params` reads a raw count matrix, cells x genes (and optionally
the cells' labels), and returns the :class:`SimParams` of
:func:`glfs.simulation._scsim.simulate_counts` that describe it: gene means,
library sizes, expression outliers, the biological coefficient of variation
(BCV), dropout and, given labels, each group's differential expression.
:func:`glfs.simulation._estimate_batch.estimate_batch_params` estimates the
batch factor's log-normal from cells of several batches (donors) of the
same cell types.

The estimators follow splatter's documented ones (``splatEstMean``,
``splatEstLib``, ``splatEstOutlier``, ``splatEstBCV``, ``splatEstDropout``;
https://rdrr.io/bioc/splatter/man/splatEstimate.html and the pages it links)
where they are consistent for the model, and depart from them where a planted
simulation showed they are not; each departure is named in the function's
notes and in docs/methods/simulation.md ("Simulator calibration").  No code of splatter's
is used.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy import optimize, special

from glfs.core._validation import check_real, check_X
from glfs.core._value_checks import check_counts

log = logging.getLogger(__name__)

__all__ = ["SimParams", "estimate_params", "MIN_MEAN_BCV", "OUTLIER_MADS"]

#: Genes with at least this mean count per cell inform the BCV fit (below it the moment estimate is mostly noise).
MIN_MEAN_BCV = 0.1
#: splatter's outlier rule: a gene whose log mean is more than this many MADs above the median log mean.
OUTLIER_MADS = 2.0
#: The gamma of the gene means is fitted to the empirical CDF between these quantiles (splatter winsorises there).
CENTRAL = (0.1, 0.9)
#: Mean excess of zeros per gene (observed share minus the fitted negative binomial's) above which dropout is fitted.
EXCESS_ZERO_TOL = 0.02
#: Genes and cells at most this many (seeded subsets) in the spread step of the BCV fit (data and bootstrap alike).
BCV_BOOT_GENES = 1000
BCV_BOOT_CELLS = 3000
#: Bounds of the gene-mean mixture's parameters (log shape, log rate, out_prob, out_fac_loc, log out_fac_scale):
#: outliers at most half the genes and at least e^0.5 times the median, the gamma's shape in [0.02, 100].
MIXTURE_BOUNDS = np.array(
    [[math.log(0.02), math.log(100.0)], [-40.0, 40.0], [0.0, 0.5], [0.5, 8.0], [math.log(0.05), math.log(3.0)]]
)
#: Genes at most this many (a seeded subset) in the gene-mean mixture and in each group's DE fit.
FIT_GENES = 4000
#: The smallest df used for the mean BCV level df / (df - 2) (it is infinite at df <= 2).
MIN_BCV_DF = 2.5


@dataclass(frozen=True)
class SimParams:
    """Parameters of :func:`glfs.simulation._scsim.simulate_counts` estimated from real counts.

    Every field but ``diagnostics`` is an argument of ``simulate_counts`` of the
    same name; :meth:`simulate_kwargs` returns them as a dict.  The per-group
    fields (``de_*``) are None when no labels were given; ``dropout_mid`` is
    None when the zeros do not exceed what the fitted negative binomial gives.
    ``mean_rate`` is on the scale of counts normalised to the median library
    size (as splatter's); the simulator uses the means only relative to each
    other, so the rate changes nothing there.
    """

    n_cells: int
    n_genes: int
    mean_shape: float
    mean_rate: float
    out_prob: float
    out_fac_loc: float
    out_fac_scale: float
    lib_loc: float
    lib_scale: float
    bcv_common: float
    bcv_df: float
    bcv_trend: float = 1.0
    dropout_mid: float | None = None
    dropout_shape: float = -1.0
    group_prob: tuple | None = None
    de_prob: tuple | None = None
    de_down_prob: tuple | None = None
    de_fac_loc: tuple | None = None
    de_fac_scale: tuple | None = None
    diagnostics: dict = field(default_factory=dict)

    def simulate_kwargs(self) -> dict:
        """The keyword arguments of ``simulate_counts`` (the per-group ones only when estimated)."""
        out = {k: v for k, v in asdict(self).items() if k != "diagnostics"}
        return {k: v for k, v in out.items() if v is not None or k == "dropout_mid"}


# ---- input ------------------------------------------------------------------------------------


def _counts_csr(counts, name: str = "counts") -> sp.csr_matrix:
    """Raw counts as float64 CSR (cells x genes); cells without a count are refused."""
    X = check_counts(check_X(counts, name=name), name=name)
    X = sp.csr_matrix(X, dtype=np.float64)
    lib = np.asarray(X.sum(axis=1)).ravel()
    if np.any(lib <= 0):
        msg = f"{name} must have at least one count in every cell; got {int((lib <= 0).sum())} empty cells (filter them first)"
        raise ValueError(msg)
    return X


def _codes(labels, n: int, name: str):
    """Integer codes 0..k-1 of ``labels`` (length n) and the k category names, in order of first appearance."""
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.shape[0] != n:
        msg = f"{name} must be one label per cell ({n}); got shape {arr.shape}"
        raise ValueError(msg)
    uniq, first, codes = np.unique(arr, return_index=True, return_inverse=True)
    order = np.argsort(first)
    remap = np.empty_like(order)
    remap[order] = np.arange(order.size)
    return remap[codes].astype(np.int64), uniq[order].tolist()


class _GroupStats:
    """Per-group sums of the counts (k groups x genes) and of the library sizes: the moments every estimator needs."""

    def __init__(self, X: sp.csr_matrix, codes: np.ndarray, k: int, lib: np.ndarray | None = None):
        n = X.shape[0]
        self.lib = np.asarray(X.sum(axis=1)).ravel() if lib is None else lib
        G = sp.csr_matrix((np.ones(n), (codes, np.arange(n))), shape=(k, n))
        self.n = np.asarray(G.sum(axis=1)).ravel()
        self.sum_x = np.asarray((G @ X).todense())
        self.sum_xl = np.asarray((G @ sp.diags(self.lib) @ X).todense())
        self.sum_x2 = np.asarray((G @ X.multiply(X)).todense())
        inv = sp.diags(1.0 / self.lib)
        self.sum_y = np.asarray((G @ inv @ X).todense())  # y = x / L
        self.sum_y2 = np.asarray((G @ (inv @ inv) @ X.multiply(X)).todense())
        self.lib_pow = {p: np.bincount(codes, weights=self.lib**p, minlength=k) for p in (1.0, 1.5, 2.0)}
        self.prop = self.sum_x / self.lib_pow[1.0][:, None]  # p_gj: the group's share of counts in gene j

    def log_mean_and_se2(self):
        """log of each group's mean of x / L and its squared standard error (delta method; Poisson floor at few counts)."""
        n = self.n[:, None]
        mean = self.sum_y / n
        var = np.maximum(self.sum_y2 / n - mean**2, 0.0) * n / np.maximum(n - 1, 1)
        floor = 0.5 / self.lib_pow[1.0][:, None]  # half a count in the group: log of a gene absent from it
        m = np.maximum(mean, floor)
        se2 = np.maximum(var / (n * m**2), 1.0 / (self.sum_x + 0.5))
        return np.log(m), se2


# ---- the estimators ---------------------------------------------------------------------------


def _norm_logpdf(x, mean, var):
    """log N(x; mean, var), elementwise (scipy.stats' frozen-free call is slow in an optimiser's loop)."""
    return -0.5 * (np.log(2.0 * np.pi * var) + (x - mean) ** 2 / var)


def _fit_lib(lib: np.ndarray) -> tuple[float, float]:
    """Log-normal library sizes by maximum likelihood: mean and standard deviation of log L."""
    ll = np.log(lib)
    return float(ll.mean()), float(ll.std())


def _fit_gamma_central(means: np.ndarray, out_prob: float) -> tuple[float, float]:
    """Gamma (shape, rate) whose CDF, times (1 - out_prob), best meets the empirical CDF between the CENTRAL quantiles.

    splatter winsorises the means at the 10th and 90th percentiles and fits by
    the Cramer-von Mises distance; winsorising piles mass on the two cut
    points, which biases the shape.  Here the squared CDF distance is summed
    over the central genes only, and the outliers (above the central range)
    carry ``out_prob`` of the mass.
    """
    x = np.sort(means)
    ecdf = (np.arange(1, x.size + 1) - 0.5) / x.size
    keep = (ecdf >= CENTRAL[0]) & (ecdf <= CENTRAL[1])
    xc, fc = x[keep], ecdf[keep]
    m, v = x.mean(), x.var()
    start = np.log([max(m**2 / v, 1e-3), max(m / v, 1e-12)])

    def loss(theta):
        a, r = np.exp(theta)
        return float(np.sum(((1.0 - out_prob) * special.gammainc(a, r * xc) - fc) ** 2))

    res = optimize.minimize(loss, start, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-12, "maxiter": 4000})
    a, r = np.exp(res.x)
    return float(a), float(r)


def _mixture_params(theta):
    """(shape, rate, out_prob, out_fac_loc, out_fac_scale) from unbounded theta, each within MIXTURE_BOUNDS."""
    lo, hi = MIXTURE_BOUNDS[:, 0], MIXTURE_BOUNDS[:, 1]
    v = lo + (hi - lo) * special.expit(np.asarray(theta, dtype=float))
    return math.exp(v[0]), math.exp(v[1]), float(v[2]), float(v[3]), math.exp(v[4])


def _mixture_theta(shape, rate, pi, loc, scale):
    """The inverse of :func:`_mixture_params` (values clipped into the bounds)."""
    v = np.array([math.log(shape), math.log(rate), pi, loc, math.log(scale)])
    lo, hi = MIXTURE_BOUNDS[:, 0], MIXTURE_BOUNDS[:, 1]
    return special.logit(np.clip((v - lo) / (hi - lo), 1e-6, 1 - 1e-6))


def _mixture_negloglik(theta, x, q, with_outliers=True):
    """Minus the log-likelihood of means x > q under the gamma + outlier mixture, conditioned on x > q.

    theta: see :func:`_mixture_params`; an outlier is M exp(|N(loc, scale^2)|)
    with M the gamma's median (the simulator's step 3).
    """
    a, r, pi, loc, sc = _mixture_params(theta)
    if not with_outliers:
        pi = 0.0
    M = special.gammaincinv(a, 0.5) / r
    lx = np.log(x)
    log_g = a * math.log(r) + (a - 1.0) * lx - r * x - special.gammaln(a)
    y = lx - math.log(M)
    with np.errstate(divide="ignore"):
        log_o = np.where(
            y >= 0, np.logaddexp(_norm_logpdf(y, loc, sc * sc), _norm_logpdf(y, -loc, sc * sc)) - lx, -np.inf
        )
    z = math.log(q / M)  # P(|N(loc, sc^2)| > z)
    out_above = 1.0 if z < 0 else float(special.ndtr((loc - z) / sc) + special.ndtr((-loc - z) / sc))
    surv = (1.0 - pi) * special.gammaincc(a, r * q) + pi * out_above
    ll = (np.logaddexp(math.log1p(-pi) + log_g, math.log(pi) + log_o) if pi > 0 else log_g) - math.log(
        max(surv, 1e-300)
    )
    return -float(np.sum(ll))


def _fit_means(means: np.ndarray):
    """(shape, rate, out_prob, out_fac_loc, out_fac_scale) by maximum likelihood above the 10th percentile.

    splatter fits the gamma to winsorised means (``splatEstMean``), then calls
    every gene more than 2 MADs above the median log mean an outlier and fits
    a log-normal to their factors (``splatEstOutlier``).  On planted data both
    are biased: winsorising piles mass on the cut points, and under a gamma of
    shape below 1 many ordinary genes pass the MAD rule (shape 0.3 and outliers
    of factor e^3: none found).  Here the gamma and the outliers are one
    mixture, fitted jointly by maximum likelihood to the genes above the 10th
    percentile of the means (conditioned on being there: the lowest means are
    the noisiest, and genes with at most one non-zero cell are left out
    before), started from the central CDF fit; the outliers are kept only when
    they improve the log-likelihood by more than BIC's price of their three
    parameters (1.5 log n), else ``out_prob`` is 0.
    """
    q = float(np.quantile(means, CENTRAL[0]))
    x = means[means > q]
    shape, rate = _fit_gamma_central(means, 0.05)
    opts = {"maxiter": 2000, "xatol": 1e-4, "fatol": 1e-6}
    best = None
    for loc0 in (1.5, 3.0, 5.0):
        start = _mixture_theta(shape, rate, 0.05, loc0, 0.5)
        res = optimize.minimize(_mixture_negloglik, start, args=(x, q), method="Nelder-Mead", options=opts)
        if best is None or res.fun < best.fun:
            best = res
    plain = optimize.minimize(
        _mixture_negloglik,
        _mixture_theta(shape, rate, 0.05, 3.0, 0.5),
        args=(x, q, False),
        method="Nelder-Mead",
        options=opts,
    )
    if 2.0 * (plain.fun - best.fun) <= 3.0 * math.log(x.size):  # BIC: three more parameters must pay for themselves
        return (*_mixture_params(plain.x)[:2], 0.0, 0.0, 0.0)
    return _mixture_params(best.x)


def _dispersion_moments(gs: _GroupStats):
    """Per gene: the moment estimate d_j of the NB dispersion within groups, and A_j, B_j of its Splat expectation.

    With mu_cj = L_c p_gj (g = g_c), d_j = sum_c [(x_cj - mu_cj)^2 - x_cj] / sum_c mu_cj^2.
    Under the simulator's BCV, E[d_j] = phi_j^2 (c^2 + 2 c A_j + B_j), with
    A_j = sum mu^1.5 / sum mu^2 and B_j = sum mu / sum mu^2.
    """
    p = gs.prop
    m2 = (p**2 * gs.lib_pow[2.0][:, None]).sum(axis=0)
    m15 = (p**1.5 * gs.lib_pow[1.5][:, None]).sum(axis=0)
    m1 = gs.sum_x.sum(axis=0)
    num = gs.sum_x2.sum(axis=0) - 2.0 * (p * gs.sum_xl).sum(axis=0) + m2 - m1
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / m2, m15 / m2, m1 / m2


def _trend(c: float, t: float, A, B):
    """The simulator's mean dispersion over phi^2 for a gene: E over its cells of (c + t mu^-1/2)^2 = c^2 + 2ctA + t^2 B."""
    return c * c + 2.0 * c * t * A + t * t * B


def _fit_bcv_common(d, A, B, mean, level: float, trend: float | None):
    """(bcv_common c, bcv_trend t, measured level, informative-gene mask) on ten bins of the mean.

    E[d] = level * (c^2 + 2ctA + t^2 B): the bin averages of d are unbiased
    for the bin's mean dispersion; (c, t) bring them closest (relative least
    squares) to the simulator's mean dispersion, ``level`` = E[phi^2] =
    df / (df - 2) times the trend.  ``trend`` given: t is fixed (1 = Splat).
    The measured level (mean ratio to the trend) is returned for the record.
    """
    inf = np.isfinite(d) & (mean >= MIN_MEAN_BCV)
    if inf.sum() < 20:
        msg = f"counts: too few genes with a mean of at least {MIN_MEAN_BCV} counts per cell to fit the BCV ({int(inf.sum())}; 20 needed)"
        raise ValueError(msg)
    edges = np.quantile(np.log(mean[inf]), np.linspace(0, 1, 11))
    bins = np.clip(np.searchsorted(edges, np.log(mean[inf]), side="right") - 1, 0, 9)
    cnt = np.bincount(bins, minlength=10)
    use = cnt > 0
    Db, Ab, Bb = (np.bincount(bins, weights=v[inf], minlength=10)[use] / cnt[use] for v in (d, A, B))

    def loss(theta):
        with np.errstate(divide="ignore", invalid="ignore"):
            r = Db / (level * _trend(theta[0], theta[1], Ab, Bb))
        return float(np.sum((np.nan_to_num(r, nan=1e6, posinf=1e6) - 1.0) ** 2))

    cs = np.concatenate([[0.0], np.geomspace(1e-3, 20, 50)])
    ts = [trend] if trend is not None else np.concatenate([[0.0], np.geomspace(1e-3, 3, 30)])
    c0, t0 = min(((c, t) for c in cs for t in ts), key=loss)
    t_bounds = (trend, trend) if trend is not None else (0.0, 10.0)
    res = optimize.minimize(loss, [c0, t0], method="L-BFGS-B", bounds=[(0.0, 50.0), t_bounds])
    c, t = (float(v) for v in (res.x if res.fun <= loss([c0, t0]) else (c0, t0)))
    return c, t, float(np.mean(Db / _trend(c, t, Ab, Bb))), inf


def _log_ratio_var(X, codes, k, c, t, lib) -> tuple[float, int]:
    """Variance over informative genes of log(d_j / h_j(c)) (genes with d_j > 0), and their number."""
    gs = _GroupStats(X, codes, k, lib)
    d, A, B = _dispersion_moments(gs)
    mean = gs.sum_x.sum(axis=0) / X.shape[0]
    ok = np.isfinite(d) & (d > 0) & (mean >= MIN_MEAN_BCV)
    return float(np.var(np.log(d[ok] / _trend(c, t, A[ok], B[ok])))), int(ok.sum())


def _bootstrap_counts(rng, lib, prop_rows, c, t, s) -> sp.csr_matrix:
    """Counts from the fitted trend without a gene spread (phi^2 = s): mu = L p, BCV^2 = s (c + t mu^-1/2)^2."""
    mu = lib[:, None] * prop_rows
    with np.errstate(divide="ignore", invalid="ignore"):
        bcv2 = s * (c + t / np.sqrt(mu)) ** 2
        gam = (mu > 0) & (bcv2 > 0)
        lam = rng.gamma(np.where(gam, 1.0 / bcv2, 1.0), np.where(gam, mu * bcv2, 0.0))
    lam = np.where(gam | (mu <= 0), lam, mu)
    return sp.csr_matrix(rng.poisson(lam).astype(np.float64))


def _fit_bcv(X, codes, k, gs: _GroupStats, rng, trend: float | None) -> tuple[float, float, float, dict]:
    """(bcv_common, bcv_df, diagnostics) of the Splat BCV, fitted to the within-group mean-dispersion relation.

    splatter fits edgeR's common dispersion and prior df and corrects the
    dispersion empirically (0.1 + 0.25 x edgeR's); here the Splat trend is fitted
    directly (:func:`_fit_bcv_common`), and the gene spread follows from the
    variance of log(d_j / trend): Var = trigamma(df / 2) (log of a scaled
    inverse chi-squared) + the sampling noise, which a parametric bootstrap
    from the fitted trend without spread measures on the same cells and genes.
    """
    d, A, B = _dispersion_moments(gs)
    mean = gs.sum_x.sum(axis=0) / X.shape[0]
    level, df = 1.0, math.inf
    for _ in range(3):  # c given the level, df given c, the level given df
        c, t, measured, inf = _fit_bcv_common(d, A, B, mean, level, trend)
        genes = np.flatnonzero(inf)
        if genes.size > BCV_BOOT_GENES:
            genes = np.sort(rng.choice(genes, BCV_BOOT_GENES, replace=False))
        cells = np.arange(X.shape[0])
        if cells.size > BCV_BOOT_CELLS:  # the same cells for the data and the bootstrap: the noise depends on them
            cells = np.sort(rng.choice(cells, BCV_BOOT_CELLS, replace=False))
        v_obs, n_obs = _log_ratio_var(X[cells][:, genes], codes[cells], k, c, t, gs.lib[cells])
        boot = _bootstrap_counts(rng, gs.lib[cells], gs.prop[codes[cells]][:, genes], c, t, level)
        v_noise, _ = _log_ratio_var(boot, codes[cells], k, c, t, gs.lib[cells])
        target = v_obs - v_noise
        # trigamma decreases from +inf to 0: one root; no spread beyond the noise is df = inf
        df = (
            math.inf
            if target <= 0
            else float(optimize.brentq(lambda x, target=target: special.polygamma(1, x / 2.0) - target, 1e-3, 1e8))
        )
        level = max(df, MIN_BCV_DF) / (max(df, MIN_BCV_DF) - 2.0) if math.isfinite(df) else 1.0
    diag = {
        "bcv_level_measured": measured,
        "bcv_level_model": level,
        "bcv_genes": int(inf.sum()),
        "bcv_genes_spread": n_obs,
        "bcv_logvar_obs": v_obs,
        "bcv_logvar_noise": v_noise,
    }
    return c, t, df, diag


def _fit_dropout(X, codes, gs: _GroupStats, c: float, t: float, s: float):
    """(dropout_mid, dropout_shape, diagnostics): a logistic in the log mean, fitted only if the zeros exceed the NB's.

    splatter fits the logistic to every gene's share of zeros against its log
    mean (``splatEstDropout``), which also counts the zeros a negative binomial
    gives.  Here the zeros the fitted NB gives are computed per cell (mu = L p,
    BCV^2 = s (c + mu^-1/2)^2); only when the mean excess over genes is above
    :data:`EXCESS_ZERO_TOL` is the logistic fitted, to the excess:
    z_j = P0_j + (1 - P0_j) / (1 + exp(-shape (log mu_j - mid))).
    """
    n, d = X.shape
    observed = 1.0 - np.diff(sp.csc_matrix(X).indptr) / n
    p0 = np.empty(d)
    step = max(1, 2**22 // n)
    for j in range(0, d, step):
        mu = gs.lib[:, None] * gs.prop[codes][:, j : j + step]
        with np.errstate(divide="ignore", invalid="ignore"):
            a = s * (c + t / np.sqrt(mu)) ** 2
            z = np.where(mu > 0, np.where(a > 0, np.exp(-np.log1p(a * mu) / a), np.exp(-mu)), 1.0)
        p0[j : j + step] = z.mean(axis=0)
    mean = gs.sum_x.sum(axis=0) / n
    ok = mean > 0
    excess = float(np.mean(observed[ok] - p0[ok]))
    diag = {"zero_excess": excess}
    if excess <= EXCESS_ZERO_TOL:
        return None, -1.0, diag
    lm, zo, zp = np.log(mean[ok]), observed[ok], p0[ok]

    def resid(theta):
        mid, shape = theta
        return zp + (1.0 - zp) * special.expit(shape * (lm - mid)) - zo

    fit = optimize.least_squares(resid, [float(np.median(lm)), -1.0], bounds=([-50.0, -50.0], [50.0, 0.0]))
    return float(fit.x[0]), float(fit.x[1]), diag


def _de_negloglik(theta, lfc, var):
    """Minus the log-likelihood of a group's log fold changes: null N(0, var), or DE +-N(loc, scale^2 + var)."""
    pi, down, loc, scale = special.expit(theta[0]), special.expit(theta[1]), theta[2], math.exp(theta[3])
    tot = var + scale**2
    null = _norm_logpdf(lfc, 0.0, var)
    up = _norm_logpdf(lfc, loc, tot)
    dn = _norm_logpdf(lfc, -loc, tot)
    de = np.logaddexp(math.log1p(-down) + up, math.log(down) + dn)
    return -float(np.sum(np.logaddexp(math.log1p(-pi) + null, math.log(pi) + de)))


def _fit_de(gs: _GroupStats, rng, min_count: float = 10.0) -> dict:
    """Each group's (de_prob, de_down_prob, de_fac_loc, de_fac_scale) by maximum likelihood on its log fold changes.

    The base of a gene is the median over groups of its log mean (the
    simulator's DE is relative to a base that most groups share); each group's
    log fold changes are centred on their median over genes (the library
    normalisation shifts every gene of a group alike).  A gene's log fold
    change is N(0, se^2) outside the programme and +-N(loc, scale^2 + se^2)
    (down with probability de_down_prob) inside it, se^2 the delta-method
    variance of the two log means; genes with fewer than ``min_count`` counts
    in all are left out.
    """
    lm, se2 = gs.log_mean_and_se2()
    k = lm.shape[0]
    keep = gs.sum_x.sum(axis=0) >= min_count
    if keep.sum() > FIT_GENES:
        keep[rng.choice(np.flatnonzero(keep), int(keep.sum()) - FIT_GENES, replace=False)] = False
    lm, se2 = lm[:, keep], se2[:, keep]
    lfc = lm - np.median(lm, axis=0)
    lfc -= np.median(lfc, axis=1, keepdims=True)
    var = se2 + (math.pi / 2.0) * se2.mean(axis=0) / k  # plus the variance of the median base
    out = {"de_prob": [], "de_down_prob": [], "de_fac_loc": [], "de_fac_scale": []}
    bounds = [(-9.0, 9.0), (-6.0, 6.0), (0.0, 8.0), (-5.0, 2.0)]
    for g in range(k):
        best = None
        for loc0 in (0.3, 2.0):
            res = optimize.minimize(
                _de_negloglik, [-2.0, 0.0, loc0, math.log(0.5)], args=(lfc[g], var[g]), method="L-BFGS-B", bounds=bounds
            )
            if best is None or res.fun < best.fun:
                best = res
        t = best.x
        out["de_prob"].append(float(special.expit(t[0])))
        out["de_down_prob"].append(float(special.expit(t[1])))
        out["de_fac_loc"].append(float(t[2]))
        out["de_fac_scale"].append(float(math.exp(t[3])))
    return {key: tuple(v) for key, v in out.items()} | {"de_genes": int(keep.sum())}


# ---- public -----------------------------------------------------------------------------------


def estimate_params(counts, groups=None, *, bcv_trend: float | None = 1.0, random_state=0) -> SimParams:
    """Estimate the Splat parameters of :func:`glfs.simulation._scsim.simulate_counts` from real counts.

    splatter's ``splatEstimate`` estimates, in order: gene means, library
    sizes, expression outliers, the BCV and dropout
    (https://rdrr.io/bioc/splatter/man/splatEstimate.html).  Here:

    1. **Library sizes**: log-normal by maximum likelihood (mean and standard
       deviation of log total counts; splatter's ``splatEstLib`` fits the same
       log-normal with ``fitdist``; its normal option is not in the simulator).
    2. **Gene means**: the counts are scaled to the median library size and
       genes with at most one non-zero cell are left out (as splatter does).
    3. **Outliers**: with step 2, one mixture (gamma + outliers) fitted by
       maximum likelihood above the 10th percentile (:func:`_fit_means`:
       splatter's winsorised gamma and 2-MAD outlier rule are biased on
       planted data).
    4. **BCV**: the simulator's trend BCV = (c + t mu^-1/2) phi_j (t =
       ``bcv_trend``, 1 for Splat), fitted to the moment dispersion of each
       gene within groups (``groups`` given) or over all cells, on ten bins of
       the mean; ``bcv_df`` from the spread of log(dispersion / trend), less
       the sampling noise (a parametric bootstrap); the level E[phi^2] =
       df / (df - 2) is kept consistent with df (three rounds).  splatter uses
       edgeR's common dispersion with an empirical correction instead.
    5. **Dropout**: only when the zeros exceed those of the fitted negative
       binomial by more than :data:`EXCESS_ZERO_TOL` per gene on average; then
       a logistic in the log mean fitted to the excess.
    6. **Groups** (``groups`` given): ``group_prob`` = the labels' shares,
       and each group's DE by maximum likelihood (:func:`_fit_de`).

    Parameters
    ----------
    counts : array-like or sparse matrix, shape (n_cells, n_genes)
        Raw counts (non-negative integers), cells in rows; every cell with a count.
    groups : array-like of shape (n_cells,), optional
        Cell labels (e.g. cell types).  They make the BCV a within-group
        quantity (the groups' differences are then DE, not BCV) and give the
        per-group DE parameters.
    bcv_trend : float >= 0 or None, default 1.0
        The weight of the BCV's mean trend (``simulate_counts``'
        ``bcv_trend``): 1 is Splat's model (splatter estimates nothing else);
        None fits it with ``bcv_common`` (0 = a negative binomial of one
        dispersion scale at every mean).
    random_state : int, default 0
        Seeds the parametric bootstrap of the BCV spread and the gene subsets.

    Returns
    -------
    SimParams
        ``simulate_kwargs()`` gives the arguments of ``simulate_counts``;
        ``diagnostics`` holds the fit's by-products (genes used, the BCV level
        measured and the one the simulator implies, the excess of zeros).

    Raises
    ------
    ValueError
        ``counts`` not raw counts, an empty cell, ``groups`` not one label per
        cell, or too few expressed genes for a fit.
    """
    X = _counts_csr(counts)
    n, d = X.shape
    if bcv_trend is not None:
        bcv_trend = check_real(bcv_trend, "bcv_trend", 0)
    codes, names = (np.zeros(n, dtype=np.int64), [None]) if groups is None else _codes(groups, n, "groups")
    k = len(names)
    rng = np.random.default_rng(random_state)
    gs = _GroupStats(X, codes, k)
    lib_loc, lib_scale = _fit_lib(gs.lib)
    nnz = np.diff(sp.csc_matrix(X).indptr)
    med = float(np.median(gs.lib))
    means = np.asarray((sp.diags(med / gs.lib) @ X).mean(axis=0)).ravel()[nnz > 1]
    if means.size < 20:
        msg = f"counts: too few genes with more than one non-zero cell to fit the gene means ({means.size}; 20 needed)"
        raise ValueError(msg)
    if means.size > FIT_GENES:
        means = rng.choice(means, FIT_GENES, replace=False)
    shape, rate, *out = _fit_means(means)
    bcv_common, bcv_trend, bcv_df, diag = _fit_bcv(X, codes, k, gs, rng, bcv_trend)
    drop_mid, drop_shape, drop_diag = _fit_dropout(X, codes, gs, bcv_common, bcv_trend, diag["bcv_level_model"])
    diag |= drop_diag | {"genes_for_means": int(means.size), "median_library": med}
    extra = {}
    if groups is not None:
        de = _fit_de(gs, rng)
        diag["de_genes"] = de.pop("de_genes")
        extra = {"group_prob": tuple(float(x) for x in gs.n / n), **de, "diagnostics": diag | {"groups": names}}
    params = SimParams(
        n_cells=n,
        n_genes=d,
        mean_shape=shape,
        mean_rate=rate,
        out_prob=out[0],
        out_fac_loc=out[1],
        out_fac_scale=out[2],
        lib_loc=lib_loc,
        lib_scale=lib_scale,
        bcv_common=bcv_common,
        bcv_df=bcv_df,
        bcv_trend=bcv_trend,
        dropout_mid=drop_mid,
        dropout_shape=drop_shape,
        **({"diagnostics": diag} | extra),
    )
    log.info(
        "estimate_params: %d cells x %d genes, %d groups: shape %.3g, BCV %.3g (df %.3g), outliers %.3g",
        n,
        d,
        k,
        shape,
        bcv_common,
        bcv_df,
        out[0],
    )
    return params
