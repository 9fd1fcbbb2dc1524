"""Selections as experimental designs on a graph (the A- and D-optimal family).

- greedy LapAOFS / LapDOFS (He et al. 2011): :func:`lapaofs`, :func:`lapdofs`;
- the well-posed GLFS, a budgeted relaxation of the design: :func:`glfs_design`;
- the published GLFS readings (Wang & Goldenberg 2013), their objective, solver and lam path:
  :func:`glfs_published`, :func:`glfs_objective`, :func:`glfs_path`, :func:`laprls_fit`;
- UFI, joint feature and instance selection (Zhang et al. 2012): :func:`ufi`.

The implementation modules (``_optimal``, ``_budgeted``, ``_gradient`` with ``_gradient_model``,
``_gradient_solver`` and ``_gradient_path``, ``_ufi``) are the library's own.
"""

from glfs.designs._budgeted import (
    DEFAULT_GRAPH_WEIGHT,
    GLFSDesignResult,
    glfs_design,
    relaxed_criterion,
    scale_free_lambdas,
    trace_criterion,
)
from glfs.designs._gradient import (
    GLFSConvergenceWarning,
    GLFSResult,
    glfs_objective,
    glfs_path,
    glfs_published,
    laprls_fit,
)
from glfs.designs._optimal import lapaofs, lapdofs
from glfs.designs._ufi import UFIResult, ufi

__all__ = [
    "lapaofs",
    "lapdofs",
    "glfs_design",
    "GLFSDesignResult",
    "DEFAULT_GRAPH_WEIGHT",
    "scale_free_lambdas",
    "trace_criterion",
    "relaxed_criterion",
    "glfs_published",
    "glfs_objective",
    "glfs_path",
    "laprls_fit",
    "GLFSResult",
    "GLFSConvergenceWarning",
    "ufi",
    "UFIResult",
]
