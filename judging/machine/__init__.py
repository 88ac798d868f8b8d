"""Machine judges: LLM judges (versioned prompts and strict parsers), NLI matching and de-duplication,
and the jobs that run them over a collection; the outside services sit behind judging/clients/."""
