"""glfs: graph-Laplacian unsupervised feature selection for expression data.

X is always (n_samples, n_features) = (patients or cells, genes); graphs are
sparse (n_samples, n_samples).  See ``docs/methods.md`` for the methods, the
papers' equations and the errata.
"""

from __future__ import annotations

import importlib

from ._result import Selection
from ._validation import ConstantFeatureWarning
from .api import METHODS, select
from .graph import label_graph, laplacian, similarity_graph
from .scores import fisher_score, laplacian_score, variance_score

__version__ = "0.1.0"

# Names provided by the heavier modules, imported on first use.
_LAZY = {
    "lapaofs": "glfs.optimal",
    "lapdofs": "glfs.optimal",
    "glfs": "glfs.gradient",
    "glfs_objective": "glfs.gradient",
    "glfs_path": "glfs.gradient",
    "laprls_fit": "glfs.gradient",
    "GLFSResult": "glfs.gradient",
    "GLFSConvergenceWarning": "glfs.gradient",
    "glfs_design": "glfs.design",
    "lkr_score": "glfs.lkr",
    "ufi": "glfs.ufi",
    "spca_score": "glfs.baselines",
    "q_alpha": "glfs.baselines",
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
    *_LAZY,
]


def __getattr__(name):
    if name in _LAZY:
        mod = importlib.import_module(_LAZY[name])
        val = mod if name == "tl" else getattr(mod, name)
        globals()[name] = val
        return val
    msg = f"module 'glfs' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
