"""Knowledge bases: documents parsed into chunks, embedded, indexed for vector, keyword
(BM25) and hybrid retrieval, and measured on question sets.

One concept per module: ``parse`` (files to sections), ``chunk`` (sections to chunks),
``embed`` (texts to unit vectors), ``index`` (the vector, keyword and hybrid index of one
knowledge base), ``evaluate`` (recall@k, MRR, nDCG@10) and ``service`` (knowledge bases in
projects). Nothing here imports torch until an embedding is asked for.
"""
