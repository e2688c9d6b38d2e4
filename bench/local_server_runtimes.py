"""The two llama.cpp servers halluscope can start, side by side on the packaged GGUF: start-up time, a long
first prompt, and two more requests that share its prefix (what a judge's fixed instructions give).

    python bench/local_server_runtimes.py [--threads 2] [--requests 3]

Each server is started as ``llama_server`` starts it (``HALLUSCOPE_LLAMA_SERVER`` picks the runtime), asked
the same prompts at temperature 0, and stopped; the load average is printed before and after, since the
figures depend on what else the machine runs.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from pathlib import Path

from halluscope.llm.offline import SERVER_RUNTIMES, llama_server, runtime_version, server_runtime

REGIONS = "\n".join(f"a red object number {i} on the table X:{i} Y:{2 * i} Width:40 Height:30" for i in range(40))


def _ask(base_url: str, model: str, text: str) -> tuple[float, dict[str, object]]:
    body = {
        "model": model, "temperature": 0, "max_tokens": 16,
        "messages": [{"role": "system", "content": "You score answers."}, {"role": "user", "content": text}],
    }  # fmt: skip
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=900) as reply:
        answer = json.loads(reply.read())
    return time.perf_counter() - started, answer.get("usage", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--requests", type=int, default=3)
    args = parser.parse_args()
    print("load before:", Path("/proc/loadavg").read_text().strip())
    for runtime in SERVER_RUNTIMES:
        os.environ["HALLUSCOPE_LLAMA_SERVER"] = runtime
        try:
            server_runtime()
        except Exception as error:  # not installed here: say so and go on
            print(f"{runtime}: {error}")
            continue
        started = time.perf_counter()
        with llama_server(n_threads=args.threads) as server:
            startup = time.perf_counter() - started
            times = []
            for n in range(args.requests):
                prompt = f"{REGIONS}\n\nInstruction: Is there a glass? v{n}"
                seconds, usage = _ask(server.base_url, server.model, prompt)
                times.append(round(seconds, 2))
        print(f"{runtime_version(runtime)}: start {startup:.1f} s; requests {times} s; last usage {usage}")
    print("load after:", Path("/proc/loadavg").read_text().strip())


if __name__ == "__main__":
    main()
