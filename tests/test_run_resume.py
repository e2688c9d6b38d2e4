"""A run killed midway and re-run gives the same metrics as an uninterrupted run, with no duplicates."""

import json
import os
import signal
import subprocess
import sys
import time

from halluscope.benchmarks.tri_he import TriHE, ground_truth_responses
from halluscope.responses import write_responses
from halluscope.runs.selection import first_samples
from tests.layouts import tri_he_layout

N = 120


def run_cli(out, responses, env, limit=N, **kwargs):
    command = [
        sys.executable,
        "-m",
        "halluscope.cli.main",
        "run",
        "--benchmark",
        "tri-he",
        "--data",
        str(tri_he_layout()),
        "--responses",
        str(responses),
        "--limit",
        str(limit),
        "--judge",
        "similarity",
        "--chunk-size",
        "8",
        "--out",
        str(out),
        "--quiet",
    ]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    )


def lines(path):
    return path.read_text().splitlines() if path.exists() else []


def test_killed_run_resumes_to_the_same_metrics_without_duplicates(tmp_path):
    bench = first_samples(TriHE(tri_he_layout()), N)
    # Mismatched answers give a mix of supported and hallucinated verdicts; claims are supplied.
    responses = write_responses(
        tmp_path / "responses.jsonl", ground_truth_responses(bench, with_claims=True, mismatched=True)
    )
    env = {**os.environ, "HALLUSCOPE_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}

    full = tmp_path / "full"
    process = run_cli(full, responses, env)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr

    killed = tmp_path / "killed"
    env_nocache = {**env, "HALLUSCOPE_CACHE_DIR": str(tmp_path / "cache2")}
    process = run_cli(killed, responses, env_nocache)
    deadline = time.time() + 600
    while len(lines(killed / "samples.jsonl")) < 16 and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    written = len(lines(killed / "samples.jsonl"))
    assert 0 < written < N, f"the kill must land mid-run (had {written} of {N} records)"
    assert not (killed / "metrics.json").exists()

    process = run_cli(killed, responses, env_nocache)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr

    ids = [json.loads(line)["id"] for line in lines(killed / "samples.jsonl")]
    assert len(ids) == N and len(set(ids)) == N
    full_metrics = json.loads((full / "metrics.json").read_text())
    resumed_metrics = json.loads((killed / "metrics.json").read_text())
    assert resumed_metrics == full_metrics
    assert 0 < full_metrics["metrics"]["hallu_q"] < 100


def test_a_run_dir_with_another_configuration_is_refused(tmp_path):
    bench = first_samples(TriHE(tri_he_layout()), 4)
    responses = write_responses(tmp_path / "r.jsonl", ground_truth_responses(bench, with_claims=True))
    env = {**os.environ, "HALLUSCOPE_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "run"
    first = run_cli(out, responses, env, limit=4)
    assert first.wait(timeout=600) == 0
    other = subprocess.run(
        [
            sys.executable,
            "-m",
            "halluscope.cli.main",
            "run",
            "-b",
            "tri-he",
            "--data",
            str(tri_he_layout()),
            "-r",
            str(responses),
            "--limit",
            "4",
            "--judge",
            "similarity",
            "--judge-opt",
            "verdict_threshold=0.7",
            "--out",
            str(out),
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert other.returncode == 2
    said = " ".join(other.stderr.split())
    assert "another judge config (verdict_threshold: 0.6 there, 0.7 now)" in said and len(said) < 300
