"""Every module the package and its tests import comes from the standard library, this
checkout, or a distribution its declared dependencies install (pyproject's dependencies and
``test`` extras, with what they require in turn): the suite must run in a fresh virtual
environment with ``pip install -e '.[test]'``, not only where the machine happens to have a
package already (typer 0.28 stopped requiring click; the tests imported ``click.testing``)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.unit

_NAME = re.compile(r"^[A-Za-z0-9._-]+")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed_by(declared: list[str]) -> set[str]:
    """The distributions ``declared`` requirements install, with theirs (markers that need
    an extra are followed only for the extras asked for)."""
    found: set[str] = set()
    stack = [(r, _extras(r.split(";")[0])) for r in declared]
    while stack:
        requirement, extras = stack.pop()
        match = _NAME.match(requirement)
        assert match is not None, requirement
        name = _canonical(match.group(0))
        if name in found:
            continue
        found.add(name)
        try:
            subs = requires(name) or []
        except PackageNotFoundError:
            continue
        for sub in subs:
            spec, _, marker = sub.partition(";")
            wanted = re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
            if wanted and not set(wanted) & extras:
                continue
            stack.append((spec.strip(), _extras(spec)))
    return found


def _extras(spec: str) -> set[str]:
    """The extras a requirement asks for: ``dask[distributed]`` → ``{"distributed"}``."""
    found = re.search(r"\[([^\]]+)\]", spec)
    return {e.strip() for e in found.group(1).split(",")} if found else set()


def _imports(paths: list[str]) -> set[str]:
    names: set[str] = set()
    for pattern in paths:
        for path in sorted(ROOT.glob(pattern)):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names.add(node.module.split(".")[0])
    return names


def test_every_import_comes_from_a_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"] + project["optional-dependencies"]["test"]
    allowed = _installed_by(declared)
    providers = packages_distributions()
    missing = {}
    for module in sorted(_imports(["publisher/**/*.py", "tests/*.py", "benchmarks/*.py"])):
        local = any(
            (ROOT / folder / f"{module}.py").is_file() for folder in ("tests", "benchmarks")
        )
        if local or module in sys.stdlib_module_names or module in ("publisher", "tests"):
            continue
        dists = {_canonical(d) for d in providers.get(module, [])}
        if not dists & allowed:
            missing[module] = sorted(dists) or ["(not installed)"]
    assert missing == {}, f"imported but not declared: {missing}"


def test_no_benchmark_or_test_module_shadows_an_installed_package() -> None:
    """Tests put ``benchmarks/`` on ``sys.path`` for a while (and a process pool started
    then keeps it): a module there named as a package of the environment (Dask's
    ``distributed``) would be imported instead of it."""
    installed = set(packages_distributions())
    for folder in ("benchmarks", "tests"):
        for path in sorted((ROOT / folder).glob("*.py")):
            assert path.stem not in installed, f"{folder}/{path.name} shadows a package"


def test_every_name_a_script_imports_from_the_publisher_is_there() -> None:
    """The benchmarks and scripts import the publisher's names inside functions too (run
    rarely, in subprocesses): a name moved to another module must not leave a script that
    stops at its import. Every ``from publisher... import name``, at any depth, resolves."""
    import importlib

    missing = []
    for folder in ("benchmarks", "scripts"):
        for path in sorted((ROOT / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                    continue
                if node.module.split(".")[0] != "publisher":
                    continue
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if not hasattr(module, alias.name):
                        try:
                            importlib.import_module(f"{node.module}.{alias.name}")
                        except ImportError:
                            missing.append(f"{folder}/{path.name}:{node.lineno} {alias.name}")
    assert not missing, missing
