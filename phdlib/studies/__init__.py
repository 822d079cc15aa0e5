"""Studies beyond one grid (above the experiments): questions the paper leaves open, answered from runs.

:mod:`~phdlib.studies.variants` (the VH variants tried to close VH's gap),
:mod:`~phdlib.studies.ablation` (is VH_PHD's gain the distance or learning for
it?), :mod:`~phdlib.studies.scale` (what a reproduction costs in time and
memory, at the paper's scale) and :mod:`~phdlib.studies.sample_tuning` (does a
grid chosen on a user sample choose as the grid on all the data?). Each builds
on :mod:`phdlib.experiments` and leaves the numbers to :mod:`phdlib.report`.
"""
