# Stage: the panel's cross-set summary (config `panel`, config/panel.yaml).  No evaluation of its own:
# it reads each panel set's Leiden tables (rule evaluate_leiden: clustering_leiden.tsv and
# leiden_random.tsv) and writes, in the report directory, the scores per set, method and gene count
# (panel_scores.tsv), their mean over the sets (panel_summary.tsv, the layout of
# resources/singlecell/panel_summary.tsv that the report's advice reads) and leave-one-dataset-out
# (panel_lodo.tsv): for each held-out set, the method chosen on the other sets, its score there,
# and random genes and all genes on that set (glfs_workflow.panel).


rule panel_summary:
    input:
        leiden=panel_leiden_tables,
        floor=panel_floor_tables,
    output:
        **PANEL_OUTPUTS,
    log:
        f"logs/panel_summary/{REPORT_DIR}/panel.log",
    localrule: True
    conda:
        "../../envs/glfs.yaml"
    params:
        datasets=panel_datasets(),
        feature_grid=config["leiden"]["feature_grid"],
    script:
        "../../scripts/panel_summary.py"
