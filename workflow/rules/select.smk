# Stage: one feature-selection job per (dataset, method); AnnData with every method's results.


rule select_features:
    input:
        adata="results/{dataset}/prepared.h5ad",
        graph=RESULT["graph"],
    output:
        table=report(
            SELECTION_TABLE,
            caption="../report/selection.rst",
            category="Gene selection",
            subcategory="{dataset}",
            labels={"dataset": "{dataset}", "method": "{method}"},
        ),
        meta=SELECTION_META,
    log:
        "logs/select_features/{dataset}_{method}.log",
    benchmark:
        "logs/benchmarks/select_features/{dataset}_{method}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
        method=METHOD_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("select")
    resources:
        mem_mb=get_mem_mb("select"),
        runtime=get_runtime("select"),
    params:
        method="{method}",
        n_features=config["selection"]["n_features"],
        method_params=method_params,
        seed=seed(),
    script:
        "../../scripts/select_features.py"


rule annotate_adata:
    input:
        adata="results/{dataset}/prepared.h5ad",
        graph=RESULT["graph"],
        tables=selection_tables,
        metas=selection_metas,
    output:
        RESULT["adata"],
    log:
        "logs/annotate_adata/{dataset}.log",
    benchmark:
        "logs/benchmarks/annotate_adata/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("annotate")
    resources:
        mem_mb=get_mem_mb("annotate"),
        runtime=get_runtime("annotate"),
    params:
        graph=config["graph"],
    script:
        "../../scripts/annotate_adata.py"


rule extract_glfs_path:
    input:
        meta=glfs_path_meta,
    output:
        report(
            RESULT["glfs_path"],
            caption="../report/glfs_path.rst",
            category="GLFS sparsity path",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/extract_glfs_path/{dataset}.log",
    wildcard_constraints:
        dataset=DATASET_RE,
    localrule: True
    conda:
        "../../envs/glfs.yaml"
    script:
        "../../scripts/extract_glfs_path.py"
