"""Rule classify_samples: Golub train/test protocol (Wang & Goldenberg 2013, Table 3).

Train on obs["split"] == "train" only; every hyper-parameter (GLFS lam, the
baselines' regularisation) is chosen by CV inside the training set; the test
samples are used once.  Rows: the well-posed GLFS ("glfs": kNN graph;
"glfs_supervised": the class graph of the training labels, rebuilt inside each
CV fold), the published GLFS readings (glfs.sklearn.GLFSClassifier) and the
scikit-learn baselines of glfs.evaluate.  A classifier
that fails gets a row with empty error counts and the error message in
``params`` (logged with its traceback), so the others are still reported.
"""

import json

import anndata
import numpy as np
import pandas as pd

from glfs.api import METHODS, classifier_rows
from glfs.evaluate import baseline_classifiers, cv_splitter, evaluate_classifier, laprls_random_floor
from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to

COLUMNS = ["method", "cv_errors", "cv_n", "test_errors", "test_n", "n_genes", "params"]

log = log_to(snakemake.log[0])  # noqa: F821


def glfs_estimators(variants, cv, seed, graph, params):
    """GLFSClassifier per GLFS row, with the workflow's graph and selection parameters."""
    from glfs.sklearn import GLFSClassifier

    rest = {k: v for k, v in graph.items() if k not in ("n_neighbors", "kernel")}
    common = {
        "cv": int(cv.get_n_splits()),
        "random_state": seed,
        "n_neighbors": int(graph["n_neighbors"]),
        "kernel": graph["kernel"],
        "graph_params": rest or None,
    }
    out = {}
    for v in variants:
        glfs_params = dict(params.get(v, {})) or None
        for row in classifier_rows(v):  # the method's own row on the patient graph, then any on the class graph
            on_labels = {"graph": "labels"} if row != v else {}
            out[row] = GLFSClassifier(objective=METHODS[v].objective, glfs_params=glfs_params, **on_labels, **common)
    return out


try:
    par = snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(snakemake.input[0])  # noqa: F821
    for col in ("label", "split"):
        if col not in adata.obs:
            msg = f"{snakemake.input[0]} needs obs[{col!r}] for the classification protocol"  # noqa: F821
            raise ValueError(msg)
    X = adata.X.toarray() if hasattr(adata.X, "toarray") else np.asarray(adata.X, dtype=np.float64)
    y = np.asarray(adata.obs["label"].astype(str))
    train = np.asarray(adata.obs["split"].astype(str) == "train")
    if train.all() or not train.any():
        msg = f"obs['split'] must contain both 'train' and other samples; got {int(train.sum())} train of {train.size}"
        raise ValueError(msg)
    seed = int(par.seed)
    cv = cv_splitter(y[train], int(par.cv_folds), random_state=seed)
    log.info(
        "train %d / test %d samples, %d genes, %d-fold CV", train.sum(), (~train).sum(), X.shape[1], cv.get_n_splits()
    )
    variants = list(par.glfs_variants)
    if variants and np.unique(y).size != 2:
        log.warning("GLFSClassifier is a two-class classifier; %d classes here: no GLFS rows", np.unique(y).size)
        variants = []
    graph, params = dict(par.graph), dict(par.method_params)
    estimators = {**glfs_estimators(variants, cv, seed, graph, params), **baseline_classifiers(cv, random_state=seed)}
    rows = []
    for name, est in estimators.items():
        try:
            r = evaluate_classifier(est, X[train], y[train], X[~train], y[~train], cv=cv)
        except (ValueError, np.linalg.LinAlgError) as exc:
            # one failing classifier must not hide the others: an explicit row says why
            log.exception("%s failed", name)
            r = {
                "cv_errors": None,
                "cv_n": int(train.sum()),
                "test_errors": None,
                "test_n": int((~train).sum()),
                "n_genes": None,
                "params": {"error": f"{type(exc).__name__}: {exc}"},
            }
        r["params"] = json.dumps(r["params"], sort_keys=True, default=str)
        log.info("%s: %s", name, r)
        rows.append({"method": name, **r})
    # the floor: random genes, as many as the supervised GLFS row uses (else the first GLFS row with genes;
    # classifier_rows gives a method's supervised row last)
    n_by = {r["method"]: r["n_genes"] for r in rows if r["n_genes"] is not None}
    ref = next((m for m in [r for v in variants for r in reversed(classifier_rows(v))] if n_by.get(m)), None)
    if ref is not None:
        draws = int(par.random_floor["classification_draws"])
        r = laprls_random_floor(
            X, y, train, cv, int(min(n_by[ref], X.shape[1])), draws=draws, random_state=seed, reference=ref
        )
        log.info("random_genes (%d genes as %s): %s", r["n_genes"], ref, r)
        rows.append({"method": "random_genes", **r, "params": json.dumps(r["params"], sort_keys=True)})
    else:
        log.warning("no GLFS row with genes: no random_genes row")
    df = pd.DataFrame(rows, columns=COLUMNS)
    for col in ["cv_errors", "cv_n", "test_errors", "test_n", "n_genes"]:
        df[col] = df[col].astype("Int64")  # integers, empty (NaN) for a failed classifier
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("classify_samples failed")
    raise
