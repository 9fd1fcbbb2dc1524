"""Choose the defaults of the well-posed GLFS (``method="glfs"``) on neutral ground: the planted simulation.

Candidates: graph_weight (lambda1 L has mean eigenvalue graph_weight), ridge
(lambda2 = ridge * n on unit-variance genes) and centring.  Recovery score
(Wang & Goldenberg 2013, Sec. 3.1; 1 = the 4 planted genes ranked first) of
glfs.select(X, "glfs", n_features=4), as the workflow's simulation runs it,
mean over replicates; n = 200 samples, 1000 noise genes, 5-NN heat graph.
The real data sets (GBM, Golub) play no part here.

Run:  python benchmarks/glfs_design_defaults.py > benchmarks/results/glfs_design_defaults.txt
"""

import itertools
import os
import time
import warnings

import numpy as np

import glfs
from glfs.simulation._simulate import make_planted, recovery_score

N_SAMPLES, N_NOISE, REPS = 200, 1000, 3
SIGMAS = (0.2, 0.3, 0.4, 0.5)
GRAPH_WEIGHTS = (0.0, 0.1, 1.0, 10.0)
RIDGES = (1e-3, 1e-2, 1e-1, 1.0)


def main():
    data = {}
    for sigma, rep in itertools.product(SIGMAS, range(REPS)):
        X, informative, _ = make_planted(N_SAMPLES, N_NOISE, sigma, random_state=100 + rep)
        data[sigma, rep] = (X, informative, glfs.similarity_graph(X, n_neighbors=5))
    print(
        f"# planted simulation: n={N_SAMPLES}, noise genes={N_NOISE}, replicates={REPS}, k=4; load {os.getloadavg()[0]:.1f}"
    )
    print(
        "# score = mean recovery score (1 = planted genes on top); reference rows: Laplacian score, LapAOFS (paper lambdas)"
    )
    print(
        "center\tgraph_weight\tridge\t"
        + "\t".join(f"sigma={s}" for s in SIGMAS)
        + "\tmean\tnot_converged\tseconds_per_run"
    )
    for center, gw, ridge in itertools.product((True, False), GRAPH_WEIGHTS, RIDGES):  # noqa: B007
        scores, secs, nc = [], [], 0
        for sigma in SIGMAS:
            vals = []
            for rep in range(REPS):
                X, informative, W = data[sigma, rep]
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sel = glfs.select(X, "glfs", graph=W, n_features=4, graph_weight=gw, ridge=ridge, center=center)
                secs.append(time.perf_counter() - t)
                nc += not sel.params["converged"]
                vals.append(recovery_score(sel.ranking, informative))
            scores.append(np.mean(vals))
        cells = "\t".join(f"{s:.3f}" for s in scores)
        print(f"{center}\t{gw}\t{ridge}\t{cells}\t{np.mean(scores):.3f}\t{nc}\t{np.mean(secs):.2f}", flush=True)
    # Real genes have non-zero, gene-specific means; the planted noise genes have mean 0, which favours
    # no centring (a gene's mean adds to its energy).  Same data with a random offset per gene (U(0, 2)):
    print("# shifted: every gene gets a random offset U(0, 2) (real expression levels are not centred at 0)")
    for center, gw, ridge in itertools.product((True, False), (0.1, 1.0), (1e-2, 1.0)):
        scores = []
        for sigma in SIGMAS:
            vals = []
            for rep in range(REPS):
                X, informative, W = data[sigma, rep]
                Xo = X + np.random.default_rng(rep).uniform(0, 2, size=X.shape[1])
                sel = glfs.select(Xo, "glfs", graph=W, n_features=4, graph_weight=gw, ridge=ridge, center=center)
                vals.append(recovery_score(sel.ranking, informative))
            scores.append(np.mean(vals))
        print(
            f"shifted {center}\t{gw}\t{ridge}\t" + "\t".join(f"{s:.3f}" for s in scores) + f"\t{np.mean(scores):.3f}",
            flush=True,
        )
    for ref in ("laplacian_score", "lapaofs"):
        scores = [
            np.mean(
                [
                    recovery_score(
                        glfs.select(data[s, r][0], ref, graph=data[s, r][2], n_features=4).ranking, data[s, r][1]
                    )
                    for r in range(REPS)
                ]
            )
            for s in SIGMAS
        ]
        print(f"# {ref}\t" + "\t".join(f"{s:.3f}" for s in scores) + f"\t{np.mean(scores):.3f}")


if __name__ == "__main__":
    main()
