"""Tables, figures and computed findings of the book, from stored runs.

Everything here takes runs (:class:`phdlib.results.Run`, usually from
:func:`phdlib.experiments.ensure`) and returns tables (pandas), matplotlib
axes or sentences; nothing trains (training of the VH variant study is
:mod:`phdlib.studies.variants`). The paper's numbers come from :mod:`phdlib.paper`,
method lists and labels from the registry (:mod:`phdlib.methods`).

Chapters write ``from phdlib import report`` and call:

- ours against the paper (:mod:`.compare`): :func:`comparison`, :func:`within`,
  :func:`max_abs_diff`, the acceptance band :data:`TOLERANCE`;
- Table 1 (:mod:`.table1`): :func:`table1` (a :class:`Table1`),
  :func:`format_table1`, :func:`table1_html`, :func:`table1_findings`,
  :func:`additions_findings`, :func:`significance_table`; the seed spread
  (:mod:`.seeds`): :func:`seed_spread`, :func:`noise_bands`,
  :func:`seed_findings`; grouping runs
  (:mod:`.groups`): :func:`by_method`, :func:`per_user`;
- Figures 1-3 (:mod:`.users`): :func:`user_features`, :func:`smooth_nearest`,
  :func:`users_curves`, :func:`plot_users`, :func:`users_findings`;
- Figure 4 (:mod:`.sampling`): :func:`sampling_table`, :func:`plot_sampling`,
  :func:`sampling_findings`;
- Figure 5 (:mod:`.convergence`): :func:`plot_convergence`,
  :func:`convergence_summary`, :func:`convergence_findings`;
- the VH chapter (:mod:`.vh`): :func:`chance_level`, :func:`variants_table`,
  :func:`variants_findings`, :func:`paired_tests`, :func:`plot_curves`,
  :func:`reached_cap`;
- presentation (:mod:`.style`): :func:`label`, :data:`COLORS`, :data:`METRICS`,
  :data:`METRIC_LABELS`, :func:`fmt_value`;
- how a page shows it (:mod:`.page`, imported as ``from phdlib.report import page``):
  findings as Markdown, captioned tables, the folded "How this page was computed" block.
"""
from __future__ import annotations

from .compare import FIELDS, TOLERANCE, comparison, max_abs_diff, mean_std, within
from .convergence import convergence_findings, convergence_summary, plot_convergence
from .groups import by_method, per_user
from .sampling import plot_sampling, sampling_findings, sampling_table
from .style import COLORS, METRIC_LABELS, METRICS, dataset_label, fmt_value, label
from .seeds import Z95, noise_bands, seed_findings, seed_spread, seed_table
from .table1 import (FINDING3_METHODS, Table1, additions_findings, format_table1,
                     significance_table, table1, table1_findings, table1_html)
from .users import ORDERS, plot_users, smooth_nearest, user_features, users_curves, users_findings
from .vh import paired_tests, plot_curves, reached_cap
from .vh_variants import chance_level, variants_findings, variants_table

__all__ = [
    "TOLERANCE", "FIELDS", "comparison", "within", "max_abs_diff", "mean_std",
    "by_method", "per_user",
    "Table1", "table1", "format_table1", "table1_html", "table1_findings", "additions_findings",
    "significance_table", "FINDING3_METHODS",
    "Z95", "seed_spread", "seed_table", "noise_bands", "seed_findings",
    "ORDERS", "user_features", "smooth_nearest", "users_curves", "plot_users", "users_findings",
    "sampling_table", "plot_sampling", "sampling_findings",
    "plot_convergence", "convergence_summary", "convergence_findings",
    "chance_level", "variants_table", "variants_findings", "paired_tests", "plot_curves",
    "reached_cap",
    "COLORS", "METRICS", "METRIC_LABELS", "label", "dataset_label", "fmt_value",
]
