# Helpers of the analysis stages (graph, select, evaluate, classify, simulate, report):
# constants, wildcard patterns, input functions and the final targets.  Functions only,
# no rules (snakemake --lint); included from the Snakefile right after common.smk.
import re

from glfs.api import DESIGN_GLFS
from glfs.api import METHODS as _GLFS_METHODS
from glfs.api import methods_of as _methods_of

# Methods that need class labels; skipped for unlabelled datasets.
SUPERVISED_METHODS = {name for name, info in _GLFS_METHODS.items() if info.needs_labels}

# The published GLFS readings (lam paths).  The contracted results/{dataset}/glfs_path.tsv
# is the path of the first of these among the dataset's methods (glfs_exact by default); every
# variant's path is kept in results/{dataset}/selection/{method}.json and drawn in the
# report.  The well-posed GLFS (DESIGN_GLFS, glfs.designs._budgeted) has no lam path: it is a plain method.
GLFS_VARIANTS = _methods_of("glfs_published")  # registry order: glfs_exact first

# Gene-set sizes of the glfs-vs-greedy criterion table (issue 8; capped at the number of genes).
GLFS_VS_GREEDY_KS = [10, 25, 50, 100]

_ALL_METHOD_NAMES = sorted(
    set(config["methods"])
    | set(config["singlecell_methods"])
    | set(config["simulation"]["methods"])
    | set(_GLFS_METHODS)
)
DATASET_RE = "|".join(
    re.escape(d) for d in sorted(config["datasets"], key=len, reverse=True)
)
METHOD_RE = "|".join(
    re.escape(m) for m in sorted(_ALL_METHOD_NAMES, key=len, reverse=True)
)


def dataset_methods(dataset):
    """Methods run on a dataset: its own `methods` list, else config["singlecell_methods"] for a
    single-cell dataset (singlecell_dataset) and config["methods"] for a bulk one; minus the
    supervised ones when it has no labels."""
    own = dataset_config(dataset).get("methods")
    if own is None:
        own = config["singlecell_methods" if singlecell_dataset(dataset) else "methods"]
    return [m for m in own if has_labels(dataset) or m not in SUPERVISED_METHODS]


def glfs_path_method(dataset=None):
    """The GLFS variant whose path is a dataset's contracted glfs_path.tsv: the first
    published reading (registry order) among its methods; None without one.  Without a
    dataset: the first among the methods of any dataset run (the report's heading)."""
    if dataset is None:
        names = {m for d in run_datasets() for m in dataset_methods(d)}
    else:
        names = set(dataset_methods(dataset))
    return next((m for m in GLFS_VARIANTS if m in names), None)


def labelled_datasets():
    """Datasets of config["run"] with labels (label-based evaluations run on these)."""
    return [d for d in run_datasets() if has_labels(d)]


def spectral_datasets():
    """Labelled datasets evaluated with the papers' spectral protocol (evaluation spectral or both)."""
    return [
        d
        for d in labelled_datasets()
        if dataset_config(d)["evaluation"] in ("spectral", "both")
    ]


def leiden_datasets():
    """Labelled datasets evaluated with the single-cell Leiden protocol (evaluation leiden or both)."""
    return [
        d
        for d in labelled_datasets()
        if dataset_config(d)["evaluation"] in ("leiden", "both")
    ]


def feature_grid_of(dataset, protocol):
    """A dataset's gene counts for a protocol: its own feature_grid, else the protocol's
    (clustering.feature_grid for "spectral", leiden.feature_grid for "leiden")."""
    own = dataset_config(dataset)["feature_grid"]
    if own is not None:
        return list(own)
    section = "clustering" if protocol == "spectral" else "leiden"
    return list(config[section]["feature_grid"])


def spectral_grid(wildcards):
    """feature_grid_of the job's dataset, spectral protocol."""
    return feature_grid_of(wildcards.dataset, "spectral")


def spectral_clustering(wildcards):
    """config["clustering"] with the job's dataset's spectral feature grid."""
    return {**config["clustering"], "feature_grid": spectral_grid(wildcards)}


def leiden_grid(wildcards):
    """feature_grid_of the job's dataset, Leiden protocol."""
    return feature_grid_of(wildcards.dataset, "leiden")


# ---- selection ----
def params_of(method):
    """A method's parameters from config["selection"]["params"] (plain dict; {} when the
    config gives none, and the method's documented defaults apply)."""
    return dict(config["selection"]["params"].get(method, {}))


def method_params(wildcards):
    """params_of the job's method."""
    return params_of(wildcards.method)


def selection_tables(wildcards):
    """Selection tables of every method run on a dataset."""
    return expand(
        SELECTION_TABLE,
        dataset=wildcards.dataset,
        method=dataset_methods(wildcards.dataset),
    )


def selection_metas(wildcards):
    """JSON sidecars (params, diagnostics) of every method run on a dataset."""
    return expand(
        SELECTION_META,
        dataset=wildcards.dataset,
        method=dataset_methods(wildcards.dataset),
    )


def glfs_path_meta(wildcards):
    """JSON sidecar of the default GLFS variant (holds its lam path)."""
    return selection_meta(wildcards.dataset, glfs_path_method(wildcards.dataset))


def select_outputs(dataset):
    """The select job's named outputs beside tables and metas: adata, and glfs_path / glfs_vs_greedy where they apply."""
    out = {"adata": RESULT["adata"]}
    if glfs_path_method(dataset) is not None:
        out["glfs_path"] = report(
            RESULT["glfs_path"],
            caption="../report/glfs_path.rst",
            category="GLFS sparsity path",
            labels={"dataset": "{dataset}"},
        )
    if DESIGN_GLFS in dataset_methods(dataset):
        out["glfs_vs_greedy"] = RESULT["glfs_vs_greedy"]
    return out


# The benchmark file of a dataset's selection job (one job runs all its methods) and of a grid's simulation job.
SELECT_BENCHMARK = "logs/benchmarks/select_features/{dataset}.tsv"
SIMULATE_BENCHMARK = "logs/benchmarks/simulate_recovery/{simgrid}.tsv"


# ---- scheduling ----
# Snakemake starts the runnable jobs of the highest `priority:` first (ties in no set order).  The
# long jobs (the Leiden evaluations, the classification, the simulation) go first, and the short
# jobs that lead to them before those: the Leiden dataset's chain (fetch, prepare, graph, selection),
# then the classified dataset's preparation, then every other dataset's chain (each unlocks several
# evaluations), the leaves last.  With 2 cores both then stay busy to the end instead of one waiting
# on a long job started late (studies/workflow-runtime.md, "Workflow runtime").  Priorities change no result.
# fetch, prepare, graph and selection of a dataset with the Leiden evaluation
PRIORITY_LEIDEN_INPUTS = 4
PRIORITY_CLASSIFY_INPUTS = 3  # fetch and prepare of a classified dataset
PRIORITY_LONG = 2  # the Leiden evaluations, the classification, the simulation
PRIORITY_INPUTS = 1  # fetch, prepare, graph and selection of any other dataset


def dataset_priority(dataset, classify_input=False):
    """The priority of a dataset's fetch, prepare (``classify_input``), graph and selection jobs."""
    if dataset in leiden_datasets():
        return PRIORITY_LEIDEN_INPUTS
    if classify_input and dataset in classification_datasets():
        return PRIORITY_CLASSIFY_INPUTS
    return PRIORITY_INPUTS


def job_priority(wildcards):
    """dataset_priority of a graph job's dataset."""
    return dataset_priority(wildcards.dataset)


def input_priority(wildcards):
    """dataset_priority of a fetch or prepare job's dataset (the classification reads the prepared data)."""
    return dataset_priority(wildcards.dataset, classify_input=True)


# ---- clustering evaluation ----
def n_clusters(wildcards):
    """config datasets.<ds>.n_clusters (None = number of distinct labels)."""
    return dataset_config(wildcards.dataset)["n_clusters"]


def classify_glfs_variants(wildcards):
    """GLFS variants among the dataset's methods (the classifier's GLFS rows)."""
    wanted = dataset_methods(wildcards.dataset)
    return [m for m in _methods_of("glfs", "glfs_published") if m in wanted]


# ---- classification ----
def classification_datasets():
    """Datasets of config["run"] named in classification.datasets that have labels."""
    wanted = config["classification"]["datasets"]
    return [d for d in run_datasets() if d in wanted and has_labels(d)]


CLASSIFY_RE = (
    "|".join(re.escape(d) for d in config["classification"]["datasets"]) or "NO_DATASET"
)


# ---- simulation ----
# The paper's axes are not printed; its text reports GLFS recovering all four features
# up to sigma = 0.415 at N = 1000 and up to N = 60,000 at sigma = 0.2 (Laplacian score
# 30,000).  The full grid (`snakemake simulate_full`) covers both: (A) sigma 0.1..1.0 at
# N = 1000, (B) N 100..60000 at sigma = 0.2, 5 replicates.  N = 60000 makes 400 x 60004
# matrices: hours for the slower methods; run it on a cluster.
SIMULATION_FULL_GRID = {
    "sigma_grid": [0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.8, 1.0],
    "n_noise_at_sigma": 1000,
    "n_noise_grid": [100, 1000, 3000, 10000, 30000, 60000],
    "sigma_at_n_noise": 0.2,
    "replicates": 5,
}


def simulation_settings(wildcards):
    """The simulation config for a grid: config["simulation"], overlaid by the full grid."""
    sim = dict(config["simulation"])
    if wildcards.simgrid == "simulation_full":
        sim.update(SIMULATION_FULL_GRID)
    return sim


# Methods the full grid runs besides simulation.methods: every published GLFS reading (the
# default grid leaves some out for time: config.yaml simulation).
SIMULATION_FULL_EXTRA_METHODS = GLFS_VARIANTS


def simulation_methods(simgrid="simulation"):
    """Unsupervised methods of a simulation grid (the simulation has no labels):
    simulation.methods, plus SIMULATION_FULL_EXTRA_METHODS for the full grid."""
    names = list(config["simulation"]["methods"])
    if simgrid == "simulation_full":
        names += [m for m in SIMULATION_FULL_EXTRA_METHODS if m not in names]
    return [m for m in names if m not in SUPERVISED_METHODS]


def simulation_enabled():
    """Whether rule all builds the default simulation grid (enabled, with a method to run)."""
    return bool(config["simulation"]["enabled"] and simulation_methods())


# One method's recovery table on a grid (rule simulate_recovery writes every method's of a grid).
RECOVERY_METHOD_TABLE = "results/{simgrid}/recovery/{method}.tsv"


def recovery_tables(wildcards):
    """Per-method recovery tables of a simulation grid."""
    return expand(
        RECOVERY_METHOD_TABLE,
        simgrid=wildcards.simgrid,
        method=simulation_methods(wildcards.simgrid),
    )


# ---- the result files: every path once (RESULT, common.smk) ----
# The merged recovery table of a simulation grid (rule merge_recovery's output); the default grid's is a target.
RECOVERY_TABLE = "results/{simgrid}/recovery.tsv"
SIMULATION_TABLE = RECOVERY_TABLE.format(simgrid="simulation")
PAPER_TABLE = "resources/paper_table3.tsv"
# The development panel's summary (studies/real-panel.md): the report's single-cell advice.
PANEL_SUMMARY = "resources/singlecell/panel_summary.tsv"


def dataset_results(dataset):
    """The result files (RESULT kind -> path) a dataset of the run gets under this config."""
    methods = dataset_methods(dataset)
    spectral = dataset in spectral_datasets()
    leiden = dataset in leiden_datasets()
    has = {
        "provenance": True,
        "graph": True,
        "adata": True,
        "glfs_path": glfs_path_method(dataset) is not None,
        "clustering": spectral,
        "leiden": leiden,
        "leiden_random": leiden,
        "classification": dataset in classification_datasets(),
        "random_floor": spectral,
        "glfs_vs_greedy": DESIGN_GLFS in methods,
        "sensitivity": spectral and DESIGN_GLFS in methods,
    }
    return {k: RESULT[k].format(dataset=dataset) for k, on in has.items() if on}


# ---- final targets ----
# What `rule all` builds, computed from the config alone (not from the order in
# which the stage files are included).
# The report and its companions: one directory per configuration (config report_dir).  The record
# of the configuration that made the report is not an output (snakemake would delete it before the
# job): make_report reads it to warn when another configuration's report is replaced.
REPORT_DIR = config["report_dir"]
REPORT_HTML = f"{REPORT_DIR}/report.html"
REPORT_WHICH = f"{REPORT_DIR}/which_method.md"
REPORT_RECORD = f"{REPORT_DIR}/report_config.json"
# the report job's log, one per report_dir: two configurations run side by side no longer write one log
REPORT_LOG = f"logs/make_report/{REPORT_DIR}/report.log"

# The order of the targets: kind by kind (the provenance record is an intermediate, not a target).
_TARGET_KINDS = [
    "graph",
    "adata",
    "selections",
    "glfs_path",
    "clustering",
    "leiden",
    "leiden_random",
    "classification",
    "simulation",
    "random_floor",
    "glfs_vs_greedy",
    "sensitivity",
]


def analysis_targets():
    """Every final output except the report, kind by kind (dataset_results of each dataset)."""
    ds = run_datasets()
    per = {d: dataset_results(d) for d in ds}
    out = []
    for kind in _TARGET_KINDS:
        if kind == "selections":
            for d in ds:
                out += expand(SELECTION_TABLE, dataset=d, method=dataset_methods(d))
        elif kind == "simulation":
            out += [SIMULATION_TABLE] if simulation_enabled() else []
        else:
            out += [per[d][kind] for d in ds if kind in per[d]]
    return list(dict.fromkeys(out))


# The panel's cross-set tables (config `panel`; the panel_summary rule), one set of files per report_dir.
PANEL_OUTPUTS = {
    "scores": f"{REPORT_DIR}/panel_scores.tsv",
    "summary": f"{REPORT_DIR}/panel_summary.tsv",
    "lodo": f"{REPORT_DIR}/panel_lodo.tsv",
}


def panel_datasets():
    """The datasets of the panel summary (config panel.datasets), empty when there is none."""
    return list(config["panel"]["datasets"])


def panel_leiden_tables(wildcards):
    """The Leiden tables of the panel's sets (rule panel_summary's input)."""
    return [RESULT["leiden"].format(dataset=d) for d in panel_datasets()]


def panel_floor_tables(wildcards):
    """The random-genes floors of the panel's sets (rule panel_summary's input)."""
    return [RESULT["leiden_random"].format(dataset=d) for d in panel_datasets()]


def panel_targets():
    """The panel's cross-set tables when the config names a panel."""
    return list(PANEL_OUTPUTS.values()) if panel_datasets() else []


def all_outputs():
    """Every analysis target, the panel's tables and the report (the inputs of `rule all`)."""
    return [*analysis_targets(), *panel_targets(), REPORT_HTML]


# ---- report ----
def report_input(wildcards=None):
    """Every file make_report reads, by name (glfs_workflow.report.nest_inputs nests them again):
    datasets/{dataset}/{kind} (dataset_results, without the graph), datasets/{dataset}/selections/{method},
    datasets/{dataset}/metas/{method} (the GLFS methods' JSON sidecars), simulation, paper_table, panel_summary.
    """
    files = {}
    for d in run_datasets():
        for kind, path in dataset_results(d).items():
            if kind != "graph":
                files[f"datasets/{d}/{kind}"] = path
        for m in dataset_methods(d):
            files[f"datasets/{d}/selections/{m}"] = selection_table(d, m)
        for m in dataset_methods(d):
            if _GLFS_METHODS[m].is_glfs:
                files[f"datasets/{d}/metas/{m}"] = selection_meta(d, m)
    if simulation_enabled():
        files["simulation"] = SIMULATION_TABLE
    files["paper_table"] = PAPER_TABLE
    # vendored; the report words the cell advice without it too
    if Path(PANEL_SUMMARY).exists():
        files["panel_summary"] = PANEL_SUMMARY
    return files


def heatmap_method(dataset):
    """The method whose top genes the report's heatmap shows: the dataset's GLFS path method, else its first."""
    methods = dataset_methods(dataset)
    return glfs_path_method(dataset) or (methods[0] if methods else None)


def report_run():
    """What ran, as the report says it (not config values): each dataset's labels, methods and heatmap
    method; the GLFS variant of the report's path heading; the simulated methods."""
    return {
        "datasets": [
            {
                "name": d,
                "labelled": has_labels(d),
                "methods": dataset_methods(d),
                "heatmap_method": heatmap_method(d),
            }
            for d in run_datasets()
        ],
        "glfs_method": glfs_path_method(),
        "simulation_methods": simulation_methods() if simulation_enabled() else [],
    }


def run_benchmarks():
    """The benchmark file of every job that makes this run's targets (rule all), for the report's
    runtime table: each rule's `benchmark:` pattern over the wildcards analysis_targets() gives
    its jobs.  Files of earlier runs' datasets and methods are not among them.  Called when
    make_report is defined (report.smk, included last), so every rule exists;
    tests/workflow/test_report_run_only.py checks the list against the DAG's jobs."""
    ds, spectral, leiden = run_datasets(), spectral_datasets(), leiden_datasets()
    with_glfs = [d for d in ds if DESIGN_GLFS in dataset_methods(d)]
    per_dataset = {
        "fetch_dataset": ds,
        "prepare_dataset": ds,
        "build_graph": ds,
        "evaluate_clustering": spectral,
        "evaluate_leiden": leiden,
        "classify_samples": classification_datasets(),
        "glfs_sensitivity": [d for d in spectral if d in with_glfs],
    }
    out = []
    for rule, names in per_dataset.items():
        out += expand(str(getattr(rules, rule).benchmark), dataset=names)
    out += expand(SELECT_BENCHMARK, dataset=ds)
    if simulation_enabled():
        out += [SIMULATE_BENCHMARK.format(simgrid="simulation")]
    return list(dict.fromkeys(out))


def report_figures():
    """The PNG files of the report's figures, named {REPORT_DIR}/figures/{name}.png (the name is the one
    glfs_workflow.report.collect draws it under): per dataset its NMI, Leiden, GLFS path and heatmap
    figures, as its results and labels call for them; the simulation."""
    names = []
    for d in run_datasets():
        res = dataset_results(d)
        names += [f"nmi_{d}"] if "clustering" in res else []
        names += [f"leiden_{d}"] if "leiden" in res else []
        names += (
            [f"glfs_path_{d}"]
            if any(m in GLFS_VARIANTS for m in dataset_methods(d))
            else []
        )
        names += [f"heatmap_{d}"] if has_labels(d) and heatmap_method(d) else []
    names += ["simulation"] if simulation_enabled() else []
    return [f"{REPORT_DIR}/figures/{n}.png" for n in names]


_FIGURE_CAPTIONS = {
    "nmi": ("../report/fig_nmi.rst", "Clustering"),
    "leiden": ("../report/fig_leiden.rst", "Clustering"),
    "glfs_path": ("../report/fig_glfs_path.rst", "GLFS sparsity path"),
    "heatmap": ("../report/fig_heatmap.rst", "Gene selection"),
    "simulation": ("../report/fig_simulation.rst", "Simulation"),
}


def figure_report(path):
    """A report figure output wrapped in report() with its caption and category."""
    name = Path(path).stem
    kind = next(k for k in _FIGURE_CAPTIONS if name.startswith(k))
    caption, category = _FIGURE_CAPTIONS[kind]
    return report(path, caption=caption, category=category)
