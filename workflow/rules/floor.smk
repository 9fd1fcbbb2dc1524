# Stage: the random-genes floor.  Random gene sets of every grid size, evaluated with
# the clustering protocol of evaluate_clustering (several seeded draws); the report
# shows the floor beside every method.  (The Golub `random_genes` classification row
# is computed by classify_samples.)


rule evaluate_random_floor:
    input:
        adata="results/{dataset}/prepared.h5ad",
    output:
        report(
            RESULT["random_floor"],
            caption="../report/clustering_random.rst",
            category="Clustering",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/evaluate_random_floor/{dataset}.log",
    benchmark:
        "logs/benchmarks/evaluate_random_floor/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("evaluate")
    resources:
        mem_mb=get_mem_mb("evaluate"),
        runtime=get_runtime("evaluate"),
    params:
        clustering=spectral_clustering,
        n_draws=config["random_floor"]["n_draws"],
        n_clusters=n_clusters,
        seed=seed(),
    script:
        "../../scripts/evaluate_random_floor.py"


# The floor of the single-cell protocol: random genes of every grid size (leiden.random_draws
# seeded draws) and all genes, evaluated like evaluate_leiden's methods.
rule evaluate_leiden_floor:
    input:
        adata="results/{dataset}/prepared.h5ad",
    output:
        report(
            RESULT["leiden_random"],
            caption="../report/leiden_random.rst",
            category="Clustering",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/evaluate_leiden_floor/{dataset}.log",
    benchmark:
        "logs/benchmarks/evaluate_leiden_floor/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    priority: PRIORITY_LONG
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("evaluate")
    resources:
        mem_mb=get_mem_mb("evaluate"),
        runtime=get_runtime("evaluate"),
    params:
        leiden=config["leiden"],
        feature_grid=leiden_grid,
        seed=seed(),
    script:
        "../../scripts/evaluate_leiden_floor.py"
