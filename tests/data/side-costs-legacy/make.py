"""How the files here were made: run with agentloop's sources from before side_cost records (commit c161e95) on PYTHONPATH.

    git archive c161e95 src | tar -x -C /tmp/old && PYTHONPATH=/tmp/old/src python make.py OUT_DIR
"""

import sys
from pathlib import Path

from agentloop.agent.loopcheck import LoopCheck

from agentloop import Budget, run, tool
from agentloop.agent.context import ContextManager
from agentloop.budget import Price
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import TranscriptWriter

out = Path(sys.argv[1])


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool(read_only=True)
def big(n: int) -> str:
    """A large output."""
    return f"{n}:" + "y" * 3000


cheap = ScriptedModel([reply("NOT_LOOPING", usage=(50, 2)), reply("LOOPING", usage=(60, 2))], name="cheap")
check = LoopCheck(cheap, model_name="cheap", price=Price(input=1_000_000, output=2_000_000), after=2, every=2)
script = [reply("", [("echo", {"text": f"round {i}"})], usage=(100, 10), step=i) for i in range(1, 10)]
with TranscriptWriter(out / "loop-check.jsonl") as w:
    run(ScriptedModel(script), [echo], "t", Budget(max_steps=20, max_usd_micros=10_000_000), transcript=w, prepare=check.prepare)

path = out / "compaction-overrun.jsonl"
cm = ContextManager(window=1000, keep_recent=1, mask_threshold=100, transcript_path="t.jsonl",
                    summarizer=ScriptedModel([reply("summary", usage=(1_000_000, 5))]))
steps = [reply(f"step {i}", [("big", {"n": i})], usage=(10, 1), step=i) for i in range(4)]
with TranscriptWriter(path) as w:
    run(ScriptedModel(steps), [big], [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}],
        Budget(max_steps=10, max_usd_micros=10_000_000), transcript=w, prepare=cm.prepare)
