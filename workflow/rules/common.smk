# Config validation, shared helpers and input functions.
# Stage files append their final outputs to ALL_TARGETS; `rule all` asks for them.

import math
from pathlib import Path

from snakemake.utils import validate


validate(config, schema="../schemas/config.schema.yaml")

ALL_TARGETS = []


def all_outputs():
    return list(dict.fromkeys(ALL_TARGETS))


def run_datasets():
    return list(config["run"])


def dataset_config(dataset):
    return config["datasets"][dataset]


def seed():
    return int(config["seed"])


# ---- resources (threads, mem_mb, runtime) per rule family -------------------
# config["resources"][family] = {threads, mem_mb, runtime, mem_mb_per_mcell, runtime_per_mcell}
# (per_mcell: added per million matrix cells n_samples * n_genes of the dataset).


def _res(family):
    base = dict(config["resources"].get("default", {}))
    base.update(config["resources"].get(family, {}))
    return base


def get_threads(family):
    return int(_res(family).get("threads", 1))


def _dataset_mcells(wildcards):
    ds = getattr(wildcards, "dataset", None)
    if ds is None or ds not in config["datasets"]:
        return 0.0
    size = config["datasets"][ds].get("size_hint", {}) or {}
    return float(size.get("n_samples", 200)) * float(size.get("n_genes", 10000)) / 1e6


def get_mem_mb(family):
    r = _res(family)

    def _f(wildcards, attempt=1):
        return int(
            (r.get("mem_mb", 2000) + r.get("mem_mb_per_mcell", 0) * _dataset_mcells(wildcards))
            * attempt
        )

    return _f


def get_runtime(family):
    r = _res(family)

    def _f(wildcards, attempt=1):
        return int(
            math.ceil(
                (r.get("runtime", 30) + r.get("runtime_per_mcell", 0) * _dataset_mcells(wildcards))
                * attempt
            )
        )

    return _f
