"""``python -m halluscope.llm.xserver``: llama.cpp's own OpenAI-compatible server, from the xllamacpp wheel.

Why: llama-cpp-python is published on PyPI only as a source package, and building it compiles llama.cpp,
about 23 minutes on a 2-core machine before the first local LLM call can run. xllamacpp ships llama.cpp's
C++ server (continuous batching, parallel slots, prompt-prefix caching) as a prebuilt manylinux wheel, so
``pip install 'halluscope[llm]'`` takes seconds. This module starts that server on one GGUF and keeps it
running until it is sent SIGTERM or SIGINT; :func:`halluscope.llm.offline.llama_server` starts it as a
child process, waits for ``/v1/models`` and stops it, as it did ``llama_cpp.server``.

The options keep ``llama_cpp.server``'s names (``--model_alias``, ``--n_ctx``, ``--n_threads``), so the two
servers are started the same way.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m halluscope.llm.xserver", description=__doc__)
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--model_alias", default=None, help="the model name the server reports and accepts")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n_ctx", type=int, default=4096, help="context tokens, shared by the slots")
    parser.add_argument("--n_threads", type=int, default=2)
    parser.add_argument("--n_threads_batch", type=int, default=None)
    parser.add_argument("--n_parallel", type=int, default=1, help="requests decoded at once (slots)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    try:
        import xllamacpp
    except ImportError:
        print("xllamacpp is not installed: pip install 'halluscope[llm]'", file=sys.stderr)
        return 2
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.model_alias:
        params.model_alias = {args.model_alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.n_ctx
    params.n_parallel = args.n_parallel
    params.cpuparams.n_threads = args.n_threads
    params.cpuparams_batch.n_threads = args.n_threads_batch or args.n_threads
    params.cache_prompt = True  # the shared instructions at the head of each prompt are read once per slot
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    stop.wait()
    del server  # the server's destructor stops its loop and frees the model
    return 0


if __name__ == "__main__":
    sys.exit(main())
