#!/usr/bin/env bash
# Install an LLVM OpenMP runtime (libomp) for macOS wheel builds into $TORCHLITE_OPENMP_PREFIX
# (default /tmp/libomp): include/omp.h and a universal (x86_64 + arm64) lib/libomp.dylib.
# pyproject.toml's [tool.cibuildwheel.macos] runs this as before-all and points setup.py at
# the prefix; delocate then copies libomp.dylib into each wheel.
#
# Why conda-forge's llvm-openmp (fetched with micromamba) and not Homebrew:
#   * A wheel tagged macosx_11_0 must only vendor libraries that load on macOS 11.  Homebrew
#     bottles are built for the runner's own macOS (14, 15, ...), so their libomp carries
#     minos 14+ and delocate refuses it (or the wheel breaks on older systems).  Pinning an
#     old bottle by hash works but needs a bottle per (macOS, arch) and breaks when ghcr
#     prunes them.
#   * conda-forge builds llvm-openmp for a fixed, old deployment target (10.13 on osx-64,
#     11.0 on osx-arm64) for BOTH architectures, so one runner can fetch either slice; lipo
#     joins them, and the same prefix serves x86_64, arm64 and universal2 builds.
#   * micromamba is a single static binary and verifies package checksums from the channel's
#     repodata; the version is pinned below.
# The script checks the result: both slices present, minos <= MACOSX_DEPLOYMENT_TARGET,
# install name @rpath/libomp.dylib (setup.py adds the matching -rpath).
#
# Environment:
#   TORCHLITE_OPENMP_PREFIX   where to install (default /tmp/libomp)
#   LLVM_OPENMP_VERSION       conda-forge llvm-openmp version (default 18.1.8)
#   LIBOMP_ARCHS              slices to fetch (default "x86_64 arm64")
#   MACOSX_DEPLOYMENT_TARGET  the wheels' target (default 11.0); libomp must not need newer
set -euo pipefail

PREFIX=${TORCHLITE_OPENMP_PREFIX:-/tmp/libomp}
VERSION=${LLVM_OPENMP_VERSION:-18.1.8}
ARCHS=${LIBOMP_ARCHS:-"x86_64 arm64"}
TARGET=${MACOSX_DEPLOYMENT_TARGET:-11.0}

if [ "$(uname -s)" != Darwin ]; then
    echo "macos_libomp.sh: macOS only" >&2
    exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/libomp.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# micromamba for the runner's own architecture (the packages it fetches can be for either)
case "$(uname -m)" in
    arm64) HOST_PLATFORM=osx-arm64 ;;
    *) HOST_PLATFORM=osx-64 ;;
esac
curl -fsSL --retry 3 "https://micro.mamba.pm/api/micromamba/$HOST_PLATFORM/latest" \
    | tar -xj -C "$WORK" bin/micromamba
export MAMBA_ROOT_PREFIX="$WORK/root"

slices=()
first=""
for arch in $ARCHS; do
    case "$arch" in
        x86_64) platform=osx-64 ;;
        arm64) platform=osx-arm64 ;;
        *) echo "unknown arch $arch (x86_64 or arm64)" >&2; exit 1 ;;
    esac
    env_dir="$WORK/env-$arch"
    "$WORK/bin/micromamba" create --yes --quiet --prefix "$env_dir" --platform "$platform" \
        --override-channels --channel conda-forge "llvm-openmp==$VERSION"
    slices+=("$env_dir/lib/libomp.dylib")
    first=${first:-$env_dir}
done

rm -rf "$PREFIX"
mkdir -p "$PREFIX/lib" "$PREFIX/include"
cp "$first"/include/omp.h "$PREFIX/include/"
cp "$first"/include/omp-tools.h "$PREFIX/include/" 2>/dev/null || true
if [ "${#slices[@]}" -gt 1 ]; then
    lipo -create "${slices[@]}" -output "$PREFIX/lib/libomp.dylib"
else
    cp "${slices[0]}" "$PREFIX/lib/libomp.dylib"
fi

LIB="$PREFIX/lib/libomp.dylib"
if [ "$(otool -D "$LIB" | tail -n 1)" != "@rpath/libomp.dylib" ]; then
    install_name_tool -id @rpath/libomp.dylib "$LIB"
    codesign --force --sign - "$LIB"     # arm64 refuses to load a binary whose signature broke
fi

# checks: every requested slice, and no slice newer than the deployment target
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }
for arch in $ARCHS; do
    lipo "$LIB" -verify_arch "$arch" || { echo "libomp lacks $arch" >&2; exit 1; }
    minos=$(otool -arch "$arch" -l "$LIB" \
        | awk '/LC_BUILD_VERSION/ { b = 1 } b && $1 == "minos" { print $2; exit }
               /LC_VERSION_MIN_MACOSX/ { m = 1 } m && $1 == "version" { print $2; exit }')
    echo "libomp $VERSION $arch: minos ${minos:-unknown}"
    if [ -n "$minos" ] && ! version_le "$minos" "$TARGET"; then
        echo "libomp's $arch slice needs macOS $minos > MACOSX_DEPLOYMENT_TARGET=$TARGET" >&2
        exit 1
    fi
done
lipo -info "$LIB"
echo "installed libomp into $PREFIX (TORCHLITE_OPENMP_PREFIX=$PREFIX)"
