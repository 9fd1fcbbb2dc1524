"""Simulated data: :mod:`glfs.simulation.simulate` (the planted-feature simulation of the GLFS
paper, run through the method registry) and :mod:`glfs.simulation.scsim` (single-cell counts
with planted cell-type programmes, the Splat model).
"""
