"""Size limits: methods that need dense intermediates check their size before allocating.

A method that cannot handle an input refuses at once with a ``ValueError``
whose message says "size limit", names the sizes, the limit and the
alternative (docs/methods/size-limits.md, "Size limits"), instead of allocating its way
into swap or an out-of-memory kill.

The library's user settings live in this module, and every check reads them at each call: set them
here, e.g. ``glfs.core.limits.DENSE_LIMIT_GB = 16`` on a machine with the memory,
``glfs.core.limits.STREAM_VALUES = 2**28`` for fewer, larger blocks of an out-of-core X, or
``glfs.core.limits.SPILL = False`` to read a row-stored out-of-core X once per gene block.
"""

from __future__ import annotations

__all__ = [
    "DENSE_LIMIT_GB",
    "STREAM_VALUES",
    "SPILL",
    "UFI_MAX_WORK",
    "DENSE_ALTERNATIVE",
    "check_dense_size",
    "check_bytes",
]

#: Budget for the dense intermediates of one method call, in GB (2**30 bytes); also for the
#: copies of a sparse X a peer's code makes (scanpy's Pearson residuals).
#: With X itself and its copies this keeps 50,000 x 2,000 inputs below 8 GB.
DENSE_LIMIT_GB = 4.0

#: Values (non-zeros of a sparse X, entries of a dense one) per block streamed from an out-of-core X:
#: 2**26 = 67 million, about 0.5 GB as float32 values with int32 indices.
STREAM_VALUES = 2**26

#: Split a row-stored sparse X (a CSR file, a dask array) that would be read 3 or more times (one pass
#: per gene block) into its gene blocks in one pass through temporary files (``tempfile``'s directory:
#: $TMPDIR, else /tmp), so that it is read twice in all; the files take about the matrix's size and are
#: removed as the blocks are read.  False: read it once per gene block, writing nothing.
SPILL = True

#: Operations UFI's gene removals may take before it refuses (about 100 s; ``glfs.designs.ufi``'s
#: ``max_work`` overrides it per call).
UFI_MAX_WORK = 3e10

#: What a method that needs a dense X tells the user of a sparse X above the size limit.
DENSE_ALTERNATIVE = (
    "The gene-wise scores (laplacian_score, variance, fisher_score, deviance, glfs.scores._moran.graph_autocorrelation) "
    "and scanpy's HVG flavours run on sparse X without a dense copy; for this method pre-filter the genes "
    "(e.g. 2,000 highly variable genes) or subsample the cells first"
)


def check_dense_size(method: str, what: str, n_elements: float, alternative: str, *, limit_gb: float | None = None):
    """Raise ``ValueError`` when ``n_elements`` float64 values exceed the limit.

    Parameters
    ----------
    method : str
        Name of the method (first word of the message).
    what : str
        The intermediate, with its shape, e.g. ``"the dual inverse P (50000 x 50000)"``.
    n_elements : float
        Number of float64 values the intermediates hold at once.
    alternative : str
        What to do instead (one sentence).
    limit_gb : float, optional
        Default :data:`DENSE_LIMIT_GB`.

    Returns
    -------
    float
        The predicted size in GB (when within the limit).
    """
    return check_bytes(method, what, 8.0 * float(n_elements), alternative, limit_gb=limit_gb)


def check_bytes(
    method: str,
    what: str,
    n_bytes: float,
    alternative: str,
    *,
    limit_gb: float | None = None,
    kind: str = "dense intermediates",
):
    """Raise ``ValueError`` when ``n_bytes`` of intermediates exceed the limit (:func:`check_dense_size` in bytes).

    ``kind`` names what the budget counts in the message (default "dense
    intermediates"; e.g. "copies of X" for a peer's copies of a sparse X).
    Returns the predicted size in GB (when within the limit).
    """
    limit = DENSE_LIMIT_GB if limit_gb is None else float(limit_gb)
    need = float(n_bytes) / 2**30
    if need > limit:
        msg = (
            f"{method}: {what} would need {need:.1f} GB, above the size limit of {limit:g} GB "
            f"for {kind} (docs/methods/size-limits.md, 'Size limits'). {alternative}"
        )
        raise ValueError(msg)
    return need
