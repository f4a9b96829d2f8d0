"""Side-by-side speed of llama-cpp-python builds on the local model: prompt and generation tokens/s.

Each build is a Python interpreter with its own llama-cpp-python (e.g. the project's AVX2 build
and one built with AVX-512). The builds run in turn, one at a time, ``--rounds`` times each,
so load on the machine falls on both alike; the figures are llama.cpp's own timers (prompt
evaluation and generation), not wall clock. Greedy decoding of the same prompt: every build
must produce the same tokens, or the comparison says so.

Example:
    $ python -m sopgraph.evals.llama_build_bench avx2=.venv/bin/python \\
        avx512=/tmp/venv512/bin/python --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from sopgraph.nodes.models import verified_path

PROMPT = (
    "You are an operations assistant. A warehouse induct station raised an alarm. "
    "Read the SOP step below and write a short Python function that queries the metric "
    "`station_idle_pct` for the last 15 minutes and returns whether it exceeds 25 percent.\n"
) * 6

_CHILD = r"""
import json, sys, time
from llama_cpp import Llama
path, prompt, n_gen, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads,
            verbose=False, logits_all=False)
tokens = llm.tokenize(prompt.encode())
t0 = time.perf_counter()
llm.eval(tokens)
t1 = time.perf_counter()
out = []
for _ in range(n_gen):
    tok = llm.sample(temp=0.0)
    out.append(tok)
    llm.eval([tok])
t2 = time.perf_counter()
print(json.dumps({"prompt_tokens": len(tokens), "prompt_tps": len(tokens) / (t1 - t0),
                  "gen_tokens": n_gen, "gen_tps": n_gen / (t2 - t1), "text": llm.detokenize(out).decode(errors="replace")}))
"""


def run_once(python: str, model: str, n_gen: int, threads: int) -> dict:
    proc = subprocess.run(
        [python, "-c", _CHILD, model, PROMPT, str(n_gen), str(threads)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"error: build {python} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builds", nargs="+", help="name=path/to/python, one per build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gen", type=int, default=48, help="tokens generated per round")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    builds = dict(b.split("=", 1) for b in args.builds)
    model = str(verified_path())
    runs: dict[str, list[dict]] = {name: [] for name in builds}
    for r in range(args.rounds):
        for name, python in builds.items():
            res = run_once(python, model, args.gen, args.threads)
            runs[name].append(res)
            print(f"round {r + 1} {name}: prompt {res['prompt_tps']:.1f} tok/s, "
                  f"gen {res['gen_tps']:.1f} tok/s", file=sys.stderr, flush=True)  # fmt: skip
    texts = {name: rs[0]["text"] for name, rs in runs.items()}
    summary = {
        "threads": args.threads,
        "rounds": args.rounds,
        "prompt_tokens": next(iter(runs.values()))[0]["prompt_tokens"],
        "same_output": len(set(texts.values())) == 1,
        "builds": {
            name: {
                "prompt_tps_median": round(statistics.median(x["prompt_tps"] for x in rs), 1),
                "gen_tps_median": round(statistics.median(x["gen_tps"] for x in rs), 1),
                "prompt_tps": [round(x["prompt_tps"], 1) for x in rs],
                "gen_tps": [round(x["gen_tps"], 1) for x in rs],
            }
            for name, rs in runs.items()
        },
    }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
