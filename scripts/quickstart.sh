#!/usr/bin/env bash
# One command from a fresh clone: install (into .venv when the system Python refuses pip installs),
# build the bundled tiny model, run a real evaluation on the main backend (vLLM, on CPU here).
# Uses the local benchmark copies in ../shared/data when present (offline machines), else the hub.
# Time: the install ~20-30 min the first time (torch, vLLM), the evaluation ~1.5 min.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python3}"
if [ -z "${VIRTUAL_ENV:-}" ] && "$py" - <<'PY'
import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)
PY
then
  echo "quickstart: $py refuses pip installs (externally managed): installing into .venv;" \
       "afterwards run 'source .venv/bin/activate' before evalkit or pytest"
  "$py" -m venv .venv
  # shellcheck disable=SC1091
  . .venv/bin/activate
  py=python
fi
PYTHON="$py" bash scripts/install.sh
data_args=()
if [ -d ../shared/data/gsm8k ] && [ -d ../shared/data/mmlu ]; then
  data_args=(--data gsm8k=../shared/data/gsm8k --data mmlu_anatomy=../shared/data/mmlu)
fi
echo "quickstart: evaluating the bundled model (vLLM engine start ~40 s, then ${LIMIT:-20} items per task)"
"$py" -m evalkit run --model vllm:smollm2-135m --tasks gsm8k,mmlu_anatomy --limit "${LIMIT:-20}" "${data_args[@]}" \
  --output results/
