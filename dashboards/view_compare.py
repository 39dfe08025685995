"""Compare page: two runs through ``evalkit compare``'s paired tests (differences with CIs, verdicts,
power) and the flipped items side by side."""
from __future__ import annotations

import streamlit as st

from evalkit.compare import CompareOptions, NotComparable
from evalkit.dashboards import pairs, samples


@st.cache_data(show_spinner="Running the paired comparison…", max_entries=32)
def _cached(_store, version: int, base: str, cand: str, opts: dict):
    c = pairs.compare(_store, base, cand, CompareOptions(**opts))
    return (pairs.comparison_frame(c), pairs.comparison_text(c), pairs.flipped_items(_store, c, base, cand),
            {t: {k: f[k] for k in ("metric", "n_right_to_wrong", "n_wrong_to_right")} for t, f in c.flips.items()})


def bad_lines(store, run_ids, tasks) -> list[str]:
    """The bad lines of the samples files a comparison reads (file and line)."""
    out = []
    for run_id in run_ids:
        rec = store.record(run_id)
        for task in tasks:
            try:
                out += samples.read_samples(samples.samples_path(rec, task))[1]
            except OSError as e:
                out.append(f"{samples.samples_path(rec, task)}: {e}")
    return out


MAX_CHOICES = 200    # runs each picker offers at once (10,000 options made every click slow); a search finds others


def offered(runs, query: str, keep: list) -> tuple[list, int]:
    """``(run ids a picker offers, how many runs match)``: the newest ``MAX_CHOICES`` runs whose label
    (model, tasks, date, run id) contains ``query``, plus ``keep`` (the runs already picked)."""
    found = runs if not query else runs[runs["choice"].str.contains(query.strip(), case=False, regex=False)]
    ids = list(found["run_id"].iloc[:MAX_CHOICES])
    return ids + [k for k in dict.fromkeys(keep) if k not in ids], len(found)


def default_pair(store, runs) -> tuple[int, int]:
    """Indexes of the newest two runs that share a leaderboard column (same task, version and prompts),
    else of the two newest runs."""
    ids = list(runs["run_id"])
    position = {r: i for i, r in reversed(list(enumerate(ids)))}
    cells = store.cells()
    best = None
    for _, grp in cells[cells["run_id"].isin(ids)].groupby("col"):
        got = sorted({position[r] for r in grp["run_id"]})
        if len(got) >= 2 and (best is None or got[:2] < best):
            best = got[:2]
    if best:
        return best[1], best[0]
    return (1, 0) if len(ids) > 1 else (0, 0)


def render(store) -> None:
    st.title("Compare two runs")
    runs = pairs.run_choices(store)
    if len(runs) < 2:
        st.info("Need at least two run records to compare.")
        return
    label = dict(zip(runs["run_id"], runs["choice"]))
    b0, c0 = default_pair(store, runs)
    ss = st.session_state
    query = st.text_input("Find runs", key="cmp_query", placeholder="part of a model name, task, date or run id",
                          help=f"the pickers offer the newest {MAX_CHOICES} runs that match")
    picked = [ss.get("cmp_base"), ss.get("cmp_cand")]
    ids, matches = offered(runs, query, [p for p in picked if p in label])
    if matches > MAX_CHOICES:
        st.caption(f"The pickers offer the newest {MAX_CHOICES:,} of {matches:,} runs"
                   + (f" matching '{query}'" if query else "") + "; search to find the others.")
    if not ids:
        st.info(f"No run matches '{query}'.")
        return
    first = [runs["run_id"].iloc[b0], runs["run_id"].iloc[c0]]
    left, right = st.columns(2)
    base = left.selectbox("Baseline", ids, index=ids.index(first[0]) if first[0] in ids else 0,
                          format_func=label.get, key="cmp_base")
    cand = right.selectbox("Candidate", ids, index=ids.index(first[1]) if first[1] in ids else min(1, len(ids) - 1),
                           format_func=label.get, key="cmp_cand")
    common = [t for t in store.record(base).tasks if t in store.record(cand).tasks]
    with st.expander("Options (as `evalkit compare`)"):
        tasks = st.multiselect("Tasks", common, key=f"cmp_tasks::{base}::{cand}", placeholder="all shared tasks",
                               help="empty = every task both runs have") or common
        c1, c2, c3 = st.columns(3)
        alpha = c1.number_input("alpha (one-sided)", 0.001, 0.49, 0.05, key="cmp_alpha")
        margin = c2.number_input("margin (points)", 0.0, 100.0, 0.0, key="cmp_margin")
        correction = c3.selectbox("correction", ["holm", "bh", "none"], key="cmp_correction")
        allow_prompt = st.checkbox("allow prompt change", key="cmp_allow_prompt")
        allow_data = st.checkbox("allow data change (compare the common docs)", key="cmp_allow_data")
    if base == cand:
        st.warning("Pick two different runs.")
        return
    if not tasks:
        st.warning("The two runs share no task." if not common else "Pick at least one task.")
        return
    opts = {"alpha": float(alpha), "margin": float(margin), "correction": correction, "tasks": list(tasks),
            "allow_prompt_change": bool(allow_prompt), "allow_data_change": bool(allow_data)}
    try:
        frame, text, flips, counts = _cached(store, store.version, base, cand, opts)
    except NotComparable as e:
        st.error(f"Not comparable: {e} (the Options above have the same switches)")
        return
    except (ValueError, KeyError, TypeError, OSError) as e:          # a broken samples file, a bad field
        bad = bad_lines(store, (base, cand), tasks)
        st.error("The comparison cannot be computed: " + ("; ".join(bad) if bad else f"{type(e).__name__}: {e}")
                 + ". Fix or re-write the file (the leaderboard and task views skip bad lines).")
        return
    (st.error if text["exit_code"] else st.success)(
        f"{text['verdict']} (the CLI would exit {text['exit_code']})")
    st.dataframe(frame, hide_index=True, key="cmp_table")
    st.caption(text["definition"])
    for n in text["notes"]:
        st.info(n)
    for line in text["power"]:
        st.caption(line)
    render_flips(flips, counts)


def render_flips(flips, counts: dict) -> None:
    st.subheader("Flipped items")
    if not counts:
        st.caption("No 0/1 metric to flip on.")
        return
    st.caption(" · ".join(f"{t} ({c['metric']}): {c['n_right_to_wrong']} right → wrong, "
                          f"{c['n_wrong_to_right']} wrong → right" for t, c in counts.items()))
    if not len(flips):
        return
    st.dataframe(flips.drop(columns=["prompt"]).assign(
        baseline=flips["baseline"].str.slice(0, 200), candidate=flips["candidate"].str.slice(0, 200)),
        hide_index=True, key="cmp_flips")
    keys = [f"{r.task} · {r.direction} · doc {r.doc_id}" for r in flips.itertuples()]
    pick = st.selectbox("Read flipped item", range(len(keys)), format_func=keys.__getitem__, key="cmp_flip")
    row = flips.iloc[pick]
    st.markdown(f"**target:** `{row['target'][:300]}`")
    with st.expander("prompt"):
        st.code(row["prompt"] or "(no prompt)", language=None, wrap_lines=True)
    left, right = st.columns(2)
    left.markdown("**baseline**")
    left.code(row["baseline"], language=None, wrap_lines=True)
    right.markdown("**candidate**")
    right.code(row["candidate"], language=None, wrap_lines=True)
