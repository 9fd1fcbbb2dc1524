"""Simulated data.

- the planted-feature simulation of the GLFS paper, run through the method registry
  (:func:`make_planted`, :func:`recovery_score`, :func:`simulation_grid`, :func:`recovery_experiment`);
- single-cell counts with planted cell-type programmes, batches and dropout, the Splat model
  (:func:`simulate_counts`), with its parameters estimated from real counts (:func:`estimate_params`,
  :func:`estimate_batch_params`).

The implementation modules (``_simulate``, ``_scsim``, ``_counts``, ``_estimate``, ``_estimate_batch``) are
the library's own.
"""

from glfs.simulation._estimate import SimParams, estimate_params
from glfs.simulation._estimate_batch import BatchParams, estimate_batch_params
from glfs.simulation._scsim import SimulatedCounts, simulate_counts
from glfs.simulation._simulate import make_planted, point_seed, recovery_experiment, recovery_score, simulation_grid

__all__ = [
    "make_planted",
    "recovery_score",
    "simulation_grid",
    "point_seed",
    "recovery_experiment",
    "simulate_counts",
    "SimulatedCounts",
    "estimate_params",
    "SimParams",
    "estimate_batch_params",
    "BatchParams",
]
