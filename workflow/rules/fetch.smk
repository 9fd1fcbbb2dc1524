# Stage: resolve every input file of a dataset (local path, mirror, earlier
# download or URL), verify sha256, record provenance.  Local rule: runs on the
# login node of a cluster, where the network is.

from glfs.io import dataset_file_specs, is_url


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
    """config["fetch"] with defaults (plain dict)."""
    f = {"mirror": None, "download_dir": "results/downloads", "retries": 4, "timeout": 60, "backoff": 2.0}
    f.update(config.get("fetch", {}) or {})
    return f


def dataset_params(wildcards):
    """The dataset's config entry (plain dict)."""
    return dict(dataset_config(wildcards.dataset))


rule fetch_dataset:
    input:
        fetch_local_inputs,
    output:
        provenance="results/{dataset}/provenance.json",
    params:
        dataset=dataset_params,
        fetch=fetch_params,
    log:
        "logs/fetch_dataset/{dataset}.log",
    benchmark:
        "benchmarks/fetch_dataset/{dataset}.tsv"
    localrule: True
    threads: get_threads("fetch")
    resources:
        mem_mb=get_mem_mb("fetch"),
        runtime=get_runtime("fetch"),
    script:
        "../../scripts/fetch_file.py"
