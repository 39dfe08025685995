"""The evalkit leaderboard (``evalkit leaderboard --results DIR``); it reads run records only (no engine,
no backend).

Without Streamlit (notebooks can use them): ``store`` (``ResultsStore``: records read lazily),
``labels`` (row/column keys and labels), ``cells`` (records to rows), ``samples`` (samples files,
bad lines reported), ``battles`` (battle files rated in memory), ``tables`` (ranks, filters,
provenance, breakdowns), ``ranking`` (the honest overall), ``board`` (the leaderboard table),
``pairs`` (comparisons, arena tables), ``charts`` (Altair); ``data`` re-exports the original names.
With Streamlit: ``app`` (the entry point), ``urlstate`` (state in the URL) and the ``view_*`` pages.
"""
