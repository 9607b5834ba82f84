#!/usr/bin/env bash
# Times the README's two commands as a new user meets them: a fresh clone of HEAD and a fresh
# venv, then
#   1. python -m pip install -v -e ".[examples]" && python examples/quickstart.py
#   2. python -m pip install -e ".[test]" && python -m pytest -q      (test caches empty)
#   3. the second command again                                         (caches warm)
# with PyTorch installed from a local wheel first where there is one, as .ci/run does.  The
# README's numbers come from this script.  Everything lives in a temp folder (removed at the
# end; --keep keeps it).  pip's own download cache is used as it is.
set -uo pipefail
KEEP=0
[ "${1:-}" = "--keep" ] && KEEP=1
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/torchlite-readme.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT
export TORCHLITE_TEST_CACHE="$WORK/test-cache" TORCHLITE_KERNEL_CACHE="$WORK/kernel-cache"
git clone -q "$REPO" "$WORK/clone" && cd "$WORK/clone" || exit 1
python3 -m venv .venv && . .venv/bin/activate && python -m pip install -q --upgrade pip

timed() {   # timed LABEL LOG COMMAND...: run it, print the label, status, seconds, last line
    local label=$1 log=$2; shift 2
    local t0; t0=$(date +%s.%N)
    "$@" > "$log" 2>&1
    local rc=$?
    printf '%-34s rc=%d %7.1f s  %s\n' "$label" "$rc" \
        "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$(tail -n 1 "$log")"
}
first() { python -m pip install -v -e ".[examples]" && python examples/quickstart.py; }
second() { python -m pip install -e ".[test]" && python -m pytest -q -p no:cacheprovider; }

timed "1. install + demo" "$WORK/first.log" first
if compgen -G "/opt/wheels/torch-*+cpu-*.whl" > /dev/null; then
    python -m pip install -q torch==2.13.0 > /dev/null 2>&1 || echo "(no torch: its comparisons skip)"
fi
timed "2. install + tests, test caches cold" "$WORK/cold.log" second
timed "2. again, caches warm" "$WORK/warm.log" second
