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

from glfs._annotate import log_to, write_tsv
from glfs.evaluate import baseline_classifiers, cv_splitter, evaluate_classifier

COLUMNS = ["method", "cv_errors", "cv_n", "test_errors", "test_n", "n_genes", "params"]

log = log_to(snakemake.log[0])  # noqa: F821


def glfs_estimators(variants, cv, seed, graph, params):
    """GLFSClassifier per GLFS row, with the workflow's graph and selection parameters."""
    from glfs.sklearn import GLFSClassifier

    common = {
        "cv": int(cv.get_n_splits()),
        "random_state": seed,
        "n_neighbors": int(graph["n_neighbors"]),
        "kernel": graph["kernel"],
    }
    out = {}
    for v in variants:
        if v == "glfs":
            design = dict(params.get("glfs", {}))
            out["glfs"] = GLFSClassifier(objective="design", glfs_params=design or None, **common)
            out["glfs_supervised"] = GLFSClassifier(objective="design", graph="labels", glfs_params=design or None, **common)
        else:
            objective = {"glfs_exact": "exact", "glfs_paper": "paper", "glfs_printed": "printed"}[v]
            out[v] = GLFSClassifier(objective=objective, glfs_params=dict(params.get(v, {})) or None, **common)
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
    log.info("train %d / test %d samples, %d genes, %d-fold CV", train.sum(), (~train).sum(), X.shape[1], cv.get_n_splits())
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
            r = {"cv_errors": None, "cv_n": int(train.sum()), "test_errors": None, "test_n": int((~train).sum()),
                 "n_genes": None, "params": {"error": f"{type(exc).__name__}: {exc}"}}
        r["params"] = json.dumps(r["params"], sort_keys=True, default=str)
        log.info("%s: %s", name, r)
        rows.append({"method": name, **r})
    df = pd.DataFrame(rows, columns=COLUMNS)
    for col in ["cv_errors", "cv_n", "test_errors", "test_n", "n_genes"]:
        df[col] = df[col].astype("Int64")  # integers, empty (NaN) for a failed classifier
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("classify_samples failed")
    raise
