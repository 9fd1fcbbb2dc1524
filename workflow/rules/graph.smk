# Stage: patient-similarity graph per dataset (glfs.similarity_graph, config["graph"]).


rule build_graph:
    input:
        "results/{dataset}/prepared.h5ad",
    output:
        RESULT["graph"],
    log:
        "logs/build_graph/{dataset}.log",
    benchmark:
        "logs/benchmarks/build_graph/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    priority: job_priority
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("graph")
    resources:
        mem_mb=get_mem_mb("graph"),
        runtime=get_runtime("graph"),
    params:
        graph=config["graph"],
    script:
        "../../scripts/build_graph.py"
