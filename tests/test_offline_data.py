"""A clone without the shared folder: the committed excerpts, the ``full_data`` skip, and CI's refusal to skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.excerpts.make_excerpts import EXCERPTED, write_excerpts
from tests.paths import EXCERPTS, FULL_DATA, REPO_ROOT


def _pytest(args: list[str], shared: Path, *, require: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HALLUSCOPE_REQUIRE_FULL_DATA"}
    env.update(HALLUSCOPE_SHARED=str(shared), PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)]))
    if require:
        env["HALLUSCOPE_REQUIRE_FULL_DATA"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_full_data_tests_skip_with_a_reason_and_ci_refuses_to_skip_them(tmp_path: Path) -> None:
    selection = ["tests/test_hallusionbench.py", "-k", "every_item"]  # one excerpt and one full-data case
    alone = _pytest(selection, tmp_path, require=False)
    assert alone.returncode == 0, alone.stdout
    assert "1 passed" in alone.stdout and "1 skipped" in alone.stdout
    assert f"needs the full benchmark data at {tmp_path / 'data'}" in alone.stdout
    in_ci = _pytest(selection, tmp_path, require=True)
    assert in_ci.returncode != 0 and "1 passed" in in_ci.stdout and "1 error" in in_ci.stdout
    assert "HALLUSCOPE_REQUIRE_FULL_DATA is set, so it may not be skipped" in in_ci.stdout


def test_where_full_data_is_required_any_skip_fails_the_session(tmp_path: Path) -> None:
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\ndef test_a():\n    pass\n\ndef test_b():\n    pytest.skip('for a reason')\n")
    args = ["-p", "tests.conftest", "--rootdir", str(tmp_path), str(tmp_path / "test_skips.py")]
    assert _pytest(args, tmp_path, require=False).returncode == 0
    in_ci = _pytest(args, tmp_path, require=True)
    assert in_ci.returncode == 1 and "1 skipped test(s) fail this session" in in_ci.stdout


def test_excerpts_are_small_and_carry_their_licences() -> None:
    files = [p for name in EXCERPTED for p in (EXCERPTS / name).rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 2_000_000
    for name, licence in (("pope", "LICENSE"), ("amber", "LICENSE"), ("hallusionbench", "LICENSE.md")):
        assert (EXCERPTS / name / licence).is_file()
    notice = (EXCERPTS / "NOTICE.md").read_text(encoding="utf-8")
    for source in ("RUCAIBox/POPE", "junyangwang0410/AMBER", "tianyi-lab/HallusionBench", "CC BY 4.0"):
        assert source in notice


@pytest.mark.full_data
def test_the_excerpts_are_what_the_script_makes_from_the_full_data(tmp_path: Path) -> None:
    write_excerpts(FULL_DATA, tmp_path)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(EXCERPTS) for name in EXCERPTED for p in (EXCERPTS / name).rglob("*")
                       if p.is_file())
    assert made == committed
    changed = [str(p) for p in made if (tmp_path / p).read_bytes() != (EXCERPTS / p).read_bytes()]
    assert not changed, f"regenerate with tests/data/excerpts/make_excerpts.py: {changed}"
