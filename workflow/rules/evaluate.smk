# Stage: clustering evaluation of every method's ranking of a labelled dataset over the feature grid,
# and of the random-genes floor (random gene sets of every grid size, several seeded draws; the
# report shows the floor beside every method; the Golub `random_genes` classification row is
# computed by classify_samples).  One job per dataset (not per method, nor one more for the
# floor): the job's work per ranking is a few seconds, less than a fresh process's imports cost,
# so per-method jobs spent most of their CPU starting up (docs/methods/evaluation.md, "Evaluation protocols").


rule evaluate_clustering:
    input:
        adata="results/{dataset}/prepared.h5ad",
        tables=selection_tables,
    output:
        nmi=report(
            RESULT["clustering"],
            caption="../report/clustering_nmi.rst",
            category="Clustering",
            labels={"dataset": "{dataset}"},
        ),
        floor=report(
            RESULT["random_floor"],
            caption="../report/clustering_random.rst",
            category="Clustering",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/evaluate_clustering/{dataset}.log",
    benchmark:
        "logs/benchmarks/evaluate_clustering/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("evaluate")
    resources:
        mem_mb=get_mem_mb("evaluate"),
        runtime=get_runtime("evaluate", per_method=True),
    params:
        clustering=spectral_clustering,
        n_draws=config["random_floor"]["n_draws"],
        n_clusters=n_clusters,
        seed=seed(),
    script:
        "../../scripts/evaluate_clustering.py"


# The single-cell protocol (datasets with evaluation: leiden or both): every method's ranking
# -> PCA -> kNN -> Leiden over the resolution grid, k-means on the PCs; then its floor, random
# genes of every grid size (leiden.random_draws seeded draws), and all genes once (the same set
# for every ranking).  One job per dataset, like evaluate_clustering (one import of scanpy).
rule evaluate_leiden:
    input:
        adata="results/{dataset}/prepared.h5ad",
        tables=selection_tables,
    output:
        leiden=report(
            RESULT["leiden"],
            caption="../report/clustering_leiden.rst",
            category="Clustering",
            labels={"dataset": "{dataset}"},
        ),
        floor=report(
            RESULT["leiden_random"],
            caption="../report/leiden_random.rst",
            category="Clustering",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/evaluate_leiden/{dataset}.log",
    benchmark:
        "logs/benchmarks/evaluate_leiden/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    priority: PRIORITY_LONG
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("evaluate")
    resources:
        mem_mb=get_mem_mb("evaluate"),
        runtime=get_runtime("evaluate", per_method=True),
    params:
        leiden=config["leiden"],
        feature_grid=leiden_grid,
        seed=seed(),
    script:
        "../../scripts/evaluate_leiden.py"
