"""The ``apiKeyHelper``'s key is made anew as Claude Code makes it: after its TTL, and once after a 401.

Claude Code's documented behaviour (its authentication docs, as quoted at
recombobulate.dev/tips/use-apikeyhelper-to-rotate-credentials-automatically, "via Claude Code Docs —
Authentication"): it "calls this script after 5 minutes ... or immediately on an HTTP 401 response", and
"if you need a different refresh interval, set the CLAUDE_CODE_API_KEY_HELPER_TTL_MS environment variable";
the claude-code repository's plugin-dev guide (commit e9e5f0c, "TTL Configuration"): "by default, dynamically
generated API keys are cached for 5 minutes. Configure the TTL with CLAUDE_CODE_API_KEY_HELPER_TTL_MS".
Run against the local fake provider, which answers any key but ``require_key`` with a 401.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.key_helper import DEFAULT_TTL_MS, TTL_ENV, KeyHelper
from agentloop.budget import Budget
from agentloop.providers import ProviderConfigError, open_model
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")
MODEL = "anthropic:claude-haiku-4-5"


def _helper_script(tmp: Path, last: int = 99) -> str:
    """A helper printing ``sk-helper-key-N`` on its Nth run (N stops growing at ``last``)."""
    script = tmp / "get-key.sh"
    count = tmp / "runs"
    script.write_text(f"#!/bin/sh\nn=$(( $(cat {count} 2>/dev/null || echo 0) + 1 ))\necho $n > {count}\n"
                      f"[ $n -gt {last} ] && n={last}\necho sk-helper-key-$n\n")
    script.chmod(0o755)
    return str(script)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _helper(tmp: Path, env: dict[str, str] | None = None, last: int = 99) -> tuple[KeyHelper, Clock]:
    clock = Clock()
    return KeyHelper(_helper_script(tmp, last), str(tmp / "settings.json"), False, env or {}, cwd=str(tmp), clock=clock), clock


def _ask(model: Any) -> Any:
    return run(model, [], "hi", Budget(max_steps=2, max_usd_micros=100_000), max_output_tokens=100)


def _open(fp: FakeProvider, helper: Any) -> Any:
    return open_model(MODEL, env={"ANTHROPIC_BASE_URL": fp.url}, key_helper=helper, max_attempts=1, sleep=lambda s: None)


def test_the_helper_runs_again_only_once_its_ttl_has_passed_and_the_new_key_is_sent(tmp_path: Path) -> None:
    helper, clock = _helper(tmp_path, {TTL_ENV: "1000"})
    with FakeProvider({"replies": [{"text": "one"}, {"text": "two"}], "require_key": "sk-helper-key-2"}) as fp:
        m = _open(fp, helper)  # the first run, at opening: sk-helper-key-1
        assert helper.runs == 1
        clock.now += 1.5  # past the 1000 ms TTL: the next request runs the helper again, and carries its key
        assert _ask(m).answer == "one"
        clock.now += 0.5  # within the TTL: the key is reused
        assert _ask(m).answer == "two"
        assert len(fp.requests) == 2  # no 401 on the way
    assert helper.runs == 2


def test_without_the_ttl_variable_the_key_lives_five_minutes(tmp_path: Path) -> None:
    helper, clock = _helper(tmp_path)
    assert DEFAULT_TTL_MS == 300_000
    assert helper() == "sk-helper-key-1"
    clock.now += 299
    assert helper() == "sk-helper-key-1" and helper.runs == 1
    clock.now += 1
    assert helper() == "sk-helper-key-2" and helper.runs == 2


def test_a_ttl_that_is_not_milliseconds_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    helper, _ = _helper(tmp_path, {TTL_ENV: "5m"})
    with pytest.raises(ProviderConfigError, match=f"{TTL_ENV}='5m': not a whole number of milliseconds"):
        helper()


def test_a_401_runs_the_helper_again_once_and_retries_the_call_once_with_the_new_key(tmp_path: Path) -> None:
    helper, _ = _helper(tmp_path)
    notices: list[str] = []
    with FakeProvider({"replies": [{"text": "renewed"}], "require_key": "sk-helper-key-2"}) as fp:
        m = open_model(MODEL, env={"ANTHROPIC_BASE_URL": fp.url}, key_helper=helper, max_attempts=1, sleep=lambda s: None,
                       on_notice=lambda t: notices.append(str(t)))
        r = _ask(m)
        assert r.stop_reason == "no_tool_calls" and r.answer == "renewed", r.error
        assert len(fp.requests) == 2  # the 401, then the one retry (outside max_attempts=1)
    assert helper.runs == 2 and m.target.api_key == "sk-helper-key-2"
    assert "sk-helper-key-1" in m.target.secrets  # the old key stays scrubbed from every message
    assert notices and "new credentials" in notices[0] and not any("sk-helper-key" in n for n in notices)
    err = m.classify(401, {}, b'{"type":"error","error":{"type":"authentication_error","message":"bad key sk-helper-key-1"}}')
    assert "sk-helper-key-1" not in str(err)


def test_a_second_401_is_final_and_names_no_key(tmp_path: Path) -> None:
    helper, _ = _helper(tmp_path, last=3)  # a helper giving new keys every run: the retry must still be once only
    with FakeProvider({"replies": [{"text": "never"}], "require_key": "sk-no-helper-gives-this"}) as fp:
        m = _open(fp, helper)
        r = _ask(m)
        assert r.stop_reason == "model_error" and "authentication failed (401)" in (r.error or ""), r.error
        assert len(fp.requests) == 2
    assert helper.runs == 2 and "sk-helper-key" not in (r.error or "")


def test_a_key_given_by_a_plain_callable_is_not_renewed_and_a_401_is_final() -> None:
    with FakeProvider({"replies": [{"text": "never"}], "require_key": "sk-other"}) as fp:
        r = _ask(_open(fp, lambda: "sk-fixed-key-0123"))
        assert r.stop_reason == "model_error" and "authentication failed (401)" in (r.error or ""), r.error
        assert len(fp.requests) == 1


def test_the_agent_renews_the_helpers_key_on_a_401_and_keeps_both_keys_out_of_its_records(tmp_path: Path) -> None:
    home, proj, user = tmp_path / "home", tmp_path / "proj", tmp_path / "user"
    for d in (home, proj, user / ".claude"):
        d.mkdir(parents=True)
    (user / ".claude" / "settings.json").write_text(json.dumps({"apiKeyHelper": _helper_script(user)}))
    with FakeProvider({"replies": [{"text": "helped again"}], "require_key": "sk-helper-key-2"}) as fp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_CODE_"))}
        env.update({"AGENTLOOP_HOME": str(home), "HOME": str(user), "ANTHROPIC_BASE_URL": fp.url})
        p = subprocess.run([AGENTLOOP, "-p", "hi", "--model", "sonnet", "--max-usd", "1"], cwd=proj, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "helped again" in p.stdout, p.stderr
        assert len(fp.requests) == 2
    assert (user / "runs").read_text().strip() == "2"
    written = "".join(f.read_text(errors="replace") for f in home.rglob("*") if f.is_file())
    assert written and "sk-helper-key" not in written + p.stdout + p.stderr


def test_the_helper_run_again_is_not_given_the_key_it_gave_before(tmp_path: Path) -> None:
    """Keys never reach a child: the helper's environment is the agent's children's, and when it runs again
    any variable holding the key it gave before is dropped (however it is named)."""
    script = tmp_path / "dump-env.sh"
    count = tmp_path / "runs"
    script.write_text(f"#!/bin/sh\nn=$(( $(cat {count} 2>/dev/null || echo 0) + 1 ))\necho $n > {count}\n"
                      f"env > {tmp_path}/env-$n\necho sk-helper-key-$n\n")
    script.chmod(0o755)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PASTED_BY_HAND": "sk-helper-key-1"}
    helper = KeyHelper(str(script), str(tmp_path / "settings.json"), False, env, cwd=str(tmp_path))
    assert helper() == "sk-helper-key-1" and helper.renew() == "sk-helper-key-2"
    assert "PASTED_BY_HAND=sk-helper-key-1" in (tmp_path / "env-1").read_text()  # not yet a key the agent holds
    assert "sk-helper-key-1" not in (tmp_path / "env-2").read_text()
