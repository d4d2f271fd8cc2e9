#!/usr/bin/env bash
# The [sb3] extra from the package index into a fresh venv, with the lock, as README.md says
# (issue 53): before (the lock's torch==2.13.0+cpu, which only a CPU wheel index serves) and
# after (torch==2.13.0, which the index serves). Then SB3 trains and the example plays, from an
# empty folder. Writes its transcript to stdout:
#
#     bash benchmarks/sb3_install.sh > benchmarks/results/sb3_install.txt 2>&1
#
# WHEEL: the code wheel (default: built here with pip wheel); WORK: a scratch folder.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/sb3_install}
PY=${PYTHON:-python3}
rm -rf "$WORK" && mkdir -p "$WORK/empty"
# this machine's pip mirror lists folders it does not have: pip warns for each, noise here
quiet() { grep -v "^WARNING: Location 'file:///opt/pypi" || true; }
run() {
  echo; echo "\$ $*"; local t0=$SECONDS
  "$@" > "$WORK/out.txt" 2>&1; local rc=$?
  quiet < "$WORK/out.txt" | grep -v "^\[notice\]"; echo "[exit $rc, $((SECONDS - t0)) s]"; return $rc
}

echo "# [sb3] from the index, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -m), $($PY --version)"
echo "# this machine's pip configuration (an index mirror and a local file of torch 2.13.0+cpu,"
echo "# which stands in for PyTorch's CPU wheel index, unreachable from here):"
$PY -m pip config list | sed 's/^/#   /'
echo; echo "## the index (PyPI alone: --isolated ignores the mirror and the local file) serves torch 2.13.0"
run $PY -m pip index versions torch --isolated --index-url https://pypi.org/simple

echo; echo "## before: the lock pinned torch==2.13.0+cpu; the index (PyPI, nothing else) has no such file"
git -C "$REPO" show ed4e4b5:requirements.lock > "$WORK/old.lock"
grep -n '^torch==' "$WORK/old.lock"
run $PY -m pip download --isolated --no-deps -d "$WORK/dl" --index-url https://pypi.org/simple \
    -c "$WORK/old.lock" torch

echo; echo "## after: the lock pins torch==2.13.0"
grep -n '^torch==' "$REPO/requirements.lock"
WHEEL=${WHEEL:-}
if [ -z "$WHEEL" ]; then
  run $PY -m pip wheel -q --no-deps --no-build-isolation -w "$WORK/wheel" "$REPO" || exit 1
  WHEEL=$(ls "$WORK"/wheel/aht_bench-*.whl)
fi
run $PY -m venv "$WORK/venv"
V="$WORK/venv/bin"
# the documented command (README.md): the lock, and PyTorch's CPU wheel index for torch's CPU
# build. That index is unreachable from this machine (pip warns and goes on; --timeout and
# --retries keep the wait short); the local file of torch 2.13.0+cpu stands in for it.
run "$V/python" -m pip install -q -c "$REPO/requirements.lock" "$WHEEL[sb3]" \
    --extra-index-url https://download.pytorch.org/whl/cpu --timeout 10 --retries 1 \
    --report "$WORK/report.json" || exit 1
"$V/python" - "$WORK/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
rows = [(i["metadata"]["name"], i["metadata"]["version"], i["download_info"]["url"]) for i in report["install"]]
print(f"installed {len(rows)} distributions; from where:")
for name, version, url in rows:
    if name.lower() in ("torch", "stable-baselines3", "stable_baselines3", "aht-bench", "jax"):
        print(f"  {name}=={version}: {url}")
hosts = {}
for _, _, url in rows:
    key = url.split("/")[2] if "://" in url and not url.startswith("file:") else url.rsplit("/", 2)[0]
    hosts[key] = hosts.get(key, 0) + 1
print("  by source:", dict(sorted(hosts.items(), key=lambda kv: -kv[1])))
PY
du -sh "$WORK/venv" | sed 's/^/venv size: /'
cd "$WORK/empty"
run "$V/python" -c "import torch, stable_baselines3; print('torch', torch.__version__, 'cuda', torch.version.cuda, '| stable-baselines3', stable_baselines3.__version__)"
run "$V/aht-bench" examples
run env JAX_PLATFORMS=cpu "$V/python" agents/examples/sb3_ppo/train.py --task lbf-v1 --timesteps 2048 --seed 0 --out "$WORK/ppo_tiny.safetensors"
run env JAX_PLATFORMS=cpu "$V/aht-bench" check-agent agents/examples/sb3_ppo/agent.py --task lbf-v1 --teammate lexi --episodes 2
