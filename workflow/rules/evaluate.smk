# Stage: clustering evaluation of every (labelled dataset, method) over the feature grid.


rule evaluate_clustering:
    input:
        adata="results/{dataset}/prepared.h5ad",
        table=SELECTION_TABLE,
    output:
        "results/{dataset}/clustering/{method}.tsv",
    log:
        "logs/evaluate_clustering/{dataset}_{method}.log",
    benchmark:
        "benchmarks/evaluate_clustering/{dataset}_{method}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
        method=METHOD_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("evaluate")
    resources:
        mem_mb=get_mem_mb("evaluate"),
        runtime=get_runtime("evaluate"),
    params:
        method="{method}",
        clustering=config["clustering"],
        n_clusters=n_clusters,
        seed=seed(),
    script:
        "../../scripts/evaluate_clustering.py"


rule merge_clustering:
    input:
        clustering_tables,
    output:
        report(
            "results/{dataset}/clustering_nmi.tsv",
            caption="../report/clustering_nmi.rst",
            category="Clustering",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/merge_clustering/{dataset}.log",
    wildcard_constraints:
        dataset=DATASET_RE,
    localrule: True
    conda:
        "../../envs/glfs.yaml"
    script:
        "../../scripts/merge_clustering.py"
