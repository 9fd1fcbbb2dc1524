# Stage: resolve every input file of a dataset (local path, mirror, earlier
# download or URL), verify sha256, record provenance.  Local rule: runs on the
# login node of a cluster, where the network is.


rule fetch_dataset:
    input:
        fetch_local_inputs,
    output:
        provenance=RESULT["provenance"],
    log:
        "logs/fetch_dataset/{dataset}.log",
    benchmark:
        "logs/benchmarks/fetch_dataset/{dataset}.tsv"
    priority: input_priority
    localrule: True
    conda:
        "../../envs/data.yaml"
    threads: get_threads("fetch")
    resources:
        mem_mb=get_mem_mb("fetch"),
        runtime=get_runtime("fetch"),
    params:
        dataset=dataset_params,
        fetch=fetch_params,
    script:
        "../../scripts/fetch_file.py"
