"""One copy of every module: the layers are only ever imported as `hardneg.<layer>`.

The repository's top-level folders are mapped into the package `hardneg` (pyproject's package-dir). From the
repository root a folder is also importable by its own name, which would load a second copy of each module:
two `Stage` classes, two registries, and `isinstance` checks that fail for no visible reason.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from tests.helpers import REPO_ROOT

LAYERS = ("core", "backends", "generators", "exports", "filters", "flows", "evaluation", "review")
DATA = ("templates", "prompts", "configs")


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", code, *args]
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)


def test_a_layer_imported_by_its_folder_name_is_refused():
    for layer in (*LAYERS, *DATA):
        r = _run(f"import {layer}")
        assert r.returncode == 1, (layer, r.stdout, r.stderr)
        assert f"import hardneg.{layer}, not {layer}" in r.stderr, r.stderr


def test_every_module_loads_once_under_its_full_name():
    code = """
import importlib, pkgutil, sys
def walk(name):
    pkg = importlib.import_module(name)
    for m in pkgutil.iter_modules(pkg.__path__):
        if m.name != "__main__":
            full = f"{name}.{m.name}"
            walk(full) if m.ispkg else importlib.import_module(full)
for top in sys.argv[1].split(","):
    walk("hardneg." + top)
import hardneg.cli
files = {}
for name, mod in list(sys.modules.items()):
    f = getattr(mod, "__file__", None)
    if name.split(".")[0] in sys.argv[2].split(","):
        print("BARE", name)
    if f and (name == "hardneg" or name.startswith("hardneg.")):
        files.setdefault(f, []).append(name)
print("MODULES", sum(len(v) for v in files.values()))
for f, names in files.items():
    if len(names) > 1:
        print("TWICE", f, names)
"""
    r = _run(code, ",".join(LAYERS), ",".join(LAYERS + DATA))
    assert r.returncode == 0, r.stderr
    assert "BARE" not in r.stdout and "TWICE" not in r.stdout, r.stdout
    assert int(r.stdout.split("MODULES ")[1].split()[0]) > 100  # the walk really imported the package


def test_no_source_imports_a_layer_by_its_bare_name():
    bad = []
    for folder in (*LAYERS, "hardneg", "tests", "benchmarks"):
        for f in sorted((REPO_ROOT / folder).glob("**/*.py")):
            for node in ast.walk(ast.parse(f.read_text(), str(f))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                bad += [f"{f.relative_to(REPO_ROOT)}: {n}" for n in names if n.split(".")[0] in LAYERS + DATA]
    assert not bad, "\n".join(bad)


def test_the_editor_link_tree_maps_every_layer_like_the_install(tmp_path, monkeypatch):
    import dev

    monkeypatch.setattr(dev, "EDITOR", tmp_path)
    dev.link_tree()
    dev.link_tree()  # idempotent: a second set-up keeps the links
    pkg = tmp_path / "hardneg"
    for layer in (*LAYERS, *DATA):
        assert (pkg / layer).resolve() == (REPO_ROOT / layer).resolve(), layer
        assert (pkg / layer / "__init__.py").is_file()
    assert (pkg / "cli.py").resolve() == (REPO_ROOT / "src" / "hardneg" / "cli.py").resolve()


def test_no_source_folder_holds_more_than_20_modules():
    crowded = []
    for layer in (*LAYERS, "src/hardneg"):
        for folder in [REPO_ROOT / layer, *(p for p in (REPO_ROOT / layer).glob("**/") if p.name != "__pycache__")]:
            n = len(list(folder.glob("*.py")))
            if n > 20:
                crowded.append(f"{folder.relative_to(REPO_ROOT)}: {n} modules")
    assert not crowded, "\n".join(crowded)


def test_the_readme_architecture_names_every_source_folder_and_only_real_ones():
    text = (REPO_ROOT / "README.md").read_text()
    section = text[text.index("## Architecture") : text.index("\n## ", text.index("## Architecture") + 5)]
    source = "\n".join(line for line in section.splitlines() if "the run folder:" not in line)  # outputs
    named = set(re.findall(r"\b([a-z_]+(?:/[a-z_]+)*)/", source))
    assert named, "the README has no architecture section"
    missing = sorted(
        n
        for n in named
        if not (REPO_ROOT / n).is_dir() and not any((REPO_ROOT / layer / n).is_dir() for layer in LAYERS)
    )  # "report/" is review/report/
    assert not missing, f"the README names folders that do not exist: {missing}"
    packages = {
        str(p.parent.relative_to(REPO_ROOT)) for layer in LAYERS for p in (REPO_ROOT / layer).glob("**/__init__.py")
    }
    unnamed = sorted(p for p in packages if p not in named and p.split("/")[-1] not in named)
    assert not unnamed, f"source folders the README's architecture does not show: {unnamed}"


def test_the_wheel_lists_every_source_package():
    """The package list in pyproject.toml is explicit: a new folder missing from it works from the checkout
    and fails only once installed (a module not found, in a fresh environment)."""
    import tomllib

    setup = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setup["packages"])
    dirs = {v: k for k, v in setup["package-dir"].items()}
    found = set()
    for folder, package in dirs.items():
        for init in (REPO_ROOT / folder).glob("**/__init__.py"):
            rel = init.parent.relative_to(REPO_ROOT / folder).parts
            found.add(".".join((package, *rel)))
    assert found - listed == set(), f"packages the wheel leaves out: {sorted(found - listed)}"
    assert listed - found == set(), f"packages listed but absent: {sorted(listed - found)}"


def test_no_module_defines_a_top_level_name_twice():
    """A merge once left two `_evidence` functions in one module: the second silently replaced the first and
    the box shapes it read were never used (no linter here flags a redefined function)."""
    twice = []
    for layer in (*LAYERS, "hardneg", "benchmarks"):
        for f in sorted((REPO_ROOT / layer).glob("**/*.py")):
            seen: set[str] = set()
            for node in ast.parse(f.read_text()).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    if node.name in seen:
                        twice.append(f"{f.relative_to(REPO_ROOT)}: {node.name}")
                    seen.add(node.name)
    assert not twice, "\n".join(twice)
