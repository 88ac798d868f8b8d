"""Nugget metrics of RAG runs: NtN and NtR recall and precision against gold nuggets."""
