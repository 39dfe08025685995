#!/usr/bin/env bash
# The regression gate as CI runs it: the exact commands of .github/actions/gate, and what
# `evalkit ci-gate` runs (the GitLab example in docs/comparing-and-gating.md). Everything comes from
# environment variables:
#
#   EVALKIT_BASELINE        baseline run folder, or a folder holding exactly one run (a downloaded
#                           artifact); needed unless EVALKIT_CONFIG names one
#   EVALKIT_CANDIDATE       BACKEND:MODEL to evaluate with the baseline's settings, or
#   EVALKIT_CANDIDATE_RUN   a saved candidate run folder (nothing is evaluated)
#   EVALKIT_CONFIG          gate config (TOML, see docs/comparing-and-gating.md); else one is written
#   EVALKIT_CANDIDATE_ARGS  backend options (k=v,...)     EVALKIT_MARGIN   tolerated drop (points)
#   EVALKIT_PRIMARY         primary tests (comma list)    EVALKIT_ALPHA    significance level
#   EVALKIT_INCLUDE_PATH    extra task files folder       EVALKIT_CACHE_DIR response cache folder
#   EVALKIT_GATE_ARGS       any further `evalkit gate` flags (word-split)
#   EVALKIT_REPORT_DIR      where gate-report.md and gate-junit.xml go (default: evalkit-gate)
#   EVALKIT_FAIL_ON_REGRESSION  1 (default): exit 1 on a regression; 0: report only
#   EVALKIT_BIN             the evalkit command (default: evalkit)
#
# Writes the Markdown verdict to $GITHUB_STEP_SUMMARY (when set), `exit-code`, `verdict`, `report`
# and `junit` to $GITHUB_OUTPUT (when set), GitHub annotations to stdout, and exits like
# `evalkit gate`: 0 no regression, 1 regression, 2 usage or input error or a crash (never 0 or 1).
set -uo pipefail

report_dir="${EVALKIT_REPORT_DIR:-evalkit-gate}"
mkdir -p "$report_dir"
report="$report_dir/gate-report.md"
junit="$report_dir/gate-junit.xml"
rm -f "$report" "$junit" "$report_dir/.err"
read -r -a evalkit <<< "${EVALKIT_BIN:-evalkit}"

fail() {  # usage/input error: say so everywhere CI shows it, exit 2
  echo "::error title=evalkit gate::$1"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '### evalkit gate: error\n\n%s\n' "$1" >> "$GITHUB_STEP_SUMMARY"
  fi
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'exit-code=2\nverdict=error\n' >> "$GITHUB_OUTPUT"
  fi
  exit 2
}

# A run folder, or the one run folder inside a downloaded artifact.
run_dir() {
  local root="$1" found
  [ -e "$root" ] || { echo "$root: no such file or folder" >&2; return 1; }
  if [ -f "$root/run.json" ]; then echo "$root"; return 0; fi
  found="$(find "$root" -name run.json -type f 2>/dev/null | sort)"
  if [ "$(printf '%s' "$found" | grep -c .)" != 1 ]; then
    echo "$root: expected exactly one run record (run.json) below it, found $(printf '%s' "$found" | grep -c .)" >&2
    return 1
  fi
  dirname "$found"
}

args=(gate --format github --markdown "$report" --junit "$junit")
if [ -n "${EVALKIT_CONFIG:-}" ]; then
  args+=(--config "$EVALKIT_CONFIG")
else
  [ -n "${EVALKIT_BASELINE:-}" ] || fail "no baseline: set the baseline (a run folder or artifact) or a gate config"
  config="$report_dir/evalkit-gate.toml"
  printf '# written by evalkit ci-gate (evalkit/ci/gate.sh)\n' > "$config"
  args+=(--config "$config")
fi
if [ -n "${EVALKIT_BASELINE:-}" ]; then
  baseline="$(run_dir "$EVALKIT_BASELINE" 2>"$report_dir/.err")" || fail "baseline: $(cat "$report_dir/.err")"
  args+=(--baseline "$baseline")
fi
if [ -n "${EVALKIT_CANDIDATE_RUN:-}" ]; then
  [ -z "${EVALKIT_CANDIDATE:-}" ] || fail "set either the candidate model or the candidate run, not both"
  candidate="$(run_dir "$EVALKIT_CANDIDATE_RUN" 2>"$report_dir/.err")" ||
    fail "candidate run: $(cat "$report_dir/.err")"
  args+=(--candidate-run "$candidate")
elif [ -n "${EVALKIT_CANDIDATE:-}" ]; then
  args+=(--candidate "$EVALKIT_CANDIDATE" --output "$report_dir/results")
  [ -z "${EVALKIT_CANDIDATE_ARGS:-}" ] || args+=(--candidate-args "$EVALKIT_CANDIDATE_ARGS")
elif [ -z "${EVALKIT_CONFIG:-}" ]; then
  fail "no candidate: set the candidate model (BACKEND:MODEL) or a saved candidate run"
fi
[ -z "${EVALKIT_MARGIN:-}" ] || args+=(--margin "$EVALKIT_MARGIN")
[ -z "${EVALKIT_ALPHA:-}" ] || args+=(--alpha "$EVALKIT_ALPHA")
[ -z "${EVALKIT_PRIMARY:-}" ] || args+=(--primary "$EVALKIT_PRIMARY")
[ -z "${EVALKIT_INCLUDE_PATH:-}" ] || args+=(--include-path "$EVALKIT_INCLUDE_PATH")
[ -z "${EVALKIT_CACHE_DIR:-}" ] || args+=(--cache-dir "$EVALKIT_CACHE_DIR")
if [ -n "${EVALKIT_GATE_ARGS:-}" ]; then
  read -r -a more <<< "$EVALKIT_GATE_ARGS"
  args+=("${more[@]}")
fi

echo "+ ${evalkit[*]} ${args[*]}" >&2
"${evalkit[@]}" "${args[@]}"
code=$?
# A regression always writes its report; exit 1 without one is a crash (e.g. Python failing before
# evalkit's own handler, which exits 2): an error, never "regression" (that a report-only job passes)
if [ "$code" = 1 ] && [ ! -f "$report" ]; then
  echo "::error title=evalkit gate::evalkit exited 1 without a report: a crash, not a regression; see the job log"
  code=2
fi

if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  if [ -f "$report" ]; then
    cat "$report" >> "$GITHUB_STEP_SUMMARY"
  else
    printf '### evalkit gate: error (exit %s)\n\nThe gate did not produce a report; see the job log.\n' "$code" \
      >> "$GITHUB_STEP_SUMMARY"
  fi
fi
case "$code" in
  0) verdict=pass ;;
  1) verdict=regression ;;
  *) verdict=error ;;
esac
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "exit-code=$code"
    echo "verdict=$verdict"
    [ -f "$report" ] && echo "report=$report"
    [ -f "$junit" ] && echo "junit=$junit"
  } >> "$GITHUB_OUTPUT"
fi
if [ "$code" = 1 ] && [ "${EVALKIT_FAIL_ON_REGRESSION:-1}" = 0 ]; then
  echo "evalkit gate: regression reported, not failing the job (fail-on-regression: false)" >&2
  exit 0
fi
[ "$code" -le 2 ] || code=2   # a crash is an error, never a pass
exit "$code"
