"""The evalkit leaderboard (``evalkit leaderboard --results DIR``).

``data`` reads run records into pandas frames (summaries first, samples on demand) and ``tables``
builds the leaderboard, ranks, provenance, breakdowns, comparisons and arena tables from them;
``charts`` makes the Altair charts. None of those import Streamlit, so notebooks can use them.
``app`` is the Streamlit entry point and ``view_*`` its pages.
"""
