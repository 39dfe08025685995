"""Arena page: ratings with 95% CI whiskers, win-rate and battle-count heatmaps, judge figures."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from evalkit.dashboards import charts, pairs


def render(store) -> None:
    st.title("Arena")
    boards = pairs.arena_boards(store)
    if not boards:
        st.info("No arena records. Rate battles with `evalkit arena rate battles.jsonl --output RESULTS`, "
                "judge some with `evalkit arena run`, or start the leaderboard with `--battles FILE`.")
        return
    titles = {b.run_id: b.title for b in boards}
    run_id = st.selectbox("Arena", list(titles), format_func=titles.get, key="arena_run")
    b = next(x for x in boards if x.run_id == run_id)
    st.altair_chart(charts.ci_dots(b.ratings.assign(n=b.ratings["n_battles"]), "model", "rating",
                                   title=f"{b.method.upper()} rating (95% bootstrap CI)"), key="arena_chart",
                    width="stretch")
    st.dataframe(b.ratings, hide_index=True, key="arena_table", column_config={
        "model": st.column_config.TextColumn("model", pinned=True),
        "rating": st.column_config.NumberColumn("rating ↑", format="%.1f"),
        "ci_low": st.column_config.NumberColumn("CI low", format="%.1f"),
        "ci_high": st.column_config.NumberColumn("CI high", format="%.1f")})
    st.caption("rank = 1 + the number of models whose CI lower bound is above this model's upper bound "
               "(LMArena's rule), so models with overlapping intervals can share a place.")
    if b.style is not None:
        with st.container(key="arena_style"):
            st.subheader("Style control")
            st.caption("LMArena's style control: Bradley-Terry with each battle's answer-length, header, list and "
                       "bold differences as covariates, so the ratings compare models with style held equal.")
            st.altair_chart(charts.ci_dots(b.style.assign(n=b.style["n_battles"]), "model", "rating",
                                           title="Style-controlled BT rating (95% bootstrap CI)"),
                            key="arena_style_chart", width="stretch")
            st.dataframe(b.style[["model", "rating", "ci_low", "ci_high", "rank", "n_battles"]], hide_index=True,
                         key="arena_style_table")
            if b.style_coefs is not None:
                st.dataframe(b.style_coefs, hide_index=True, key="arena_style_coefs")
    st.altair_chart(charts.heatmap(b.win_rate, "Win rate of row over column (decisive battles)"),
                    key="arena_winrate", width="stretch")
    st.altair_chart(charts.heatmap(b.battle_count, "Battles per pair", ".0f", "blues"), key="arena_counts",
                    width="stretch")
    if b.judge:
        st.subheader("Judge reliability")
        st.caption("parse failures: judgments whose verdict could not be read; swap disagreement: share of "
                   "pairs judged in both orders whose verdicts disagree (counted as a tie)")
        st.dataframe(pd.DataFrame([{k: v for k, v in b.judge.items() if not isinstance(v, (dict, list))}]),
                     hide_index=True, key="arena_judge")
