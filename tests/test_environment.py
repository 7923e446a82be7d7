"""pip users (pyproject.toml) and conda users (environment.yml) get the same packages."""
import re
import tomllib

from conftest import ROOT


def _normalise(requirement):
    return re.sub(r"\s+", "", requirement).lower()


def test_environment_yml_lists_what_pyproject_requires():
    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    listed = re.findall(r"^\s+- (\S.*)$", (ROOT / "environment.yml").read_text().split("- pip:")[1], re.M)
    assert sorted(map(_normalise, listed)) == sorted(map(_normalise, required))
