"""TREC RAG nugget evaluation in the collection: nuggetizer's files in and out (`io`)."""
