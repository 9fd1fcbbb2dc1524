# Stage: read, label, preprocess and check each dataset into
# results/{dataset}/prepared.h5ad (obs = samples, var = genes; X float64, dense for dense input, CSR for a sparse .h5ad;
# raw counts in layers["counts"] when the input holds them).


rule prepare_dataset:
    input:
        provenance=RESULT["provenance"],
    output:
        h5ad="results/{dataset}/prepared.h5ad",
    log:
        "logs/prepare_dataset/{dataset}.log",
    benchmark:
        "logs/benchmarks/prepare_dataset/{dataset}.tsv"
    priority: input_priority
    conda:
        "../../envs/data.yaml"
    threads: get_threads("prepare")
    resources:
        mem_mb=get_mem_mb("prepare"),
        runtime=get_runtime("prepare"),
    params:
        dataset=dataset_params,
        max_expanded_gb=config["fetch"]["max_expanded_gb"],
    script:
        "../../scripts/prepare_dataset.py"
