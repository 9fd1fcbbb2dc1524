"""The workflow's evaluation steps: its config sections as the protocols' arguments, and the one loop over
the methods' rankings that ``evaluate_clustering`` and ``evaluate_leiden`` share.

The defaults of both protocols are the library's signatures (``glfs.evaluate.evaluate_ranking``,
``evaluate_ranking_leiden``); the config schema repeats them for the workflow, and
``tests/workflow/test_config_defaults.py`` fails when a copy drifts.  Not part of the stable API.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from glfs.designs import glfs_design
from glfs_workflow.files import read_tsv
from glfs_workflow.tables import table_failure

log = logging.getLogger(__name__)


def clustering_kwargs(clustering: dict, *, n_clusters=None, random_state=0) -> dict:
    """:func:`glfs.evaluate.evaluate_ranking`'s keyword arguments from the config's ``clustering:`` section.

    ``clustering`` is the validated section (``feature_grid``, ``n_runs``, ``affinity_neighbors``,
    ``max_samples``, ``eigen_solver``); ``n_clusters`` (None: the number of labels) and
    ``random_state`` (the master seed) are passed through.
    """
    return {
        "feature_grid": list(clustering["feature_grid"]),
        "n_clusters": n_clusters,
        "n_runs": int(clustering["n_runs"]),
        "affinity_neighbors": int(clustering["affinity_neighbors"]),
        "random_state": int(random_state),
        "max_samples": clustering["max_samples"],
        "eigen_solver": clustering["eigen_solver"],
    }


def leiden_kwargs(leiden: dict, random_state=0) -> dict:
    """:func:`glfs.evaluate.evaluate_ranking_leiden`'s keyword arguments from the config's ``leiden:`` section.

    ``leiden`` is the validated section (``n_runs``, ``resolutions``, ``n_pcs``, ``n_neighbors``,
    ``max_samples``); ``random_state`` is the master seed.  The gene-count grid is the caller's.
    """
    return {
        "n_runs": int(leiden["n_runs"]),
        "resolutions": [float(r) for r in leiden["resolutions"]],
        "n_pcs": int(leiden["n_pcs"]),
        "n_neighbors": int(leiden["n_neighbors"]),
        "max_samples": leiden["max_samples"],
        "random_state": int(random_state),
    }


def method_of_table(path) -> str:
    """The method a selection table belongs to: its file name (``results/{dataset}/selection/{method}.tsv``)."""
    return Path(path).stem


def evaluate_rankings(tables, evaluate: Callable[[np.ndarray], list], *, score: str) -> pd.DataFrame | None:
    """Every method's rows: ``evaluate(ranking)`` of each selection table's ranking, with a ``method`` column.

    ``tables`` are the selection tables' paths; each is paired with its method by name
    (:func:`method_of_table`), never by position.  Logs each method's time and mean ``score``
    by gene count.  A table that records a failed method (:func:`failed_methods`) is left out.  None when
    there is no table to evaluate.
    """
    frames = []
    for i, path in enumerate(tables, start=1):
        method, t0 = method_of_table(path), time.perf_counter()
        table = read_tsv(path)
        if table_failure(table) is not None:  # the method failed on this dataset: nothing to evaluate
            log.warning(
                "%s (%d/%d) failed in the selection job, not evaluated: %s",
                method,
                i,
                len(tables),
                table_failure(table),
            )
            continue
        ranking = np.argsort(table["rank"].to_numpy(), kind="stable")
        df = pd.DataFrame.from_records(evaluate(ranking))
        df.insert(0, "method", method)
        frames.append(df)
        log.info(
            "%s (%d/%d): %.1f s; mean %s by n_features:\n%s",
            method,
            i,
            len(tables),
            time.perf_counter() - t0,
            score,
            df.groupby("n_features")[score].mean().to_string(),
        )
    return pd.concat(frames, ignore_index=True) if frames else None


def failed_methods(tables) -> dict:
    """{method: reason} of the selection tables that record a failed method (glfs_workflow.tables.failed_table)."""
    out = {}
    for path in tables:
        reason = table_failure(read_tsv(path))
        if reason is not None:
            out[method_of_table(path)] = reason
    return out


#: Columns of results/{dataset}/glfs_vs_greedy.tsv.
GLFS_VS_GREEDY_COLUMNS = [
    "k",
    "greedy_criterion",
    "criterion",
    "pct_lower",
    "n_swaps",
    "converged",
    "lambda1",
    "lambda2",
]


def glfs_vs_greedy(X, W, ks, method_params: dict) -> pd.DataFrame:
    """The well-posed GLFS against greedy LapAOFS on the same criterion (results/{dataset}/glfs_vs_greedy.tsv).

    For each k of ``ks`` (capped at the number of genes), one call of
    :func:`glfs.designs._budgeted.glfs_design` on X and the graph W with the workflow's GLFS parameters gives
    both the criterion Tr(H_S^-1) of its answer and that of its greedy start, which is greedy LapAOFS on the
    same criterion, X and lambdas (He et al. 2011, Eq. 12, 17-20).  Lower is better; ``pct_lower`` is how much
    lower glfs is than greedy, in percent (>= 0 by construction: the exchange starts at the greedy set and
    only accepts improving swaps).  Columns :data:`GLFS_VS_GREEDY_COLUMNS`, one row per distinct k.
    """
    rows = []
    for k in sorted({int(min(k, X.shape[1])) for k in ks}):
        res = glfs_design(X, W, k, **dict(method_params))
        g, c = float(res.greedy_criterion), float(res.criterion)
        rows.append(
            {
                "k": int(res.selected.size),
                "greedy_criterion": g,
                "criterion": c,
                "pct_lower": 100.0 * (g - c) / g,
                "n_swaps": int(res.n_swaps),
                "converged": bool(res.converged),
                "lambda1": float(res.params["lambda1"]),
                "lambda2": float(res.params["lambda2"]),
            }
        )
        log.info(
            "k=%d: greedy %.6g, glfs %.6g (%.3g%% lower), %d swaps, converged %s",
            k,
            g,
            c,
            rows[-1]["pct_lower"],
            res.n_swaps,
            res.converged,
        )
    return pd.DataFrame(rows, columns=GLFS_VS_GREEDY_COLUMNS).drop_duplicates("k")  # k capped at the non-constant genes
