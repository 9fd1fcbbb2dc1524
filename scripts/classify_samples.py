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

from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs.api import METHODS
from glfs.evaluate import baseline_classifiers, cv_splitter, evaluate_classifier

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
        if v == "glfs":
            design = dict(params.get("glfs", {}))
            out["glfs"] = GLFSClassifier(objective="design", glfs_params=design or None, **common)
            out["glfs_supervised"] = GLFSClassifier(objective="design", graph="labels", glfs_params=design or None, **common)
        else:
            out[v] = GLFSClassifier(objective=METHODS[v].objective, glfs_params=dict(params.get(v, {})) or None, **common)
    return out


def random_genes_row(X, y, train, cv, n_genes, draws, seed, reference):
    """The classification floor: LapRLS on ``n_genes`` random genes, as GLFSClassifier fits it.

    Same classifier as the ``glfs_supervised`` row (glfs.gradient.laprls_fit with
    the class graph of the training labels, lambda1 = lambda2 = 0.01, genes and
    0/1 targets centred on the training means, class 1 when the score >= 0.5)
    and the CV folds of the baselines (cv_splitter); only the genes differ: ``draws`` seeded random sets.
    The row holds the median CV and test errors over the draws (``draws`` odd, so
    the median is one draw's); ``params`` says so and gives their ranges.
    """
    from glfs import label_graph
    from glfs.gradient import laprls_fit

    classes = np.unique(y[train])
    y01 = (y == classes[1]).astype(np.float64)

    def fit_predict(tr, te, genes):
        Xtr = X[tr][:, genes]
        mx, my = Xtr.mean(axis=0), float(y01[tr].mean())
        coef = laprls_fit(Xtr - mx, y01[tr] - my, label_graph(y01[tr]), 0.01, 0.01)
        return ((X[te][:, genes] - mx) @ coef + my >= 0.5).astype(float)

    tr_idx, te_idx = np.flatnonzero(train), np.flatnonzero(~train)
    cv_err, test_err = [], []
    for s in np.random.SeedSequence(seed).generate_state(draws):
        genes = np.sort(np.random.default_rng(int(s)).choice(X.shape[1], size=n_genes, replace=False))
        errors = 0
        for ftr, fte in cv.split(X[tr_idx], y[tr_idx]):
            errors += int(np.sum(fit_predict(tr_idx[ftr], tr_idx[fte], genes) != y01[tr_idx[fte]]))
        cv_err.append(errors)
        test_err.append(int(np.sum(fit_predict(tr_idx, te_idx, genes) != y01[te_idx])))
    params = {"statistic": f"median over {draws} seeded random gene sets", "n_genes_as": reference,
              "classifier": "LapRLS, class graph, lambda1 = lambda2 = 0.01 (as GLFSClassifier)",
              "cv_errors_range": [min(cv_err), max(cv_err)], "test_errors_range": [min(test_err), max(test_err)]}
    return {"cv_errors": int(np.median(cv_err)), "cv_n": int(train.sum()), "test_errors": int(np.median(test_err)),
            "test_n": int((~train).sum()), "n_genes": int(n_genes), "params": params}


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
    # the floor: random genes, as many as the supervised GLFS row uses (else the first GLFS row with genes)
    n_by = {r["method"]: r["n_genes"] for r in rows if r["n_genes"] is not None}
    ref = next((m for m in ["glfs_supervised", "glfs", *variants] if n_by.get(m)), None)
    if ref is not None:
        draws = int(par.random_floor["classification_draws"])
        r = random_genes_row(X, y, train, cv, int(min(n_by[ref], X.shape[1])), draws, seed, ref)
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
