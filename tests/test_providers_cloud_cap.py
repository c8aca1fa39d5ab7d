"""The spend cap's property over Claude on Bedrock and Vertex: the same adversary, each platform's own wire.

``test_spend_cap_property.py``'s adversary bills every attempt up to the documented bound, injects 500s and
streams cut after billing, cuts replies at max tokens, and lies (negative, fractional, huge or missing counts, a
cheaper model's name). Here its answers reach the Bedrock adapter as AWS event-stream frames (each Anthropic
event base64 in a ``chunk``, as Bedrock sends them) and the Vertex adapter at Vertex's path; the requests carry
no ``model`` (the platform id is in the path), and are priced at the Anthropic model the id names. The cap
holds, no call settles past its reservation, and a lie never lowers the spend below the real bill.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from agentloop.budget import Budget
from agentloop.events import ModelRequest
from agentloop.providers.base import RetryPolicy, Target
from agentloop.providers.bedrock import BedrockAuth, BedrockModel
from agentloop.providers.sse import parse_events
from agentloop.providers.vertex import VertexAuth, VertexModel
from agentloop.run import run
from agentloop.testing.awsframes import chunk_frame
from test_spend_cap_property import PRICES, SETTINGS, Adversary, _prompt, check_turns, emit, knobs

IDS = {
    "bedrock": {"claude-haiku-4-5": "us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-sonnet-4-5": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
    "vertex": {"claude-haiku-4-5": "claude-haiku-4-5@20251001", "claude-sonnet-4-5": "claude-sonnet-4-5@20250929"},
}


def _platform_handler(adv: Adversary, platform: str) -> Any:
    """The adversary behind the platform's wire: the model named by the path, the answer framed as the platform frames it."""
    names = {v: k for k, v in IDS[platform].items()}

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert "model" not in body and body["anthropic_version"] in ("bedrock-2023-05-31", "vertex-2023-10-16")
        path = request.url.path
        pid = path.split("/model/")[1].split("/")[0] if platform == "bedrock" else path.rsplit("/models/", 1)[1].split(":streamRawPredict")[0]
        inner = httpx.Request("POST", "http://adversary.invalid/v1/messages", content=json.dumps({**body, "model": names[pid]}).encode())
        resp = adv.handle(inner)
        if platform == "vertex" or resp.status_code != 200:
            return resp
        frames = b"".join(chunk_frame(data) for _, data in parse_events(resp.content))
        return httpx.Response(200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=frames)

    return handle


def open_platform(adv: Adversary, platform: str, fallback: bool, name: str = "claude-haiku-4-5") -> Any:
    transport = httpx.MockTransport(_platform_handler(adv, platform))
    policy = RetryPolicy(max_attempts=2, sleep=lambda s: None, rand=lambda: 0.0)

    def make(n: str, fb: Any = None) -> Any:
        if platform == "bedrock":
            m: Any = _Bedrock(Target("bedrock", IDS[platform][n], "http://adversary.invalid", None), auth=BedrockAuth("none", None),
                              transport=transport, policy=policy, fallback=fb)
        else:
            m = _Vertex(Target("vertex", IDS[platform][n], "http://adversary.invalid/v1/projects/p/locations/global", None),
                        auth=VertexAuth(None), transport=transport, policy=policy, fallback=fb)
        m.adv, m.price, m.max_continuations = adv, PRICES.resolve(n), 2
        return m

    return make(name, make("claude-sonnet-4-5") if fallback else None)


class _Bedrock(BedrockModel):
    adv: Adversary

    def complete(self, request: ModelRequest) -> Any:
        self.adv.local.request = request
        return super().complete(request)


class _Vertex(VertexModel):
    adv: Adversary

    def complete(self, request: ModelRequest) -> Any:
        self.adv.local.request = request
        return super().complete(request)


PLATFORM = st.sampled_from(["bedrock", "vertex"])


@SETTINGS
@given(**knobs, platform=PLATFORM)
def test_a_run_on_bedrock_or_vertex_never_settles_past_its_cap(seed: int, cap: int, exact: float, faults: float, fallback: bool,
                                                              max_out: int, platform: str) -> None:
    adv = Adversary(seed, exact, faults, spawn=0.0, cut=0.5)
    r = run(open_platform(adv, platform, fallback), [emit], _prompt(), Budget(max_steps=12, max_usd_micros=cap), prices=PRICES,
            max_output_tokens=max_out)
    check_turns([r])
    assert adv.true_micros <= r.spent_micros <= cap


@SETTINGS
@given(**knobs, lie=st.sampled_from([0.3, 1.0]), platform=PLATFORM)
def test_a_lying_platform_never_lowers_the_spend_below_its_real_bill(seed: int, cap: int, exact: float, faults: float, fallback: bool,
                                                                    max_out: int, lie: float, platform: str) -> None:
    """Lies told through Bedrock's frames or Vertex's SSE are caught as they are on Anthropic's API: the reply is
    charged its reservation (an overrun that stops the run), never less than the real bill, never past the cap."""
    adv = Adversary(seed, exact, faults, spawn=0.0, cut=0.3, lie=lie)
    r = run(open_platform(adv, platform, fallback), [emit], _prompt(), Budget(max_steps=8, max_usd_micros=cap), prices=PRICES,
            max_output_tokens=max_out)
    check_turns([r], lies=True)
    assert 0 <= adv.true_micros <= r.spent_micros <= cap
    if adv.lies:
        assert r.stop_reason == "budget_overrun" and "usage that cannot be billed" in (r.error or ""), r.error
