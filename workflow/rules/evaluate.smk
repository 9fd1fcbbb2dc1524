# Stage: clustering evaluation of every method's ranking of a labelled dataset over the feature grid.
# One job per dataset (not per method): the job's work per ranking is a few seconds,
# less than a fresh process's imports cost, so per-method jobs spent most of their
# CPU starting up (docs/methods.md, "Evaluation protocols").


rule evaluate_clustering:
    input:
        adata="results/{dataset}/prepared.h5ad",
        tables=selection_tables,
    output:
        report(
            "results/{dataset}/clustering_nmi.tsv",
            caption="../report/clustering_nmi.rst",
            category="Clustering",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/evaluate_clustering/{dataset}.log",
    benchmark:
        "benchmarks/evaluate_clustering/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("evaluate")
    resources:
        mem_mb=get_mem_mb("evaluate"),
        runtime=get_runtime("evaluate", per_method=True),
    params:
        methods=dataset_method_list,
        clustering=config["clustering"],
        n_clusters=n_clusters,
        seed=seed(),
    script:
        "../../scripts/evaluate_clustering.py"
