"""Layer 0 of the library: the result type, argument and value checks, size limits and the user settings.

The implementation modules (``_result``, ``_validation``, ``_structure``, ``_value_checks``, ``_out_of_core``,
``_cluster``, ``_progress``, ``_sparse_kernels``) are the library's own; the names below are the public face.
User settings live in :mod:`glfs.core.limits` (``DENSE_LIMIT_GB``, ``STREAM_VALUES``, ``SPILL``,
``UFI_MAX_WORK``): set them on that module.
"""

from glfs.core import limits
from glfs.core._result import Selection, make_selection, ranking_from_scores
from glfs.core._structure import canonical, check_sparse_structure
from glfs.core._validation import ConstantFeatureWarning, check_graph
from glfs.core._value_checks import SCALE_RANGE, looks_like_counts, scale_problem

__all__ = [
    "limits",
    "Selection",
    "make_selection",
    "ranking_from_scores",
    "canonical",
    "check_sparse_structure",
    "check_graph",
    "ConstantFeatureWarning",
    "SCALE_RANGE",
    "looks_like_counts",
    "scale_problem",
]
