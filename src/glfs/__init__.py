"""glfs: graph-Laplacian unsupervised feature selection for expression data.

X is always (n_samples, n_features) = (patients or cells, genes); graphs are
sparse (n_samples, n_samples).  See ``docs/methods/index.md`` for the methods, the
papers' equations and the errata.
"""

from __future__ import annotations

import importlib

from glfs.api import METHODS, select
from glfs.core import ConstantFeatureWarning, Selection
from glfs.designs import (
    GLFSConvergenceWarning,
    GLFSResult,
    glfs_design,
    glfs_objective,
    glfs_path,
    glfs_published,
    lapaofs,
    lapdofs,
    laprls_fit,
)
from glfs.graph import label_graph, laplacian, similarity_graph
from glfs.scores import fisher_score, laplacian_score, lkr_score, q_alpha, spca_score, variance_score

__version__ = "0.1.0"

# The method modules above need only numpy and scipy, and glfs.api (the registry) imports
# every one of them anyway: importing them here costs nothing more.  UFI is glfs.designs.ufi.
# The adapters below import scikit-learn and anndata (about a second between them), so they
# load on first use.
_LAZY = {
    "GLFSClassifier": "glfs.sklearn",
    "FeatureSelector": "glfs.sklearn",
    "tl": "glfs.tl",
}

__all__ = [
    "Selection",
    "ConstantFeatureWarning",
    "METHODS",
    "select",
    "similarity_graph",
    "label_graph",
    "laplacian",
    "laplacian_score",
    "fisher_score",
    "variance_score",
    "lapaofs",
    "lapdofs",
    "glfs_published",
    "glfs_objective",
    "glfs_path",
    "laprls_fit",
    "GLFSResult",
    "GLFSConvergenceWarning",
    "glfs_design",
    "lkr_score",
    "spca_score",
    "q_alpha",
    *_LAZY,
]


def __getattr__(name):
    if name in _LAZY:
        mod = importlib.import_module(_LAZY[name])
        val = mod if name == "tl" else getattr(mod, name)
        globals()[name] = val
        return val
    msg = f"module 'glfs' has no attribute {name!r}"
    if name == "glfs":  # one meaning of "glfs": method="glfs" is the well-posed design
        msg += (
            "; the well-posed GLFS (method='glfs') is glfs.glfs_design, the published readings are "
            "glfs.glfs_published(X, W, objective='exact' | 'paper' | 'printed')"
        )
    raise AttributeError(msg)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
