"""TREC RAG nugget evaluation in the collection: the assessor pages and their work, and nuggetizer's files
in and out (`io`)."""
