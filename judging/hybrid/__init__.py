"""Hybrid assessment: estimates of run scores from a few human labels plus machine labels on every unit.

`estimators` (classical, PPI, PPI++, inverse-probability-weighted active inference), `units` (the per-unit
values of a measure under a human and a machine judge), `sampling` (which units people judge, with their
inclusion probabilities), `planning` (how many more labels a target needs), `simulation` (coverage and
width against budget), `services` (the writes), `views` and `charts` (the organiser pages).
"""
