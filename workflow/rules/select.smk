# Stage: one feature-selection job per (dataset, method); AnnData with every method's results.


def method_params(wildcards):
    """Per-method parameters from config["selection"]["params"] (plain dict)."""
    return dict(config.get("selection", {}).get("params", {}).get(wildcards.method, {}))


def selection_tables(wildcards):
    return expand(
        "results/{dataset}/selection/{method}.tsv",
        dataset=wildcards.dataset,
        method=dataset_methods(wildcards.dataset),
    )


def selection_metas(wildcards):
    return expand(
        "results/{dataset}/selection/{method}.json",
        dataset=wildcards.dataset,
        method=dataset_methods(wildcards.dataset),
    )


def glfs_path_meta(wildcards):
    return f"results/{wildcards.dataset}/selection/{glfs_path_method()}.json"


rule select_features:
    input:
        adata="results/{dataset}/prepared.h5ad",
        graph="results/{dataset}/graph.npz",
    output:
        table=report(
            "results/{dataset}/selection/{method}.tsv",
            caption="../report/selection.rst",
            category="Gene selection",
            subcategory="{dataset}",
            labels={"dataset": "{dataset}", "method": "{method}"},
        ),
        meta="results/{dataset}/selection/{method}.json",
    params:
        method="{method}",
        n_features=config.get("selection", {}).get("n_features", 100),
        method_params=method_params,
        seed=seed(),
    log:
        "logs/select_features/{dataset}_{method}.log",
    benchmark:
        "benchmarks/select_features/{dataset}_{method}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
        method=METHOD_RE,
    threads: get_threads("select")
    resources:
        mem_mb=get_mem_mb("select"),
        runtime=get_runtime("select"),
    script:
        "../../scripts/select_features.py"


rule annotate_adata:
    input:
        adata="results/{dataset}/prepared.h5ad",
        graph="results/{dataset}/graph.npz",
        tables=selection_tables,
        metas=selection_metas,
    output:
        "results/{dataset}/adata.h5ad",
    params:
        glfs_weight_method=glfs_path_method(),
        graph=config["graph"],
    log:
        "logs/annotate_adata/{dataset}.log",
    benchmark:
        "benchmarks/annotate_adata/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    threads: get_threads("annotate")
    resources:
        mem_mb=get_mem_mb("annotate"),
        runtime=get_runtime("annotate"),
    script:
        "../../scripts/annotate_adata.py"


rule extract_glfs_path:
    input:
        meta=glfs_path_meta,
    output:
        report(
            "results/{dataset}/glfs_path.tsv",
            caption="../report/glfs_path.rst",
            category="GLFS sparsity path",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/extract_glfs_path/{dataset}.log",
    wildcard_constraints:
        dataset=DATASET_RE,
    localrule: True
    script:
        "../../scripts/extract_glfs_path.py"


ALL_TARGETS.extend(expand("results/{dataset}/adata.h5ad", dataset=run_datasets()))
for _ds in run_datasets():
    ALL_TARGETS.extend(
        expand("results/{dataset}/selection/{method}.tsv", dataset=_ds, method=dataset_methods(_ds))
    )
if glfs_path_method() is not None:
    ALL_TARGETS.extend(expand("results/{dataset}/glfs_path.tsv", dataset=run_datasets()))
