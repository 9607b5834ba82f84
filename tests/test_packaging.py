"""Packaging rules that a broken release would only reveal after upload, checked in
milliseconds from the source tree (skipped when the tests run against an installed wheel):

* the sdist ships every .pyx (setup.py builds each torchlite/_core/*.pyx; an sdist without
  them silently builds a pure-Python wheel that cannot import);
* wheels ship the .pxd and kernel headers, and never the generated C;
* every .pyx in the tree is built and importable.

The rules are evaluated with setuptools' own semantics: MANIFEST.in through distutils'
FileList, and package data by the package that owns each file (the deepest folder with an
__init__.py), which is how setuptools assigns data files before applying
[tool.setuptools.exclude-package-data]."""
import fnmatch
import glob
import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "torchlite", "_core")

pytestmark = pytest.mark.skipif(
    not (os.path.exists(os.path.join(ROOT, "pyproject.toml")) and glob.glob(os.path.join(CORE, "*.pyx"))),
    reason="needs the source tree (these tests check how it is packaged)")


def rel(path):
    return os.path.relpath(path, ROOT).replace(os.sep, "/")


def pyproject_setuptools():
    try:
        import tomllib
    except ImportError:                     # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f).get("tool", {}).get("setuptools", {})


def owning_package(path):
    """The package setuptools assigns a data file to: its deepest enclosing package."""
    d = os.path.dirname(path)
    while d.startswith(ROOT) and d != ROOT:
        if os.path.exists(os.path.join(d, "__init__.py")):
            return rel(d).replace("/", ".")
        d = os.path.dirname(d)
    return None


def package_dir(package):
    return os.path.join(ROOT, *package.split("."))


def matches(patterns, path, package):
    """Whether a pattern, taken relative to `package`'s folder, matches `path`."""
    base = package_dir(package)
    if not path.startswith(base + os.sep):
        return False
    sub = os.path.relpath(path, base).replace(os.sep, "/")
    return any(fnmatch.fnmatch(sub, p) for p in patterns)


def excluded(exclude, path):
    """setuptools applies exclude patterns of '' and of the file's owning package only."""
    owner = owning_package(path)
    return matches(exclude.get("", []) + exclude.get(owner, []), path, owner)


def included(package_data, path):
    """package-data patterns glob from their package's folder, into subfolders too."""
    owner = owning_package(path)
    return (matches(package_data.get("", []), path, owner)
            or any(matches(pats, path, pkg) for pkg, pats in package_data.items() if pkg))


def core_sources(pattern):
    return sorted(glob.glob(os.path.join(CORE, pattern)))


def test_generated_c_is_excluded_from_wheels():
    exclude = pyproject_setuptools().get("exclude-package-data", {})
    generated = [p[:-4] + ".c" for p in core_sources("*.pyx")]
    missed = [rel(p) for p in generated if not excluded(exclude, p)]
    assert not missed, (
        f"{missed} would ship in wheels: [tool.setuptools.exclude-package-data] applies a "
        f"pattern only to files of the package named by its key, so key it by the owning "
        f"package: \"{owning_package(generated[0])}\" = [\"*.c\"]")


def test_pxd_and_kernel_headers_ship_in_wheels():
    package_data = pyproject_setuptools().get("package-data", {})
    files = core_sources("*.pxd") + core_sources(os.path.join("kernels", "*.h"))
    missing = [rel(p) for p in files if not included(package_data, p)]
    assert files and not missing, f"not in [tool.setuptools.package-data]: {missing}"


def sdist_files():
    """The files MANIFEST.in adds to an sdist (beyond setuptools' defaults, which include
    no .pyx, .pxd or .h)."""
    try:
        from setuptools._distutils.filelist import FileList
    except ImportError:
        from distutils.filelist import FileList
    manifest = os.path.join(ROOT, "MANIFEST.in")
    if not os.path.exists(manifest):
        return set()
    fl = FileList()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        fl.findall(".")
        with open(manifest) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    fl.process_template_line(line)
    finally:
        os.chdir(cwd)
    return {os.path.normpath(p).replace(os.sep, "/") for p in fl.files}


def test_sdist_ships_the_cython_sources():
    shipped = sdist_files()
    needed = [rel(p) for p in core_sources("*.pyx") + core_sources("*.pxd")
              + core_sources(os.path.join("kernels", "*.h"))]
    missing = [p for p in needed if p not in shipped]
    assert not missing, (
        f"the sdist would lack {missing[:4]}{' ...' if len(missing) > 4 else ''}: setup.py "
        f"builds every torchlite/_core/*.pyx, so without them `pip install` from the sdist "
        f"builds a pure-Python wheel that cannot import.  MANIFEST.in needs "
        f"`recursive-include torchlite/_core *.pyx *.pxd *.h`")
    assert not any(p.endswith((".so", ".pyd")) for p in shipped), "compiled files in the sdist"


@pytest.mark.parametrize("pyx", [os.path.basename(p) for p in core_sources("*.pyx")])
def test_every_pyx_is_built_and_importable(pyx):
    mod = importlib.import_module("torchlite._core." + pyx[:-4])
    assert mod.__file__.endswith((".so", ".pyd")), f"{pyx} imported from {mod.__file__}"
