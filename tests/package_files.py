"""The installed package's modules and their source files, for the tests that read the source
(import cycles, module sizes)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package_modules() -> dict[str, Path]:
    """Module name -> source file, for every package the distribution installs."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    modules: dict[str, Path] = {}
    for package in config["tool"]["setuptools"]["packages"]:
        spec = importlib.util.find_spec(package)
        assert spec and spec.submodule_search_locations, f"{package} is not installed"
        for location in spec.submodule_search_locations:
            for file in sorted(Path(location).glob("*.py")):
                name = package if file.stem == "__init__" else f"{package}.{file.stem}"
                modules[name] = file
    return modules
