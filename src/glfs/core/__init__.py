"""Layer 0 of the library: the result type, argument and value checks, size limits, the
out-of-core X read in blocks, progress lines and the numba kernels of the sparse scores.

User settings live here: :data:`glfs.core.limits.DENSE_LIMIT_GB`,
:data:`glfs.core.out_of_core.STREAM_VALUES` and :data:`glfs.core.out_of_core.SPILL`
(set them on their module).  See ``docs/guides/architecture.md``.
"""
