"""Calibration of TREC RAG nugget evaluations: two evaluations of the same runs (each an assignment judge
and an importance judge) compared as the track reports it, run-level Kendall's tau with its interval and
the per-topic agreement with its spread; a page and the `nugget_calibration` command."""
