#!/usr/bin/env bash
# One command from a fresh clone: install, build the bundled tiny model, run a real evaluation.
# Uses the local benchmark copies in ../shared/data when present (offline machines), else the hub.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
data_args=()
if [ -d ../shared/data/wikitext ] && [ -d ../shared/data/gsm8k ]; then
  data_args=(--data wikitext=../shared/data/wikitext --data gsm8k=../shared/data/gsm8k)
fi
evalkit run --model hf:smollm2-135m --tasks wikitext,gsm8k --limit "${LIMIT:-5}" "${data_args[@]}" --output results/
