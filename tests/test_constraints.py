"""``constraints.txt`` pins every dependency the package declares, at a version its requirements admit.

The README's install commands and CI install with ``-c constraints.txt`` so that a new machine gets the versions
the suite last passed with. A dependency added to pyproject.toml without a pin would be installed at whatever
release is newest that day; a pin outside the declared range would make the install fail.
"""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.paths import REPO_ROOT


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not a name==version pin"
            pins[canonicalize_name(name)] = version
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    texts = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        texts += extra
    return [r for r in map(Requirement, texts) if canonicalize_name(r.name) != "halluscope"]


def test_every_declared_dependency_is_pinned_within_its_range() -> None:
    pins = _pins()
    problems = []
    for requirement in _declared():
        version = pins.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name}: not pinned")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}: pinned {version}, pyproject asks {requirement.specifier}")
    assert not problems, "constraints.txt does not match pyproject.toml:\n" + "\n".join(problems)


def test_the_readme_and_ci_install_with_the_constraints() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '.venv/bin/pip install -e ".[all,dev]" -c constraints.txt' in readme
    assert '-e ".[all,dev]" -c constraints.txt' in ci
