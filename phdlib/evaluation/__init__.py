"""Evaluation and statistics (above codes and data, below the methods).

:mod:`~phdlib.evaluation.metrics` computes NDCG@k and MRR@k exactly as the paper
defines them, exact under ties, from flat arrays; :mod:`~phdlib.evaluation.ties`
compares tie rules; :mod:`~phdlib.evaluation.fitted` is the one evaluation path
of a fitted model on a split (the paper's protocol and the full catalogue);
:mod:`~phdlib.evaluation.stats` holds the paired tests and intervals the
result tables use. Nothing here knows a method: a fitted model is anything with
``n_users``, ``n_items``, ``pairs(user, item)`` and ``table(users, items)``
(:class:`phdlib.methods.Fitted`'s scoring).
"""
from .fitted import evaluate, evaluate_catalogue, evaluate_many, tie_rules
from .metrics import summarize

__all__ = ["evaluate", "evaluate_catalogue", "evaluate_many", "tie_rules", "summarize"]
