"""Every default of the workflow in one place (issue 10 item 2): the config schema.

- Snakemake's ``validate`` fills the schema's defaults, nested ones included, into
  a config that gives only ``run`` and ``datasets``.
- config.yaml shows the schema's defaults and nothing else (they cannot drift).
- Rules and scripts write no default of their own (no ``config.get(key, value)``).
- A config value reaches the jobs that use it (the classifier's graph and
  parameters); a graph setting is not a parameter of the data preparation, so
  changing it re-runs the graph but not the preparation.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO / "workflow/schemas/config.schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_PATH.read_text())
CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
# the choice of data: no default can know it
DATA_CHOICE = {
    "run": CONFIG["run"],
    "datasets": CONFIG["datasets"],
    "classification": {"datasets": CONFIG["classification"]["datasets"]},
}


def _filled(cfg):
    """cfg after Snakemake's validate (which sets the schema's defaults), as common.smk runs it."""
    from snakemake.utils import validate

    cfg = copy.deepcopy(cfg)
    validate(cfg, str(SCHEMA_PATH))
    return cfg


def _expected_defaults(schema):
    """The values a config without the key gets, computed from the schema by hand: the
    `default` of each property, and for an object default, its properties' defaults
    filled in under it (a $ref is followed)."""

    def resolve(s):
        while "$ref" in s:
            name = s["$ref"].rsplit("/", 1)[1]
            s = {**SCHEMA["definitions"][name], **{k: v for k, v in s.items() if k != "$ref"}}
        return s

    out = {}
    for key, sub in schema.get("properties", {}).items():
        sub = resolve(sub)
        if "default" not in sub:
            continue
        value = copy.deepcopy(sub["default"])
        if isinstance(value, dict):
            for k, v in _expected_defaults(sub).items():
                value.setdefault(k, v)
        out[key] = value
    return out


# ------------------------------------------------------------------ the schema fills defaults


def test_minimal_config_gets_every_default_nested_ones_included():
    cfg = _filled({"run": ["d"], "datasets": {"d": {"expression": "data/m.tsv"}}})
    expected = _expected_defaults(SCHEMA)
    assert {k: v for k, v in cfg.items() if k not in ("run", "datasets")} == expected
    # spot checks of nested values, typed from config.yaml's comments and docs/guides/atlases.md
    assert cfg["graph"] == {"n_neighbors": 5, "kernel": "heat", "t": None, "mu": 0.5, "method": "auto", "n_pcs": None}
    assert cfg["clustering"]["feature_grid"] == [5, 10, 15, 20, 25, 50, 75, 100, 150, 200, "all"]
    assert cfg["selection"] == {"n_features": 100, "params": {}}
    assert cfg["classification"] == {"datasets": [], "cv_folds": 10}
    assert cfg["resources"]["select"] == {
        "mem_mb": 2000,
        "mem_mb_per_mcell": 60,
        "runtime": 60,
        "runtime_per_mcell": 5,
        "runtime_per_mnnz": 0.1,
    }
    assert cfg["resources"]["default"] == {
        "threads": 1,
        "mem_mb": 1000,
        "runtime": 10,
        "mem_mb_per_mcell": 0,
        "runtime_per_mcell": 0,
        "runtime_per_mnnz": 0,
    }
    assert cfg["fetch"]["download_dir"] == "results/downloads"
    assert cfg["datasets"]["d"]["size_hint"] == {"n_samples": 200, "n_genes": 10000}


def test_a_partly_given_object_keeps_its_values_and_gets_the_rest():
    cfg = _filled(
        {
            "run": ["d"],
            "datasets": {"d": {"expression": "m.tsv", "size_hint": {"n_samples": 7}}},
            "graph": {"kernel": "binary"},
            "clustering": {"n_runs": 3},
        }
    )
    assert cfg["graph"]["kernel"] == "binary" and cfg["graph"]["n_neighbors"] == 5
    assert cfg["clustering"]["n_runs"] == 3 and cfg["clustering"]["affinity_neighbors"] == 10
    assert cfg["datasets"]["d"]["size_hint"] == {"n_samples": 7, "n_genes": 10000}


def _settings(schema, path):
    """(path, subschema) of every setting under an object schema (definitions followed)."""
    for key, sub in schema.get("properties", {}).items():
        if "$ref" in sub:
            sub = {
                **SCHEMA["definitions"][sub["$ref"].rsplit("/", 1)[1]],
                **{k: v for k, v in sub.items() if k != "$ref"},
            }
        yield f"{path}.{key}", sub
        if sub.get("type") == "object" and "properties" in sub:
            yield from _settings(sub, f"{path}.{key}")


def test_every_workflow_setting_has_a_default():
    # every setting outside the choice of data (run, datasets) and the per-family resource overrides
    missing = [
        p
        for p, sub in _settings(SCHEMA, "config")
        if p not in ("config.run", "config.datasets")
        and "default" not in sub
        and not re.match(r"config\.resources\.(?!default\.)\w+\.", p)
    ]
    assert missing == []


# ------------------------------------------------------------------ config.yaml == the schema's defaults


def test_shipped_config_is_the_schema_defaults():
    assert _filled(CONFIG) == _filled(DATA_CHOICE)


@pytest.mark.parametrize(
    "path,value", [("graph.n_neighbors", 4), ("simulation.replicates", 3), ("resources.select.mem_mb", 16000)]
)
def test_a_config_value_that_differs_from_its_default_is_seen(path, value):
    # the comparison above fails when config.yaml and the schema drift apart
    cfg = copy.deepcopy(CONFIG)
    node = cfg
    *parents, leaf = path.split(".")
    for k in parents:
        node = node[k]
    node[leaf] = value
    assert _filled(cfg) != _filled(DATA_CHOICE)


# ------------------------------------------------------------------ no literal defaults in rules and scripts


def _keys_with_defaults(schema):
    """Every property name the schema gives a default, at any depth."""
    keys = set()
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, dict):
            for k, v in (s.get("properties") or {}).items():
                if isinstance(v, dict) and "default" in v:
                    keys.add(k)
            stack.extend(s.values())
        elif isinstance(s, list):
            stack.extend(s)
    return keys


DEFAULTED_KEYS = _keys_with_defaults(SCHEMA)


def literal_defaults(text):
    """Lines that write a config default of their own: ``config.get(...)`` or
    ``.get("<key>", <value>)`` for a key the schema gives a default."""
    bad = []
    for i, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if "config.get(" in code:
            bad.append((i, line.strip()))
            continue
        for m in re.finditer(r"""\.get\(\s*["'](\w+)["']\s*,""", code):
            if m.group(1) in DEFAULTED_KEYS:
                bad.append((i, line.strip()))
    return bad


@pytest.mark.parametrize(
    "line,flagged",
    [
        ('        n_neighbors=config.get("graph", {}).get("n_neighbors", 5),', True),
        ('            feature_grid=cl.get("feature_grid", [10, 25, 50, 100, "all"]),', True),
        ('        draws = int(dict(par.random_floor).get("classification_draws", 21))', True),
        ('    size = config["datasets"][ds].get("size_hint", {}) or {}', True),
        ('            feature_grid=cl["feature_grid"],', False),
        ('    return dict(config["selection"]["params"].get(method, {}))', False),
        ('            design = dict(params.get("glfs", {}))', False),
    ],
)
def test_the_literal_default_detector(line, flagged):
    assert bool(literal_defaults(line)) is flagged


def test_rules_and_scripts_write_no_defaults_of_their_own():
    files = [
        REPO / "Snakefile",
        *sorted((REPO / "workflow/rules").glob("*.smk")),
        *sorted((REPO / "scripts").glob("*.py")),
    ]
    found = {str(f.relative_to(REPO)): literal_defaults(f.read_text()) for f in files}
    assert {f: b for f, b in found.items() if b} == {}


def test_one_selection_table_path_and_one_has_labels():
    rules = {p.name: p.read_text() for p in (REPO / "workflow/rules").glob("*.smk")}
    text = "\n".join(rules.values())
    assert text.count("selection/{method}.tsv") == 1 and "selection/{method}.tsv" in rules["common.smk"]
    assert re.findall(r"^def (\w*(?:has_labels|_labelled))\(", text, re.M) == ["has_labels"]
    assert "ALL_TARGETS" not in text  # the final targets are computed, not collected in include order


# ------------------------------------------------------------------ config values reach the jobs (dry runs)


def _copy_workflow(wd: Path):
    for item in ["Snakefile", "config.yaml", "workflow", "scripts", "profiles", "envs"]:
        (shutil.copytree if (REPO / item).is_dir() else shutil.copy)(REPO / item, wd / item)
    shutil.copytree(REPO / "tests/workflow/tiny", wd / "tests/workflow/tiny")
    (wd / "resources").mkdir()
    shutil.copy(REPO / "resources/paper_table3.tsv", wd / "resources")


def _jobs(wd: Path, cfg: dict, forceall=True):
    (wd / "test_config.json").write_text(json.dumps(cfg))
    cmd = [
        sys.executable,
        str(Path(__file__).with_name("dag_jobs.py")),
        str(wd),
        str(wd / "tests/workflow/tiny/config.yaml"),
        str(wd / "test_config.json"),
    ]
    proc = subprocess.run(
        [*cmd, *(["--forceall"] if forceall else [])], capture_output=True, text=True, timeout=600, cwd=wd
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _rule_family(job: dict) -> str:
    """A job's rule, with the per-dataset selection rules (select_features_{dataset}) as select_features."""
    return "select_features" if job["rule"].startswith("select_features_") else job["rule"]


@pytest.mark.workflow
def test_config_graph_and_params_reach_the_classifier_and_the_graph(tmp_path):
    _copy_workflow(tmp_path)
    glfs_params = {"graph_weight": 0.5, "ridge": 0.02}
    cfg = {
        "methods": ["glfs", "glfs_exact", "variance"],
        "graph": {"n_neighbors": 7, "kernel": "binary"},
        "selection": {"params": {"glfs": glfs_params}},
        "classification": {"datasets": ["tiny"], "cv_folds": 4},
    }
    jobs = _jobs(tmp_path, cfg)
    (classify,) = [j for j in jobs if j["rule"] == "classify_samples"]
    assert classify["params"]["graph"]["n_neighbors"] == 7 and classify["params"]["graph"]["kernel"] == "binary"
    assert classify["params"]["method_params"] == {"glfs": glfs_params}
    assert classify["params"]["cv_folds"] == 4
    assert classify["params"]["glfs_variants"] == ["glfs", "glfs_exact"]
    graphs = [j for j in jobs if j["rule"] == "build_graph"]
    assert graphs and all(j["params"]["graph"]["n_neighbors"] == 7 for j in graphs)
    sel = [j for j in jobs if _rule_family(j) == "select_features"]  # one job per dataset, all its methods
    assert sel and all(j["params"]["method_params"]["glfs"] == glfs_params for j in sel)
    assert all(j["params"]["method_params"]["variance"] == {} for j in sel)
    # the schema's defaults fill what the test config leaves out
    assert classify["params"]["random_floor"] == {"n_draws": 10, "classification_draws": 21}
    # the preparation does not depend on the graph; fetch.max_expanded_gb reaches its reader (issue 30 item 8)
    prep = [j for j in jobs if j["rule"] == "prepare_dataset"]
    assert prep and all(set(j["params"]) == {"dataset", "max_expanded_gb"} for j in prep)
    assert all(j["params"]["max_expanded_gb"] == 10 for j in prep)


@pytest.mark.workflow
def test_sparse_size_hint_scales_runtime_by_non_zeros(tmp_path):
    """A sparse dataset's runtime follows its non-zeros (runtime_per_mnnz), a dense one its
    matrix cells (runtime_per_mcell); memory keeps following 1.5 x nnz.  Expected values
    from the config.yaml rates (minutes, ceil), written out:
    1,000,000 x 20,000 with 5.5e8 non-zeros: select 60 + 0.1 x 550 = 115 (the dense methods
    refuse above the 4 GB dense limit, so no per-mcell term), graph 10 + 0.1 x 550 = 65,
    prepare 10 + 0.01 x 550 = 15.5 -> 16; select memory 2000 + 60 x 1.5 x 550 = 51,500 MB.
    50,000 x 2,000 (1e8 cells, under the dense limit) dense: select 60 + 5 x 100 = 560; the
    same with 2.8e6 non-zeros: 560 + 0.1 x 2.8 = 560.28 -> 561 (the dense methods run).  A selection
    job runs all the dataset's methods, so it asks for that per method (two methods: 2 x 560)."""
    _copy_workflow(tmp_path)
    cases = {
        "atlas": (
            {"n_samples": 1_000_000, "n_genes": 20_000, "nnz": 550_000_000},
            {"select_features": 115, "build_graph": 65, "prepare_dataset": 16},
        ),
        "dense": ({"n_samples": 50_000, "n_genes": 2_000}, {"select_features": 560}),
        "sparse_small": ({"n_samples": 50_000, "n_genes": 2_000, "nnz": 2_800_000}, {"select_features": 561}),
    }
    for name, (hint, want) in cases.items():
        jobs = _jobs(tmp_path, {"methods": ["variance"], "datasets": {"tiny": {"size_hint": hint}}})
        for rule, minutes in want.items():
            got = {
                j["resources"]["runtime"]
                for j in jobs
                if _rule_family(j) == rule and j["wildcards"].get("dataset") == "tiny"
            }
            assert got == {minutes}, (name, rule, got)
        if name == "atlas":
            sel = [j for j in jobs if _rule_family(j) == "select_features" and j["wildcards"]["dataset"] == "tiny"]
            assert {j["resources"]["mem_mb"] for j in sel} == {51_500}
    # one selection job runs every method of the dataset: it asks for each method's time, 2 x 560
    jobs = _jobs(
        tmp_path, {"methods": ["variance", "laplacian_score"], "datasets": {"tiny": {"size_hint": cases["dense"][0]}}}
    )
    got = {
        j["resources"]["runtime"]
        for j in jobs
        if _rule_family(j) == "select_features" and j["wildcards"].get("dataset") == "tiny"
    }
    assert got == {1120}


@pytest.mark.workflow
def test_the_leiden_chain_and_the_long_jobs_start_before_the_short_ones(tmp_path):
    """Issue 27 (the default run in 3 minutes on 2 cores): the Leiden dataset's chain (fetch, prepare,
    graph, selection) starts first, then the long jobs (the Leiden evaluation with its floor, the classification,
    the simulation), then the other datasets' chains, the short evaluations last (workflow/rules/analysis.smk)."""
    _copy_workflow(tmp_path)
    cfg = {
        "methods": ["glfs", "variance", "fisher_score"],
        "classification": {"datasets": ["tiny"], "cv_folds": 3},
        "simulation": {"enabled": True, "methods": ["variance"]},
        "datasets": {"tiny": {"evaluation": "both"}},
    }
    jobs = _jobs(tmp_path, cfg)
    pr = {(_rule_family(j), j["wildcards"].get("dataset", j["wildcards"].get("simgrid"))): j["priority"] for j in jobs}
    chain = ["fetch_dataset", "prepare_dataset", "build_graph", "select_features"]
    leiden_chain = {pr[(r, "tiny")] for r in chain}
    other_chain = {pr[(r, "tiny_unlabelled")] for r in chain}
    long = {pr[("evaluate_leiden", "tiny")], pr[("classify_samples", "tiny")], pr[("simulate_recovery", "simulation")]}
    short = {pr[(r, "tiny")] for r in ("evaluate_clustering", "glfs_sensitivity")}
    assert len(leiden_chain) == len(other_chain) == len(long) == 1
    assert min(leiden_chain) > max(long) > max(other_chain) > max(short)


@pytest.mark.workflow
def test_changing_a_graph_setting_reruns_the_graph_not_the_preparation(tmp_path):
    _copy_workflow(tmp_path)
    cfg = {"run": ["tiny"]}
    (tmp_path / "test_config.json").write_text(json.dumps(cfg))
    run = subprocess.run(
        [
            SNAKEMAKE,
            "-s",
            str(tmp_path / "Snakefile"),
            "-d",
            str(tmp_path),
            "--cores",
            "1",
            "results/tiny/graph.npz",
            "--configfile",
            str(tmp_path / "tests/workflow/tiny/config.yaml"),
            str(tmp_path / "test_config.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "results/tiny/prepared.h5ad").exists()

    def pending(extra):
        jobs = _jobs(tmp_path, {**cfg, **extra}, forceall=False)
        return sorted(j["rule"] for j in jobs if j["wildcards"].get("dataset") == "tiny")

    assert "prepare_dataset" not in pending({}) and "build_graph" not in pending({})  # up to date
    changed = pending({"graph": {"n_neighbors": 4}})
    assert "build_graph" in changed  # its params changed
    assert "prepare_dataset" not in changed and "fetch_dataset" not in changed
    # a dataset setting still re-runs the preparation
    assert "prepare_dataset" in pending({"datasets": {"tiny": {"note": "changed"}}})


@pytest.mark.workflow
def test_fewer_samples_than_neighbours_stops_the_graph(tmp_path):
    # the preparation does not know the graph; build_graph refuses k >= n_samples, naming the key
    import numpy as np
    import pandas as pd

    _copy_workflow(tmp_path)
    (tmp_path / "data").mkdir()
    X = np.random.default_rng(0).normal(size=(10, 3))
    pd.DataFrame(X, index=[f"g{i}" for i in range(10)], columns=["s0", "s1", "s2"]).to_csv(
        tmp_path / "data/m.tsv", sep="\t", index_label="gene"
    )
    cfg = {"run": ["small"], "graph": {"n_neighbors": 3}, "datasets": {"small": {"expression": "data/m.tsv"}}}
    (tmp_path / "test_config.json").write_text(json.dumps(cfg))
    run = subprocess.run(
        [
            SNAKEMAKE,
            "-s",
            str(tmp_path / "Snakefile"),
            "-d",
            str(tmp_path),
            "--cores",
            "1",
            "results/small/graph.npz",
            "--configfile",
            str(tmp_path / "test_config.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode != 0
    assert (tmp_path / "results/small/prepared.h5ad").exists() and not (tmp_path / "results/small/graph.npz").exists()
    log = (tmp_path / "logs/build_graph/small.log").read_text()
    assert re.search(
        r"results/small/prepared\.h5ad: 3 samples but graph\.n_neighbors = 3; a kNN graph needs more samples", log
    ), log


@pytest.mark.workflow
def test_a_datasets_own_methods_replace_the_top_level_list_for_that_dataset_only(tmp_path):
    """datasets.<name>.methods (e.g. a single-cell dataset without the published GLFS readings,
    which refuse at that size) decides every per-method job of that dataset and nothing else."""
    _copy_workflow(tmp_path)
    cfg = {
        "methods": ["glfs", "glfs_exact", "variance", "fisher_score"],
        "classification": {"datasets": ["tiny"], "cv_folds": 4},
        "datasets": {"tiny_unlabelled": {"methods": ["laplacian_score", "glfs"]}},
    }
    jobs = _jobs(tmp_path, cfg)

    def of(rule, ds):
        return [j for j in jobs if _rule_family(j) == rule and j["wildcards"].get("dataset") == ds]

    def selected(ds):  # the methods of the dataset's one selection job
        (job,) = of("select_features", ds)
        return job["params"]["methods"]

    assert selected("tiny") == ["glfs", "glfs_exact", "variance", "fisher_score"]
    assert selected("tiny_unlabelled") == ["laplacian_score", "glfs"]

    def outputs(ds):  # the selection job's named outputs besides its tables
        (job,) = of("select_features", ds)
        return sorted(k for k in job["output"] if k not in ("tables", "metas"))

    # the lam path exists where a published reading runs, and only there; glfs_vs_greedy where glfs runs
    assert outputs("tiny") == ["adata", "glfs_path", "glfs_vs_greedy"]
    assert outputs("tiny_unlabelled") == ["adata", "glfs_vs_greedy"]
    (classify,) = of("classify_samples", "tiny")
    assert classify["params"]["glfs_variants"] == ["glfs", "glfs_exact"]
    # a dataset's own list can leave glfs out: then no glfs-only output for it
    cfg["datasets"]["tiny_unlabelled"]["methods"] = ["variance"]
    jobs = _jobs(tmp_path, cfg)
    assert outputs("tiny_unlabelled") == ["adata"] and outputs("tiny") == ["adata", "glfs_path", "glfs_vs_greedy"]
    assert selected("tiny_unlabelled") == ["variance"]
    # and a dataset left without methods (its only method needs labels) still gets its AnnData (the graph)
    cfg["datasets"]["tiny_unlabelled"]["methods"] = ["fisher_score"]
    jobs = _jobs(tmp_path, cfg)
    assert outputs("tiny_unlabelled") == ["adata"] and selected("tiny_unlabelled") == []


def test_the_workflow_graph_and_glfs_defaults_are_the_librarys():
    """The schema (YAML: it cannot import) repeats the library's defaults of the graph and of GLFS's
    lambdas; this keeps each pair equal, so the library's value is the one that counts."""
    from glfs.designs._gradient_model import DEFAULT_LAMBDA1, DEFAULT_LAMBDA2
    from glfs.graph._similarity import DEFAULT_GRAPH_PARAMS

    graph = SCHEMA["properties"]["graph"]["properties"]
    assert graph["n_neighbors"]["default"] == DEFAULT_GRAPH_PARAMS["n_neighbors"]
    assert graph["kernel"]["default"] == DEFAULT_GRAPH_PARAMS["kernel"]
    from glfs.sklearn import FeatureSelector, GLFSClassifier

    for est in (FeatureSelector(), GLFSClassifier()):
        assert est.n_neighbors == DEFAULT_GRAPH_PARAMS["n_neighbors"] and est.kernel == DEFAULT_GRAPH_PARAMS["kernel"]
    assert (GLFSClassifier().lambda1, GLFSClassifier().lambda2) == (DEFAULT_LAMBDA1, DEFAULT_LAMBDA2)


# ------------------------------------------------------------------ the evaluation defaults: one source


FULL = yaml.safe_load((REPO / "config/full.yaml").read_text())


@pytest.mark.parametrize(
    ("section", "function"), [("clustering", "evaluate_ranking"), ("leiden", "evaluate_ranking_leiden")]
)
def test_evaluation_defaults_of_the_schema_are_the_library_signatures(section, function):
    """Issue 27 item 4: the protocols' defaults are written in their signatures; the schema (and through it
    config.yaml) repeats them.  Every key of the section that is a parameter of the protocol's function
    has the signature's default; a copy that drifts fails here (feature_grid had drifted in both).  The
    exception is the default run's lighter run counts (issue 27: 3 minutes on 2 cores): there the schema
    has fewer runs, and config/full.yaml, the full protocol, has the signature's value."""
    import inspect

    import glfs.evaluate

    params = inspect.signature(getattr(glfs.evaluate, function)).parameters
    shared = [k for k in SCHEMA["properties"][section]["properties"] if k in params]
    assert {"n_runs", "feature_grid", "max_samples"} <= set(shared)  # the comparison is not empty
    lighter = FULL.get(section, {})
    for key in shared:
        default = params[key].default
        default = list(default) if isinstance(default, tuple) else default
        if key in lighter:
            assert lighter[key] == default, f"config/full.yaml {section}.{key}"
            assert SCHEMA["properties"][section]["properties"][key]["default"] < default, f"{section}.{key}"
        else:
            assert SCHEMA["properties"][section]["properties"][key]["default"] == default, f"{section}.{key}"


def test_the_full_protocol_only_raises_run_counts():
    """config/full.yaml (``--configfile config/full.yaml``) changes nothing but run counts and draws, each to
    more than the default run's; over config.yaml it is a valid config."""
    counts = {
        ("clustering", "n_runs"),
        ("leiden", "n_runs"),
        ("leiden", "random_draws"),
        ("random_floor", "n_draws"),
        ("simulation", "replicates"),
    }
    given = {(section, key) for section, values in FULL.items() for key in values}
    assert given and given <= counts
    filled = _filled({**CONFIG, **{s: {**CONFIG[s], **v} for s, v in FULL.items()}})
    for section, key in given:
        assert filled[section][key] == FULL[section][key] > _filled(CONFIG)[section][key], (section, key)


def test_configuration_mappings_take_every_key():
    from glfs_workflow.evaluation import clustering_kwargs, leiden_kwargs

    cl = {
        "feature_grid": (5, "all"),
        "n_runs": 4,
        "affinity_neighbors": 9,
        "max_samples": None,
        "eigen_solver": "lobpcg",
    }
    assert clustering_kwargs(cl, n_clusters=3, random_state=2) == {
        "feature_grid": [5, "all"],
        "n_clusters": 3,
        "n_runs": 4,
        "affinity_neighbors": 9,
        "random_state": 2,
        "max_samples": None,
        "eigen_solver": "lobpcg",
    }
    le = {"n_runs": 2, "resolutions": [0.5, 1], "n_pcs": 20, "n_neighbors": 10, "max_samples": 300, "random_draws": 5}
    assert leiden_kwargs(le, 4) == {
        "n_runs": 2,
        "resolutions": [0.5, 1.0],
        "n_pcs": 20,
        "n_neighbors": 10,
        "max_samples": 300,
        "random_state": 4,
    }
    with pytest.raises(KeyError, match="eigen_solver"):
        clustering_kwargs({k: v for k, v in cl.items() if k != "eigen_solver"})


@pytest.mark.workflow
def test_two_configurations_write_two_report_logs(tmp_path):
    """Issue 30 (low): two configurations run side by side, each with its own report_dir, shared
    logs/make_report/report.log; the report's log now follows report_dir."""
    _copy_workflow(tmp_path)
    logs = {}
    for report_dir in ("results", "results/other_config"):
        jobs = _jobs(tmp_path, {"report_dir": report_dir})
        (report,) = [j for j in jobs if j["rule"] == "make_report"]
        logs[report_dir] = report["log"]
    assert logs == {
        "results": ["logs/make_report/results/report.log"],
        "results/other_config": ["logs/make_report/results/other_config/report.log"],
    }


@pytest.mark.workflow
def test_a_text_matrix_gets_the_memory_its_parsing_needs(tmp_path):
    """Issue 30 item 8: the reader refuses a text matrix whose parsing would take more than the job's
    mem_mb, so the prepare job asks for it: 1000 + 152 MB per million values of the size_hint (13 bytes
    per byte of text at 10 bytes a value + 22 per value), written out for the U133A set's 540 x 12,042;
    the resources family's 1000 + 40 per million stays for an .h5ad and is the floor."""
    _copy_workflow(tmp_path)
    jobs = _jobs(tmp_path, {"datasets": {"tiny": {"size_hint": {"n_samples": 540, "n_genes": 12042}}}})
    (prep,) = [j for j in jobs if j["rule"] == "prepare_dataset" and j["wildcards"]["dataset"] == "tiny"]
    assert prep["resources"]["mem_mb"] == int(1000 + (13 * 10 + 22) * 540 * 12042 / 1e6)  # 1988
