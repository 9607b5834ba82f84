#!/usr/bin/env bash
# The user's path, from a clean clone: in fresh virtual environments,
#   1. pip install .            (build isolation, pip cache off: a cold build)
#   2. pip install -e ".[test]"  (editable, as .ci/run does) and the test suite
#   3. an sdist (python -m build --sdist), then pip install of that sdist: the path of
#      `pip install --no-binary torchlite torchlite` and of a native-tuned build
# Every install is imported from outside the clone; each step is timed.
#
#   wheels/check_user_install.sh [--no-tests] [--no-sdist] [--warm]
#
# --warm keeps pip's cache (the time a developer sees the second time round).
# The clone is of the committed HEAD (what a user gets); everything lives in a temp dir.
set -euo pipefail

RUN_TESTS=1
RUN_SDIST=1
CACHE=(--no-cache-dir)
for a in "$@"; do
    case "$a" in
        --no-tests) RUN_TESTS=0 ;;
        --no-sdist) RUN_SDIST=0 ;;
        --warm) CACHE=() ;;
        *) echo "unknown argument: $a" >&2; exit 2 ;;
    esac
done
PYTHON=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/torchlite-user.XXXXXX")
declare -a TIMINGS=()
finish() {   # on any exit: the timings so far, then clean up
    echo
    [ "${#TIMINGS[@]}" -gt 0 ] && printf '%s\n' "${TIMINGS[@]}"
    rm -rf "$WORK"
}
trap finish EXIT

timed() {   # timed LABEL CMD...: run, record the wall time
    local label="$1"; shift
    local t0 t1; t0=$(date +%s.%N)
    echo "=== $label"
    "$@"
    t1=$(date +%s.%N)
    TIMINGS+=("$(awk -v a="$t0" -v b="$t1" -v n="$label" 'BEGIN { printf "%-34s %6.1f s", n, b - a }')")
}

import_check() {   # import_check VENV_PYTHON: import from outside the clone, show where from
    (cd "$WORK" && "$1" -c '
import numpy as np, torchlite as tl
a = np.arange(6.0, dtype=np.float32)
assert ((tl.from_numpy(a) * 2).numpy() == a * 2).all()
print("torchlite", tl.__version__, "from", tl.__file__, "| threads", tl.get_num_threads())')
}

timed "git clone" git clone -q "$REPO" "$WORK/clone"

"$PYTHON" -m venv "$WORK/v1"
"$WORK/v1/bin/python" -m pip install -q --upgrade pip
timed "pip install . (isolated, cold)" \
    "$WORK/v1/bin/python" -m pip install -q "${CACHE[@]}" "$WORK/clone"
import_check "$WORK/v1/bin/python"
if git -C "$WORK/clone" status --porcelain --ignored | grep -q .; then
    echo "note: the build left these in the clone:"; git -C "$WORK/clone" status --porcelain --ignored
fi

"$PYTHON" -m venv "$WORK/v2"
"$WORK/v2/bin/python" -m pip install -q --upgrade pip
timed 'pip install -e ".[test]"' \
    bash -c "cd '$WORK/clone' && '$WORK/v2/bin/python' -m pip install -q ${CACHE[*]} -e '.[test]'"
import_check "$WORK/v2/bin/python"
if [ "$RUN_TESTS" = 1 ]; then
    timed "pytest (editable install)" \
        bash -c "cd '$WORK/clone' && '$WORK/v2/bin/python' -m pytest -q -p no:cacheprovider"
fi

if [ "$RUN_SDIST" = 1 ]; then
    "$PYTHON" -m venv "$WORK/v3"
    "$WORK/v3/bin/python" -m pip install -q --upgrade pip build
    timed "python -m build --sdist" \
        "$WORK/v3/bin/python" -m build --sdist --outdir "$WORK/sdist" "$WORK/clone"
    SDIST=$(ls "$WORK"/sdist/torchlite_dl-*.tar.gz)
    echo "sdist: $(basename "$SDIST") ($(stat -c %s "$SDIST") bytes)"
    LISTING=$(tar -tzf "$SDIST")            # (grep -q in a pipe would SIGPIPE tar under pipefail)
    if ! grep -q '_core/array.pyx$' <<<"$LISTING"; then
        echo "FAIL: the sdist has no .pyx sources; installing it would build a pure-Python" \
             "wheel that cannot import (MANIFEST.in needs: recursive-include torchlite/_core" \
             "*.pyx *.pxd *.h)" >&2
        exit 1
    fi
    timed "pip install <sdist> (cold)" \
        "$WORK/v3/bin/python" -m pip install -q "${CACHE[@]}" "$SDIST"
    import_check "$WORK/v3/bin/python"
fi
