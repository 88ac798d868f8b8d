"""TREC RAG nugget evaluation: the four nuggetizer scores of answers and runs (`metrics`)."""
