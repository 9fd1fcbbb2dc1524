# Stage: the final self-contained HTML report (figures inline), the figures it shows,
# registered with report() for `snakemake --report report.zip`, and the which-method
# answers as markdown (which_method.md, for the README's "Which method?"), all in the
# configuration's report_dir (default results/).  Its inputs are analysis_targets()
# (analysis.smk): every other final output.  REPORT_RECORD, beside the report, names the
# configuration that made it; a report of another configuration replaced there is said
# in the log and in the new report.


rule make_report:
    input:
        report_inputs(),
    output:
        html=report(
            REPORT_HTML,
            caption="../report/report_html.rst",
            category="Final report",
        ),
        which=report(
            REPORT_WHICH,
            caption="../report/which_method.rst",
            category="Final report",
        ),
        figures=[figure_report(n, p) for n, p in report_figures().items()],
    log:
        "logs/make_report/report.log",
    localrule: True
    conda:
        "../../envs/report.yaml"
    params:
        layout=report_layout(),
        figures=report_figures(),
        config=config,
        record=REPORT_RECORD,
    script:
        "../../scripts/make_report.py"
