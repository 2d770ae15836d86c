# Source this on a bare GPU machine (PyTorch and transformers present, no network) to import hardneg
# without installing it:   source benchmarks/gpu_env.sh && cd /tmp && python -m benchmarks.bench_scorers_gpu
# The packages the image lacks travel as wheels in .whl/ (see the device tool's README); hardneg's folders
# are mapped under one import name by links, as pyproject.toml maps them for pip.
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if compgen -G "$REPO/.whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$REPO"/.whl/*.whl
fi
mkdir -p /tmp/pkg/hardneg
cp "$REPO"/hardneg/*.py /tmp/pkg/hardneg/
for d in core backends generators filters flows evaluation review templates prompts configs; do
  ln -sfn "$REPO/$d" "/tmp/pkg/hardneg/$d"
done
export PYTHONPATH="/tmp/site:/tmp/pkg:$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
