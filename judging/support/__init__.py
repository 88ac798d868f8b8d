"""Support metrics of RAG runs: weighted precision and recall per judge, the leaderboard and the
disagreement study's report."""
