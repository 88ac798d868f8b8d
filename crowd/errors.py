"""Writes of crowd work, by topic: `campaigns` (compose, batches, test questions, aggregate), `answers`
(in-platform, provisional and confirmed), `studies` (external panels) and `mturk` (publish, sync, review,
bonus, expire). The error they share is here, so no topic imports another for it."""


class CrowdError(Exception):
    """Bad input to a crowd service; views answer 400 with it, commands raise CommandError."""
