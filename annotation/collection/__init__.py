"""The collection's own data in: topics, passages and runs, and a run's validation report."""
