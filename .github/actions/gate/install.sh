#!/usr/bin/env bash
# The gate action's install step (kept in a file so it can be tested):
#   INSTALL  "action" (the default): install evalkit from the repository this action was taken from
#            (GITHUB_ACTION_PATH is .github/actions/gate inside it), with EXTRAS, e.g. "hf" or "vllm"
#            to evaluate a candidate model; any other value: pip requirement(s) as given (a wheel path,
#            "evalkit-harness[hf]" once published, "evalkit-harness[hf] @ git+https://..."); empty:
#            use the evalkit already installed.
#   PYTHON   the interpreter to install into (default python)
set -euo pipefail
spec="${INSTALL-action}"
py="${PYTHON:-python}"
if [ -z "$spec" ]; then
  echo "evalkit gate: using the installed evalkit"
elif [ "$spec" = "action" ]; then
  root="$(cd "${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set (run this inside the action)}/../../.." && pwd)"
  if [ ! -f "$root/pyproject.toml" ]; then
    echo "::error title=evalkit gate::no pyproject.toml at $root: set the action's install input to a pip requirement" >&2
    exit 2
  fi
  target="$root"
  if [ -n "${EXTRAS:-}" ]; then target="$root[$EXTRAS]"; fi
  echo "evalkit gate: pip install $target"
  "$py" -m pip install "$target"
else
  echo "evalkit gate: pip install $spec"
  # shellcheck disable=SC2086  # several requirements may be given
  "$py" -m pip install $spec
fi
"$py" -m evalkit --help >/dev/null
