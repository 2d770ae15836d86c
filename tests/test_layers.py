"""The architecture holds: no layer imports a layer above it, and no heavy model library is imported at
module level anywhere (models load lazily, in the functions that need them)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.helpers import REPO_ROOT

# Each layer and the hardneg layers it may import (itself included).
ALLOWED = {
    "core": {"core"},
    "evaluation": {"evaluation"},
    "backends": {"core", "backends"},
    "generators": {"core", "backends", "generators"},
    "exports": {"core", "backends", "generators", "exports"},
    "filters": {"core", "backends", "generators", "filters"},
    "review": {"core", "exports", "filters", "review"},
    "flows": {"core", "backends", "generators", "exports", "review", "filters", "flows"},
    "hardneg": {"core", "backends", "generators", "exports", "review", "filters", "flows", "hardneg"},
}
HEAVY = ("torch", "transformers", "diffusers", "accelerate", "cv2", "spacy", "prefect", "matplotlib")
# Modules allowed to import one of HEAVY at the top: the Prefect shell, and the CLI that starts it lazily.
HEAVY_OK = {"flows/generate.py": {"prefect"}, "flows/deploy.py": {"prefect"}, "review/report/plots.py": {"matplotlib"}}


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, run on import) for every import in a file: run on import unless it sits in a function or
    under `if TYPE_CHECKING:` (an import in a module-level `try:` or `if` runs on import too)."""
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[str, bool]] = []

    def visit(node: ast.AST, on_import: bool) -> None:
        in_function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        if in_function or (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            on_import = False
        if isinstance(node, ast.Import):
            out.extend((a.name, on_import) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, on_import))
        for child in ast.iter_child_nodes(node):
            visit(child, on_import)

    visit(tree, True)
    return out


def _folder(layer: str) -> Path:
    """Where a layer lives, as pyproject.toml's package-dir maps it (`hardneg` itself: src/hardneg)."""
    mapping = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return REPO_ROOT / mapping["hardneg" if layer == "hardneg" else f"hardneg.{layer}"]


def _files(layer: str) -> list[Path]:
    files = sorted(_folder(layer).glob("**/*.py"))
    assert files, f"layer {layer}: no module in {_folder(layer)}"
    return files


def test_no_layer_imports_a_layer_above_it():
    bad = []
    for layer, allowed in ALLOWED.items():
        for f in _files(layer):
            for module, _ in _imports(f):
                parts = module.split(".")
                if parts[0] == "hardneg" and len(parts) > 1:
                    target = parts[1] if parts[1] in ALLOWED else "hardneg"
                    if target not in allowed:
                        bad.append(f"{f.relative_to(REPO_ROOT)} imports {module}")
                elif parts[0] in ALLOWED and parts[0] != "hardneg":
                    bad.append(f"{f.relative_to(REPO_ROOT)} imports {module} without the hardneg prefix")
    assert not bad, "\n".join(bad)


def test_no_heavy_library_at_module_level():
    bad = []
    for layer in ALLOWED:
        for f in _files(layer):
            rel = str(f.relative_to(REPO_ROOT))
            for module, at_top in _imports(f):
                root = module.split(".")[0]
                if at_top and root in HEAVY and root not in HEAVY_OK.get(rel, set()):
                    bad.append(f"{rel} imports {module} at module level")
    assert not bad, "\n".join(bad)


def test_no_source_file_is_over_420_lines():
    long = []
    for layer in ALLOWED:
        for f in _files(layer):
            n = len(f.read_text().splitlines())
            if n > 420:
                long.append(f"{f.relative_to(REPO_ROOT)}: {n} lines")
    assert not long, "\n".join(long)


def test_no_folder_at_the_repository_root_shadows_the_package(tmp_path: Path):
    """Python run from a checkout's root puts the root first on its path: a `hardneg/` folder there is
    imported in place of the installed package, while the layers it maps in come from wherever that is
    installed, so two checkouts mix. A copy of this checkout's root, run from with this environment, must
    import the package and its layers from one place."""
    other = tmp_path / "other_checkout"
    keep = {"src", "hardneg", "core", "flows", "pyproject.toml"}
    shutil.copytree(
        REPO_ROOT, other, ignore=lambda d, names: [n for n in names if d == str(REPO_ROOT) and n not in keep]
    )
    out = subprocess.run(
        [sys.executable, "-c", "import hardneg, hardneg.core; print(hardneg.__file__); print(hardneg.core.__file__)"],
        cwd=other, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    package, core = (Path(p).resolve() for p in out)
    assert package.parent.parent.parent == core.parent.parent, f"the package from {package}, its core from {core}"


RUNNER_READS = {"runner", "config", "config_files", "errors", "io", "records", "schema"}


def test_the_runner_stands_apart_from_the_domain():
    """`core/runner/` (stages, units, the run folder, publishing) imports, at module level, nothing of the
    domain (GQA, the demo world, the word tables, pixels): what a run reads is `core/gqa/run_inputs.py`'s."""
    bad = []
    for f in sorted((REPO_ROOT / "core" / "runner").glob("*.py")):
        for module, at_top in _imports(f):
            parts = module.split(".")
            if at_top and parts[:2] == ["hardneg", "core"] and len(parts) > 2 and parts[2] not in RUNNER_READS:
                bad.append(f"{f.relative_to(REPO_ROOT)} imports {module}")
    assert not bad, "\n".join(bad)
