# Stage: the random-genes floor of the single-cell protocol (the spectral protocol's floor is
# computed by evaluate_clustering, in the same job as the methods).


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
