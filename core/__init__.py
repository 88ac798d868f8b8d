"""Plumbing every app of Assay may import: name rules and lookups, command helpers and progress, CSV
writing, strict JSON bodies, API throttles, the leaner DRF parts of the busiest endpoints, wording. It
imports no app, so that annotation, judging and crowd can all build on it (import-linter's contracts in
pyproject.toml hold that)."""
