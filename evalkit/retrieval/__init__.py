"""Retrieval evaluation: trec_eval-exact measures with recorded conventions (``measures``), TREC and
BEIR file formats (``formats``), scoring a saved run into a run record (``scoring``), and the
retrievers evalkit runs itself: BM25, dense bi-encoders, hybrid fusion (``bm25``, ``dense``, ``fusion``).
"""
