"""The paper's variational hashing model (Section 4): VH (Hamming) and VH_PHD.

- :mod:`phdlib.models.vh`: the PyTorch model, its training loop and the two
  registered methods ``VH`` and ``VH_PHD`` (see :mod:`phdlib.methods`);
- :mod:`phdlib.models.stopping`: the training-budget rule (evaluation
  interval, patience, when early stopping may start), shared by both;
- :mod:`phdlib.models.evaluation`: ranking held-out ratings through packed
  codes and :mod:`phdlib.codes` (the kernels the runtime chapter measures).

Importing this package does not import PyTorch; :mod:`phdlib.models.vh` does.
"""
