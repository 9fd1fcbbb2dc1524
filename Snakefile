# GLFS workflow: graph-Laplacian unsupervised feature selection on expression data.
# Wiring only; see README.md and docs/guides/workflow.md.


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/fetch.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/graph.smk"
include: "workflow/rules/select.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/panel.smk"
include: "workflow/rules/classify.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/sensitivity.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_outputs(),
