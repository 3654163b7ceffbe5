"""Start-up cost: agentlab beside the bare OpenAI SDK client, measured side by side in one run.

    python benchmarks/bench_startup.py [--repeats 5]

Each measurement is a fresh Python process (nothing cached in memory; the OS file cache is
warm after the first repeat), and the table shows the median over ``--repeats``:

1. **bare SDK**: ``import openai`` and build an ``openai.OpenAI`` client -- the floor any
   agent kit on the SDK pays.
2. **import + first runtime**: ``import agentlab``, the demo's model client on the simulator
   and an ``AgentRuntime`` with the research tools, ready to run (nothing run yet); its RSS
   is the memory before a run.
3. **tokenizer**: building o200k_base alone (what chapter 04's upper bound avoids before a
   run: ``agentlab.tokens``), for scale.
4. **``agentlab demo``**: the CLI's wall time against the agent time it prints itself.

Goals (issue 24): memory before a run <= 90 MB; import + first runtime <= bare SDK + 0.2 s;
demo wall time within 1 s of its agent time. Times depend on the machine and its load: run
it on a quiet machine and compare the rows of one run, not numbers across runs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# Each child prints one JSON line: {"s": seconds of its own work, "rss_mb": its RSS now}
# (psutil; ru_maxrss would also count the parent it was forked from, before exec).
_RSS = "import psutil; rss = psutil.Process().memory_info().rss / 2**20"
CHILDREN = {
    "bare SDK client": (
        "import time; t = time.perf_counter()\n"
        "import openai\n"
        "client = openai.OpenAI(api_key='sk-bench', base_url='http://127.0.0.1:9/v1')\n"
        "s = time.perf_counter() - t\n"),
    "agentlab import + first runtime": (
        "import time; t = time.perf_counter()\n"
        "import tempfile\n"
        "from agentlab import AgentRuntime, RuntimeConfig, research\n"
        "rt = AgentRuntime(research.demo_llm(), research.research_tools(tempfile.mkdtemp()),\n"
        "                  system_prompt=research.SYSTEM_PROMPT, config=RuntimeConfig())\n"
        "s = time.perf_counter() - t\n"
        "assert 'tiktoken' not in sys.modules, 'the tokenizer was built before the run'\n"),
    "tokenizer o200k_base alone": (
        "import time; t = time.perf_counter()\n"
        "from agentlab.tokens import get_encoding\n"
        "get_encoding('o200k_base').encode('hello')\n"
        "s = time.perf_counter() - t\n"),
}
_SUMMARY = re.compile(r"Turns: \d+ \| Tokens: \d+ \| ([\d.]+) s \|")


def _env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTLAB_MODEL")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; its own time and peak RSS."""
    script = "import sys\n" + code + _RSS + "\nprint(__import__('json').dumps({'s': s, 'rss_mb': rss}))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=_env(), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _agentlab() -> list[str]:
    """The ``agentlab`` command of this venv (what a student runs), else ``-m agentlab.cli``."""
    script = os.path.join(os.path.dirname(sys.executable), "agentlab")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "agentlab.cli"]


def demo() -> dict:
    """``agentlab demo``: wall time of the whole command, and the agent time it reports."""
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        proc = subprocess.run([*_agentlab(), "demo", "--output-dir", out],
                              capture_output=True, text=True, env=_env(), check=True)
        wall = time.perf_counter() - t
    agent = float(_SUMMARY.search(proc.stdout).group(1))
    return {"wall": wall, "agent": agent}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows: dict[str, list[dict]] = {name: [] for name in CHILDREN}
    demos = []
    for _ in range(args.repeats):  # interleaved, so load changes hit every row alike
        for name, code in CHILDREN.items():
            rows[name].append(child(code))
        demos.append(demo())
    med = {name: (statistics.median(r["s"] for r in runs),
                  statistics.median(r["rss_mb"] for r in runs)) for name, runs in rows.items()}
    print(f"median of {args.repeats} fresh processes ({os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}, Python {sys.version.split()[0]})")
    print(f"{'':34}{'time':>8}{'RSS':>11}")
    for name, (s, rss) in med.items():
        print(f"{name:34}{s:>7.2f}s{rss:>8.0f} MB")
    wall = statistics.median(d["wall"] for d in demos)
    agent = statistics.median(d["agent"] for d in demos)
    print(f"{'agentlab demo: wall / agent time':34}{wall:>7.2f}s{agent:>8.2f} s agent")
    sdk, ours = med["bare SDK client"][0], med["agentlab import + first runtime"][0]
    rss = med["agentlab import + first runtime"][1]
    checks = [(f"memory before a run {rss:.0f} MB <= 90 MB", rss <= 90),
              (f"import + first runtime {ours:.2f} s <= bare SDK {sdk:.2f} s + 0.2 s",
               ours <= sdk + 0.2),
              (f"demo wall {wall:.2f} s within 1 s of agent time {agent:.2f} s",
               wall - agent <= 1.0)]
    for text, ok in checks:
        print(f"  [{'ok' if ok else 'MISSED'}] {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
