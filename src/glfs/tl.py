"""AnnData adapter (scanpy style): ``glfs.tl.select(adata, method=...)``.

Writes, for ``key = key_added or method``:

- ``adata.var[f"{key}_score"]`` float score (NaN where a gene cannot be scored),
- ``adata.var[f"{key}_rank"]`` int, 1 = best (fixes each method's direction),
- ``adata.var[key]`` bool, selected (``sc.pp.pca(adata, mask_var=key)``),
- ``adata.var["glfs_weight"]`` for GLFS methods (beta),
- ``adata.uns[key]["params"]`` plain values,
- ``adata.obsp["patient_similarity"]`` the graph used (when the method uses one).

Everything is computed before anything is written, so a failed call leaves
the AnnData unchanged.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ._annotate import GRAPH_KEY as _GRAPH_KEY
from ._annotate import write_graph, write_selection
from .api import method_info, select as _select

log = logging.getLogger(__name__)

__all__ = ["select", "GRAPH_KEY"]

GRAPH_KEY = _GRAPH_KEY


def select(
    adata,
    method: str = "laplacian_score",
    n_features: int | None = None,
    *,
    key_added: str | None = None,
    layer: str | None = None,
    obsp: str | None = None,
    labels_key: str | None = None,
    graph_params: dict | None = None,
    random_state: int | None = 0,
    inplace: bool = True,
    **params,
):
    """Select genes of an AnnData with any :func:`glfs.select` method.

    Parameters
    ----------
    adata : anndata.AnnData
        obs = samples (patients, cells), var = genes.
    method, n_features, random_state, **params
        As :func:`glfs.select`.
    key_added : str, optional
        Prefix of every written key; default the method name.
    layer : str, optional
        Use ``adata.layers[layer]`` instead of ``adata.X``.
    obsp : str, optional
        Use the precomputed graph ``adata.obsp[obsp]`` (e.g. scanpy's
        ``"connectivities"`` after ``sc.pp.neighbors``).  Otherwise a kNN graph
        is built from the expression with ``graph_params``.
    labels_key : str, optional
        ``adata.obs`` column with class labels, for supervised methods.
    inplace : bool, default True
        Write into ``adata``; otherwise return a DataFrame indexed like ``var``
        with columns ``score``, ``rank``, ``selected`` (and ``weight``).

    Returns
    -------
    None or pandas.DataFrame
    """
    info = method_info(method)
    key = key_added or method
    if layer is not None and layer not in adata.layers:
        msg = f"layer must name one of adata.layers {list(adata.layers)}; got {layer!r}"
        raise ValueError(msg)
    X = adata.layers[layer] if layer is not None else adata.X
    if X is None:
        msg = "adata.X is None; pass layer= naming the expression matrix"
        raise ValueError(msg)
    graph = None
    if obsp is not None:
        if obsp not in adata.obsp:
            msg = (
                f"obsp must name a graph in adata.obsp {list(adata.obsp)}; got {obsp!r}. "
                "Run sc.pp.neighbors(adata) first for 'connectivities', or omit obsp to build a kNN graph"
            )
            raise ValueError(msg)
        graph = adata.obsp[obsp]
    labels = None
    if info.needs_labels:
        if labels_key is None or labels_key not in adata.obs:
            msg = f"labels_key must name an adata.obs column for method {method!r}; got {labels_key!r}"
            raise ValueError(msg)
        labels = adata.obs[labels_key].to_numpy()
    if info.needs_graph and graph is None:
        from .graph import similarity_graph

        gp = {"n_neighbors": 5, "kernel": "heat", **(graph_params or {})}
        graph = similarity_graph(X, **gp)
    sel = _select(
        X,
        method=method,
        graph=graph,
        n_features=n_features,
        labels=labels,
        random_state=random_state,
        **params,
    )
    df = pd.DataFrame(
        {
            "score": np.asarray(sel.scores),
            "rank": sel.rank,
            "selected": np.asarray(sel.selected),
        },
        index=adata.var_names.copy(),
    )
    if sel.weights is not None:
        df["weight"] = np.asarray(sel.weights)
    if not inplace:
        return df
    # all computation done: now write (the one writer shared with the workflow)
    write_selection(
        adata,
        sel,
        key=key,
        uns_params={
            "n_features": -1 if n_features is None else int(n_features),
            "graph": "obsp:" + obsp if obsp is not None else ("knn" if info.needs_graph else "none"),
            "layer": layer if layer is not None else "X",
        },
    )
    if info.needs_graph and obsp is None:
        write_graph(adata, graph)
    log.info("tl.select: wrote var[%r], var[%r_score], var[%r_rank]", key, key, key)
    return None
