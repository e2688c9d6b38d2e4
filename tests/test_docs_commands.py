"""Every shell command in the user docs (README.md and docs/*.md, fenced ``bash`` / ``sh`` blocks): run here and
its exit code checked, or listed below as not run, with the reason.

Why: a documented command that fails is the first thing a new user meets. The commands are run as written, in a
folder where the paths they name (``POPE/output``, ``deco.jsonl``, ``data/...``) are links to the real files of
the shared data folder; what no command here can do offline (ask a model over the network, load a GPU model,
install packages) is said per command. A new command in the docs fails
:func:`test_every_documented_command_is_run_or_said_why_not` until it is run here or given its reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import FULL_DATA, REPO_ROOT

PEER = FULL_DATA / "peer-outputs"
LLAVA_POPE = PEER / "pope-llava-1.5-7b-partial"
VILA = PEER / "vlmevalkit-vila-1.5-8b"

_FENCE = re.compile(r"^```(bash|sh|shell|console)\s*$")


def documented_commands() -> list[tuple[str, str]]:
    """(file, command) for each command of the docs' shell blocks: continuation lines joined, comments dropped."""
    found: list[tuple[str, str]] = []
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        inside, command = False, ""
        for line in path.read_text(encoding="utf-8").splitlines():
            if _FENCE.match(line):
                inside = True
                continue
            if line.startswith("```"):
                inside = False
                continue
            text = line.strip()
            if not inside or (not command and (not text or text.startswith("#"))):
                continue
            command = f"{command} {text}" if command else text
            if command.endswith("\\"):
                command = command[:-1].rstrip()
                continue
            found.append((path.name, re.sub(r"\s+#\s.*$", "", command).strip()))
            command = ""
    return found


#: Commands run here: the start of the command -> the links its folder needs (name there -> real file).
RUN: dict[str, dict[str, Path]] = {
    "halluscope run -b chair --data chair-coco -r deco.jsonl": {
        "chair-coco": FULL_DATA / "chair-coco", "deco.jsonl": PEER / "chair-deco-llava-1.5-7b" / "deco.jsonl",
    },
    "halluscope run -b chair --data chair-coco -r deco_chair.json": {
        "chair-coco": FULL_DATA / "chair-coco",
        "deco_chair.json": PEER / "chair-deco-llava-1.5-7b" / "deco_chair.jsonl",  # chair.py's JSON, one document
    },
    "halluscope run -b hallusionbench --data HallusionBench.json -r HallusionBench_result.json": {
        "HallusionBench.json": FULL_DATA / "hallusionbench" / "HallusionBench.json",
        "HallusionBench_result.json": FULL_DATA / "hallusionbench" / "HallusionBench_result_sample.json",
    },
    "halluscope run -b hallusionbench --data data/hallusionbench": {"data": FULL_DATA},
    "halluscope run -b pope --data POPE-e3e3926/output": {
        "POPE-e3e3926/output": LLAVA_POPE / "pope-labels-e3e3926",
        "playground/data/eval/pope/llava_pope_test.jsonl": LLAVA_POPE / "llava_pope_test.jsonl",
        "playground/data/eval/pope/answers/llava-v1.5-7b.jsonl": LLAVA_POPE / "llava-v1.5-7b.jsonl",
    },
    "halluscope run -b hallusionbench --data HallusionBench.json --judge vlmevalkit": {
        "HallusionBench.json": FULL_DATA / "hallusionbench" / "HallusionBench.json",
        "outputs/VILA1.5-8b/VILA1.5-8b_HallusionBench.xlsx": VILA / "vila_8b_HallusionBench.xlsx",
    },
    "halluscope run -b pope --data POPE/output --bench-opt mode=vlmevalkit": {
        "POPE/output": FULL_DATA / "pope", "outputs/VILA1.5-8b/VILA1.5-8b_POPE.xlsx": VILA / "vila_8b_POPE.xlsx",
    },
    "halluscope run -b pope --data POPE/output --bench-opt sources=coco --bench-opt mode=paper --bench-opt questions": {
        "POPE/output": FULL_DATA / "pope", "llava_pope_test.jsonl": LLAVA_POPE / "llava_pope_test.jsonl",
        "llava-v1.5-7b.jsonl": LLAVA_POPE / "llava-v1.5-7b.jsonl",
    },
    "halluscope run -b pope --data POPE/output --bench-opt labels=repope": {
        "POPE/output": FULL_DATA / "pope", "RePOPE": FULL_DATA / "repope",
        "llava_pope_test.jsonl": LLAVA_POPE / "llava_pope_test.jsonl",
        "llava-v1.5-7b.jsonl": LLAVA_POPE / "llava-v1.5-7b.jsonl",
    },
    "halluscope build reefknot --scene-graphs data/tri-he/tri-he.json --format tri-he --out built/rk": {
        "data": FULL_DATA,
    },
    "halluscope validate-judge --set real --data tri-he.json --judge typed --out real-typed.json": {
        "tri-he.json": FULL_DATA / "tri-he" / "tri-he.json",
    },
    "halluscope eval --from outputs/VILA1.5-8b --data-root data": {
        "data": FULL_DATA,
        "outputs/VILA1.5-8b/VILA1.5-8b_POPE.xlsx": VILA / "vila_8b_POPE.xlsx",
        "outputs/VILA1.5-8b/VILA1.5-8b_HallusionBench.xlsx": VILA / "vila_8b_HallusionBench.xlsx",
    },
    "halluscope build parallel --benchmark reefknot --data data/reefknot": {"data": FULL_DATA},
    "halluscope build parallel --benchmark hallusionbench --data HallusionBench.json": {
        "HallusionBench.json": FULL_DATA / "hallusionbench" / "HallusionBench.json",
    },
    "python -c \"import json; from halluscope.calibration.mmhal_real import load_labels;": {},
    "halluscope data list": {},
}  # fmt: skip

NETWORK = "asks a model or judge over the network (an OpenAI-compatible endpoint, or the hub); nothing answers here"
ANSWERS = "scores your model's answers (answers.jsonl / answers.json): the docs name no file that ships with the data"
GPU = "loads a VLM with the hf backend or serves one with vLLM: a GPU and the model's weights"
INSTALL = "installs packages (pip) or runs the test suite: the environment this test runs in"
FRAGMENT = "a fragment (`...` stands for the options of the command above), not a command on its own"
#: Commands not run here, by a pattern of their text, each with its reason (checked in order).
NOT_RUN: list[tuple[str, str]] = [
    (r"pip install|python -m pytest|\.venv/bin/pytest|python3 -m venv", INSTALL),
    (r"\s\.\.\.(\s|$)", FRAGMENT),
    (r"^export |--base-url|base_url=|tuple_base_url|openai/|-m openai|--model a=|gpt-4o|--judge-model qwen|"
     r"--extractor-model qwen|vllm serve|HALLUSCOPE_BASE_URL=http|datasets--lmms-lab", NETWORK),
    (r"--suite suite\.toml", "runs the suite file you write (suite.md shows one; its models are endpoints)"),
    (r"hf/|llava-hf", GPU),
    (r"-r answers\.jsonl|-r answers\.json|--responses answers\.jsonl|coco_pope_adversarial_answers\.json|"
     r"-r hqh-answers\.jsonl", ANSWERS),
    (r"^halluscope report runs/mymodel|^halluscope rejudge runs/mymodel",
     "reports or re-judges the run of the commands above (your model's answers)"),
    (r"--data POPE/output -r huge_POPE\.xlsx", "shows the error an oversized sheet gives (no such sheet ships)"),
    (r"^halluscope quality runs/", "measures runs made from your models' answers (several seeds, parallel forms)"),
    (r"-r MMHAL/responses/llava_7b\.json", NETWORK),
    (r"opera/\$m/\$d|^for m in|^done; done", "a loop over OPERA's 12 caption files (the CHAIR test runs them)"),
    (r"--format gqa|--format vg", "needs GQA's or Visual Genome's scene graph files (gigabytes, not in the data)"),
    (r"--data built/rk ", ANSWERS),
    (r"--out /tmp/rk|bench/", "a measurement script or its build (minutes to hours; the numbers it prints are in"
     " the docs beside it)"),
    (r"^halluscope build parallel",
     "builds a parallel form of a whole large benchmark (POPE, Tri-HE, HQH: minutes each on two cores; AMBER's"
     " repository folder is not in the data); Reefknot's and HallusionBench's run above"),
    (r"validate-judge --set real --data data/tri-he/tri-he.json --judge typed --judge similarity",
     "the similarity judge over the labelled set: minutes on two cores (the typed one runs here)"),
    (r"--data ~/LMUData|--data path/to/|-r logs/llava/", "another tool's copy of the data or its logs, not shipped"),
    (r"^halluscope data pull|^HALLUSCOPE_DATA_MIRROR=\S+ halluscope data pull",
     "fetches from GitHub (or a mirror): no network here; tests/test_data_pull.py runs it against a loopback server"),
]  # fmt: skip


def _how(command: str) -> tuple[str, dict[str, Path] | None]:
    """``("run", links)`` or ``("skip", reason)`` for a documented command; ``("unknown", None)`` if neither."""
    for start, links in RUN.items():
        if command.startswith(start):
            return "run", links
    for pattern, reason in NOT_RUN:
        if re.search(pattern, command):
            return reason, None
    return "unknown", None


def test_every_documented_command_is_run_or_said_why_not() -> None:
    commands = documented_commands()
    assert len(commands) > 80  # the collector reads the blocks
    unknown = [f"{name}: {command}" for name, command in commands if _how(command)[0] == "unknown"]
    assert not unknown, "documented commands neither run by this test nor given a reason:\n" + "\n".join(unknown)
    ran = [command for _, command in commands if _how(command)[0] == "run"]
    assert len(ran) >= len(RUN)  # each entry of RUN names a command the docs still hold


def _runnable() -> list[tuple[str, str, dict[str, Path]]]:
    out = []
    for name, command in documented_commands():
        how, links = _how(command)
        if how == "run" and links is not None:
            out.append((name, command, links))
    return out


@pytest.mark.full_data
@pytest.mark.parametrize(("doc", "command", "links"), _runnable(), ids=lambda v: v if isinstance(v, str) else "")
def test_documented_command_runs(doc: str, command: str, links: dict[str, Path], tmp_path: Path) -> None:
    for name, target in links.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).symlink_to(target)
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
        "HALLUSCOPE_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        ["bash", "-c", command.replace("python -c", f"{sys.executable} -c")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, f"{doc}: {command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
