#!/usr/bin/env bash
# One command from a fresh clone: make a virtual environment (.venv), install evalkit into it, build
# the bundled tiny model, run a real evaluation on the main backend (vLLM, on CPU here).
#   PYTHON=...          the interpreter the venv is made from (default: python3)
#   EVALKIT_NO_VENV=1   install into $PYTHON itself instead (a venv already active is always used as is)
#   LIMIT=N             items per task (default 20);  --verbose: pip's and vLLM's full logs
# Uses the local benchmark copies in ../shared/data when present (offline machines), else the hub.
# Time: the install ~15-30 min the first time (torch, vLLM), the evaluation ~1.5 min.
set -euo pipefail
cd "$(dirname "$0")/.."
verbose=0
for arg in "$@"; do
  case "$arg" in
    -v|--verbose) verbose=1 ;;
    *) echo "quickstart: unknown argument $arg (only --verbose)" >&2; exit 2 ;;
  esac
done
py="${PYTHON:-python3}"
t0=$SECONDS
if [ -n "${VIRTUAL_ENV:-}" ]; then
  py="$VIRTUAL_ENV/bin/python"
  where="the active virtual environment $VIRTUAL_ENV"
elif [ "${EVALKIT_NO_VENV:-0}" = 1 ]; then
  where="$("$py" -c 'import sys; print(sys.prefix)') (EVALKIT_NO_VENV=1: no venv)"
else
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv || { echo "quickstart: '$py -m venv' failed; on Debian/Ubuntu: apt-get install python3-venv" >&2; exit 2; }
  fi
  py="$PWD/.venv/bin/python"
  where="$PWD/.venv"
fi
echo "quickstart: installing evalkit into $where ($("$py" -c 'import platform; print("Python", platform.python_version())'))"
log=$(mktemp -t evalkit-install.XXXXXX.log)
if [ "$verbose" = 1 ]; then
  "$py" -m pip install --upgrade pip
  PYTHON="$py" bash scripts/install.sh 2>&1 | tee "$log"
else
  # the install's own timed step lines are shown; pip's output goes to the log, shown only on failure
  "$py" -m pip install -q --upgrade pip >>"$log" 2>&1
  if ! PYTHON="$py" bash scripts/install.sh 2>&1 | tee -a "$log" | grep --line-buffered '^\[install'; then
    tail -40 "$log" >&2
    echo "quickstart: the install failed (whole log: $log)" >&2
    exit 1
  fi
fi
data_args=()
if [ -d ../shared/data/gsm8k ] && [ -d ../shared/data/mmlu ]; then
  data_args=(--data gsm8k=../shared/data/gsm8k --data mmlu_anatomy=../shared/data/mmlu)
fi
echo "quickstart: evaluating the bundled model (vLLM engine start ~40 s, then ${LIMIT:-20} items per task)"
verbose_flag=()
if [ "$verbose" = 1 ]; then
  verbose_flag=(--verbose)
else
  export VLLM_LOGGING_LEVEL="${VLLM_LOGGING_LEVEL:-ERROR}"  # vLLM's start-up notes only with --verbose
fi
mkdir -p results
before=$(ls -1 results | sort)
"$py" -m evalkit run --model vllm:smollm2-135m --tasks gsm8k,mmlu_anatomy --limit "${LIMIT:-20}" "${data_args[@]}" \
  --output results/ "${verbose_flag[@]}"
record=$(comm -13 <(echo "$before") <(ls -1 results | sort) | tail -1)
mins=$(( (SECONDS - t0) / 60 )); secs=$(( (SECONDS - t0) % 60 ))
echo
echo "quickstart: done in ${mins}m${secs}s: SmolLM2-135M-Instruct on GSM8K and MMLU anatomy (${LIMIT:-20} items each, vLLM on CPU)"
echo "quickstart: the run record is results/${record:-<run-id>}/run.json (its samples beside it)"
if [ -z "${VIRTUAL_ENV:-}" ] && [ "${EVALKIT_NO_VENV:-0}" != 1 ]; then
  echo "quickstart: next, in this shell:  source .venv/bin/activate && evalkit leaderboard --results results/"
else
  echo "quickstart: next:  evalkit leaderboard --results results/"
fi
