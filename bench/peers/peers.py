"""The same agent task on agentloop and its peers: µs per step, peak RSS, import time.

The task: a zero-latency scripted model calls a trivial ``add(a, b)`` tool K
times, one call a turn, then answers. Every framework runs it through its own
public API with its own scripted-model hook (pydantic-ai's FunctionModel, an
openai-agents ``Model``, a smolagents ``Model``, a langchain chat model under
langgraph's prebuilt ReAct agent) and each run asserts the tool really ran K
times and the answer came back.

Each (framework, K) is measured in a fresh subprocess (one warm-up run at a
small K first, then the timed runs, each with a newly built agent), so
imports, caches and peak RSS do not leak from one framework into another.
agentloop writes its hash-chained transcript to a file (flushed per record)
in every run.

The machine is shared and noisy, so each cell is measured in several rounds,
the frameworks taking turns within a round (drift in the machine's load hits
them all), and up to ``--repeat`` timed runs a round while the cell's runs
stay under ``--cell-seconds``. The table gives the best run of each cell, for
every framework alike (timeit's convention: slower runs measure other
processes); the median-to-median ratio is printed beside the best-to-best one.

    bench/peers/setup              # makes bench/peers/.venv from requirements.txt
    bench/peers/.venv/bin/python bench/peers/peers.py            # the table
    bench/peers/.venv/bin/python bench/peers/peers.py --json out.json
    # agentloop before and after a change, beside each other in one run:
    git worktree add --detach /tmp/before BASE && (cd /tmp/before && scripts/build-native)
    bench/peers/.venv/bin/python bench/peers/peers.py --only agentloop,agentloop-before,pydantic-ai \
        --agentloop-before /tmp/before/src

The ratios printed are against the fastest peer at the same K, measured in
the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

FRAMEWORKS = ["agentloop", "pydantic-ai", "openai-agents", "smolagents", "langgraph"]
KS = [10, 100, 500, 2000]
RSS_STEPS = 10_000


def _answer_check(name: str, calls: int, k: int, answer: Any) -> None:
    if calls != k:
        raise SystemExit(f"{name}: the tool ran {calls} times, expected {k}")
    if "done" not in str(answer):
        raise SystemExit(f"{name}: no final answer ({answer!r})")


# --- one runner per framework: builds the agent, returns go() -> (calls made, answer) ---


def run_agentloop(k: int, tmpdir: str) -> Callable[[], tuple[int, Any]]:
    from agentloop import Budget, Registry, run, tool
    from agentloop.events import ModelReply, ToolCall
    from agentloop.transcript import TranscriptWriter

    calls = [0]

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls[0] += 1
        return a + b

    class Scripted:
        name = "scripted"

        def __init__(self) -> None:
            self.n = 0

        def complete(self, request: Any) -> ModelReply:
            self.n += 1
            if self.n <= k:
                return ModelReply(text="", tool_calls=(ToolCall(f"c{self.n}", "add", {"a": self.n, "b": 1}),))
            return ModelReply(text="done")

    registry = Registry([add])

    def go() -> tuple[int, Any]:
        path = os.path.join(tmpdir, f"agentloop-{k}-{time.perf_counter_ns()}.jsonl")
        with TranscriptWriter(path) as w:
            res = run(Scripted(), registry, "add numbers", Budget(max_steps=k + 5), transcript=w, model_name="scripted")
        return calls[0], res.answer

    return go


def run_pydantic_ai(k: int, tmpdir: str) -> Callable[[], tuple[int, Any]]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    calls = [0]
    turns = [0]

    def model_fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        turns[0] += 1
        if turns[0] <= k:
            return ModelResponse(parts=[ToolCallPart("add", {"a": turns[0], "b": 1}, tool_call_id=f"c{turns[0]}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model_fn))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls[0] += 1
        return a + b

    def go() -> tuple[int, Any]:
        res = agent.run_sync("add numbers", usage_limits=UsageLimits(request_limit=None, tool_calls_limit=None))
        return calls[0], res.output

    return go


def run_openai_agents(k: int, tmpdir: str) -> Callable[[], tuple[int, Any]]:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)
    calls = [0]

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls[0] += 1
        return a + b

    class Scripted(Model):
        def __init__(self) -> None:
            self.n = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            self.n += 1
            if self.n <= k:
                out: list[Any] = [ResponseFunctionToolCall(arguments=json.dumps({"a": self.n, "b": 1}), call_id=f"c{self.n}", name="add", type="function_call", id=f"f{self.n}", status="completed")]
            else:
                out = [ResponseOutputMessage(id="m", content=[ResponseOutputText(text="done", type="output_text", annotations=[])], role="assistant", status="completed", type="message")]
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    agent = Agent(name="adder", instructions="add", model=Scripted(), tools=[add])

    def go() -> tuple[int, Any]:
        res = Runner.run_sync(agent, "add numbers", max_turns=k + 5)
        return calls[0], res.final_output

    return go


def run_smolagents(k: int, tmpdir: str) -> Callable[[], tuple[int, Any]]:
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        Model,
    )
    from smolagents.monitoring import LogLevel

    calls = [0]

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: the first
            b: the second
        """
        calls[0] += 1
        return a + b

    class Scripted(Model):
        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.n = 0

        def generate(self, messages: Any, stop_sequences: Any = None, response_format: Any = None, tools_to_call_from: Any = None, **kw: Any) -> ChatMessage:
            self.n += 1
            if self.n <= k:
                name, args = "add", {"a": self.n, "b": 1}
            else:
                name, args = "final_answer", {"answer": "done"}
            return ChatMessage(role="assistant", content="", tool_calls=[ChatMessageToolCall(id=f"c{self.n}", type="function", function=ChatMessageToolCallFunction(name=name, arguments=args))])

    agent = ToolCallingAgent(tools=[add], model=Scripted(), max_steps=k + 5, verbosity_level=LogLevel.OFF)

    def go() -> tuple[int, Any]:
        out = agent.run("add numbers")
        return calls[0], out

    return go


def run_langgraph(k: int, tmpdir: str) -> Callable[[], tuple[int, Any]]:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    calls = [0]

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls[0] += 1
        return a + b

    class Scripted(BaseChatModel):
        n: int = 0

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            self.n += 1
            if self.n <= k:
                msg = AIMessage(content="", tool_calls=[{"name": "add", "args": {"a": self.n, "b": 1}, "id": f"c{self.n}", "type": "tool_call"}])
            else:
                msg = AIMessage(content="done")
            return ChatResult(generations=[ChatGeneration(message=msg)])

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its move to langchain.agents; the graph is the same
        graph = create_react_agent(Scripted(), [add])
    def go() -> tuple[int, Any]:
        out = graph.invoke({"messages": [("user", "add numbers")]}, {"recursion_limit": 2 * k + 10})
        return calls[0], out["messages"][-1].content

    return go


RUNNERS = {
    "agentloop": run_agentloop, "pydantic-ai": run_pydantic_ai, "openai-agents": run_openai_agents,
    "smolagents": run_smolagents, "langgraph": run_langgraph, "agentloop-before": run_agentloop,
}


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


BEFORE_ENV = "PEERS_AGENTLOOP_BEFORE"  # the src/ folder of another agentloop checkout, run as "agentloop-before"


def child(name: str, k: int, repeat: int = 1, cell_seconds: float = 0.0) -> dict[str, Any]:
    """Import the framework, warm up, run at K (``repeat`` times at most): one JSON line."""
    if name == "agentloop-before":
        sys.path.insert(0, os.environ[BEFORE_ENV])  # the other checkout's package shadows the installed one
    fn = RUNNERS[name]
    runs: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        # import time: the framework's modules, measured by a first tiny run's imports
        mods_before = set(sys.modules)
        t0 = time.perf_counter()
        _import(name)
        import_s = time.perf_counter() - t0
        n_mods = len(set(sys.modules) - mods_before)
        calls, ans = fn(2, tmp)()  # warm-up: first-call caches of every layer
        _answer_check(name, calls, 2, ans)
        while len(runs) < max(1, repeat) and (not runs or sum(runs) < cell_seconds):
            go = fn(k, tmp)  # the agent and its tool, built anew and outside the timer
            t0 = time.perf_counter()
            calls, ans = go()
            runs.append(time.perf_counter() - t0)
            _answer_check(name, calls, k, ans)
    out = {"framework": name, "k": k, "seconds": min(runs), "runs": runs, "us_per_step": min(runs) / k * 1e6,
           "calls": calls, "import_s": import_s, "modules": n_mods, "peak_rss_mib": _rss_mib()}
    if name.startswith("agentloop"):
        import agentloop
        from agentloop import _native

        out["core"] = _native.status()  # "compiled" (scripts/build-native), or why it ran from source
        out["package"] = os.path.dirname(agentloop.__file__)
        if name == "agentloop-before" and not out["package"].startswith(os.environ[BEFORE_ENV]):
            raise SystemExit(f"agentloop-before ran {out['package']}, not the checkout in {os.environ[BEFORE_ENV]}")
    return out


def _import(name: str) -> None:
    mods = {  # what each runner imports: agentloop's package names are lazy, so name the modules it uses
        "agentloop": ["agentloop.run", "agentloop.tools", "agentloop.transcript", "agentloop.budget"],
        "pydantic-ai": ["pydantic_ai", "pydantic_ai.models.function"],
        "openai-agents": ["agents", "agents.models.interface"],
        "smolagents": ["smolagents", "smolagents.models"],
        "langgraph": ["langgraph.prebuilt", "langchain_core.language_models.chat_models", "langchain_core.tools"],
    }[name.removesuffix("-before")]
    for m in mods:
        __import__(m)


def _version(name: str) -> str:
    from importlib.metadata import version

    if name == "agentloop-before":
        return "before"
    dist = {"pydantic-ai": "pydantic-ai-slim", "agentloop": "agentloop"}.get(name, name)
    try:
        return version(dist)
    except Exception:
        return "?"


def measure(name: str, k: int, repeat: int = 1, cell_seconds: float = 0.0) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", name, str(k), "--repeat", str(repeat), "--cell-seconds", str(cell_seconds)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"{name} at K={k} failed:\n{p.stderr[-3000:]}")
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


def _merge(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """One cell over its rounds: every run kept, the best one reported."""
    if old is None:
        return new
    runs = old["runs"] + new["runs"]
    best = min(runs)
    return {**old, "runs": runs, "seconds": best, "us_per_step": best / old["k"] * 1e6,
            "import_s": min(old["import_s"], new["import_s"])}


def _median_us(row: dict[str, Any]) -> float:
    return float(statistics.median(row["runs"])) / row["k"] * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("FRAMEWORK", "K"), help=argparse.SUPPRESS)
    ap.add_argument("--json", metavar="OUT", help="also write every measurement here")
    ap.add_argument("--ks", default=",".join(map(str, KS)), help="the K values (default %(default)s)")
    ap.add_argument("--max-seconds", type=float, default=300, help="skip a K whose quadratic estimate from the last K is longer")
    ap.add_argument("--only", default=",".join(FRAMEWORKS), help="frameworks to run (default: all)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, the frameworks taking turns in each (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of a cell in one round, at most (default %(default)s)")
    ap.add_argument("--cell-seconds", type=float, default=20.0,
                    help="no further run of a cell in a round once its runs took this long, and no further round "
                         "for a cell whose first run took longer (default %(default)s)")
    ap.add_argument("--agentloop-before", metavar="SRC", help="the src/ folder of another agentloop checkout "
                    "(built with its scripts/build-native), measured as 'agentloop-before' beside this one")
    args = ap.parse_args()
    if args.agentloop_before:
        os.environ[BEFORE_ENV] = os.path.abspath(args.agentloop_before)
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.repeat, args.cell_seconds)))
        return 0
    ks = [int(x) for x in args.ks.split(",")]
    names = args.only.split(",")
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    skipped: dict[tuple[str, int], float] = {}
    for rnd in range(max(1, args.rounds)):
        for k in ks:
            for name in names:
                cell = (name, k)
                if cell in skipped:
                    continue
                done = [kk for kk in ks if (name, kk) in rows and kk < k]
                if rnd == 0 and done:
                    # peers whose per-step cost grows with K (history re-sent and re-validated each turn)
                    # would take hours at the largest K on this machine: estimated, shown, not run
                    prev = rows[(name, done[-1])]
                    est = prev["seconds"] * (k / prev["k"]) ** 2
                    if est > args.max_seconds:
                        skipped[cell] = est
                        print(f"  {name:14} K={k:<5} skipped (estimated {est:,.0f} s > --max-seconds)", file=sys.stderr, flush=True)
                        continue
                if rnd > 0 and rows[cell]["runs"][0] > args.cell_seconds:
                    continue  # one long run is already many samples of a step
                rows[cell] = _merge(rows.get(cell), measure(name, k, args.repeat, args.cell_seconds))
                r = rows[cell]
                print(f"  round {rnd + 1} {name:14} K={k:<5} best {r['us_per_step']:10.1f} µs/step"
                      f"  ({len(r['runs'])} runs, median {_median_us(r):,.1f})", file=sys.stderr, flush=True)
    rss: dict[str, dict[str, Any]] = {}
    for name in names:
        steps = RSS_STEPS if name.startswith("agentloop") else max(k for (n, k) in rows if n == name)
        # a peer's peak RSS is that of its largest K's own subprocess (already run); agentloop's at 10,000 steps
        rss[name] = measure(name, steps) if name.startswith("agentloop") else rows[(name, steps)]
        print(f"  {name:14} peak RSS {rss[name]['peak_rss_mib']:.1f} MiB at {steps:,} steps", file=sys.stderr, flush=True)

    core = next((r.get("core") for (n, _), r in rows.items() if n == "agentloop"), None)
    before = next((r.get("core") for (n, _), r in rows.items() if n == "agentloop-before"), None)
    if before is not None:
        core = f"{core}; agentloop-before's core: {before}"
    print(f"\nµs per step (one tool call a turn; agentloop writes its transcript); python {sys.version.split()[0]}"
          + (f"; agentloop's core: {core}" if core else "") + "\n")
    print("| framework | version | " + " | ".join(f"K={k}" for k in ks) + " | growth K=10→max | import s | peak RSS MiB (steps) |")
    print("|---|---|" + "---|" * len(ks) + "---|---|---|")
    for name in names:
        cells = [f"{rows[(name, k)]['us_per_step']:,.1f}" if (name, k) in rows else f"not run (est. {skipped[(name, k)]:,.0f} s)" for k in ks]
        done = [k for k in ks if (name, k) in rows]
        growth = rows[(name, done[-1])]["us_per_step"] / rows[(name, done[0])]["us_per_step"]
        r = rss[name]
        print(f"| {name} | {_version(name)} | " + " | ".join(cells)
              + f" | {growth:.2f}x (K={done[-1]}) | {rows[(name, ks[0])]['import_s']:.2f} | {r['peak_rss_mib']:.1f} ({r['k']:,}) |")
    if "agentloop" in names and "agentloop-before" in names:
        print("\nagentloop after / before, µs per step at each K (same run; below 1 is faster):")
        for k in ks:
            if ("agentloop", k) in rows and ("agentloop-before", k) in rows:
                a, b = rows[("agentloop", k)], rows[("agentloop-before", k)]
                print(f"  K={k:<5} {a['us_per_step'] / b['us_per_step']:.3f} best to best, "
                      f"{_median_us(a) / _median_us(b):.3f} median to median")
    peers = [n for n in names if not n.startswith("agentloop")]
    if "agentloop" in names and peers:
        print("\nagentloop's speed-up over the fastest peer at each K (same run):")
        for k in ks:
            ran = [n for n in peers if (n, k) in rows]
            if not ran or ("agentloop", k) not in rows:
                continue
            best = min(ran, key=lambda n: rows[(n, k)]["us_per_step"])
            ratio = rows[(best, k)]["us_per_step"] / rows[("agentloop", k)]["us_per_step"]
            med = _median_us(rows[(best, k)]) / _median_us(rows[("agentloop", k)])
            print(f"  K={k:<5} {ratio:7.1f}x best to best, {med:.1f}x median to median  (fastest peer: {best}, "
                  f"{rows[(best, k)]['us_per_step']:,.1f} µs/step; runs: agentloop {len(rows[('agentloop', k)]['runs'])}, "
                  f"{best} {len(rows[(best, k)]['runs'])})")
        print(f"agentloop peak RSS at {RSS_STEPS:,} steps: {rss['agentloop']['peak_rss_mib']:.1f} MiB (target <= 50)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": list(rows.values()), "rss": list(rss.values())}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
