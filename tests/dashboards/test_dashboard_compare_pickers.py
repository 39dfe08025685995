"""The Compare page's run pickers stay bounded at a team's scale: the newest ``MAX_CHOICES`` runs that
match the search, plus the runs already picked (a deep link's or the user's), never 10,000 options."""
from __future__ import annotations

import pandas as pd

from evalkit.dashboards.view_compare import MAX_CHOICES, offered


def runs_frame(n: int) -> pd.DataFrame:
    ids = [f"r{i:05d}" for i in range(n)]                   # newest first, as pairs.run_choices gives them
    return pd.DataFrame({"run_id": ids, "choice": [f"team/model-{i % 50:02d} · gsm8k · {r}" for i, r in
                                                   enumerate(ids)]})


def test_the_pickers_offer_the_newest_matching_runs_and_keep_the_picked_ones():
    runs = runs_frame(1000)
    ids, matches = offered(runs, "", ["r00999", "r00000"])
    assert matches == 1000 and ids[:MAX_CHOICES] == list(runs["run_id"][:MAX_CHOICES])
    assert ids[MAX_CHOICES:] == ["r00999"]                       # a pick beyond the page stays offered
    ids, matches = offered(runs, "MODEL-07 ", [])
    assert matches == 20 and all(runs.set_index("run_id").loc[i, "choice"].startswith("team/model-07") for i in ids)
    ids, matches = offered(runs, "no such model", ["r00005"])
    assert matches == 0 and ids == ["r00005"]
