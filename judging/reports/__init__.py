"""Stored reports: figures over many labels computed on a task worker and kept under a fingerprint of
their inputs, so a page answers at once (judging/reports/store.py). Shared by judging's features, as
judging/scores is; it imports none of them (a report's compute function is named by dotted path)."""
