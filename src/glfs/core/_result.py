"""The uniform, frozen result of every feature-selection method.

:class:`Selection` (also ``glfs.Selection``) and :func:`make_selection`, which builds one: a new
method's result (docs/guides/architecture.md, "Adding a method"), or a Selection rebuilt from stored
tables (the workflow's ``glfs_workflow.tables.selection_from_table``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

__all__ = ["Selection", "make_selection", "ranking_from_scores"]


def ranking_from_scores(scores: np.ndarray, *, higher_is_better: bool) -> np.ndarray:
    """Full ranking (feature indices, best first) from per-feature scores.

    NaN scores rank last.  Ties keep index order (stable sort), like scikit-learn.
    """
    s = np.asarray(scores, dtype=np.float64)
    key = -s if higher_is_better else s.copy()
    key[np.isnan(key)] = np.inf
    return np.argsort(key, kind="stable")


def _freeze(a):
    if a is None:
        return None
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


class PicklableResult:
    """Pickling for the frozen result dataclasses (fitted estimators, joblib, multiprocessing).

    ``MappingProxyType`` fields cannot be pickled: they travel as dicts and come
    back as read-only mappings; read-only arrays come back read-only.
    """

    def __getstate__(self):
        state = dict(self.__dict__)
        proxies = tuple(k for k, v in state.items() if isinstance(v, MappingProxyType))
        frozen = tuple(k for k, v in state.items() if isinstance(v, np.ndarray) and not v.flags.writeable)
        for k in proxies:
            state[k] = dict(state[k])
        return state, proxies, frozen

    def __setstate__(self, pickled):
        state, proxies, frozen = pickled
        for k, v in state.items():
            if k in proxies:
                v = MappingProxyType(v)
            elif k in frozen:
                v.setflags(write=False)
            object.__setattr__(self, k, v)


@dataclass(frozen=True)
class Selection(PicklableResult):
    """Result of one feature-selection call.

    Attributes
    ----------
    method : str
        Method name as accepted by :func:`glfs.select`.
    scores : ndarray of shape (n_features,)
        Per-feature score; NaN where a feature could not be scored.
        Its direction is given by ``higher_is_better``.
    ranking : ndarray of shape (n_features,)
        Feature indices, best first (a permutation of ``range(n_features)``).
    selected : ndarray of bool, shape (n_features,)
        The ``n_features`` selected (or the method's own support when it
        decides the count itself, e.g. GLFS with ``n_features=None``).
    weights : ndarray of shape (n_features,) or None
        Method weights (GLFS beta), when the method has them.
    higher_is_better : bool
        Direction of ``scores``.
    params : mapping
        Parameters used (plain Python values).
    extra : mapping
        Method-specific diagnostics (e.g. the GLFS lam path).
    """

    method: str
    scores: np.ndarray
    ranking: np.ndarray
    selected: np.ndarray
    weights: np.ndarray | None
    higher_is_better: bool
    params: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    extra: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    @property
    def n_features_in(self) -> int:
        return int(self.scores.shape[0])

    @property
    def rank(self) -> np.ndarray:
        """1-based rank of each feature (1 = best), shape (n_features,)."""
        r = np.empty(self.ranking.shape[0], dtype=np.int64)
        r[self.ranking] = np.arange(1, self.ranking.shape[0] + 1)
        return r

    @property
    def indices(self) -> np.ndarray:
        """Indices of the selected features, best first."""
        return self.ranking[self.selected[self.ranking]]


def make_selection(
    method: str,
    scores,
    *,
    higher_is_better: bool,
    n_features: int | None,
    ranking=None,
    selected=None,
    weights=None,
    params: dict | None = None,
    extra: dict | None = None,
    nan_reason: str | None = None,
) -> Selection:
    """Build a frozen :class:`Selection`.

    ``ranking`` defaults to sorting ``scores`` (NaN last, stable ties).
    ``selected`` defaults to the first ``n_features`` of the ranking, never
    including a feature whose score is NaN.

    Refused (``ValueError`` naming the method, the count and ``nan_reason``, docs/guides/data.md): a
    selection by the scores (neither ``ranking`` nor ``selected`` given) with fewer than ``n_features``
    scores that are not NaN, and a ``selected`` mask that marks a feature whose score is NaN; either
    way the genes asked for cannot be chosen by the score, and filling the selection in gene order
    would pass for one.  A method that gives ``selected`` itself says when it selects fewer.
    """
    scores = np.asarray(scores, dtype=np.float64)
    d = scores.shape[0]
    _refuse_nan(method, scores, n_features if ranking is None and selected is None else None, selected, nan_reason)
    if ranking is None:
        ranking = ranking_from_scores(scores, higher_is_better=higher_is_better)
    ranking = np.asarray(ranking, dtype=np.int64)
    if ranking.shape != (d,) or not np.array_equal(np.sort(ranking), np.arange(d)):
        msg = f"internal error: ranking for {method} is not a permutation of {d} features"
        raise RuntimeError(msg)
    if selected is None:
        if n_features is None:
            msg = f"internal error: {method} needs n_features or an explicit selected mask"
            raise RuntimeError(msg)
        selected = np.zeros(d, dtype=bool)
        top = ranking[:n_features]
        selected[top[~np.isnan(scores[top])]] = True
    selected = np.asarray(selected, dtype=bool)
    return Selection(
        method=method,
        scores=_freeze(scores),
        ranking=_freeze(ranking),
        selected=_freeze(selected),
        weights=_freeze(None if weights is None else np.asarray(weights, dtype=np.float64)),
        higher_is_better=bool(higher_is_better),
        params=MappingProxyType(dict(params or {})),
        extra=MappingProxyType(dict(extra or {})),
    )


#: Why a score is NaN, unless the method says more (make_selection's ``nan_reason``).
NAN_REASON = (
    "a gene the method cannot score has a NaN score (a gene constant across the samples, or arithmetic "
    "that overflowed: values or graph weights far from 1, e.g. 1e300)"
)


def _refuse_nan(method, scores, n_features, selected, reason) -> None:
    """Refuse a selection that the scores cannot make: fewer than ``n_features`` scores that are not NaN
    (``n_features`` None: not ranked by the scores), or a ``selected`` feature with a NaN score."""
    nan = np.isnan(scores)
    n_nan = int(nan.sum())
    if not n_nan:
        return
    d = scores.shape[0]
    picked = 0 if selected is None else int(np.count_nonzero(np.asarray(selected, dtype=bool) & nan))
    short = n_features is not None and d - n_nan < n_features
    if not (short or picked):
        return
    first = np.flatnonzero(nan)[:5].tolist()
    what = (
        f"only {d - n_nan} can be selected by their score, fewer than the {n_features} asked"
        if short
        else f"{picked} of the selected genes have no score (they would be chosen in gene order)"
    )
    msg = (
        f"{method}: scores are NaN for {n_nan} of {d} genes (e.g. columns {first}), so {what}; "
        f"{reason or NAN_REASON}. {f'Ask for at most {d - n_nan} genes, or r' if d > n_nan else 'R'}emove the genes "
        "(or cells) that cannot be scored"
    )
    raise ValueError(msg)
