"""Run reports: each run's validation at upload, and per run and judge how deep its rankings are judged."""
