"""Crowd pages: `worker` (batches, links, panel studies, the MTurk HIT page) and `console` (the
organiser's campaign pages)."""
