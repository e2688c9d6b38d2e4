"""Nothing fails silently: a dead judge or model endpoint, a bad request, a corrupt run log, an empty
answers file and a reused ``--out`` are all noticed.

Each test runs the real ``halluscope run`` command (in process), or ``evaluate``, on Tri-HE-layout data.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.api import EvaluationError, evaluate
from halluscope.benchmarks.tri_he import TriHE, ground_truth_responses
from halluscope.cache import Cache
from halluscope.responses import write_responses
from halluscope.runs.runner import StageFailureError, run_benchmark
from halluscope.runs.selection import first_samples
from halluscope.stages import Extractor, Failure, ScoringContext
from halluscope.types import Claim, SampleRecord
from tests.layouts import tri_he_layout
from tests.scripted_server import Reply, ScriptedServer, completion, error

N = 3


def dead_port() -> int:
    """A loopback port nothing listens on (bound once to pick it, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def responses_file(tmp_path: Path, *, with_claims: bool = True) -> Path:
    bench = TriHE(tri_he_layout())
    chosen = first_samples(bench, N)
    return write_responses(tmp_path / "answers.jsonl", ground_truth_responses(chosen, with_claims=with_claims))


def run(out: Path, responses: Path, cache: Path, *extra: str) -> Any:
    from halluscope.cli.main import app

    args = [
        "run", "-b", "tri-he", "--data", str(tri_he_layout()), "-r", str(responses), "--limit", str(N),
        "--out", str(out), "--cache", str(cache), "--quiet", *extra,
    ]  # fmt: skip
    return CliRunner().invoke(app, args, terminal_width=200)


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_a_dead_judge_endpoint_fails_the_run_and_the_rerun_retries(tmp_path: Path) -> None:
    port = dead_port()
    responses = responses_file(tmp_path)
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    judge = ["--judge", "llm", "--judge-model", "m", "--base-url", f"http://127.0.0.1:{port}/v1"]
    judge += ["--judge-opt", "max_retries=0"]

    first = run(out, responses, cache, *judge)
    assert first.exit_code == 1, first.output
    message = " ".join(first.output.split())
    assert f"the judge failed on {N} of {N} samples" in message
    assert "could not reach" in message and str(port) in message  # the last error, with its cause
    logged = records(out)
    assert all(r["failed_stage"] == "judge" and "judge failed" in r["failure"] for r in logged)
    assert all(c["verdict"] == "unjudged" for r in logged for c in r["claims"])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["stage_failures"] == N and metrics["metrics"]["hallu_q"] is None

    # The same endpoint comes up: the same command sends the judge's requests again and finishes green.
    with ScriptedServer(responder=lambda body: completion("Verdict: supported"), port=port) as server:
        second = run(out, responses, cache, *judge)
    assert second.exit_code == 0, second.output
    claims = sum(len(r["claims"]) for r in records(out))
    assert claims > 0 and len(server.chat_requests()) == claims
    assert all(r["failure"] is None for r in records(out))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["metrics"]["hallu_q"] == 0.0 and metrics["counts"]["stage_failures"] == 0


def test_a_few_judge_failures_are_allowed_up_to_the_stated_share(tmp_path: Path) -> None:
    bench = TriHE(tri_he_layout())
    chosen = first_samples(bench, N)
    answers = ground_truth_responses(chosen, with_claims=True)
    # One answer of three carries a claim whose every judge call fails.
    answers[0] = answers[0].model_copy(update={"claims": [Claim.of(("zebra", "on", "moon"))]})
    responses = write_responses(tmp_path / "answers.jsonl", answers)
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"

    def flaky(body: Any) -> Reply:
        failing = '"zebra"' in str(body["messages"][-1]["content"])
        return error(503, "overloaded") if failing else completion("Verdict: supported")

    with ScriptedServer(responder=flaky) as server:
        judge = ["--judge", "llm", "--judge-model", "m", "--base-url", server.base_url]
        judge += ["--judge-opt", "max_retries=0"]
        strict = run(out, responses, cache, *judge)
        said = " ".join(strict.output.split())
        assert strict.exit_code == 1 and f"the judge failed on 1 of {N} samples" in said
        assert "more than the allowed 10%" in said and "HTTP 503" in said
        assert [r["failed_stage"] for r in records(out)] == ["judge", None, None]
        sent = len(server.chat_requests())
        lenient = run(out, responses, cache, *judge, "--max-failure-share", "0.5")
        assert len(server.chat_requests()) == sent + 1  # only the failed claim is asked again
    assert lenient.exit_code == 0, lenient.output
    assert [r["failed_stage"] for r in records(out)] == [None, None, "judge"]  # retried, failed again


def test_a_bad_request_stops_the_run(tmp_path: Path) -> None:
    responses = responses_file(tmp_path)
    out = tmp_path / "run"
    with ScriptedServer(responder=lambda body: error(404, "model 'gpt-9' not found")) as server:
        result = run(
            out, responses, tmp_path / "cache.sqlite",
            "--judge", "llm", "--judge-model", "gpt-9", "--base-url", server.base_url,
        )  # fmt: skip
    said = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "LLMBadRequestError" in said and "model 'gpt-9' not found" in said
    assert not (out / "metrics.json").exists()


class DownExtractor(Extractor):
    """An extractor whose backend is down: every answer fails."""

    name = "down"

    async def extract_many(self, texts: Any) -> list[list[Claim] | Failure]:
        return [Failure("extractor backend unreachable") for _ in texts]


def test_an_extractor_failure_marks_the_record_failed_and_is_retried(tmp_path: Path) -> None:
    bench = TriHE(tri_he_layout())
    chosen = first_samples(bench, N)
    answers = {r.id: r for r in ground_truth_responses(chosen)}
    ctx = ScoringContext(cache=Cache(None), extractor=DownExtractor())
    from halluscope.runs.runner import StageFailureError

    try:
        run_benchmark(bench, answers, ctx, tmp_path / "run", show_progress=False, selection=chosen)
    except StageFailureError as failure:
        assert failure.stage == "extractor" and failure.failed == N
        assert "extractor backend unreachable" in str(failure)
    else:
        raise AssertionError("a run whose extractor failed on every sample must not pass")
    logged = records(tmp_path / "run")
    assert [r["failed_stage"] for r in logged] == ["extractor"] * N


def judge_by_claim(body: Any) -> Reply:
    """A deterministic LLM judge: claims whose text has an even length are supported, the others not."""
    claim = str(body["messages"][-1]["content"]).rsplit("Claim:", 1)[-1].strip()
    if len(claim) % 2 == 0:
        return completion("Verdict: supported")
    return completion("Verdict: unsupported\nUnsupported part: relation")


def test_corrupt_log_lines_are_counted_reported_and_redone(tmp_path: Path) -> None:
    responses = responses_file(tmp_path)
    out = tmp_path / "run"
    with ScriptedServer(responder=judge_by_claim) as server:
        judge = ["--judge", "llm", "--judge-model", "m", "--base-url", server.base_url]
        first = run(out, responses, tmp_path / "cache.sqlite", *judge)
        assert first.exit_code == 0, first.output
        full = json.loads((out / "metrics.json").read_text())
        assert 0 < full["metrics"]["hallu_q"] < 100

        lines = (out / "samples.jsonl").read_text().splitlines()
        damaged_id = json.loads(lines[1])["id"]
        lines[0] = lines[0][: len(lines[0]) // 2]  # cut in the middle: not JSON any more
        lines[1] = json.dumps({**json.loads(lines[1]), "claims": "garbled"})  # JSON, but not a record
        (out / "samples.jsonl").write_text("\n".join(lines) + "\n")

        # A fresh cache: redoing the two samples must really judge them again.
        second = run(out, responses, tmp_path / "cache2.sqlite", *judge)
        redone = {json.loads(line)["id"] for line in (out / "samples.jsonl").read_text().splitlines()[-2:]}
    assert second.exit_code == 0, second.output
    said = " ".join(second.output.split())
    assert "2 corrupt line(s) in samples.jsonl" in said and "line 1:" in said
    assert f"line 2 (sample {damaged_id})" in said
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["corrupt_log_lines"] == 2
    assert [d["line"] for d in metrics["details"]["corrupt_log_lines"]] == [1, 2]
    # Both samples were scored again: the metrics are those of the intact run.
    assert damaged_id in redone and len(records(out)) == N
    assert metrics["metrics"] == full["metrics"] and metrics["counts"]["samples"] == N


def test_a_torn_last_line_is_redone_but_not_called_corrupt(tmp_path: Path) -> None:
    responses = responses_file(tmp_path)
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    with ScriptedServer(responder=judge_by_claim) as server:
        judge = ["--judge", "llm", "--judge-model", "m", "--base-url", server.base_url]
        assert run(out, responses, cache, *judge).exit_code == 0
        text = (out / "samples.jsonl").read_text()
        (out / "samples.jsonl").write_text(text[:-10])  # the last write was interrupted
        again = run(out, responses, cache, *judge)
    assert again.exit_code == 0 and "corrupt line" not in again.output
    assert json.loads((out / "metrics.json").read_text())["counts"]["corrupt_log_lines"] == 0
    assert len(records(out)) == N


# -- the model under test: an endpoint that cannot serve stops the run; one bad sample does not ----------


def run_model(out: Path, model: str, *extra: str, cache: Path | None = None) -> Any:
    """``halluscope run --model`` on the first N Tri-HE-layout questions (no retries: tests stay fast)."""
    from halluscope.cli.main import app

    args = [
        "run", "-b", "tri-he", "--data", str(tri_he_layout()), "--model", model, "--limit", str(N),
        "--out", str(out), "--quiet", "--judge", "similarity",
        *(["--model-opt", "max_retries=0"] if model.startswith("openai/") else []),
        *(["--cache", str(cache)] if cache else ["--no-cache"]), *extra,
    ]  # fmt: skip
    return CliRunner().invoke(app, args, terminal_width=200)


def test_an_unreachable_model_endpoint_stops_the_run_naming_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = dead_port()
    monkeypatch.setenv("HALLUSCOPE_BASE_URL", f"http://127.0.0.1:{port}/v1")
    out = tmp_path / "run"
    result = run_model(out, "openai/x")
    said = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "the model openai/x cannot answer" in said and "could not reach" in said and str(port) in said
    assert not (out / "metrics.json").exists()  # no table of "—" passed off as a result
    assert "could not reach" in (out / "respond-errors.jsonl").read_text()


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (error(401, "invalid api key"), "authentication failed"),
        (error(403, "not allowed"), "authentication failed"),
        (error(404, "The model 'x' does not exist"), "The model 'x' does not exist"),
    ],
)
def test_a_refused_key_or_unknown_model_stops_at_the_first_request(tmp_path: Path, reply: Reply, cause: str) -> None:
    out = tmp_path / "run"
    with ScriptedServer(responder=lambda body: reply) as server:
        result = run_model(out, f"openai/x?base_url={server.base_url}", "--concurrency", "1")
        sent = len(server.chat_requests())
    said = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "the model openai/x cannot answer" in said and cause in said
    assert sent == 1  # the other samples were not asked: they would fail alike
    assert not (out / "metrics.json").exists()


def test_one_rejected_sample_is_a_failure_of_the_model_stage_not_a_stop(tmp_path: Path) -> None:
    """An HTTP 400 for one request (an image the server cannot read) fails that sample only; the failure
    share of the model stage decides, like any stage's."""
    bench = TriHE(tri_he_layout())
    chosen = first_samples(bench, N)
    bad_prompt = next(iter(chosen.samples())).prompt
    texts = {s.prompt: r.response for s, r in zip(chosen.samples(), ground_truth_responses(chosen), strict=True)}

    def respond(body: Any) -> Reply:
        parts = body["messages"][-1]["content"]
        text = parts if isinstance(parts, str) else " ".join(p.get("text", "") for p in parts)
        if bad_prompt in text:
            return error(400, "could not decode the image")
        return completion(next(v for k, v in texts.items() if k in text))

    out = tmp_path / "run"
    with ScriptedServer(responder=respond) as server:
        model = f"openai/x?base_url={server.base_url}"
        strict = run_model(out, model)
        said = " ".join(strict.output.split())
        assert strict.exit_code == 1, strict.output
        assert f"the model failed on 1 of {N} samples" in said and "could not decode the image" in said
        logged = records(out)
        assert [r["failed_stage"] for r in logged] == ["model", None, None]
        assert json.loads((out / "metrics.json").read_text())["counts"]["stage_failures"] == 1
        lenient = run_model(out, model, "--max-failure-share", "0.5")
    assert lenient.exit_code == 0, lenient.output


def test_evaluate_with_a_dead_model_endpoint_raises_naming_the_cause(tmp_path: Path) -> None:
    port = dead_port()
    with pytest.raises(EvaluationError, match=rf"cannot answer: .*could not reach http://127.0.0.1:{port}"):
        evaluate(
            "tri-he", data=tri_he_layout(), model=f"openai/x?base_url=http://127.0.0.1:{port}/v1&max_retries=0",
            judge="similarity", limit=N, out=tmp_path / "run", cache=False,
        )  # fmt: skip


# -- every benchmark's stage failures count, named or not ------------------------------------------------


class SilentBenchmark(TriHE):
    """A benchmark whose scoring fails on every answer and names no stage (as a new benchmark might)."""

    async def score_many(self, pairs: Any, ctx: ScoringContext) -> list[SampleRecord]:
        return [
            SampleRecord(id=s.id, prompt=s.prompt, response=r.response if r else None, failure="scorer crashed")
            for s, r in pairs
        ]


def test_a_failure_in_a_benchmark_that_names_no_stage_still_fails_the_run(tmp_path: Path) -> None:
    bench = SilentBenchmark(tri_he_layout())
    chosen = first_samples(bench, N)
    answers = {r.id: r for r in ground_truth_responses(chosen)}
    answers.pop(next(iter(answers)))  # one sample without an answer: an input problem, not the stage's
    with pytest.raises(StageFailureError) as caught:
        run_benchmark(
            bench, answers, ScoringContext(cache=Cache(None)), tmp_path / "run", show_progress=False,
            selection=chosen,
        )
    assert (caught.value.stage, caught.value.failed, caught.value.reached) == ("scoring", N - 1, N - 1)
    assert [r["failed_stage"] for r in records(tmp_path / "run")] == ["input", "scoring", "scoring"]


# -- answers files that measure nothing, and --out reuse ---------------------------------------------------


def test_an_empty_or_unmatched_or_binary_responses_file_is_an_error_naming_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "no-such-sample", "response": "A cat."}) + "\n")
    binary = tmp_path / "answers.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    for path, why in ((empty, "holds no answer"), (other, "no usable response"), (binary, "not a UTF-8 text file")):
        result = run(tmp_path / f"run-{path.stem}", path, cache, "--judge", "similarity")
        said = " ".join(result.output.split())
        assert result.exit_code == 2, (path, result.output)
        assert str(path) in said and why in said, said
    # The same file replayed as a model's answers is named too.
    replayed = run_model(tmp_path / "run-replay", f"replay/{binary}")
    said = " ".join(replayed.output.split())
    assert replayed.exit_code == 2 and f"{binary}: not a UTF-8 text file" in said, said


def test_an_answers_file_for_other_samples_of_the_benchmark_is_an_error(tmp_path: Path) -> None:
    bench = TriHE(tri_he_layout())
    later = [r for r in ground_truth_responses(bench)][N : N + 2]  # real ids, none among the first N
    answers = write_responses(tmp_path / "later.jsonl", later)
    result = run(tmp_path / "run", answers, tmp_path / "cache.sqlite", "--judge", "similarity")
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and f"answers none of the {N} selected tri-he samples" in said, said


def test_an_out_holding_a_run_of_other_answers_is_refused_in_one_line(tmp_path: Path) -> None:
    bench = TriHE(tri_he_layout())
    chosen = first_samples(bench, N)
    first = responses_file(tmp_path)
    second = write_responses(tmp_path / "model-b.jsonl", ground_truth_responses(chosen, with_claims=False))
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    assert run(out, first, cache, "--judge", "similarity").exit_code == 0
    spec_before = (out / "spec.json").read_text()

    refused = run(out, second, cache, "--judge", "similarity")
    message = refused.output.strip()
    assert refused.exit_code == 2
    assert "other responses" in message and "model-b.jsonl" in message and "--overwrite" in message
    assert len(message) < 300  # a line, not a dump of both specs
    assert (out / "spec.json").read_text() == spec_before  # the run there is untouched

    replaced = run(out, second, cache, "--judge", "similarity", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert json.loads((out / "spec.json").read_text())["responses"] == str(second)


def test_a_changed_benchmark_config_is_refused_naming_the_keys(tmp_path: Path) -> None:
    from halluscope.cli.main import app

    answers, out, cache = responses_file(tmp_path), tmp_path / "run", tmp_path / "cache.sqlite"
    assert run(out, answers, cache, "--judge", "similarity").exit_code == 0
    args = ["run", "-b", "tri-he", "--data", str(tri_he_layout()), "-r", str(answers), "--limit", "2",
            "--out", str(out), "--cache", str(cache), "--quiet", "--judge", "similarity"]  # fmt: skip
    refused = CliRunner().invoke(app, args, terminal_width=400)
    message = " ".join(refused.output.split())
    assert refused.exit_code == 2
    assert f"another benchmark config (limit: {N} there, 2 now)" in message and len(message) < 300


def test_an_out_holding_another_models_run_is_refused_before_asking(tmp_path: Path) -> None:
    bench = TriHE(tri_he_layout())
    chosen = first_samples(bench, N)
    texts = {s.prompt: r.response for s, r in zip(chosen.samples(), ground_truth_responses(chosen), strict=True)}

    def respond(body: Any) -> Reply:
        parts = body["messages"][-1]["content"]
        text = parts if isinstance(parts, str) else " ".join(p.get("text", "") for p in parts)
        return completion(next(v for k, v in texts.items() if k in text))

    out = tmp_path / "modelA"
    with ScriptedServer(responder=respond) as server:
        assert run_model(out, f"openai/model-a?base_url={server.base_url}").exit_code == 0
        asked = len(server.chat_requests())
        refused = run_model(out, f"openai/model-b?base_url={server.base_url}")
        assert len(server.chat_requests()) == asked  # refused before any question was sent
        message = " ".join(refused.output.split())
        assert refused.exit_code == 2
        assert "another model (openai/model-a there, openai/model-b now)" in message and len(message) < 300
        replaced = run_model(out, f"openai/model-b?base_url={server.base_url}", "--overwrite")
        assert replaced.exit_code == 0, replaced.output
    spec = json.loads((out / "spec.json").read_text())
    assert spec["model"]["model"] == "model-b"
    assert {json.loads(line)["model"] for line in (out / "responses.jsonl").read_text().splitlines()} == {
        "openai/model-b"
    }


def test_the_same_model_with_other_settings_is_named_by_the_setting(tmp_path: Path) -> None:
    from halluscope.runs.store import RunDirError, check_run_dir

    out = tmp_path / "run"
    out.mkdir()
    there = {"provider": "openai", "model": "x", "base_url": "http://a/v1", "max_side": 512}
    (out / "spec.json").write_text(json.dumps({"model": there}))
    # Another address for the same model is the same run (an endpoint may move); another image size is not.
    check_run_dir(out, {"model": {**there, "base_url": "http://b/v1"}}, ("model",))
    with pytest.raises(RunDirError, match=r"the same model with other settings \(max_side: 512 there, 256 now\)"):
        check_run_dir(out, {"model": {**there, "max_side": 256}}, ("model",))


def test_the_failed_samples_are_named_after_the_table_the_first_five_and_a_count(tmp_path: Path) -> None:
    """Nine POPE questions, two answered: the seven without an answer are counted, the first five named in
    the log's order, the rest counted; the same command again (a finished run) names the same ones."""
    from halluscope.benchmarks.pope import Pope
    from halluscope.cli.main import app
    from tests.paths import POPE_EXCERPT

    chosen = list(Pope(POPE_EXCERPT, sources=["coco"]).samples())[:9]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": s.id, "response": "Yes."}) + "\n" for s in chosen[:2]))
    args = ["run", "-b", "pope", "--data", str(POPE_EXCERPT), "--bench-opt", "sources=coco", "-r", str(answers),
            "--limit", "9", "--out", str(tmp_path / "run"), "--no-cache", "--quiet"]  # fmt: skip
    for _ in range(2):
        result = CliRunner().invoke(app, args, terminal_width=200)
        assert result.exit_code == 0, result.output
        said = " ".join(result.output.split())
        assert "7 sample(s) could not be scored" in said and "… and 2 more" in said
        failed = [r for r in records(tmp_path / "run") if r["failure"]]
        assert [r["id"] for r in failed] == [s.id for s in chosen[2:]]
        named = [line for line in result.output.splitlines() if line.strip().startswith("•")]
        assert len(named) == 5 and all(s.id in line for s, line in zip(chosen[2:7], named, strict=True))
