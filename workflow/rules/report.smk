# Stage: the final self-contained HTML report (figures inline), the figures it shows,
# registered with report() for `snakemake --report report.zip`, and the which-method
# answers as markdown (which_method.md, for the README's "Which method?"), all in the
# configuration's report_dir (default results/).  Its inputs are the files it reads, by
# name (report_input(), analysis.smk: dataset_results() names each once); its params what
# ran (report_run()), the configuration it shows (without `resources`, which does not change
# what it says: editing them does not rerun it) and this run's benchmark files.
# REPORT_RECORD, beside the report, names the configuration that made it; a report of
# another configuration replaced there is said in the log and in the new report.
from glfs_workflow.record import report_config


rule make_report:
    input:
        unpack(report_input),
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
        figures=[figure_report(p) for p in report_figures()],
    log:
        REPORT_LOG,
    localrule: True
    conda:
        "../../envs/report.yaml"
    # the figures are drawn on this many processes (the report runs alone, at the end)
    threads: get_threads("report")
    params:
        run=report_run(),
        config=report_config(config),
        benchmarks=run_benchmarks(),
        record=REPORT_RECORD,
    script:
        "../../scripts/make_report.py"
