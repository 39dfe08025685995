"""Run records as pandas frames: the names notebooks and the views have used since the start, now
living in modules with one job each (no Streamlit, no engine, no backend):

- ``store``: ``ResultsStore`` (records read lazily, refreshed by a directory listing);
- ``labels``: row/column keys and labels, task families;
- ``cells``: records to run rows and cell rows;
- ``samples``: samples files to display-ready frames (bad lines skipped and reported);
- ``battles``: battle files rated in memory.
"""
from __future__ import annotations

from .battles import battles_record
from .cells import CELL_COLUMNS, RUN_COLUMNS
from .labels import ARENA_TASK, FAMILIES, col_key, entry_key, gen_text, is_redacted, task_family
from .samples import (HIDDEN, SAMPLE_COLUMNS, as_text, empty_samples, failures, format_metric, sample_metrics,
                      samples_frame, split_prompt)
from .store import SAMPLE_CACHE_SIZE, ResultsStore

__all__ = ["ARENA_TASK", "CELL_COLUMNS", "FAMILIES", "HIDDEN", "RUN_COLUMNS", "SAMPLE_CACHE_SIZE", "SAMPLE_COLUMNS",
           "ResultsStore", "as_text", "battles_record", "col_key", "empty_samples", "entry_key", "failures",
           "format_metric", "gen_text", "is_redacted", "sample_metrics", "samples_frame", "split_prompt",
           "task_family"]
