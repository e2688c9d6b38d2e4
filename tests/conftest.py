"""Fixtures shared by the test modules.

- the ``full_data`` marker: a test that reads the full benchmark files of the shared folder (see
  ``tests/paths.py``). Without that folder it is skipped with a one-line reason, or fails when
  ``HALLUSCOPE_REQUIRE_FULL_DATA=1`` (as ``.ci/run`` sets, so CI never hides it). With that variable set, a
  session in which any test was skipped fails.
- ``tri_he_json`` / ``reefknot_dir``: for tests of the readers of the released layouts, twice: on the
  synthetic stand-ins of ``tests/layouts.py`` (everyday) and on the released files (``full_data``).
- ``scripted_server``: a fresh scripted OpenAI-compatible server on loopback (see ``scripted_server.py``).
- ``llama_server``: the base URL of a real llama.cpp server running the packaged Qwen2.5-1.5B GGUF, started
  once per test session. It never skips: without llama-cpp-python[server] or the model packages it fails
  with the install command, because CI installs both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.layouts import reefknot_layout, tri_he_layout
from tests.paths import FULL_DATA, REEFKNOT_DIR, REQUIRE_FULL_DATA_ENV, TRI_HE_JSON, full_data_present
from tests.scripted_server import ScriptedServer


def _full_data_required() -> bool:
    return os.environ.get(REQUIRE_FULL_DATA_ENV, "") not in ("", "0")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or, where required, fail) a ``full_data`` test before its fixtures touch the missing files."""
    if item.get_closest_marker("full_data") is None or full_data_present():
        return
    reason = f"needs the full benchmark data at {FULL_DATA} (set HALLUSCOPE_SHARED to the shared folder)"
    if _full_data_required():
        pytest.fail(f"{reason}; {REQUIRE_FULL_DATA_ENV} is set, so it may not be skipped", pytrace=False)
    pytest.skip(reason)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _full_data_required() and terminalreporter.stats.get("skipped"):
        terminalreporter.write_line(
            f"{REQUIRE_FULL_DATA_ENV} is set: {len(terminalreporter.stats['skipped'])} skipped test(s) fail "
            "this session", red=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Where full data is required, a skipped test of any kind fails the session: CI hides nothing."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped") if reporter is not None else None
    if _full_data_required() and skipped and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_BOTH = [pytest.param("layout"), pytest.param("released", marks=pytest.mark.full_data)]


@pytest.fixture(params=_BOTH)
def tri_he_json(request: pytest.FixtureRequest) -> Path:
    """A ``tri-he.json`` (images beside it): the synthetic stand-in, then the released file."""
    return tri_he_layout() if request.param == "layout" else TRI_HE_JSON


@pytest.fixture(params=_BOTH)
def reefknot_dir(request: pytest.FixtureRequest) -> Path:
    """A folder of Reefknot's three files: the synthetic stand-ins, then the released files."""
    return reefknot_layout() if request.param == "layout" else REEFKNOT_DIR


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    from halluscope.llm.offline import llama_server as serve

    with serve(n_ctx=4096) as server:
        yield server.base_url
