# Config validation, shared helpers and input functions.
# The config schema (workflow/schemas/config.schema.yaml) holds every default:
# validate() below fills them in, so rules read config[...] and write none of their own.

import math
import re
from pathlib import Path

from snakemake.utils import validate

from glfs_workflow.datasets import expression_format, is_singlecell
from glfs_workflow.fetch import dataset_file_specs, is_url, plain_filename_problem
from glfs_workflow.memory import TEXT_MB_PER_MCELL

# under a private name, so that no function of a later .smk file can shadow it
from glfs_workflow.datasets import dataset_has_labels as _io_has_labels


class ConfigError(Exception):
    """A bad config value; the message names the key."""


#: The longest config error message printed (a value quoted in it is cut; see _schema_message).
_MESSAGE_MAX_CHARS = 2000
#: The most values (dict and list entries, counted with repeats) a config may hold: a YAML alias
#: bomb ("billion laughs") is refused before anything walks or prints it.
_CONFIG_MAX_VALUES = 100_000


def _key_path(parts):
    """A config key path as users write it: graph.n_neighbors, clustering.feature_grid[1]."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _capped(text):
    """text cut to _MESSAGE_MAX_CHARS, saying how long it was."""
    if len(text) <= _MESSAGE_MAX_CHARS:
        return text
    return f"{text[:_MESSAGE_MAX_CHARS]} ... (message cut: {len(text)} characters)"


#: A number PyYAML leaves as text: e-notation without a decimal point (1e99, -2E-3, +5e+2).
_YAML_TEXT_NUMBER = re.compile(r"[-+]?[0-9]+[eE][-+]?[0-9]+")


def _schema_message(err):
    """One line naming the config key of a schema violation (the best sub-error of oneOf), at most _MESSAGE_MAX_CHARS."""
    from jsonschema.exceptions import best_match

    if err.context:
        err = best_match(err.context)
    key = _key_path(list(err.absolute_path))
    if (
        err.validator in ("pattern", "maxLength")
        and isinstance(err.schema, dict)
        and err.schema.get("description")
    ):
        return _capped(f"config key {key}: {err.message} ({err.schema['description']})")
    if (
        err.validator == "type"
        and isinstance(err.instance, str)
        and _YAML_TEXT_NUMBER.fullmatch(err.instance.strip())
    ):
        # PyYAML (YAML 1.1) reads 1e99 or 1e-3, without a decimal point, as text
        return _capped(
            f"config key {key}: {err.instance!r} is read as text, not a number: YAML reads a number in e-notation "
            f"without a decimal point as text; write {float(err.instance):.1e} (a decimal point before the e) "
            f"({err.message})"
        )
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = sorted(err.schema.get("properties", {}))
        unknown = sorted(k for k in err.instance if k not in allowed)
        if unknown:
            keys = ", ".join(_key_path([*err.absolute_path, k]) for k in unknown)
            return _capped(f"config key {keys}: unknown key (allowed here: {allowed})")
    return _capped(f"config key {key}: {err.message}")


def _check_config_size(cfg):
    """Refuse a config with more than _CONFIG_MAX_VALUES values, without expanding it further.

    YAML anchors and aliases share one object, so a small file can stand for 10**9
    values; jsonschema's messages quote the value they refuse, which then never ends.
    The message says so only when the config shares objects (an alias); a plain config
    that large (e.g. 100,000 datasets) is told its count and how to split it.
    """
    count, seen, shared = 0, set(), False
    stack = [(cfg, [])]
    while stack:
        node, path = stack.pop()
        count += 1
        if count > _CONFIG_MAX_VALUES:
            if shared:
                why = "YAML anchors and aliases counted as often as they are used"
            else:
                why = "dict and list entries; it uses no YAML alias: split it over several configuration files"
            msg = (
                f"config key {_key_path(path)}: the config holds more than {_CONFIG_MAX_VALUES} values "
                f"({why}); refused before validation"
            )
            raise ConfigError(msg)
        if isinstance(node, (dict, list)):
            shared = shared or id(node) in seen
            seen.add(id(node))
        if isinstance(node, dict):
            stack.extend((v, [*path, k]) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, [*path, i]) for i, v in enumerate(node))


def _resolve_ref(schema, root):
    """A subschema with its $ref (#/definitions/...) replaced by the definition (sibling keys kept)."""
    while isinstance(schema, dict) and "$ref" in schema:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _schema_types(schema):
    t = schema.get("type", [])
    return {t} if isinstance(t, str) else set(t)


def _float_integers(value, schema, root, path):
    """Yield (path, value) for each float where the schema asks for an integer.

    JSON schema's "integer" accepts 5.0 (a number with no fraction), but the
    workflow counts with these values and the library refuses 5.0, so a float is
    refused here, where the config is read.
    """
    schema = _resolve_ref(schema, root)
    if not isinstance(schema, dict):
        return
    branches = [
        _resolve_ref(b, root) for k in ("oneOf", "anyOf") for b in schema.get(k, [])
    ]
    branches = [b for b in branches if isinstance(b, dict)]
    if isinstance(value, float):
        kinds = _schema_types(schema).union(*(_schema_types(b) for b in branches))
        if "integer" in kinds and "number" not in kinds:
            yield path, value
        return
    for sub in [schema, *branches]:
        if isinstance(value, dict):
            props, extra = sub.get("properties", {}), sub.get("additionalProperties")
            for k, v in value.items():
                s = props.get(k, extra if isinstance(extra, dict) else None)
                if s is not None:
                    yield from _float_integers(v, s, root, [*path, k])
        elif isinstance(value, list) and isinstance(sub.get("items"), dict):
            for i, v in enumerate(value):
                yield from _float_integers(v, sub["items"], root, [*path, i])


def _non_finite(value, path):
    """(key path, value) of every float in the config that is infinite or NaN: JSON schema's bounds let
    them through (every comparison with NaN is false; infinity passes a lower bound)."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _non_finite(v, [*path, k])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _non_finite(v, [*path, i])


def _check_schema(cfg, schema_path):
    """Validate with jsonschema first, to report the best error with its key path.

    Before it: the size of the config (an alias bomb); after it: floats where an
    integer is asked (5.0 passes JSON schema's "integer").
    """
    import jsonschema
    import yaml

    with open(schema_path) as fh:
        schema = yaml.safe_load(fh)
    _check_config_size(cfg)
    for path, value in _non_finite(cfg, []):
        msg = f"config key {_key_path(path)}: {value!r} is not a finite number (YAML .inf or .nan); give a finite value"
        raise ConfigError(msg)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(cfg))
    if errors:
        raise ConfigError(_schema_message(jsonschema.exceptions.best_match(errors)))
    for path, value in _float_integers(cfg, schema, schema, []):
        msg = f"config key {_key_path(path)}: {value!r} is not an integer (write {int(value)})"
        raise ConfigError(msg)


_check_schema(config, workflow.source_path("../schemas/config.schema.yaml"))
validate(config, schema="../schemas/config.schema.yaml")  # sets the schema's defaults


def _check_config(cfg):
    """Semantic checks after the schema; every message names the config key."""
    try:
        from glfs import METHODS as known
    except ImportError:  # glfs not installed: method names cannot be checked
        known = None
    datasets = cfg["datasets"]
    for i, ds in enumerate(cfg["run"]):
        if ds not in datasets:
            msg = f"config key run[{i}]: dataset {ds!r} is not defined under `datasets` (defined: {sorted(datasets)})"
            raise ConfigError(msg)
    for i, ds in enumerate(cfg["classification"]["datasets"]):
        if ds not in datasets:
            msg = f"config key classification.datasets[{i}]: dataset {ds!r} is not defined under `datasets`"
            raise ConfigError(msg)
    for i, ds in enumerate(cfg["panel"]["datasets"]):
        if ds not in cfg["run"]:
            msg = f"config key panel.datasets[{i}]: dataset {ds!r} is not in `run` ({cfg['run']})"
            raise ConfigError(msg)
        if datasets[ds]["evaluation"] not in ("leiden", "both"):
            msg = (
                f"config key panel.datasets[{i}]: dataset {ds!r} has evaluation "
                f"{datasets[ds]['evaluation']!r}; a panel set needs evaluation leiden or both"
            )
            raise ConfigError(msg)
    if known is not None:
        lists = [
            ("methods", cfg["methods"]),
            ("singlecell_methods", cfg["singlecell_methods"]),
            ("simulation.methods", cfg["simulation"]["methods"]),
            ("selection.params", list(cfg["selection"]["params"])),
        ]
        lists += [
            (f"datasets.{name}.methods", dc["methods"])
            for name, dc in datasets.items()
            if dc.get("methods") is not None
        ]
        for key, names in lists:
            for i, m in enumerate(names):
                if m not in known:
                    msg = f"config key {key}[{i}]: unknown method {m!r}; valid methods are {sorted(known)}"
                    raise ConfigError(msg)
        _check_method_params(cfg["selection"]["params"])
        _log_dropped_supervised(cfg, known)
    needs = {"golub": ["independent"], "stategra": ["sample_map"]}
    for name, dc in datasets.items():
        for role, spec in dataset_file_specs(dc).items():
            problem = spec.get("filename") is not None and plain_filename_problem(
                spec["filename"]
            )
            if problem:
                key = (
                    role if role in ("expression", "labels") else f"extra_files.{role}"
                )
                msg = f"config key datasets.{name}.{key}.filename: filename must be a plain file name (no directory, not '.' or '..', no control characters); {problem}"
                raise ConfigError(msg)
        fmt = dc["format"]
        for role in needs.get(fmt, []):
            if role not in (dc.get("extra_files") or {}):
                msg = f"config key datasets.{name}.extra_files.{role} is required for format {fmt!r}"
                raise ConfigError(msg)
        if dc["split"] is not None and fmt != "golub":
            msg = f"config key datasets.{name}.split is only supported for format 'golub' (got format {fmt!r})"
            raise ConfigError(msg)
        h5ad_labels = (
            expression_format(dc) == "h5ad" and dc.get("label_column") is not None
        )
        if (
            dc.get("labels") is None
            and dc.get("label_column") is not None
            and not h5ad_labels
        ):
            msg = f"config key datasets.{name}.label_column: given but the dataset has no `labels` table (only an .h5ad reads labels from an obs column without one)"
            raise ConfigError(msg)
        if dc.get("layer") is not None and expression_format(dc) != "h5ad":
            msg = f"config key datasets.{name}.layer: only an .h5ad has layers (this dataset is read as {expression_format(dc)!r})"
            raise ConfigError(msg)
        if (
            dc.get("labels") is None
            and (dc.get("drop_unlabelled") or dc.get("label_map"))
            and fmt not in ("stategra", "clanc840")
            and not h5ad_labels
        ):
            msg = f"config key datasets.{name}: drop_unlabelled/label_map given but the dataset has no `labels` table (nor an .h5ad label_column)"
            raise ConfigError(msg)


def _check_method_params(all_params):
    """selection.params: names (and kinds, where cheap) of each method's parameters, without running it
    (glfs.api.check_method_params: the signature of the function the method passes them to).
    """
    from glfs.api import check_method_params

    for method, params in all_params.items():
        for name, value in params.items():
            try:
                check_method_params(method, {name: value})
            except ValueError as exc:
                raise ConfigError(
                    _capped(f"config key selection.params.{method}.{name}: {exc}")
                ) from None


def _log_dropped_supervised(cfg, known):
    """Say which supervised methods an unlabelled dataset of `run` will not run (analysis.smk drops them)."""
    from snakemake.logging import logger

    for name in cfg["run"]:
        dc = cfg["datasets"][name]
        if _io_has_labels(dc):
            continue
        own = dc.get("methods")
        supervised = [
            m for m in (cfg["methods"] if own is None else own) if known[m].needs_labels
        ]
        if supervised:
            key = "methods" if own is None else f"datasets.{name}.methods"
            logger.warning(
                f"dataset {name} has no labels: its supervised methods {', '.join(supervised)} are not run ({key})"
            )


_check_config(config)

DATASET_NAMES = sorted(config["datasets"], key=len, reverse=True)


wildcard_constraints:
    dataset="|".join(re.escape(d) for d in DATASET_NAMES),


# Each result file of a dataset, by the name the report reads it under (a kind of
# report_input(), analysis.smk).  The rules' outputs are these patterns; analysis_targets()
# (rule all) and report_input() (make_report) expand them through dataset_results()
# (analysis.smk), the one place that says which results a dataset gets.
RESULT = {
    "provenance": "results/{dataset}/provenance.json",
    "graph": "results/{dataset}/graph.npz",
    "adata": "results/{dataset}/adata.h5ad",
    "glfs_path": "results/{dataset}/glfs_path.tsv",
    "clustering": "results/{dataset}/clustering_nmi.tsv",
    "leiden": "results/{dataset}/clustering_leiden.tsv",
    "leiden_random": "results/{dataset}/leiden_random.tsv",
    "classification": "results/{dataset}/classification.tsv",
    "random_floor": "results/{dataset}/clustering_random.tsv",
    "glfs_vs_greedy": "results/{dataset}/glfs_vs_greedy.tsv",
    "sensitivity": "results/{dataset}/glfs_sensitivity.tsv",
}

# Output paths that more than one stage names (select writes them; evaluate,
# annotate, the report and rule all read them).
SELECTION_TABLE = "results/{dataset}/selection/{method}.tsv"
SELECTION_META = "results/{dataset}/selection/{method}.json"


def selection_table(dataset, method):
    """Path of a method's selection table on a dataset (SELECTION_TABLE)."""
    return SELECTION_TABLE.format(dataset=dataset, method=method)


def selection_meta(dataset, method):
    """Path of a method's JSON sidecar (params, diagnostics) on a dataset (SELECTION_META)."""
    return SELECTION_META.format(dataset=dataset, method=method)


def run_datasets():
    return list(config["run"])


def dataset_config(dataset):
    return config["datasets"][dataset]


_SINGLECELL = {}


def singlecell_dataset(dataset):
    """Whether a dataset is a single-cell one (glfs_workflow.datasets.is_singlecell: an .h5ad with
    evaluation leiden or both, or whose local expression file looks like raw counts); decided once
    per dataset when the DAG is built.  It gets `singlecell_methods` unless it names `methods`,
    and the gene filter (gene_filter.min_cells, or its own min_cells) before preprocessing.
    """
    if dataset not in _SINGLECELL:
        dc = dataset_config(dataset)
        spec = dataset_file_specs(dc)["expression"]
        local = spec.get("mirror") if is_url(spec["url"]) else spec["url"]
        _SINGLECELL[dataset] = is_singlecell(dc, local)
    return _SINGLECELL[dataset]


def gene_filter_min_cells(dataset):
    """The gene filter's min_cells of a dataset: its own `min_cells`, else gene_filter.min_cells, for a
    single-cell dataset (0: not filtered); None for a bulk one (never filtered, nothing recorded).
    """
    if not singlecell_dataset(dataset):
        return None
    own = dataset_config(dataset).get("min_cells")
    return int(config["gene_filter"]["min_cells"] if own is None else own)


def has_labels(dataset):
    """Whether a dataset has class labels, known when the DAG is built: a labels table,
    a reader that carries them (stategra, clanc840), or an .h5ad with `label_column`
    (glfs_workflow.datasets.dataset_has_labels, which prepare_dataset also follows).
    The only such test of the workflow: label-based jobs (clustering evaluation, random
    floor, sensitivity panel, supervised methods, classification) run where it is true.
    """
    return _io_has_labels(dataset_config(dataset))


def seed():
    return int(config["seed"])


# ---- resources (threads, mem_mb, runtime) per rule family -------------------
# config["resources"][family] = {threads, mem_mb, runtime, mem_mb_per_mcell, runtime_per_mcell,
# runtime_per_mnnz} (per_mcell: added per million matrix cells n_samples * n_genes of the
# dataset; per_mnnz: per million non-zeros of a sparse one).
# The schema gives every family and every key of `default` a value.


def _res(family):
    """A family's resources: resources.default overlaid by the family's own keys."""
    return {**config["resources"]["default"], **config["resources"][family]}


def get_threads(family):
    return int(_res(family)["threads"])


# Dense float64 values a method that makes X dense may hold (glfs.core.limits.DENSE_LIMIT_GB, 4 GB).
DENSE_LIMIT_CELLS = 4 * 2**30 / 8


def _dataset_mcells(wildcards, family=None):
    """Million matrix cells a job of the family holds (its memory request): n_samples x n_genes of the size_hint.

    A sparse dataset (size_hint.nnz, an .h5ad whose X stays sparse): 1.5 x its non-zeros
    (CSR float64, 12 bytes each, against 8 per dense value), and for the families with a
    dense step (select: the methods that make X dense; evaluate: the subsampled top genes)
    at least min(n_samples x n_genes, the dense size limit).
    """
    ds = getattr(wildcards, "dataset", None)
    if ds is None or ds not in config["datasets"]:
        return 0.0
    size = config["datasets"][ds]["size_hint"]
    cells = float(size["n_samples"]) * float(size["n_genes"])
    nnz = size.get("nnz")
    if nnz is not None:
        sparse = 1.5 * float(nnz)
        if family in ("select", "evaluate"):
            cells = max(sparse, min(cells, DENSE_LIMIT_CELLS))
        else:
            cells = min(cells, sparse)
    return cells / 1e6


def _text_parse_mb(wildcards, r):
    """The memory a prepare job needs to parse a text matrix (tsv, csv, gct) of the dataset's size_hint
    (glfs_workflow.memory.TEXT_MB_PER_MCELL); 0 for any other input.  Its reader refuses a matrix
    whose parsing would take more than the job's mem_mb."""
    ds = getattr(wildcards, "dataset", None)
    if ds is None or ds not in config["datasets"]:
        return 0.0
    cfg = config["datasets"][ds]
    if expression_format(cfg) not in ("tsv", "csv", "gct"):
        return 0.0
    size = cfg["size_hint"]
    cells = float(size["n_samples"]) * float(size["n_genes"])
    return r["mem_mb"] + TEXT_MB_PER_MCELL * cells / 1e6


def get_mem_mb(family):
    r = _res(family)

    def _f(wildcards, attempt=1):
        mem = r["mem_mb"] + r["mem_mb_per_mcell"] * _dataset_mcells(wildcards, family)
        if family == "prepare":
            mem = max(mem, _text_parse_mb(wildcards, r))
        return int(mem * attempt)

    return _f


def _runtime_work(wildcards, family, r):
    """Minutes of work of a job of the family beyond its base runtime.

    A dense dataset: runtime_per_mcell x million matrix cells (n_samples x n_genes).
    A sparse one (size_hint.nnz): runtime_per_mnnz x million non-zeros (the gene-wise
    scores and the graph are linear in them, or close), plus, for the families with a
    dense step (select, evaluate), runtime_per_mcell x million matrix cells when the
    matrix fits the dense size limit, where the methods that make X dense run (above
    it they refuse at once).  The per-mcell rate times 1.5 x nnz asked 69 hours for a
    selection at a million cells x 20,000 genes (5.5e8 non-zeros); this asks 115 minutes.
    """
    ds = getattr(wildcards, "dataset", None)
    if ds is None or ds not in config["datasets"]:
        return 0.0
    size = config["datasets"][ds]["size_hint"]
    cells = float(size["n_samples"]) * float(size["n_genes"])
    nnz = size.get("nnz")
    if nnz is None:
        return r["runtime_per_mcell"] * cells / 1e6
    dense = (
        cells
        if family in ("select", "evaluate") and cells <= DENSE_LIMIT_CELLS
        else 0.0
    )
    return (
        r["runtime_per_mnnz"] * float(nnz) / 1e6 + r["runtime_per_mcell"] * dense / 1e6
    )


def get_runtime(family, per_method=False):
    """Runtime (min) of a job of the family; per_method: times the dataset's method count (one job runs them
    all; at least one: the job also writes the dataset's AnnData)."""
    r = _res(family)

    def _f(wildcards, attempt=1):
        jobs = max(1, len(dataset_methods(wildcards.dataset))) if per_method else 1
        return int(
            math.ceil(
                (r["runtime"] + _runtime_work(wildcards, family, r)) * jobs * attempt
            )
        )

    return _f


# ---- data stage (fetch.smk, prepare.smk) -------------------------------------


def fetch_local_inputs(wildcards):
    """Local files a dataset reads (plain paths and existing mirrors), so edits trigger a rerun."""
    out = []
    for spec in dataset_file_specs(dataset_config(wildcards.dataset)).values():
        if not is_url(spec["url"]):
            out.append(spec["url"])
        elif spec.get("mirror") and Path(spec["mirror"]).exists():
            out.append(spec["mirror"])
    return out


def fetch_params(wildcards):
    """config["fetch"] (plain dict; the schema fills every key)."""
    return dict(config["fetch"])


# Dataset keys that only the later stages read: left out of prepare_dataset's params, so that
# changing a dataset's methods or evaluation does not prepare it again.
_EVALUATION_KEYS = ("methods", "evaluation", "feature_grid")


def dataset_params(wildcards):
    """The dataset's config entry (plain dict) without the keys of the later stages."""
    params = {
        k: v
        for k, v in dataset_config(wildcards.dataset).items()
        if k not in _EVALUATION_KEYS
    }
    params["min_cells"] = gene_filter_min_cells(
        wildcards.dataset
    )  # None: a bulk dataset, not filtered
    return params
