# Stage: clustering evaluation of every (labelled dataset, method) over the feature grid.


def n_clusters(wildcards):
    """config datasets.<ds>.n_clusters, or None (= number of distinct labels)."""
    return dataset_config(wildcards.dataset).get("n_clusters")


def clustering_tables(wildcards):
    return expand(
        "results/{dataset}/clustering/{method}.tsv",
        dataset=wildcards.dataset,
        method=dataset_methods(wildcards.dataset),
    )


rule evaluate_clustering:
    input:
        adata="results/{dataset}/prepared.h5ad",
        table="results/{dataset}/selection/{method}.tsv",
    output:
        "results/{dataset}/clustering/{method}.tsv",
    params:
        method="{method}",
        clustering=config["clustering"],
        n_clusters=n_clusters,
        seed=seed(),
    log:
        "logs/evaluate_clustering/{dataset}_{method}.log",
    benchmark:
        "benchmarks/evaluate_clustering/{dataset}_{method}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
        method=METHOD_RE,
    threads: get_threads("evaluate")
    resources:
        mem_mb=get_mem_mb("evaluate"),
        runtime=get_runtime("evaluate"),
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
    script:
        "../../scripts/merge_clustering.py"


ALL_TARGETS.extend(expand("results/{dataset}/clustering_nmi.tsv", dataset=labelled_datasets()))
