"""The default run's light evaluation protocol against the full one: what fewer runs, draws and replicates do to
the report's conclusions.

    python benchmarks/protocol_light.py FULL_RESULTS                 # the table, from a full-protocol run
    python benchmarks/protocol_light.py FULL_RESULTS --light LIGHT    # and check a light run's tables against it

The full protocol is config.yaml with config/full.yaml over it (``snakemake --cores 2 --configfile
config/full.yaml``); the light one is config.yaml alone (the default run).  Every random step of the
evaluations takes its seed from a prefix-consistent list (``glfs.evaluate.run_seeds(seed, n)`` is the
first n of ``run_seeds(seed, m)``; the random draws and the simulation replicates likewise), so the light
protocol's rows are the full run's first runs, draws and replicates: this script takes them from
FULL_RESULTS, and with --light checks that a light run wrote exactly those rows (same values to the
last digit of the tables' text).

Per dataset and protocol it compares what the report concludes (glfs_workflow.which.which_method, the
report's own function): the best method, the methods within noise of it, every method's side of the
random floor and of the best HVG flavour (scaled score 1), the order of the methods' means, and the
width of the intervals (mean sd over runs, sd over the floor's draws); for the simulation, each
method's full-recovery limits (the paper-versus-run rows).  Writes benchmarks/results/protocol_light.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from bench.settings import RESULTS, ROOT

sys.path.insert(0, str(ROOT / "src"))
from glfs_workflow.files import read_tsv  # noqa: E402
from glfs_workflow.which import which_method  # noqa: E402

# (result file, protocol, the table of its floor) per evaluated kind
EVALUATIONS = {
    "spectral": ("clustering_nmi.tsv", "clustering_random.tsv"),
    "leiden": ("clustering_leiden.tsv", "leiden_random.tsv"),
}


def protocols() -> tuple[dict, dict]:
    """(light, full) settings: config.yaml's, and config.yaml's with config/full.yaml over it."""
    light = yaml.safe_load((ROOT / "config.yaml").read_text())
    over = yaml.safe_load((ROOT / "config" / "full.yaml").read_text())
    full = {k: ({**light[k], **v} if isinstance(v, dict) else v) for k, v in {**light, **over}.items()}
    return light, full


def counts(cfg: dict) -> dict:
    """The run counts a protocol sets."""
    return {
        "clustering_runs": cfg["clustering"]["n_runs"],
        "floor_draws": cfg["random_floor"]["n_draws"],
        "leiden_runs": cfg["leiden"]["n_runs"],
        "leiden_draws": cfg["leiden"]["random_draws"],
        "replicates": cfg["simulation"]["replicates"],
    }


def light_rows(name: str, df: pd.DataFrame, c: dict) -> pd.DataFrame:
    """The rows of a full-protocol table that the light protocol ``c`` computes (its first runs, draws, replicates)."""
    keep = np.ones(len(df), dtype=bool)
    if name == "clustering_nmi.tsv":
        keep &= df["run"] < c["clustering_runs"]
    elif name == "clustering_random.tsv":
        keep &= df["draw"] < c["floor_draws"]
    elif name in ("clustering_leiden.tsv", "leiden_random.tsv"):
        keep &= df["run"] < c["leiden_runs"]
        if "draw" in df:
            keep &= df["draw"] < c["leiden_draws"]
    elif name == "recovery.tsv":
        keep &= df["replicate"] < c["replicates"]
    return df[keep].reset_index(drop=True)


def conclusions(cdf, rdf, protocol, n_genes) -> dict:
    """What the report concludes from one dataset's tables under one protocol."""
    wm = which_method(cdf, rdf, protocol=protocol, n_genes=n_genes)
    m = wm.methods.set_index("method")
    uns = m[~m["supervised"]]
    return {
        "best": wm.best,
        "within": set(wm.within_noise),
        "above_floor": set(uns.index[uns["above_floor"] > 0]),
        "above_hvg": set(uns.index[uns["scaled"] > 1]) if wm.hvg else None,
        "order": list(uns.sort_values("mean", ascending=False).index),
        "sd": float(np.nanmean(m["sd"])),
        "floor_sd": wm.floor_sd,
        "n_runs": wm.n_runs,
        "n_draws": wm.n_draws,
    }


def _n_genes(results: Path, dataset: str) -> int | None:
    sel = sorted((results / dataset / "selection").glob("*.tsv"))
    return sum(1 for _ in open(sel[0])) - 1 if sel else None


def compare_dataset(results: Path, dataset: str, light: dict) -> list[str]:
    """Markdown lines: the conclusions of one dataset, full against light."""
    lines = []
    for protocol, (name, floor_name) in EVALUATIONS.items():
        if not (results / dataset / name).exists():
            continue
        cdf, rdf = read_tsv(results / dataset / name), read_tsv(results / dataset / floor_name)
        n = _n_genes(results, dataset)
        f = conclusions(cdf, rdf, protocol, n)
        g = conclusions(light_rows(name, cdf, light), light_rows(floor_name, rdf, light), protocol, n)
        flips_floor = sorted(f["above_floor"] ^ g["above_floor"])
        flips_hvg = None if f["above_hvg"] is None else sorted(f["above_hvg"] ^ g["above_hvg"])
        moved = [m for i, m in enumerate(f["order"]) if g["order"][i] != m]
        lines.append(
            f"| {dataset} | {protocol} | {f['n_runs']}/{f['n_draws']} -> {g['n_runs']}/{g['n_draws']} | "
            f"{f['best']} -> {g['best']} | {', '.join(sorted(f['within'])) or '-'} -> {', '.join(sorted(g['within'])) or '-'} | "
            f"{', '.join(flips_floor) or 'none'} | {'no HVG' if flips_hvg is None else ', '.join(flips_hvg) or 'none'} | "
            f"{len(moved)} of {len(f['order'])}{' (' + ', '.join(moved) + ')' if moved else ''} | {f['sd']:.3f} -> {g['sd']:.3f} | {f['floor_sd']:.3f} -> {g['floor_sd']:.3f} |"
        )
    return lines


def recovery_limits(rec: pd.DataFrame) -> pd.DataFrame:
    """Per method and axis: the largest sigma (at the fixed N) and N (at the fixed sigma) with full recovery
    in every replicate, as the report's paper-versus-run rows take them."""
    out = []
    for m, d in rec.groupby("method", sort=False):
        full = d.groupby(["sigma", "n_noise"])["score"].min() >= 1.0
        full = full.reset_index()
        out.append(
            {
                "method": m,
                "max sigma": full.loc[full["score"], "sigma"].max(),
                "max N": full.loc[full["score"], "n_noise"].max(),
            }
        )
    return pd.DataFrame(out).set_index("method")


def check_light_run(full: Path, light_dir: Path, light: dict) -> list[str]:
    """Lines naming every light-run table that is not the full run's subset (none when they all are)."""
    bad, n = [], 0
    for path in sorted(light_dir.glob("*/*.tsv")):
        name = path.name
        ref = full / path.relative_to(light_dir)
        if (
            name
            not in (
                "clustering_nmi.tsv",
                "clustering_random.tsv",
                "clustering_leiden.tsv",
                "leiden_random.tsv",
                "recovery.tsv",
            )
            or not ref.exists()
        ):
            continue
        n += 1
        a = read_tsv(path)
        b = light_rows(name, read_tsv(ref), light)
        if not a.equals(b):
            bad.append(f"- {path.relative_to(light_dir)}: not the full run's first rows ({len(a)} against {len(b)})")
    return [f"Light run checked: {n} tables, {len(bad)} not the full run's subset.", *bad]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("full", type=Path, help="results/ of a run with config/full.yaml")
    ap.add_argument("--light", type=Path, help="results/ of a default (light) run, checked against the full one")
    ap.add_argument("--note", default="", help="when and on which commit the runs were made")
    args = ap.parse_args()
    light_cfg, full_cfg = protocols()
    light, full = counts(light_cfg), counts(full_cfg)
    datasets = [d for d in light_cfg["run"] if (args.full / d).is_dir()]
    lines = [
        "# The light default protocol against the full one (benchmarks/protocol_light.py)",
        "",
        args.note,
        "",
        f"Full (config/full.yaml): {full}.  Light (config.yaml, the default run): {light}.",
        "",
        "Runs/draws: the runs per gene count and the floor's draws; best and within noise: the report's "
        "`which_method`; floor / HVG flips: methods whose grid-averaged mean changes side of the random floor "
        "or of the best HVG flavour (scaled 1); order moves: unsupervised methods whose place in the order of "
        "means changes; sd: mean sd over runs of the methods, and the floor's sd over draws.",
        "",
        "| dataset | protocol | runs/draws | best | within noise | floor flips | HVG flips | order moves | sd | floor sd |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in datasets:
        lines += compare_dataset(args.full, d, light)
    rec = args.full / "simulation" / "recovery.tsv"
    if rec.exists():
        df = read_tsv(rec)
        a, b = recovery_limits(df), recovery_limits(light_rows("recovery.tsv", df, light))
        changed = [m for m in a.index if not a.loc[m].equals(b.loc[m])]
        key = ["method", "sigma", "n_noise"]
        moved = (
            df.groupby(key)["score"].mean() - light_rows("recovery.tsv", df, light).groupby(key)["score"].mean()
        ).abs()
        lines += [
            "",
            f"Simulation ({full['replicates']} -> {light['replicates']} replicates): full-recovery limits "
            f"(largest sigma at N = 1000, largest N at sigma = 0.2) changed for: {', '.join(changed) or 'none'}; "
            f"the mean Score of {int((moved > 0).sum())} of {moved.size} (method, grid point) cells moved, by at "
            f"most {moved.max():.3f}.",
            "",
            a.join(b, rsuffix=" (light)").to_markdown(),
        ]
    if args.light:
        lines += ["", *check_light_run(args.full, args.light, light)]
    (RESULTS / "protocol_light.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
