"""Config validation (issue 5 item 2): unknown keys, wrong types, a dataset in
`run` that is not defined, an unknown method: an error naming the key.

The error cases run `snakemake -n` on a workflow with only the common, fetch
and prepare stages (conftest.py), so they test common.smk's messages as a
user sees them."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
TINY = yaml.safe_load((REPO / "tests/workflow/tiny/config.yaml").read_text())


def _walk(schema, path="schema"):
    """Yield (path, subschema) for every object schema."""
    if isinstance(schema, dict):
        yield path, schema
        for k, v in schema.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            yield from _walk(v, f"{path}[{i}]")


def test_schema_is_closed_and_documented():
    for path, s in _walk(SCHEMA):
        if s.get("type") == "object" or (isinstance(s.get("type"), list) and "object" in s["type"]):
            assert "additionalProperties" in s, f"{path}: objects must be closed or typed"
            assert s["additionalProperties"] is not True, path
        props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
        for key, sub in props.items():
            if isinstance(sub, dict) and "$ref" not in sub:
                assert "description" in sub, f"{path}.properties.{key} has no description"


def test_default_and_tiny_configs_are_valid():
    v = jsonschema.Draft202012Validator(SCHEMA)
    assert list(v.iter_errors(CONFIG)) == []
    merged = copy.deepcopy(CONFIG)
    merged.update(TINY)
    assert list(v.iter_errors(merged)) == []
    assert set(CONFIG["run"]) == {"golub", "tcga_gbm", "tcga_gbm_clanc840", "mouse_bladder"}
    assert {"tcga_gbm_u133a", "tcga_gbm_unified"} <= set(CONFIG["datasets"])


BASE = {"run": ["d"], "datasets": {"d": {"expression": "data/m.tsv"}}}


def _with(path, value):
    cfg = copy.deepcopy(BASE)
    node = cfg
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    return cfg


CASES = {
    "unknown_top_key": (_with("graphs", {"n_neighbors": 3}), r"config key graphs: unknown key"),
    "unknown_dataset_key": (
        _with("datasets.d.orientaton", "genes_by_samples"),
        r"config key datasets\.d\.orientaton: unknown key",
    ),
    "unknown_file_spec_key": (
        _with("datasets.d.expression", {"url": "a.tsv", "md5": "x"}),
        r"config key datasets\.d\.expression\.md5: unknown key",
    ),
    "unknown_graph_key": (_with("graph.k", 3), r"config key graph\.k: unknown key"),
    "wrong_type_int": (
        _with("graph.n_neighbors", "five"),
        r"config key graph\.n_neighbors: 'five' is not of type 'integer'",
    ),
    "wrong_type_list": (_with("run", "d"), r"config key run: 'd' is not of type 'array'"),
    "bad_enum": (_with("datasets.d.orientation", "rows"), r"config key datasets\.d\.orientation: 'rows' is not one of"),
    "bad_preprocess": (
        _with("datasets.d.preprocess", "log3"),
        r"config key datasets\.d\.preprocess: 'log3' is not one of",
    ),
    "bad_sha256": (_with("datasets.d.sha256", "abc"), r"config key datasets\.d\.sha256: 'abc' does not match"),
    "missing_expression": (
        _with("datasets.d", {"labels": "l.tsv"}),
        r"config key datasets\.d: 'expression' is a required property",
    ),
    "run_undefined": (
        _with("run", ["d", "nope"]),
        r"config key run\[1\]: dataset 'nope' is not defined under `datasets`",
    ),
    "unknown_method": (
        _with("methods", ["laplacian_score", "lapscore"]),
        r"config key methods\[1\]: unknown method 'lapscore'; valid methods are \[",
    ),
    "unknown_sim_method": (
        _with("simulation", {"methods": ["glfs_nope"]}),
        r"config key simulation\.methods\[0\]: unknown method 'glfs_nope'",
    ),
    "unknown_params_method": (
        _with("selection", {"params": {"lapofs": {}}}),
        r"config key selection\.params\[0\]: unknown method 'lapofs'",
    ),
    "unknown_dataset_method": (
        _with("datasets.d.methods", ["glfs", "glfs_fast"]),
        r"config key datasets\.d\.methods\[1\]: unknown method 'glfs_fast'; valid methods are \[",
    ),
    "empty_dataset_methods": (
        _with("datasets.d.methods", []),
        r"config key datasets\.d\.methods: \[\] should be non-empty",
    ),
    "classification_undefined": (
        _with("classification", {"datasets": ["golub"]}),
        r"config key classification\.datasets\[0\]: dataset 'golub' is not defined",
    ),
    "golub_without_independent": (
        _with("datasets.d.format", "golub"),
        r"config key datasets\.d\.extra_files\.independent is required for format 'golub'",
    ),
    "bad_resources": (
        _with("resources", {"default": {"threads": 0}}),
        r"config key resources\.default\.threads: 0 is less than the minimum of 1",
    ),
    # issue 11: names and paths as users really write them
    "dataset_name_newline": (
        {"run": ["abc\n"], "datasets": {"abc\n": {"expression": "data/m.tsv"}}},
        r"config key (datasets|run\[0\]): 'abc\\n' does not match .*\(dataset names: letters, digits and _ only, at most 100 characters\)",
    ),
    "filename_escapes": (
        _with("datasets.d.expression", {"url": "https://example.org/m.tsv", "filename": "../../../../x"}),
        r"config key datasets\.d\.expression\.filename: filename must be a plain file name .*'\.\./\.\./\.\./\.\./x' has a directory part",
    ),
    "filename_absolute": (
        _with("datasets.d.extra_files", {"more": {"url": "https://example.org/x", "filename": "/tmp/x"}}),
        r"config key datasets\.d\.extra_files\.more\.filename: filename must be a plain file name",
    ),
    "label_column_without_labels": (
        _with("datasets.d.label_column", "subtype"),
        r"config key datasets\.d\.label_column: given but the dataset has no `labels` table \(only an \.h5ad",
    ),
    "bad_preprocess_param": (
        _with("datasets.d.preprocess_params", {"target_sum": 0}),
        r"config key datasets\.d\.preprocess_params\.target_sum: 0 is less than or equal to the minimum of 0",
    ),
    # issue 19: numbers the schema called integers but the code refused later; method parameters; long names
    "n_neighbors_float": (
        _with("graph.n_neighbors", 5.0),
        r"config key graph\.n_neighbors: 5\.0 is not an integer \(write 5\)",
    ),
    "feature_grid_float": (
        _with("clustering.feature_grid", [10, 5.0, "all"]),
        r"config key clustering\.feature_grid\[1\]: 5\.0 is not an integer \(write 5\)",
    ),
    "dataset_feature_grid_float": (
        _with("datasets.d.feature_grid", [5.0]),
        r"config key datasets\.d\.feature_grid\[0\]: 5\.0 is not an integer",
    ),
    "n_clusters_float": (
        _with("datasets.d.n_clusters", 2.0),
        r"config key datasets\.d\.n_clusters: 2\.0 is not an integer \(write 2\)",
    ),
    "resources_threads_float": (
        _with("resources", {"select": {"threads": 2.0}}),
        r"config key resources\.select\.threads: 2\.0 is not an integer",
    ),
    "params_unknown_name": (
        _with("selection", {"params": {"glfs": {"graph_weigth": 0.1}}}),
        r"config key selection\.params\.glfs\.graph_weigth: parameter 'graph_weigth' is not a parameter of method 'glfs'; its parameters are \[.*'graph_weight'",
    ),
    "params_float_for_int": (
        _with("selection", {"params": {"glfs_exact": {"n_lams": 5.0}}}),
        r"config key selection\.params\.glfs_exact\.n_lams: parameter 'n_lams' of method 'glfs_exact' must be an integer; got 5\.0 \(float\)",
    ),
    "params_text_for_number": (
        _with("selection", {"params": {"lapaofs": {"lambda1": "big"}}}),
        r"config key selection\.params\.lapaofs\.lambda1: parameter 'lambda1' of method 'lapaofs' must be a number; got 'big'",
    ),
    "params_for_parameterless_method": (
        _with("selection", {"params": {"variance": {"ddof": 1}}}),
        r"config key selection\.params\.variance\.ddof: parameter 'ddof' is not a parameter of method 'variance'; it takes none",
    ),
    # issue 30: infinite and NaN numbers passed the schema's bounds; the graph job failed later without the key
    "graph_t_inf": (
        _with("graph.t", float("inf")),
        r"config key graph\.t: inf is not a finite number \(YAML \.inf or \.nan\)",
    ),
    "graph_mu_nan": (_with("graph.mu", float("nan")), r"config key graph\.mu: nan is not a finite number"),
    "dataset_name_too_long": (
        {"run": ["a" * 250], "datasets": {"a" * 250: {"expression": "data/m.tsv"}}},
        r"config key (datasets|run\[0\]): 'a{250}' is too long \(dataset names: letters, digits and _ only, at most 100 characters\)",
    ),
}


@pytest.mark.workflow
@pytest.mark.parametrize("case", sorted(CASES))
def test_config_error_names_key(case, tmp_path, mini_workflow, snakemake_run):
    import re

    cfg, pattern = CASES[case]
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, cfg, ["results/d/prepared.h5ad"], "-n", timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(pattern, out), f"{pattern!r} not in:\n{out[-2000:]}"
    assert not (tmp_path / "results").exists()


BILLION_LAUGHS = """\
run: [d]
datasets:
  d:
    expression: data/m.tsv
    labels: data/l.tsv
    label_map:
      a: &a [x, x, x, x, x, x, x, x, x, x]
      b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
      e: &e [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
      f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
      g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
      h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
      i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
      j: &j [*i, *i, *i, *i, *i, *i, *i, *i, *i, *i]
"""


@pytest.mark.workflow
def test_yaml_alias_bomb_is_refused_without_expanding_it(tmp_path, mini_workflow):
    """A billion-laughs YAML (10**9 strings through aliases) used to exhaust memory while the error was
    formatted; now a short error names the key.  Run under a 2 GB address-space limit."""
    import re
    import resource
    import subprocess
    import sys

    snakemake = str(Path(sys.executable).with_name("snakemake"))
    (tmp_path / "bomb.yaml").write_text(BILLION_LAUGHS)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    cmd = [
        snakemake,
        "-s",
        str(mini_workflow(tmp_path)),
        "-d",
        str(tmp_path),
        "--cores",
        "1",
        "-n",
        "results/d/prepared.h5ad",
        "--configfile",
        str(tmp_path / "bomb.yaml"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, preexec_fn=limit)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "MemoryError" not in out
    assert re.search(
        r"config key datasets\.d\.label_map\.\w+(\[\d+\])*: the config holds more than 100000 values "
        r"\(YAML anchors and aliases counted as often as they are used\)",
        out,
    ), out[-3000:]
    assert len(out) < 20000


@pytest.mark.workflow
def test_supervised_methods_of_an_unlabelled_dataset_are_named_when_the_config_is_read(
    tmp_path, mini_workflow, snakemake_run
):
    cfg = _with("datasets.d.methods", ["fisher_score", "variance", "lkr_score_supervised"])
    cfg["datasets"]["e"] = {"expression": "data/m.tsv", "labels": "data/l.tsv", "methods": ["fisher_score"]}
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, cfg, ["results/d/prepared.h5ad"], "-n", timeout=120)
    out = proc.stdout + proc.stderr
    line = "dataset d has no labels: its supervised methods fisher_score, lkr_score_supervised are not run (datasets.d.methods)"
    assert line in out, out[-3000:]
    assert "dataset e" not in out  # labelled: nothing dropped
    cfg = _with("methods", ["laplacian_score", "fisher_score"])
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, cfg, ["results/d/prepared.h5ad"], "-n", timeout=120)
    assert (
        "dataset d has no labels: its supervised methods fisher_score are not run (methods)"
        in proc.stdout + proc.stderr
    )


@pytest.mark.workflow
def test_valid_minimal_config_dry_runs(tmp_path, mini_workflow, snakemake_run):
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, BASE, ["results/d/prepared.h5ad"], "-n", timeout=120)
    # the file does not exist, so the dry run stops at the missing input, naming it
    assert "data/m.tsv" in proc.stdout + proc.stderr
    (tmp_path / "data").mkdir()
    (tmp_path / "data/m.tsv").write_text("gene\ta\tb\ng\t1\t2\n")
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, BASE, ["results/d/prepared.h5ad"], "-n", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "prepare_dataset" in proc.stdout + proc.stderr


@pytest.mark.workflow
def test_a_100_character_dataset_name_is_accepted(tmp_path, mini_workflow, snakemake_run):
    import hashlib

    # not 'd' * 100: snakemake refuses a wildcard value that ends in 20 repeats (PeriodicWildcardError)
    name = ("ds_" + hashlib.sha256(b"a").hexdigest() + hashlib.sha256(b"b").hexdigest())[:100]
    cfg = {"run": [name], "datasets": {name: {"expression": "data/m.tsv"}}}
    (tmp_path / "data").mkdir()
    (tmp_path / "data/m.tsv").write_text("gene\ta\tb\ng\t1\t2\n")
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, cfg, [f"results/{name}/prepared.h5ad"], "-n", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.workflow
def test_h5ad_label_column_and_counts_options_dry_run(tmp_path, mini_workflow, snakemake_run):
    cfg = {
        "run": ["d"],
        "datasets": {
            "d": {
                "expression": "data/m.h5ad",
                "label_column": "cell_type",
                "drop_unlabelled": True,
                "preprocess": "normalize_log1p",
                "preprocess_params": {"target_sum": 10000},
            }
        },
    }
    (tmp_path / "data").mkdir()
    (tmp_path / "data/m.h5ad").write_bytes(b"")
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, cfg, ["results/d/prepared.h5ad"], "-n", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_schema_preprocess_options_match_the_library():
    from glfs_workflow.preprocessing import PREPROCESS_DEFAULTS

    enum = SCHEMA["definitions"]["dataset"]["properties"]["preprocess"]["enum"]
    assert set(enum) == set(PREPROCESS_DEFAULTS)
    assert "label" not in str(SCHEMA["definitions"]["dataset"]["properties"]["label_column"].get("default", ""))


@pytest.mark.parametrize("path", sorted((REPO / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_extra_configs_are_valid_over_the_default_config(path):
    """A config given with --configfile is overlaid on config.yaml; the result must pass the schema."""
    extra = yaml.safe_load(path.read_text())
    merged = copy.deepcopy(CONFIG)
    for key, value in extra.items():
        merged[key] = (
            {**merged[key], **value} if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
        )
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(merged)) == []
    assert set(merged["run"]) <= set(merged["datasets"])


@pytest.mark.workflow
def test_a_large_plain_config_is_refused_without_talk_of_aliases(tmp_path, mini_workflow, snakemake_run):
    """Issue 30 (low): 50,001 plain datasets (100,002 values, no YAML alias) were refused 'YAML anchors
    and aliases counted as often as they are used'; the message now says the config uses none."""
    import re

    cfg = {"run": ["d0"], "datasets": {f"d{i}": {"expression": "data/m.tsv"} for i in range(50_001)}}
    proc = snakemake_run(mini_workflow(tmp_path), tmp_path, cfg, ["results/d0/prepared.h5ad"], "-n", timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(
        r"the config holds more than 100000 values \(dict and list entries; it uses no YAML alias: "
        r"split it over several configuration files\)",
        out,
    ), out[-2000:]
    assert "anchors" not in out


@pytest.mark.workflow
def test_e_notation_without_a_decimal_point_is_explained(tmp_path, mini_workflow):
    """Issue 30 (low): `graph.t: 1e99` in YAML is text for PyYAML (YAML 1.1 needs 1.0e+99); the schema said
    only "'1e99' is not of type 'number'"."""
    import re
    import subprocess
    import sys

    snakemake = str(Path(sys.executable).with_name("snakemake"))
    (tmp_path / "c.yaml").write_text("run: [d]\ndatasets:\n  d:\n    expression: data/m.tsv\ngraph:\n  t: 1e99\n")
    cmd = [
        snakemake,
        "-s",
        str(mini_workflow(tmp_path)),
        "-d",
        str(tmp_path),
        "--cores",
        "1",
        "-n",
        "results/d/prepared.h5ad",
        "--configfile",
        str(tmp_path / "c.yaml"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(
        r"config key graph\.t: '1e99' is read as text, not a number: YAML reads a number in e-notation "
        r"without a decimal point as text; write 1\.0e\+99 \(a decimal point before the e\)",
        out,
    ), out[-2000:]
    assert yaml.safe_load("t: 1.0e+99")["t"] == 1e99  # the form it suggests is a number
