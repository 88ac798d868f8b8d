"""Work handed to people one topic at a time: support units and the TREC RAG nugget steps.

Relevance hands out leased copies of pooled units (annotation.relevance) and crowd hands out batches
(crowd); every other family gives an assessor a whole topic in one condition, through the one model here.
"""
