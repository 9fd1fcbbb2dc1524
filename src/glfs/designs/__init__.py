"""Selections as experimental designs on a graph (the A- and D-optimal family):

- :mod:`glfs.designs.optimal`: greedy LapAOFS / LapDOFS (He et al. 2011);
- :mod:`glfs.designs.budgeted`: the well-posed GLFS, a budgeted relaxation of the design;
- :mod:`glfs.designs.gradient` (with ``gradient_model``, ``gradient_solver``, ``gradient_path``):
  the published GLFS readings (Wang & Goldenberg 2013), their objective, solver and lam path;
- :mod:`glfs.designs.ufi`: UFI, joint feature and instance selection (Zhang et al. 2012).
"""
