"""Re-running a finished run loads only what the finished run needs (issue 33): asking whether NLTK's tagger
data is installed does not import NLTK when the data is not there, and the answer stays NLTK's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from halluscope.claims import nltk_data
from halluscope.claims.nltk_data import nltk_data_installed

RESOURCES = ["taggers/averaged_perceptron_tagger_eng/", "tokenizers/punkt_tab/english/", "corpora/wordnet"]


@pytest.mark.parametrize("resource", RESOURCES)
def test_the_answer_is_nltks_own(resource: str) -> None:
    import nltk

    try:
        nltk.data.find(resource)
        expected = True
    except LookupError:
        expected = False
    assert nltk_data_installed(resource) is expected


def test_the_search_folders_are_the_ones_nltk_builds(tmp_path: Path) -> None:
    """Built without NLTK in the process (and with NLTK_DATA set), the list equals ``nltk.data.path``."""
    code = (
        "import sys; from halluscope.claims.nltk_data import _search_paths; mine = _search_paths(); "
        "assert 'nltk' not in sys.modules; import nltk; print(mine == nltk.data.path, mine[0])"
    )
    env_data = str(tmp_path / "extra")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**_env(), "NLTK_DATA": env_data})  # fmt: skip
    assert out.stdout.split() == ["True", env_data]


def test_a_package_folder_that_is_there_is_checked_by_nltk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Something named like the package is handed to NLTK, which decides (an empty folder passes its find)."""
    (tmp_path / "taggers" / "averaged_perceptron_tagger_eng").mkdir(parents=True)
    monkeypatch.setattr(nltk_data, "_search_paths", lambda: [str(tmp_path)])
    assert nltk_data._maybe_there("taggers/averaged_perceptron_tagger_eng/")
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    assert nltk_data_installed("taggers/averaged_perceptron_tagger_eng/")
    assert not nltk_data_installed("tokenizers/punkt_tab/english/")


def test_asking_about_missing_tagger_data_does_not_import_nltk() -> None:
    code = (
        "import sys; from halluscope.claims.chair_words import nltk_tagger_ready, nltk_tokenizer_ready; "
        "from halluscope.claims.nouns import NounExtractor; "
        "print(nltk_tagger_ready(), nltk_tokenizer_ready(), NounExtractor().tagger, 'nltk' in sys.modules)"
    )
    import nltk

    try:
        nltk.data.find("taggers/averaged_perceptron_tagger_eng/")
        pytest.skip("NLTK's tagger data is installed here: then NLTK must be imported to use it")
    except LookupError:
        pass
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_env())
    assert out.stdout.split() == ["False", "False", "spacy", "False"]


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def _pope_run(tmp_path: Path) -> tuple[Any, Path, Path]:
    """A finished POPE run on the excerpt, a tenth of its samples unanswered (redone on every re-run)."""
    from halluscope.benchmarks import BENCHMARKS
    from halluscope.runs.runner import run_benchmark
    from halluscope.types import Response
    from tests.paths import POPE_EXCERPT

    bench = BENCHMARKS.create("pope", data=POPE_EXCERPT)
    samples = bench.every_sample()
    answers = {s.id: Response(id=s.id, response=["Yes", "No"][i % 2]) for i, s in enumerate(samples) if i % 10}
    out = tmp_path / "run"
    run_benchmark(bench, answers, _ctx(), out, show_progress=False)
    return (bench, answers), out, out / "metrics.json"


def test_a_finished_run_reads_its_metrics_back_and_recomputes_when_an_input_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    from halluscope.runs.runner import run_benchmark

    (bench, answers), out, metrics = _pope_run(tmp_path)
    # The first re-run redoes the unanswered samples, which moves their records to the end of the log: its
    # metrics are computed again, from then on the log stays as it is.
    run_benchmark(bench, answers, _ctx(), out, show_progress=False)
    first = metrics.read_bytes()
    tables = (out / "metric_tables.json").read_bytes()
    computed: list[int] = []
    kind = type(bench)
    original = kind.metrics
    monkeypatch.setattr(kind, "metrics", lambda self, records: computed.append(1) or original(self, records))

    report = run_benchmark(bench, answers, _ctx(), out, show_progress=False)
    assert computed == [] and metrics.read_bytes() == first and (out / "metric_tables.json").read_bytes() == tables
    assert json.loads(report.model_dump_json()) == json.loads(first)

    metrics.write_text(first.decode().replace('"pope"', '"edited"', 1))  # a hand-edited metrics.json
    run_benchmark(bench, answers, _ctx(), out, show_progress=False)
    assert computed == [1] and metrics.read_bytes() == first

    changed = dict(answers)
    first_id = next(iter(changed))
    changed[first_id] = changed[first_id].model_copy(update={"response": "I cannot tell."})
    run_benchmark(bench, changed, _ctx(), out, show_progress=False)
    assert computed == [1, 1] and metrics.read_bytes() != first

    run_benchmark(bench, answers, _ctx(), out, show_progress=False, settings=_level(0.9))
    assert computed == [1, 1, 1]
    assert json.loads(metrics.read_text())["intervals"]["f1"]["level"] == 0.9


def _ctx() -> Any:
    from halluscope.cache import Cache
    from halluscope.stages import ScoringContext

    return ScoringContext(cache=Cache(None))


def _level(level: float) -> Any:
    from halluscope.runs.runner import RunSettings

    return RunSettings(interval_level=level)


def test_a_rerun_of_a_finished_run_does_not_import_numpy(tmp_path: Path) -> None:
    _pope_run(tmp_path)
    _pope_run(tmp_path)  # the log settles (see above)
    code = (
        "import sys; from tests.test_rerun_fast import _pope_run; from pathlib import Path; "
        f"_pope_run(Path({str(tmp_path)!r})); print('numpy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_env())
    assert done.stdout.split()[-1] == "False"


def test_the_command_map_names_each_modules_own_commands() -> None:
    """``halluscope run`` imports only the modules of ``run``; the map saying which those are is what each module
    registers, so a command added to a module and not to the map fails here, not on a user's machine."""
    import importlib

    import typer

    from halluscope.cli.main import COMMAND_MODULES, COMMANDS

    by_module: dict[str, set[str]] = {}
    for module_name in COMMAND_MODULES:
        fresh = typer.Typer()
        importlib.import_module(module_name).register(fresh)
        names = {c.name or c.callback.__name__ for c in fresh.registered_commands if c.callback is not None}
        names |= {g.name or "" for g in fresh.registered_groups}
        by_module[module_name] = names
    registered = {name for names in by_module.values() for name in names}
    assert set(COMMANDS) == registered
    for command, modules in COMMANDS.items():
        assert command in by_module[modules[0]]
    # Every module is somewhere in the map (``synthetic`` adds its command to ``build``'s sub-app).
    assert {m for modules in COMMANDS.values() for m in modules} == set(COMMAND_MODULES)


def test_a_command_starts_without_the_other_commands() -> None:
    probe = (
        "import sys; sys.argv = ['halluscope', 'run', '--help']\n"
        "from halluscope.cli import main\n"
        "try:\n    main.main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('halluscope.cli.') and m not in "
        "('halluscope.cli.main', 'halluscope.cli.common', 'halluscope.cli.flags')))"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=_env())
    assert "--benchmark" in shown.stdout, shown.stderr[-2000:]
    assert shown.stdout.strip().splitlines()[-1] == "['halluscope.cli.run']"
    every = subprocess.run([sys.executable, "-m", "halluscope.cli.main", "--help"], capture_output=True, text=True,
                           env={**_env(), "COLUMNS": "200"})  # fmt: skip
    assert all(f" {name} " in every.stdout for name in ("run", "eval", "data", "build", "serve", "demo"))


def test_the_program_ends_fast_with_the_same_status_and_output(tmp_path: Path) -> None:
    """The ``halluscope`` program skips the interpreter's teardown, not its exit status, its output, its exit
    handlers, or a thread still at work."""
    version = subprocess.run([sys.executable, "-m", "halluscope.cli.main", "--version"], capture_output=True,
                             text=True, env=_env())  # fmt: skip
    assert (version.returncode, version.stdout.split()[0]) == (0, "halluscope")
    wrong = subprocess.run([sys.executable, "-m", "halluscope.cli.main", "run", "--no-such-option"],
                           capture_output=True, text=True, env=_env())  # fmt: skip
    assert wrong.returncode == 2 and "--no-such-option" in wrong.stderr
    done = tmp_path / "done"
    code = (
        "import atexit, pathlib, threading, time, sys\n"
        "from halluscope.cli.main import leave\n"
        f"done = pathlib.Path({str(done)!r})\n"
        "atexit.register(lambda: print('handler ran', flush=True))\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), done.write_text('x'))).start()\n"
        "sys.stdout.write('unflushed output')\n"
        "leave('stopped: a message')\n"
    )
    ended = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert ended.returncode == 1 and "stopped: a message" in ended.stderr
    assert "unflushed output" in ended.stdout and "handler ran" in ended.stdout
    assert done.read_text() == "x"  # the thread finished: the ordinary exit waited for it
    quick = subprocess.run(
        [sys.executable, "-c", "import sys; from halluscope.cli.main import leave; sys.stdout.write('kept'); "
         "leave(None)"], capture_output=True, text=True, env=_env(),
    )  # fmt: skip
    assert (quick.returncode, quick.stdout) == (0, "kept")


def test_a_profiled_command_still_saves_its_profile(tmp_path: Path) -> None:
    """``python -m cProfile -o FILE -m halluscope.cli.main ...`` writes its profile as the interpreter ends: the
    fast exit gives way to it (and to coverage tools) instead of ending the process under them."""
    saved = tmp_path / "profile.out"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(saved), "-m", "halluscope.cli.main",
                           "--version"], capture_output=True, text=True, env=_env())  # fmt: skip
    assert done.returncode == 0 and "halluscope" in done.stdout
    assert saved.is_file() and saved.stat().st_size > 0
