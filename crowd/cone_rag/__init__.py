"""The crowd's files in and out: MTurk's batch input and results CSV, the CONE-RAG study's published
files, and the upload kinds that put the latter on the console's Files page."""
