# Stage: patient-similarity graph per dataset (glfs.similarity_graph, config["graph"]).

import re

try:
    from glfs.api import METHODS as _GLFS_METHODS
except ImportError:  # the DAG can still be built; the jobs need glfs installed
    _GLFS_METHODS = {}

# Methods that need class labels; skipped for unlabelled datasets.
SUPERVISED_METHODS = {
    name for name, info in _GLFS_METHODS.items() if getattr(info, "needs_labels", False)
} or {"fisher_score", "lkr_score_supervised"}

# GLFS variants: the contracted results/{dataset}/glfs_path.tsv is the path of the
# first of these in config["methods"] (glfs_exact by default); every variant's path
# is kept in results/{dataset}/selection/{method}.json and drawn in the report.
GLFS_VARIANTS = ["glfs_exact", "glfs_paper", "glfs_printed", "glfs"]

_ALL_METHOD_NAMES = sorted(
    set(config.get("methods", []))
    | set(config.get("simulation", {}).get("methods", []))
    | set(_GLFS_METHODS)
)
DATASET_RE = "|".join(re.escape(d) for d in sorted(config["datasets"], key=len, reverse=True))
METHOD_RE = "|".join(re.escape(m) for m in sorted(_ALL_METHOD_NAMES, key=len, reverse=True))


def dataset_has_labels(dataset):
    """Whether a dataset carries class labels (known when the DAG is built)."""
    fn = globals().get("has_labels")  # common.smk's helper, when it provides one
    if callable(fn):
        return bool(fn(dataset))
    dc = dataset_config(dataset)
    return dc.get("labels") is not None or dc.get("format") in ("golub", "stategra", "clanc840")


def dataset_methods(dataset):
    """Methods run on a dataset: config["methods"] minus supervised ones when it has no labels."""
    return [
        m
        for m in config["methods"]
        if dataset_has_labels(dataset) or m not in SUPERVISED_METHODS
    ]


def glfs_path_method():
    """The GLFS variant whose path is the contracted glfs_path.tsv (None without GLFS)."""
    for m in GLFS_VARIANTS:
        if m in config["methods"]:
            return m
    return None


def labelled_datasets():
    return [d for d in run_datasets() if dataset_has_labels(d)]


rule build_graph:
    input:
        "results/{dataset}/prepared.h5ad",
    output:
        "results/{dataset}/graph.npz",
    params:
        graph=config["graph"],
    log:
        "logs/build_graph/{dataset}.log",
    benchmark:
        "benchmarks/build_graph/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    threads: get_threads("graph")
    resources:
        mem_mb=get_mem_mb("graph"),
        runtime=get_runtime("graph"),
    script:
        "../../scripts/build_graph.py"


ALL_TARGETS.extend(expand("results/{dataset}/graph.npz", dataset=run_datasets()))
