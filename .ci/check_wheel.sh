#!/usr/bin/env bash
# hardneg is a real package: the wheel `pip wheel .` builds, installed into a fresh venv, runs the demo from
# an unrelated directory (templates, prompts and configs are package data; nothing reads the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp="$(mktemp -d -t hardneg-wheel.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip wheel -q --disable-pip-version-check --no-deps -w "$tmp/dist" . >/dev/null 2>&1
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check "$tmp"/dist/hardneg-*.whl >"$tmp/pip.log" 2>&1 \
  || { tail -n 30 "$tmp/pip.log"; exit 1; }
mkdir "$tmp/elsewhere"
printf 'demo: {n_scenes: 8}\n' >"$tmp/elsewhere/small.yaml"
(cd "$tmp/elsewhere" && "$tmp/venv/bin/hardneg" run --no-prefect --config small.yaml --output run >/dev/null)
test -s "$tmp/elsewhere/run/splits/train/positive.json"
test -s "$tmp/elsewhere/run/manifest.json"
if (cd "$tmp/elsewhere" && "$tmp/venv/bin/python" -c "import core" 2>/dev/null); then echo "check_wheel: the wheel installs a top-level 'core'"; exit 1; fi
echo "check_wheel: the wheel installs into a fresh venv and runs the demo from another directory"
