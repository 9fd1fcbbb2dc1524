"""Shared by the interruption and determinism tests: a frozen copy of the
workflow and the tiny config with a train/test-split dataset."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[2]


def snapshot_workflow(dst: Path) -> Path:
    """Copy the workflow (and the tiny data) once, so that edits to the repository
    during the test cannot make the runs differ."""
    for item in ["Snakefile", "config.yaml", "workflow", "scripts", "envs", "profiles"]:
        src = REPO / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst / item)
    (dst / "resources").mkdir()
    shutil.copy(REPO / "resources" / "paper_table3.tsv", dst / "resources")
    shutil.copytree(REPO / "tests/workflow/tiny", dst / "tiny")
    return dst


def tiny_split_config(snap: Path) -> dict:
    """The tiny config with absolute paths; ``tiny`` replaced by the same matrix as an
    .h5ad with ``obs["split"]`` (and labels grp0 / rest) so classification runs as well."""
    import anndata

    cfg = yaml.safe_load((snap / "tiny/config.yaml").read_text())
    for ds in cfg["datasets"].values():
        for key in ("expression", "labels"):
            if key in ds:
                ds[key] = str(snap / "tiny" / Path(ds[key]).name)
    expr = pd.read_csv(snap / "tiny/expression.tsv", sep="\t", index_col=0).T  # samples x genes
    split = np.where(np.arange(expr.shape[0]) % 3 == 0, "test", "train")
    ad = anndata.AnnData(
        X=expr.to_numpy(dtype=float),
        obs=pd.DataFrame({"split": split}, index=expr.index.astype(str)),
        var=pd.DataFrame(index=expr.columns.astype(str)),
    )
    ad.write_h5ad(snap / "tiny_split.h5ad")
    tiny = cfg["datasets"]["tiny"]
    # two classes (grp0 versus the rest): the classification stage is the binary Golub protocol
    labels = pd.read_csv(tiny["labels"], sep="\t")
    col = tiny["label_column"]
    labels[col] = np.where(labels[col] == "grp0", "grp0", "rest")
    labels.to_csv(snap / "tiny_split_labels.tsv", sep="\t", index=False)
    cfg["datasets"]["tiny_split"] = {
        "expression": str(snap / "tiny_split.h5ad"),
        "labels": str(snap / "tiny_split_labels.tsv"),
        "sample_column": tiny["sample_column"],
        "label_column": tiny["label_column"],
        "note": "tests/workflow/tiny expression + labels as .h5ad, every third sample in the test split",
    }
    cfg["run"] = ["tiny_split", "tiny_unlabelled"]
    cfg["classification"] = {"datasets": ["tiny_split"], "cv_folds": 3}
    return cfg
