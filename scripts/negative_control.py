#!/usr/bin/env python3
"""Negative controls: sabotage a guard, run the tests that guard it, expect them to FAIL.

A suite that cannot be shown to fail proves nothing. Each sabotage below
breaks one integrity check in a copy of the tree and runs the tests that claim
to guard it, stopping at the first failure. The script exits 0 only if every
sabotage made a test fail, and every test that failed passes on the untouched
copy (the control, run last on just those tests).

    .venv/bin/python scripts/negative_control.py [--record] [[--only] WORD...]   (WORD: part of a name or path)

How it stays fast: AGENTLOOP_TEST_WORKERS (default 3: a run spends much of its
time waiting on the processes its test starts, so even 2 cores keep 3 busy)
copies of the tree are made once, each with a pytest server (pytest loaded,
nothing of agentloop);
a sabotage edits a copy, its tests run in a child forked from the server, and
the copy is put back byte for byte. Each copy is compiled once, untouched, into
bytecode (pytest's rewritten modules, and pycs checked by the source's hash),
so a run compiles only the sabotaged file, whose bytecode is taken away for
it. A C sabotage (``rebuild``) compiles only its C module. The test that caught
a sabotage last time (--record writes them to negative_control_catches.json)
runs first; when it does not fail, the whole
selection runs. Hints order the work; they never decide a verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HINTS = os.path.join(ROOT, "scripts", "negative_control_catches.json")
"""The test that caught each sabotage on the last ``--record`` run, by name: run first (order only, never the verdict)."""


@dataclass
class Sabotage:
    name: str
    path: str
    old: str | None
    """Text to replace; None appends ``new`` to the file."""
    new: str
    tests: list[str]
    rebuild: bool = False
    """Compile the C module again in the copy after the edit (a C source's stale build is never used). Only for
    a ``.c`` path: a compiled Python module whose source changed is not used, its source runs instead."""

    def __post_init__(self) -> None:
        if self.rebuild and not self.path.endswith(".c"):
            raise ValueError(f"{self.name}: rebuild is for a C source, not {self.path} (its stale build is not used)")


PB = ["tests/test_permissions.py", "tests/test_permissions_bash.py"]

SABOTAGES = [
    Sabotage(
        "MCP OAuth tokens are written readable by others",
        "src/agentloop/mcp/oauth.py",
        "os.fchmod(fd, 0o600)",
        "os.fchmod(fd, 0o644)  # SABOTAGED",
        ["tests/test_mcp_oauth.py"],
    ),
    Sabotage(
        "a timed-out or interrupted MCP call is left running on the server (no notifications/cancelled)",
        "src/agentloop/mcp/client.py",
        "result = await asyncio.wait_for(client.call_tool(tool, arguments, progress_callback=self._progress(tool)), limit)",
        "result = await asyncio.wait_for(asyncio.shield(client.call_tool(tool, arguments, progress_callback=self._progress(tool))), limit)  # SABOTAGED",
        ["tests/test_mcp_capabilities.py"],
    ),
    Sabotage(
        "stdio MCP servers inherit the agent's provider keys",
        "src/agentloop/mcp/env.py",
        "env = dict(child_environment(environ, allowed=allowed, drop=withhold))",
        "env = dict(environ)  # SABOTAGED",
        ["tests/test_mcp_env.py"],
    ),
    Sabotage(
        "MCP permission rules match a server by a name prefix again (mcp__a__* covers server a__b)",
        "src/agentloop/agent/permissions/rules.py",
        'if server is not None and want.startswith("mcp__"):',
        "if False:  # SABOTAGED",
        ["tests/test_mcp_names.py"],
    ),
    Sabotage(
        "an unknown hook output key ({\"decison\": \"block\"}) passes in silence",
        "src/agentloop/agent/hooks/runner.py",
        "        warnings=_key_warnings(obj, hso if isinstance(hso, dict) else None),\n",
        "        warnings=(),  # SABOTAGED\n",
        ["tests/test_hooks_in_the_seed_protocol.py::test_a_misspelt_output_key_is_named_in_a_warning"],
    ),
    Sabotage(
        "a PreToolUse hook's deny is ignored by the agent",
        "src/agentloop/agent/hooks_and_context.py",
        "        if out.permission_decision == \"deny\" or out.blocked:\n",
        "        if False:  # SABOTAGED\n",
        ["tests/test_hooks_claude_code.py::test_permission_decision_deny_denies_even_in_bypass_mode",
         "tests/test_hooks_claude_code.py::test_file_paths_reach_hooks_absolute_so_a_relative_spelling_cannot_bypass_them"],
    ),
    Sabotage(
        "the verifier accepts everything",
        "src/agentloop/transcript.py",
        None,
        "\n\ndef verify_lines(lines, **_):  # SABOTAGED\n    r = VerifyReport()\n    r.count = sum(1 for _ in lines)\n    return r\n\n\n"
        "def verify_records(records, **_):  # SABOTAGED\n    r = VerifyReport()\n    r.count = sum(1 for _ in records)\n    return r\n",
        ["tests/test_transcript.py"],
    ),
    Sabotage(
        "the cost reservation is skipped",
        "src/agentloop/loop.py",
        "    if b.max_usd_micros is not None and over_cap(state.spent_micros, 0, amount, b.max_usd_micros):\n        if cfg.can_count:",
        "    if False:  # SABOTAGED\n        if cfg.can_count:",
        ["tests/test_loop.py"],
    ),
    Sabotage(
        "the reservation estimates input at characters / 4 instead of the bound",
        "src/agentloop/budget.py",
        "    return message_bytes(m) + framing + images * image_tokens",
        "    return len(str(m.get('content', ''))) // 4  # SABOTAGED",
        ["tests/test_spend_cap_property.py"],
    ),
    Sabotage(
        "a side call is granted whatever the run's cap has left (the loop's room check for side costs)",
        "src/agentloop/loop.py",
        "    elif money is not None and event.micros > money:",
        "    elif False:  # SABOTAGED",
        ["tests/test_side_costs.py"],
    ),
    Sabotage(
        "a side call billed past its reservation passes as a success",
        "src/agentloop/loop.py",
        "    if over is None and reserved is not None and cost > reserved and (cfg.budget.max_usd_micros is not None or cfg.shared_cap):",
        "    if False:  # SABOTAGED",
        ["tests/test_side_costs.py"],
    ),
    Sabotage(
        "the step budget is not checked",
        "src/agentloop/loop.py",
        "if b.max_steps is not None and state.steps >= b.max_steps:",
        "if False:  # SABOTAGED",
        ["tests/test_loop.py"],
    ),
    Sabotage(
        "the canonical fast path trusts orjson with floats and enums",
        "src/agentloop/canonical.py",
        "            if t is dict or t is list or t is tuple:\n                push(x)\n            else:\n                return False",
        "            if t is dict or t is list or t is tuple:\n                push(x)  # SABOTAGED: no else",
        ["tests/test_canonical.py"],
    ),
    Sabotage(
        "keys past U+FFFF keep orjson's code-point order",
        "src/agentloop/canonical.py",
        "if out.isascii() or _ASTRAL(out) is None or not _astral_key(value):",
        "if True:  # SABOTAGED",
        ["tests/test_canonical.py"],
    ),
    Sabotage(
        "a failed append leaves its partial record in the file",
        "src/agentloop/transcript.py",
        "os.ftruncate(fd, self._end)",
        "pass  # SABOTAGED",
        ["tests/test_io_faults.py", "tests/test_full_disk.py"],
    ),
    Sabotage(
        "the transcript readers take lines of any length",
        "src/agentloop/transcript.py",
        "            if size > max_bytes:\n                too_long.append(n + 1)",
        "            if False:  # SABOTAGED\n                too_long.append(n + 1)",
        ["tests/test_verify_limits.py"],
    ),
    Sabotage(
        "Read loads the whole file instead of streaming it",
        "src/agentloop/agent/tools/builtin.py",
        "chunk = f.read(READ_CHUNK)",
        "chunk = f.read()  # SABOTAGED",
        ["tests/test_tool_limits.py"],
    ),
    Sabotage(
        "globs are matched by a backtracking engine",
        "src/agentloop/agent/tools/walk.py",
        'return compile_linear("".join(out) + r"\\z", flags="s")',
        'return __import__("re").compile("".join(out) + r"\\Z", 16)  # SABOTAGED: re.DOTALL',
        ["tests/test_tool_limits.py"],
    ),
    Sabotage(
        "Bash runs outside the sandbox",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        return self.active and not self.excluded(command)",
        "        return False  # SABOTAGED",
        ["tests/test_sandbox.py"],
    ),
    Sabotage(
        "the sandbox shares the PID namespace (setsid escapes the call)",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        'out += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]',
        'out += ["--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]  # SABOTAGED',
        ["tests/test_sandbox.py::test_nothing_a_command_starts_outlives_the_call"],
    ),
    Sabotage(
        "the sandbox runner leaves a command's processes running",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        os.kill(-1, signal.SIGKILL)  # everything the command started",
        "        pass  # SABOTAGED",
        ["tests/test_sandbox.py::test_nothing_a_command_starts_outlives_the_call"],
    ),
    Sabotage(
        "the sandbox shares the network",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        if not s.network:\n            out += [\"--unshare-net\"]",
        "        if False:  # SABOTAGED\n            out += [\"--unshare-net\"]",
        ["tests/test_sandbox.py::test_a_command_cannot_reach_the_network_and_is_told_why"],
    ),
    Sabotage(
        "the sandbox hides no credentials",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        for p in self._hidden_in_view(shown):\n            if os.path.isdir(p):",
        "        for p in []:  # SABOTAGED\n            if os.path.isdir(p):",
        ["tests/test_sandbox.py::test_a_command_cannot_read_the_agentloop_home_or_credentials"],
    ),
    Sabotage(
        "the sandbox's proxy lets every domain through",
        "src/agentloop/agent/sandbox/netproxy.py",
        "        if not domain_allowed(host, self.allowed):",
        "        if False:  # SABOTAGED",
        ["tests/test_sandbox.py::test_allowed_domains_are_reachable_through_the_proxy_and_nothing_else"],
    ),
    Sabotage(
        "children get the provider keys",
        "src/agentloop/agent/sandbox/child_env.py",
        "    return child_environment(env, allowed=allowed, drop=drop, held=held)",
        "    return ChildEnv(env)  # SABOTAGED",
        ["tests/test_childenv.py"],
    ),
    Sabotage(
        "tool output is not redacted",
        "src/agentloop/agent/sandbox/child_env.py",
        "        if p is None or not s or p.search(s) is None:\n            return s",
        "        if True:  # SABOTAGED\n            return s",
        ["tests/test_secrets_scan.py"],
    ),
    Sabotage(
        "a raw stream with secret-argument fragments is recorded",
        "src/agentloop/redact.py",
        "n in self.sensitive or n in self.secret_paths for n in names",
        "n in self.sensitive for n in names",
        ["tests/test_secrets_scan.py::test_library_run_writes_no_planted_secret_anywhere"],
    ),
    Sabotage(
        "an untrusted folder's configuration is used as if it were trusted",
        "src/agentloop/agent/trust.py",
        "    if not decision.trusted:\n        decision.left_out = [p.text for p in powers]",
        "    if False:  # SABOTAGED\n        decision.left_out = [p.text for p in powers]",
        ["tests/test_trust.py"],
    ),
    Sabotage(
        "an untrusted folder keeps more than its deny rules",
        "src/agentloop/agent/settings_sanitizer.py",
        '    """What an untrusted folder\'s file keeps: its deny rules and the keys that only take power away.\n',
        '    """SABOTAGED"""\n    return source\n    """',
        ["tests/test_trust.py"],
    ),
    Sabotage(
        "a project's prices are used",
        "src/agentloop/agent/model_choice.py",
        "self.prices = _prices(price_sources)",
        "self.prices = _prices(sources)  # SABOTAGED",
        ["tests/test_trust.py"],
    ),
    Sabotage(
        "the verifier's fast path accepts an exponent that RFC 8785 writes in full (1e-6)",
        "src/agentloop/line.py",
        "                    if not 0x30 <= e <= 0x39 and d < 0x37:\n                        return False",
        "                    if False:  # SABOTAGED\n                        return False",
        ["tests/test_transcript.py"],
    ),
    Sabotage(
        "the verifier's fast path accepts a float written 100.0",
        "src/agentloop/line.py",
        "                if s > 0 and line[s - 1] in _TOKEN_START:\n                    return False",
        "                if False:  # SABOTAGED\n                    return False",
        ["tests/test_transcript.py"],
    ),
    Sabotage(
        "the verifier's fast path accepts keys past U+FFFF sorted by code point",
        "src/agentloop/line.py",
        "        return True\n    return _keys_in_utf16_order(obj)",
        "        return True\n    return True  # SABOTAGED",
        ["tests/test_transcript.py"],
    ),
    Sabotage(
        "the verifier's fast path accepts an integer past 2**53 written in full",
        "src/agentloop/line.py",
        "and (v > _MAX_SAFE_INT or v < -_MAX_SAFE_INT) and not _int_is_jcs(v):",
        "and (v > _MAX_SAFE_INT or v < -_MAX_SAFE_INT) and False:  # SABOTAGED",
        ["tests/test_transcript.py"],
    ),
    # The same four checks in C (agentloop._linescan, the fast path whenever it is built): each copy is
    # rebuilt with the sabotaged source, and the tests run both the C scanner and the Python checks.
    Sabotage(
        "the C scanner accepts an exponent that RFC 8785 writes in full (1e-6)",
        "src/agentloop/_linescan.c",
        "if (sign == '-' && ne == 1 && s[e0] < '7') return 0;",
        "if (0) return 0; /* SABOTAGED */",
        ["tests/test_transcript.py"],
        rebuild=True,
    ),
    Sabotage(
        "the C scanner accepts a float written 100.0",
        "src/agentloop/_linescan.c",
        "} else if (frac_zero) {",
        "} else if (0) { /* SABOTAGED */",
        ["tests/test_transcript.py"],
        rebuild=True,
    ),
    Sabotage(
        "the C scanner accepts keys past U+FFFF sorted by code point",
        "src/agentloop/_linescan.c",
        "if (high && lv->high && !same_order_in_utf16(lv, start, len)) parted = 1;",
        "if (high && lv->high && !same_order_in_utf16(lv, start, len)) parted = 0; /* SABOTAGED */",
        ["tests/test_transcript.py"],
        rebuild=True,
    ),
    Sabotage(
        "the C scanner accepts an integer past 2**53 that has a shorter form (2**60 in full)",
        "src/agentloop/_linescan.c",
        "if (inclusive ? (c2 >= lo2 && c2 <= hi2) : (c2 > lo2 && c2 < hi2)) return 0;",
        "if (0) return 0; /* SABOTAGED */",
        ["tests/test_transcript.py"],
        rebuild=True,
    ),
    Sabotage(
        "the C scanner accepts an integer past 2**53 that is not the closest (9007199254740993)",
        "src/agentloop/_linescan.c",
        "if (dist2 >= POW10[z]) return 0;",
        "(void)dist2; /* SABOTAGED */",
        ["tests/test_transcript.py"],
        rebuild=True,
    ),
    Sabotage(
        "a C module's stale build is used after its source changed",
        "src/agentloop/_native.py",
        "        refused |= set(C_MODULES)\n",
        "",
        ["tests/test_native.py"],
    ),
    Sabotage(
        "the anchor loader reads only the first MiB again",
        "src/agentloop/audit/anchor.py",
        "            data = f.read(MAX_ANCHOR_BYTES + 1)",
        "            data = f.read(MAX_ANCHOR_BYTES)  # SABOTAGED",
        ["tests/test_anchor.py"],
    ),
    # --- Bash rules and protected paths ---
    Sabotage(
        "a line whose commands cannot all be known is decided like a known one",
        "src/agentloop/agent/permissions/rules.py",
        "        if unknown and self._has_bash_rules():",
        "        if False:  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "a pattern allow rule approves an opaque line",
        "src/agentloop/agent/permissions/rules.py",
        "        if self._unknown(bash):\n            return None  # ...except",
        "        if False:  # SABOTAGED\n            return None  # ...except",
        PB,
    ),
    Sabotage(
        "an escaped \\} ends ${...} (the reader stops early, as before issue 16)",
        "src/agentloop/agent/permissions/bash_reader.py",
        'if c == "\\\\":\n                j += 2\n                continue\n            if c == "\'":\n                if in_double:',
        'if c == "\\\\":  # SABOTAGED\n                j += 1\n                continue\n            if c == "\'":\n                if in_double:',
        PB,
    ),
    Sabotage(
        "arithmetic and -v tests evaluating unknown text are not opaque",
        "src/agentloop/agent/permissions/bash_reader.py",
        "if ctx.evals and ctx.taint:",
        "if False:  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "interpreters' inline code (python3 -c, perl -e) is not opaque",
        "src/agentloop/agent/permissions/bash_reader.py",
        "if _INTERPRETER.match(head):",
        "if False:  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "flock is not known as a wrapper",
        "src/agentloop/agent/permissions/bash_reader.py",
        '"flock": _Wrap(',
        '"flock-sabotaged": _Wrap(',
        PB,
    ),
    Sabotage(
        "'always' stores a pattern (a * in the approved line becomes a wildcard)",
        "src/agentloop/agent/toolbox.py",
        'return policy.add_exact("allow", BASH.name, cmd, source="session").text',
        'return policy.add_rule("allow", f"{BASH.name}({cmd})", source="session").text  # SABOTAGED',
        ["tests/test_agent.py"],
    ),
    Sabotage(
        "protected paths are compared case-sensitively (.GIT/config slips through)",
        "src/agentloop/agent/permissions/rules.py",
        "low = part.lower()",
        "low = part  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "protected paths ask only in bypassPermissions (acceptEdits writes .agentloop/ unasked)",
        "src/agentloop/agent/permissions/rules.py",
        "        if protected is not None:",
        '        if protected is not None and self.mode == "bypassPermissions":  # SABOTAGED',
        [*PB, "tests/test_agent.py"],
    ),
    Sabotage(
        "read-only Bash ignores Read deny rules (cat secrets/key runs unasked)",
        "src/agentloop/agent/permissions/rules.py",
        "denied = self._read_denied_argument(bash)",
        "denied = False  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "Bash naming a protected path (> .agentloop/settings.local.json) runs unasked in bypass",
        "src/agentloop/agent/permissions/rules.py",
        "named = self._bash_protected(bash)",
        "named = None  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "read-only Bash ignores redirections that write files",
        "src/agentloop/agent/permissions/rules.py",
        "if any(_writes(op, target) for op, target in simple.redirects):",
        "if False:  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "the session listing forgets a manual /compact's spend",
        "src/agentloop/agent/session/store.py",
        "        facts[\"spent\"] += _side_cost(payload)\n",
        "        pass  # SABOTAGED\n",
        ["tests/test_repl_diffs_compaction_resume_and_rules.py::test_a_compaction_s_spend_is_counted_in_cost_and_sessions"],
    ),
    Sabotage(
        "a PreToolUse hook's refusal reaches the model (a sub-agent's too) without redaction",
        "src/agentloop/agent/pipeline.py",
        "            return self.redact(hooked)",
        "            return hooked  # SABOTAGED",
        ["tests/test_agent_extensions.py::test_a_sub_agents_calls_go_through_the_agents_pipeline_so_a_hooks_refusal_is_redacted",
         "tests/test_childenv.py"],
    ),
    Sabotage(
        "a sub-agent's calls skip the permission rules (the pipeline lets every child call through)",
        "src/agentloop/agent/pipeline.py",
        "        if self.child:\n            if behavior == \"allow\":",
        "        if self.child:  # SABOTAGED\n            if True:",
        ["tests/test_agent_integration.py"],
    ),
    Sabotage(
        "the tools' source cache is keyed without the file's content hash (an edited source is served stale)",
        "src/agentloop/tools.py",
        'return f"{read[0]}:{kind}:{getattr(obj, \'__qualname__\', \'\')}:{line}", path, read[1]',
        'return f"{kind}:{getattr(obj, \'__qualname__\', \'\')}:{line}", path, read[1]  # SABOTAGED',
        ["tests/test_fingerprint_cache.py"],
    ),
    Sabotage(
        "the REPL waits for its MCP servers before showing the prompt",
        "src/agentloop/agent/builder.py",
        'servers.background = agent.mcp_in_background',
        "servers.background = False  # SABOTAGED",
        ["tests/test_repl_mcp_background.py"],
    ),
    Sabotage(
        "text from the model reaches the terminal with its escape sequences",
        "src/agentloop/cli/terminal_text.py",
        "return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text",
        "return text  # SABOTAGED",
        ["tests/test_terminal_shows_true.py"],
    ),
    Sabotage(
        "the trust question cuts a hook command short",
        "src/agentloop/agent/trust.py",
        "add(f\"hook {e.event}{f' [{e.matcher}]' if e.matcher else ''}: {e.shown}\")",
        "add(f\"hook {e.event}{f' [{e.matcher}]' if e.matcher else ''}: {e.shown[:160]}\")  # SABOTAGED",
        ["tests/test_terminal_shows_true.py"],
    ),
    Sabotage(
        "the permission question shows a command's newline as a space",
        "src/agentloop/cli/repl.py",
        "                return shown_whole(v)",
        "                return ' '.join(v.split())  # SABOTAGED",
        ["tests/test_terminal_shows_true.py"],
    ),
    Sabotage(
        "the reasoning sent back is left out of the reservation's input bound",
        "src/agentloop/budget.py",
        "    if r:  # reasoning blocks sent back",
        "    if False:  # SABOTAGED",
        ["tests/test_model_options.py::test_reasoning_sent_back_counts_in_the_reservations_input_bound"],
    ),
    Sabotage(
        "the default output budget ignores the spend cap (one call's reservation may take most of a small cap)",
        "src/agentloop/agent/model_options.py",
        "        if affordable < top:",
        "        if False:  # SABOTAGED",
        ["tests/test_model_options.py::test_a_small_cap_keeps_the_default_to_what_a_quarter_of_it_pays_for_but_never_below_4096"],
    ),
    Sabotage(
        "the system prompt's git snapshot lets the repository's fsmonitor program run",
        "src/agentloop/agent/spawn.py",
        '    "core.fsmonitor=false",\n',
        "",
        ["tests/test_system_prompt.py::test_the_git_snapshot_runs_no_fsmonitor_or_hook_the_repository_configures",
         "tests/test_git_jail.py::test_inside_the_jail_the_repositorys_programs_are_switched_off_too"],
    ),
    Sabotage(
        "children inherit secret-named variables (GITHUB_TOKEN...) nobody allowed",
        "src/agentloop/config/credentials.py",
        "and (k in keep or not carries_credentials(k, v))",
        "and (k in keep or True)  # SABOTAGED",
        ["tests/test_spawn.py::test_bash_gets_no_secret_named_variable_unless_the_user_allows_it",
         "tests/test_spawn.py::test_hooks_and_mcp_servers_get_no_secret_named_variable"],
    ),
    Sabotage(
        "the spawn path passes a raw environment through unchanged",
        "src/agentloop/agent/spawn.py",
        "    return dict(child_environment(env))\n",
        "    return dict(env)  # SABOTAGED\n",
        ["tests/test_spawn.py::test_popen_cuts_an_environment_that_did_not_come_from_the_spawn_path"],
    ),
    Sabotage(
        "git run for a sub-agent's worktree runs the repository's hooks",
        "src/agentloop/agent/spawn.py",
        '    "core.hooksPath=/dev/null",\n    "core.fsmonitor=false",',
        '    "core.fsmonitor=false",  # SABOTAGED',
        ["tests/test_spawn.py::test_git_for_a_sub_agents_worktree_runs_none_of_the_repositorys_code"],
    ),
    Sabotage(
        "git run for a sub-agent's worktree runs the repository's clean and smudge filters",
        "src/agentloop/agent/spawn.py",
        "    drivers = _filter_drivers(cwd, genv)\n",
        "    drivers: list[str] = []  # SABOTAGED\n",
        ["tests/test_spawn.py::test_git_for_a_sub_agents_worktree_runs_none_of_the_repositorys_code",
         "tests/test_git_jail.py::test_a_sub_agents_worktree_and_merge_back_run_none_of_the_repositorys_programs"],
    ),
    Sabotage(
        "a process started outside the spawn path goes unnoticed",
        "src/agentloop/agent/subagents/worktree.py",
        "        p = spawn.git([\"rev-parse\", \"--verify\", \"-q\", \"HEAD\"], cwd=cwd, timeout=30)",
        "        p = subprocess.run([\"git\", \"rev-parse\", \"--verify\", \"-q\", \"HEAD\"], cwd=cwd, capture_output=True)  # SABOTAGED",
        ["tests/test_spawn.py::test_no_process_starts_outside_the_spawn_path"],
    ),
    Sabotage(
        "a hook that leaves a background child keeps the agent waiting until the child exits",
        "src/agentloop/agent/hooks/runner.py",
        "                _kill_group(p)\n                drain_until = now + EXIT_DRAIN_S",
        "                drain_until = now + 1e9  # SABOTAGED",
        ["tests/test_spawn.py::test_a_hook_that_leaves_a_background_child_does_not_hold_the_agent"],
    ),
    Sabotage(
        "a memory file imports /proc/self/environ or ~/.ssh/id_rsa once external imports are approved",
        "src/agentloop/agent/session/memory.py",
        "        if any(_under(real, n) for n in self.never):",
        "        if False:  # SABOTAGED",
        ["tests/test_memory_imports.py::test_a_credential_or_system_path_is_never_imported_even_when_external_imports_are_approved"],
    ),
    Sabotage(
        "a memory file imports a file from outside the workspace without the user's approval",
        "src/agentloop/agent/session/memory.py",
        "            if not self.external:",
        "            if False:  # SABOTAGED",
        ["tests/test_memory_imports.py::test_an_import_from_outside_the_workspace_waits_for_approval_asked_once_with_the_list"],
    ),
    Sabotage(
        "a memory file's symlink is judged by its name, not by what it points to",
        "src/agentloop/agent/session/memory.py",
        "        real = os.path.realpath(path)  # symlinks resolved before any check",
        "        real = os.path.abspath(path)  # SABOTAGED",
        ["tests/test_memory_imports.py::test_a_symlink_is_resolved_before_the_check"],
    ),
    Sabotage(
        "a memory file that is a FIFO or a device is read",
        "src/agentloop/agent/session/memory.py",
        "        with open_regular(real) as f:\n",
        "        with open(real, \"rb\", opener=lambda p, f: os.open(p, f | os.O_NONBLOCK)) as f:  # SABOTAGED\n",
        ["tests/test_memory_imports.py::test_a_fifo_is_skipped_at_once_and_never_blocks"],
    ),
    Sabotage(
        "an untrusted folder's sub-agent file runs its child on the model it names",
        "src/agentloop/agent/subagents/agent_types.py",
        "        if model is not None and (inert or inside is not None",
        "        if False and (inert or inside is not None  # SABOTAGED",
        ["tests/test_untrusted_definitions.py::test_an_untrusted_folders_agent_file_does_not_choose_the_model",
         "tests/test_untrusted_definitions.py::test_a_sub_agent_of_an_untrusted_folder_runs_on_the_parents_model"],
    ),
    Sabotage(
        "a sub-agent file choosing a model is not something folder trust asks about",
        "src/agentloop/agent/trust.py",
        "    out += _agent_models(cwd, home, user_dir)\n",
        "    pass  # SABOTAGED\n",
        ["tests/test_untrusted_definitions.py::test_a_sub_agent_of_an_untrusted_folder_runs_on_the_parents_model"],
    ),
    Sabotage(
        "a command file that is a device or a FIFO is read as a template",
        "src/agentloop/agent/commands.py",
        "        if not stat.S_ISREG(os.fstat(fd).st_mode):\n            if warnings is not None:",
        "        if False:  # SABOTAGED\n            if warnings is not None:",
        ["tests/test_untrusted_definitions.py::test_devices_and_fifos_among_a_folders_definitions_give_one_line_each"],
    ),
    Sabotage(
        "session transcripts are created readable by others",
        "src/agentloop/transcript.py",
        "    return os.open(path, flags, 0o600)",
        "    return os.open(path, flags, 0o644)  # SABOTAGED",
        ["tests/test_spawn.py::test_everything_a_session_leaves_in_agentloops_home_is_the_users_alone"],
    ),
    Sabotage(
        "an agentloop home open to others is left open",
        "src/agentloop/config/private.py",
        "        os.chmod(home, 0o700)",
        "        pass  # SABOTAGED",
        ["tests/test_spawn.py::test_a_home_left_open_is_made_private_and_said_once",
         "tests/test_spawn.py::test_everything_a_session_leaves_in_agentloops_home_is_the_users_alone"],
    ),
    Sabotage(
        "an SSE server that answers without text/event-stream prints the MCP SDK's traceback",
        "src/agentloop/mcp/client.py",
        "    logging.getLogger(_name).addFilter(_OneLineFilter())",
        "    pass  # SABOTAGED",
        ["tests/test_mcp_sse_content_type.py"],
    ),
    # --- deny rules against any launcher, auto-approval only inside, linear reading ---
    Sabotage(
        "env -S bundled after other flags (env -vS'rm v') is not read as a split string",
        "src/agentloop/agent/permissions/bash_reader.py",
        '        if ch == "S":\n            return (attached, 1) if attached else (nxt or "", 2)',
        '        if ch == "S" and j == 1:  # SABOTAGED\n            return (attached, 1) if attached else (nxt or "", 2)',
        [*PB, "tests/test_permissions_launchers.py"],
    ),
    Sabotage(
        "env takes only valid names for variables (an imported BASH_FUNC_f%% hides the command after it)",
        "src/agentloop/agent/permissions/bash_reader.py",
        'while rest and "=" in rest[0]:',
        'while rest and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", rest[0]):  # SABOTAGED',
        ["tests/test_permissions_launchers.py"],
    ),
    Sabotage(
        "a wrapper chain deeper than the reader follows is not opaque",
        "src/agentloop/agent/permissions/bash_reader.py",
        'unit.opaque.append(f"a chain of more than {MAX_WRAPPERS} wrappers")',
        "pass  # SABOTAGED",
        ["tests/test_permissions_launchers.py"],
    ),
    Sabotage(
        "programs that run command strings (vim -c, make, tar --to-command) are not opaque",
        "src/agentloop/agent/permissions/bash_reader.py",
        "        why = _runner_reason(head, words)\n",
        "        why = None  # SABOTAGED\n",
        ["tests/test_permissions_launchers.py"],
    ),
    Sabotage(
        "setarch's architecture names (x86_64 rm v) are not wrappers",
        "src/agentloop/agent/permissions/bash_reader.py",
        "spec = _WRAPPERS.get(head) or (_SETARCH if head in _ARCH_NAMES else None)",
        "spec = _WRAPPERS.get(head)  # SABOTAGED",
        ["tests/test_permissions_launchers.py"],
    ),
    Sabotage(
        "an abbreviated long option (--compress= for --compress-program) is not read as its full form",
        "src/agentloop/agent/permissions/bash_reader.py",
        'return word.startswith("--") and len(name) > 2 and any(o.startswith(name) for o in options)',
        'return word.startswith("--") and any(o == name for o in options)  # SABOTAGED',
        [*PB, "tests/test_permissions_launchers.py"],
    ),
    Sabotage(
        "git's subcommand is taken as the first word after its options (git --namespace log clean)",
        "src/agentloop/agent/permissions/bash_reader.py",
        "        i += 2 if w in GIT_VALUE_OPTIONS else 1\n",
        "        i += 1  # SABOTAGED\n",
        [*PB, "tests/test_permissions_launchers.py"],
    ),
    Sabotage(
        "read-only lines are auto-approved whatever paths they name (cat ~/secret.txt)",
        "src/agentloop/agent/permissions/rules.py",
        "read_only_bash = not denied and self._outside_path(bash) is None and not self._repo_runs_programs(bash)",
        "read_only_bash = not denied and not self._repo_runs_programs(bash)  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "read-only git is auto-approved in a repository whose configuration names programs (core.fsmonitor)",
        "src/agentloop/agent/permissions/rules.py",
        "read_only_bash = not denied and self._outside_path(bash) is None and not self._repo_runs_programs(bash)",
        "read_only_bash = not denied and self._outside_path(bash) is None  # SABOTAGED",
        ["tests/test_permissions.py"],
    ),
    Sabotage(
        "the fleet ledger's journal forgets the reservations open at a kill (calls in flight are never counted)",
        "src/agentloop/batch/ledger.py",
        "        for key in list(self.open):\n            self.forfeit(key)",
        "        for key in list(self.open):  # SABOTAGED\n            self.open.pop(key)",
        ["tests/test_batch_faults.py::test_the_journal_outlives_its_ledger_and_a_reservation_open_at_a_kill_is_counted_at_its_amount",
         "tests/test_batch_faults.py::test_the_fleet_cap_holds_against_the_providers_bill_over_repeated_driver_kills"],
    ),
    Sabotage(
        "the fleet ledger grants a call before its reservation is in the journal",
        "src/agentloop/batch/ledger.py",
        '        self._log({"op": "reserve", "key": key, "micros": amount_micros, "tokens": tokens})  # before the grant is heard',
        "        pass  # SABOTAGED",
        ["tests/test_batch_faults.py::test_a_grant_is_in_the_journal_before_the_holder_hears_it",
         "tests/test_batch_faults.py::test_the_fleet_cap_holds_against_the_providers_bill_over_repeated_driver_kills"],
    ),
    Sabotage(
        "a batch task the fleet cap refused is reported completed",
        "src/agentloop/batch/runner.py",
        '    if refused:\n        return "refused"',
        '    if refused:  # SABOTAGED\n        return "completed"',
        ["tests/test_batch_faults.py::test_a_capped_batch_counts_refused_tasks_apart_exits_3_and_a_higher_cap_runs_only_them"],
    ),
    Sabotage(
        "batch task ids are used as file names unescaped (one id can name another's partial file)",
        "src/agentloop/batch/_files.py",
        '    stem = _KEEP.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), task_id)',
        "    stem = task_id  # SABOTAGED",
        ["tests/test_batch_faults.py::test_task_ids_map_to_distinct_dot_free_file_stems",
         "tests/test_batch_faults.py::test_a_worker_killed_mid_task_removes_only_its_own_partial_file"],
    ),
    Sabotage(
        "the Ray ledger actor is not restarted when it dies (the batch crashes)",
        "src/agentloop/batch/runner.py",
        '"max_restarts": -1, "max_task_retries": -1',
        '"max_restarts": 0, "max_task_retries": 0',
        ["tests/test_batch_ray.py::test_killing_the_ledger_actor_mid_batch_loses_no_spend_and_the_batch_finishes"],
    ),
    Sabotage(
        "agentloop batch --json leaves standard output open to Ray and the tools (the report is not one document)",
        "src/agentloop/cli/cmd_batch.py",
        "    os.dup2(2, 1)\n",
        "    pass  # SABOTAGED\n",
        ["tests/test_batch_faults.py::test_json_output_is_one_document_whatever_the_workers_print",
         "tests/test_batch_ray.py::test_json_on_ray_is_one_document_when_a_worker_dies"],
    ),
    Sabotage(
        "Edit changes a file the model never read (read-before-edit skipped)",
        "src/agentloop/agent/tools/file_state.py",
        "        if st is None or not self.required:\n            return",
        "        if True:  # SABOTAGED\n            return",
        ["tests/test_tools_claude_code.py::test_edit_and_write_of_an_unread_file_are_refused_until_it_is_read",
         "tests/test_tools_claude_code.py::test_a_file_changed_on_disk_since_it_was_read_is_refused_until_read_again"],
    ),
    Sabotage(
        "apply_patch writes paths an Edit deny rule or the protected paths cover (its guard ignored)",
        "src/agentloop/agent/tools/apply_patch.py",
        "        why = guard(real)",
        "        why = None  # SABOTAGED",
        ["tests/test_tools_claude_code.py::test_apply_patch_stays_in_the_workspace_and_obeys_the_guard",
         "tests/test_tools_in_agent.py::test_apply_patch_cannot_write_what_an_edit_deny_rule_or_the_protected_paths_cover"],
    ),
    Sabotage(
        "-c and --resume trust a session file without verifying its whole chain",
        "src/agentloop/agent/session/store.py",
        "            if not report.ok and not torn:\n                report = verify_for_reading(path)",
        "            if False:  # SABOTAGED\n                report = verify_for_reading(path)",
        ["tests/test_session_integrity.py::test_resuming_a_damaged_session_is_refused_with_the_record_named_and_nothing_appended",
         "tests/test_session_integrity.py::test_continue_on_a_damaged_session_exits_1_naming_the_record_and_writes_nothing"],
    ),
    Sabotage(
        "any damage after the last good record counts as a crash's torn tail (cut on resume)",
        "src/agentloop/audit/repair.py",
        "        return all(b\"\\n\" not in data for _, data in _chunks(fd, start))",
        "        return True  # SABOTAGED",
        ["tests/test_session_integrity.py::test_resuming_a_damaged_session_is_refused_with_the_record_named_and_nothing_appended"],
    ),
    Sabotage(
        "a rewind deletes or writes a path outside the workspace that a record names",
        "src/agentloop/agent/session/checkpoints.py",
        "        if real != r and real.startswith(r.rstrip(os.sep) + os.sep):",
        "        if True:  # SABOTAGED",
        ["tests/test_session_integrity.py::test_a_rewind_never_touches_a_path_outside_the_workspace_whatever_a_record_says"],
    ),
    Sabotage(
        "a rewind checks a recorded path without resolving its directories (a symlink leads out)",
        "src/agentloop/agent/session/checkpoints.py",
        "    real = os.path.join(os.path.realpath(os.path.dirname(path)), name)",
        "    real = os.path.normpath(path)  # SABOTAGED",
        ["tests/test_session_integrity.py::test_a_rewind_never_touches_a_path_outside_the_workspace_whatever_a_record_says"],
    ),
    Sabotage(
        "the session listing reads every line whole (a giant tail is read into memory)",
        "src/agentloop/agent/session/store.py",
        "        for rec in verified_records(path, report.valid_prefix_bytes):",
        "        for rec in (Record(**{k: v for k, v in orjson.loads(ln).items()}) for ln in open(path, 'rb').read().splitlines() if ln.strip(b'\\0')):  # SABOTAGED",
        ["tests/test_session_integrity.py::test_sessions_rewind_and_continue_read_a_sparse_giant_tail_in_bounded_memory_and_time"],
    ),
    Sabotage(
        "rewind's listing opens the session for writing (records session_start/session_end)",
        "src/agentloop/cli/cmd_rewind.py",
        "    if args.to is None:\n        return _list(sid, path, report)",
        "    if False:  # SABOTAGED\n        return _list(sid, path, report)",
        ["tests/test_session_integrity.py::test_rewind_listing_appends_nothing_and_refuses_a_damaged_session_naming_the_record"],
    ),
    Sabotage(
        "a permissions key given twice in a settings file drops the first one's deny rules",
        "src/agentloop/config/settings.py",
        '    if key == "permissions" and isinstance(first, dict) and isinstance(second, dict):',
        '    if False:  # SABOTAGED',
        ["tests/test_nothing_accepted_in_silence.py::test_a_duplicated_permissions_key_keeps_every_deny_rule_and_says_so"],
    ),
    Sabotage(
        "an invalid maxUsd in a settings file falls back to the default cap",
        "src/agentloop/config/settings.py",
        "            check_max_usd(path, data)\n",
        "            pass  # SABOTAGED\n",
        ["tests/test_nothing_accepted_in_silence.py::test_an_invalid_max_usd_stops_the_run_naming_file_and_key_instead_of_the_default_cap"],
    ),
    Sabotage(
        "verify --repair empties a file that is not a transcript",
        "src/agentloop/audit/repair.py",
        "    if keep == 0:\n        raise RepairRefused(",
        "    if False:  # SABOTAGED\n        raise RepairRefused(",
        ["tests/test_nothing_accepted_in_silence.py::test_repair_refuses_a_file_whose_first_line_is_not_a_record_and_never_empties_it"],
    ),
    Sabotage(
        "a Grep pattern too large for RE2's memory is searched anyway (slow, or a raw library line)",
        "src/agentloop/agent/tools/linear_regex.py",
        "    if size > MAX_PROGRAM:",
        "    if False:  # SABOTAGED",
        ["tests/test_library_errors.py::test_a_giant_grep_pattern_is_one_line_and_nothing_raw_reaches_stderr"],
    ),
    Sabotage(
        "a sandboxed command can rename .git aside (it is no mount point of its own)",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "            guarded = [(d, [\"--bind\", d, d]) for d in plan.self_binds] + ",
        "            guarded = [] + ",
        ["tests/test_sandbox_persistence.py::test_renaming_git_aside_to_rebuild_it_with_a_hook_is_refused"],
    ),
    Sabotage(
        "what git runs from a git directory (config, hooks, info) stays writable in the sandbox",
        "src/agentloop/agent/sandbox/gitguard.py",
        'GITDIR_READ_ONLY = ("config", "hooks", "info", "commondir", "config.worktree")',
        'GITDIR_READ_ONLY = ("commondir", "config.worktree")  # SABOTAGED',
        ["tests/test_sandbox_persistence.py::test_a_submodules_hooks_and_config_cannot_be_written", "tests/test_sandbox_persistence.py::test_info_and_a_configured_hooks_path_are_read_only"],
    ),
    Sabotage(
        "a repository without hooks gets none made, so a command can create its hooks folder",
        "src/agentloop/agent/sandbox/gitguard.py",
        'GITDIR_MAKE = ("hooks", "info")',
        'GITDIR_MAKE = ()  # SABOTAGED',
        ["tests/test_sandbox_persistence.py::test_a_repository_without_hooks_gets_none_planted[mounts-and-watch-alone]"],
    ),
    Sabotage(
        "a name that appeared during a command (commondir, an include target) is left where git reads it",
        "src/agentloop/agent/sandbox/gitguard.py",
        "    for path in p.watch:\n        if os.path.lexists(path):",
        "    for path in []:  # SABOTAGED\n        if os.path.lexists(path):",
        ["tests/test_sandbox_persistence.py::test_a_planted_commondir_is_moved_aside_before_git_reads_it", "tests/test_sandbox_persistence.py::test_info_and_a_configured_hooks_path_are_read_only"],
    ),
    Sabotage(
        "a new git directory with a program in its configuration is left in place",
        "src/agentloop/agent/sandbox/gitguard.py",
        '    """What in a git directory made during a command would run code on the host (None: nothing)."""',
        '    """SABOTAGED"""\n    return None',
        ["tests/test_sandbox_persistence.py::test_a_new_repository_with_a_program_in_its_config_is_moved_aside_but_a_plain_one_stays",
         "tests/test_sandbox_persistence.py::test_a_gitlink_cannot_bring_in_a_planted_repository"],
    ),
    Sabotage(
        "a .git file pointing outside the workspace is left in place",
        "src/agentloop/agent/sandbox/gitguard.py",
        "        if target is None or target in known or _inside(target, p.roots):\n            continue",
        "        if True:  # SABOTAGED\n            continue",
        ["tests/test_sandbox_persistence.py::test_a_gitdir_file_cannot_point_the_hosts_git_outside_the_workspace"],
    ),
    Sabotage(
        "the sandbox shows the user's home (reads by deny-list again)",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        mounts = [(h, [\"--tmpfs\", h]) for h in self._hidden_homes()]",
        "        mounts = []  # SABOTAGED",
        ["tests/test_sandbox_reads.py::test_the_home_is_hidden_but_for_the_workspace_and_toolchain_folders",
         "tests/test_sandbox_reads.py::test_a_projects_home_variable_does_not_move_the_hiding"],
    ),
    Sabotage(
        "the home is taken from the environment a project can set",
        "src/agentloop/agent/sandbox/gitguard.py",
        "    try:\n        return pwd.getpwuid(os.getuid()).pw_dir",
        "    try:\n        return env.get(\"HOME\", \"\")  # SABOTAGED",
        ["tests/test_sandbox_reads.py::test_a_projects_home_variable_does_not_move_the_hiding"],
    ),
    Sabotage(
        "the user's runtime folder is hidden only when XDG_RUNTIME_DIR names it",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        '        hidden.append(f"/run/user/{os.getuid()}")',
        '        pass  # SABOTAGED',
        ["tests/test_sandbox_reads.py::test_the_users_runtime_folder_is_hidden_whether_or_not_xdg_runtime_dir_is_set"],
    ),
    Sabotage(
        "a writable home's start-up files are writable to sandboxed commands",
        "src/agentloop/agent/sandbox/gitguard.py",
        "        for name in STARTUP_FILES:\n            path = os.path.join(h, name)",
        "        for name in ():  # SABOTAGED\n            path = os.path.join(h, name)",
        ["tests/test_sandbox_reads.py::test_with_the_home_as_workspace_start_up_files_stay_as_they_were"],
    ),
    Sabotage(
        "credentials inside a workspace that holds the home are readable",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        for p in self._hidden_in_view(shown):\n            if os.path.isdir(p):",
        "        for p in []:  # SABOTAGED\n            if os.path.isdir(p):",
        ["tests/test_sandbox_reads.py::test_with_the_home_as_workspace_start_up_files_stay_as_they_were"],
    ),
    Sabotage(
        "Write and Edit in acceptEdits write the home's start-up files without asking",
        "src/agentloop/agent/tools/workspace.py",
        "    try:\n        cands = {os.path.abspath(path), _real(path)}",
        "    return None  # SABOTAGED\n    try:\n        cands = {os.path.abspath(path), _real(path)}",
        ["tests/test_sandbox_reads.py::test_write_and_edit_in_accept_edits_ask_before_touching_start_up_files_of_the_home"],
    ),
    Sabotage(
        "a trusted hook's script is writable from the sandbox",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "            plan.read_only += [p for p in s.hook_files",
        "            plan.read_only += [p for p in ()  # SABOTAGED",
        ["tests/test_sandbox_reads.py::test_a_trusted_hooks_script_cannot_be_rewritten_from_the_sandbox"],
    ),
    Sabotage(
        "folder trust does not cover the scripts its hooks run",
        "src/agentloop/agent/trust.py",
        "    if scripts:\n        digest = hashlib.sha256(",
        "    if False:  # SABOTAGED\n        digest = hashlib.sha256(",
        ["tests/test_sandbox_reads.py::test_a_hooks_script_changed_since_trust_asks_again"],
    ),
    Sabotage(
        "a sandbox runner that cannot start is replaced in silence",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        '            notes.append(self.degraded_notice() or "")',
        '            pass  # SABOTAGED',
        ["tests/test_sandbox_reads.py::test_a_runner_that_cannot_start_is_said_not_swapped_in_silence"],
    ),
    Sabotage(
        "an interpreter under /tmp is hidden by the sandbox's private /tmp (the runner cannot start)",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        shown += [sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]",
        "        shown += []  # SABOTAGED",
        ["tests/test_sandbox_reads.py::test_agentloop_installed_under_tmp_keeps_the_sessions_sandbox"],
    ),
    Sabotage(
        "Write and Edit change a trusted hook's script without asking",
        "src/agentloop/agent/toolbox.py",
        "    policy.protected_roots = [os.path.realpath(src.home), *src.hook_files]",
        "    policy.protected_roots = [os.path.realpath(src.home)]  # SABOTAGED",
        ["tests/test_sandbox_reads.py::test_write_and_edit_ask_before_changing_a_trusted_hooks_script"],
    ),
    Sabotage(
        "a hooks folder or start-up file that is a link can be swapped for one a command made",
        "src/agentloop/agent/sandbox/gitguard.py",
        "    notes += _check_pinned(p)",
        "    pass  # SABOTAGED",
        ["tests/test_sandbox_persistence.py::test_a_hooks_folder_that_is_a_link_cannot_be_swapped_or_written",
         "tests/test_sandbox_reads.py::test_a_start_up_file_that_is_a_link_keeps_pointing_where_it_did"],
    ),
    Sabotage(
        "children started in one turn reserve from the same remainder (siblings' spend not counted until the turn ends)",
        "src/agentloop/agent/subagents/parent_budget.py",
        "        spent_micros, spent_tokens = self.costs.queued()",
        "        spent_micros, spent_tokens = 0, 0  # SABOTAGED",
        ["tests/test_spend_cap_children.py::test_ten_children_started_in_one_reply_stay_under_the_parents_cap",
         "tests/test_spend_cap_property.py::test_many_children_in_one_reply_never_settle_past_the_parents_cap"],
    ),
    Sabotage(
        "parallel Agent calls skip the tool-call pipeline (no schema check, no redaction)",
        "src/agentloop/agent/pipeline.py",
        "    def __call__(self, call: ToolCall) -> ToolResult:\n",
        "    def __call__(self, call: ToolCall) -> ToolResult:\n        if call.name == 'Agent':  # SABOTAGED\n"
        "            from agentloop.tools import finish, raised\n            agent_tool = self.registry.get(call.name)\n"
        "            try:\n                return finish(call, agent_tool.fn(**call.arguments))  # type: ignore[union-attr]\n"
        "            except Exception as exc:\n                return raised(call, exc)\n",
        ["tests/test_spend_cap_children.py::test_children_run_together_each_with_the_whole_room"],
    ),
    Sabotage(
        "an Anthropic stream without its final output count is billed the placeholder",
        "src/agentloop/providers/anthropic.py",
        "        if self.final_count is False:",
        "        if False:  # SABOTAGED",
        ["tests/test_provider_usage_checks.py::test_a_reply_with_a_usage_that_cannot_be_billed_stops_the_run_charged_at_its_reservation"],
    ),
    Sabotage(
        "the loop settles from any model's usage, negative or unbounded",
        "src/agentloop/loop.py",
        "    if reply.usage is None or cfg.legacy_estimate:\n        return None",
        "    if True:  # SABOTAGED\n        return None",
        ["tests/test_provider_usage_checks.py::test_the_loop_charges_the_reservation_for_any_models_usage_that_cannot_be_billed"],
    ),
    Sabotage(
        "a side cost's negative bill lowers the spend",
        "src/agentloop/loop.py",
        "    if bad is not None:  # never a negative or unbounded spend: the most it was allowed, and the run stops",
        "    if False:  # SABOTAGED",
        ["tests/test_provider_usage_checks.py::test_a_side_cost_that_cannot_be_billed_stops_the_run_at_its_reservation"],
    ),
    Sabotage(
        "a reply naming a cheaper fallback is priced at the fallback",
        "src/agentloop/loop.py",
        "    if not cfg.priced_by_name:\n        return _dearest(cfg)",
        "    if False:  # SABOTAGED\n        return _dearest(cfg)",
        ["tests/test_provider_usage_checks.py::test_a_primary_reply_naming_a_cheaper_fallback_is_priced_at_the_dearest_of_the_chain"],
    ),
    Sabotage(
        "a cap past any real bound is accepted (and fails later as an internal error)",
        "src/agentloop/budget.py",
        "    if d > MAX_MICROS // MICROS_PER_USD:",
        "    if False:  # SABOTAGED",
        ["tests/test_provider_usage_checks.py::test_a_cap_past_any_real_bound_is_one_line_not_an_internal_error"],
    ),
    Sabotage(
        "a stream that ignores max_tokens is read up to the hard ceiling, not its max_tokens",
        "src/agentloop/providers/base.py",
        "        chars = min(max(64 << 10, 64 * output_allowance(max(0, max_tokens))), MAX_REPLY_CHARS)",
        "        chars = MAX_REPLY_CHARS  # SABOTAGED",
        ["tests/test_stream_bounds.py::test_an_endless_stream_is_cut_at_its_max_tokens_and_charged_its_reservation"],
    ),
    Sabotage(
        "managed permissions.disableBypassPermissionsMode is not enforced (bypass still applies)",
        "src/agentloop/agent/agent_settings.py",
        "        if off is not None:\n            raise AgentError(",
        "        if off is not None and False:  # SABOTAGED\n            raise AgentError(",
        ["tests/test_claude_settings_files.py::test_disable_bypass_permissions_mode_refuses_bypass"],
    ),
    Sabotage(
        "managed allowManagedHooksOnly is not enforced (a project hook still runs)",
        "src/agentloop/agent/hooks/runner.py",
        "            if managed_only and s.scope != \"managed\":",
        "            if managed_only and s.scope != \"managed\" and False:  # SABOTAGED",
        ["tests/test_claude_settings_files.py::test_managed_allow_managed_hooks_only_keeps_project_and_user_hooks_from_running"],
    ),
    Sabotage(
        "a PreToolUse hook's allow under dontAsk also overrides a deny rule",
        "src/agentloop/agent/permissions/rules.py",
        "                    if behavior == \"ask\" and self.mode == \"dontAsk\":",
        "                    if b.behavior == \"deny\" and self.mode == \"dontAsk\":  # SABOTAGED\n"
        "                        return Decision(\"deny\", b.rule.text, b.source, \"x\", by_mode=True)\n"
        "                    if behavior == \"ask\" and self.mode == \"dontAsk\":",
        ["tests/test_claude_hook_events.py::test_a_pre_tool_use_allow_lets_a_call_through_under_dont_ask"],
    ),
    Sabotage(
        "a background shell runs outside the sandbox",
        "src/agentloop/agent/tools/background.py",
        "            got = sb.launch_background(argv, cwd, command, env_, fds)  # beside the foreground commands\n",
        "            got = spawn.popen(argv, cwd=cwd, env=env_)  # SABOTAGED\n",
        ["tests/test_background_bash.py::test_a_background_command_is_confined_as_a_foreground_one"],
    ),
    Sabotage(
        "background shells outlive the session (Agent.close does not kill them)",
        "src/agentloop/agent/agent.py",
        "            self.background.close()  # background shells end with the session (on /clear and /resume too)",
        "            pass  # SABOTAGED",
        ["tests/test_background_bash.py::test_background_shells_end_with_the_session_on_clear_too"],
    ),
    Sabotage(
        "a Bash call asking to run outside the sandbox (dangerouslyDisableSandbox) runs without approval",
        "src/agentloop/agent/pipeline.py",
        '    if arguments.get("dangerouslyDisableSandbox") is not True:',
        "    if True:  # SABOTAGED",
        ["tests/test_unsandboxed_bash.py"],
    ),
    Sabotage(
        "while a background shell runs, what a foreground command leaves running outlives the call",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        sweep(lambda sid: sid not in bg)",
        "        pass  # SABOTAGED",
        ["tests/test_background_bash.py::test_while_a_background_shell_runs_a_foreground_commands_leftovers_still_end_with_the_call"],
    ),
    Sabotage(
        "KillShell leaves a background command running in the session's sandbox",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        '            r.sock.send(json.dumps({"kill": self.inner_pid}).encode())\n            r.take(r.sock.recv(1 << 16))\n',
        "            pass  # SABOTAGED\n",
        ["tests/test_background_bash.py::test_a_later_foreground_call_reaches_a_background_server_and_the_server_survives_it"],
    ),
    Sabotage(
        "a chat span's exported input carries the messages as sent (a secret argument unredacted)",
        "src/agentloop/telemetry/spans.py",
        "        recorded = self.policy.messages_for_record(messages)",
        "        recorded = [dict(m) for m in messages]  # SABOTAGED",
        ["tests/test_telemetry_genai.py::test_a_secret_argument_reaches_the_model_but_never_the_traces"],
    ),
    Sabotage(
        "a tool span's exported arguments are the call's own (a secret argument unredacted)",
        "src/agentloop/telemetry/spans.py",
        "_dumps(self.policy.call_arguments(call.name, call.arguments))",
        "_dumps(call.arguments)  # SABOTAGED",
        ["tests/test_telemetry_genai.py::test_a_secret_argument_reaches_the_model_but_never_the_traces"],
    ),
    Sabotage(
        "a WebFetch(domain:) rule for one domain allows fetches to any host",
        "src/agentloop/agent/permissions/rules.py",
        "            return bool(host) and fnmatch.fnmatchcase(host, b.rule.specifier)",
        "            return bool(host)  # SABOTAGED",
        ["tests/test_web_fetch.py::test_without_an_allow_rule_it_asks_and_with_no_one_to_ask_it_is_refused"],
    ),
    Sabotage(
        "WebFetch follows a redirect to a host no permission approved",
        "src/agentloop/agent/tools/web_fetch.py",
        "                            if nhost != host:",
        "                            if False:  # SABOTAGED",
        ["tests/test_web_fetch.py::test_a_redirect_to_another_host_is_reported_not_followed"],
    ),
    Sabotage(
        "WebFetch sends a URL that holds a session secret",
        "src/agentloop/agent/tools/web_fetch.py",
        "        if self.secret_in is not None and self.secret_in(url):",
        "        if False:  # SABOTAGED",
        ["tests/test_web_fetch.py::test_a_url_holding_a_session_secret_is_never_sent"],
    ),
    Sabotage(
        "a web search is made without its bound held under the cap",
        "src/agentloop/agent/context/side_calls.py",
        "        if self.held is None:\n            return f\"the spend cap has no room",
        "        if False:  # SABOTAGED\n            return f\"the spend cap has no room",
        ["tests/test_web_search.py::test_without_room_under_the_cap_no_search_is_made"],
    ),
    Sabotage(
        "a resource link in an ACP prompt is read from outside the workspace",
        "src/agentloop/cli/acp_session.py",
        "    return real if any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots) else None",
        "    return real  # SABOTAGED",
        ["tests/test_acp_ts_client.py::test_resources_in_a_prompt_reach_the_model_as_their_content"],
    ),
    Sabotage(
        "a permission request the editor cancels is taken as approval",
        "src/agentloop/cli/acp_ask.py",
        """        if getattr(outcome, "outcome", None) != "selected":
            return "deny"
        return {"allow": "allow", "always": "always"}.get(outcome.option_id, "deny")""",
        """        if getattr(outcome, "outcome", None) != "selected":
            return "allow"  # SABOTAGED
        return {"allow": "allow", "always": "always"}.get(outcome.option_id, "deny")""",
        ["tests/test_acp_ts_client.py::test_a_cancelled_permission_request_refuses_the_call"],
    ),
    Sabotage(
        "compaction writes the loop's messages bound itself (a field a reservation is made from, written outside the loop)",
        "src/agentloop/agent/context/compaction.py",
        "            shrink_bound(state, self.last_saved)  # the loop lowers its running bound (prepare keeps it right)",
        "            state.messages_bound -= self.last_saved  # SABOTAGED\n            assert shrink_bound",
        ["tests/test_side_costs.py::test_nothing_outside_the_loop_assigns_the_loops_money_fields"],
    ),
    Sabotage(
        "a child's share of its parent's budget is divided as a float",
        "src/agentloop/budget.py",
        "        m = None if money is None else money * num // (den * n)",
        "        m = None if money is None else money * num / (den * n)  # SABOTAGED",
        ["tests/test_budget.py::test_children_split_from_what_is_left_hold_whole_amounts_within_their_share"],
    ),
    Sabotage(
        "a ledger takes a float amount (the whole-number check is gone)",
        "src/agentloop/budget.py",
        "    if type(value) is not int:\n        raise ValueError(f\"{name} must be a whole number",
        "    if False:  # SABOTAGED\n        raise ValueError(f\"{name} must be a whole number",
        ["tests/test_budget.py::test_every_figure_entering_a_ledger_is_a_whole_number"],
    ),
    Sabotage(
        "the loop moves to a phase its transition table does not list",
        "src/agentloop/loop.py",
        "    nxt = TRANSITIONS.get((state.phase, event))\n",
        "    nxt = TRANSITIONS.get((state.phase, event), Phase.CALL)  # SABOTAGED\n",
        ["tests/test_loop_transitions.py"],  # the compiled loop is stale once its source changes: the source runs
    ),
    Sabotage(
        "parallel Agent-tool calls skip the tool-call pipeline (the sub-agent runner called directly: no schema check, no redaction)",
        "src/agentloop/agent/pipeline.py",
        "        return run_batch(calls, self.run, emit,",
        '        return run_batch(calls, lambda c: __import__("agentloop.tools").tools.finish(c, a.shown_tools().get(c.name).fn(**c.arguments)) '
        'if c.name == "Agent" else self.run(c), emit,  # SABOTAGED',
        ["tests/test_one_tool_path.py::test_an_agent_call_without_its_prompt_in_a_parallel_batch_gets_the_schema_error"],
    ),
    Sabotage(
        "a replay with the agent's own tools runs Bash outside the sandbox",
        "src/agentloop/cli/replay_tools.py",
        "            yield agent.registry\n",
        "            agent.sandbox.bwrap = None  # SABOTAGED\n            yield agent.registry\n",
        ["tests/test_replay_agent_tools.py::test_an_agent_session_replays_with_the_agents_own_tools_in_the_sandbox_and_a_scratch_copy"],
    ),
    Sabotage(
        "a replay with the agent's own tools writes in the session's folder instead of a scratch copy",
        "src/agentloop/cli/replay_tools.py",
        "            agent = Agent(cwd=scratch,",
        "            agent = Agent(cwd=workdir,  # SABOTAGED\n                          ",
        ["tests/test_replay_agent_tools.py::test_an_agent_session_replays_with_the_agents_own_tools_in_the_sandbox_and_a_scratch_copy"],
    ),
    Sabotage(
        "a remembered bubblewrap probe is trusted after bwrap or the kernel changed",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "            return bool(json.loads(f.read(4096)) == key)",
        "            return bool(json.loads(f.read(4096)))  # SABOTAGED",
        ["tests/test_sandbox_probe_cache.py"],
    ),
    Sabotage(
        "a plugin the user's settings enable from inside an untrusted folder is loaded (its hooks and servers run)",
        "src/agentloop/agent/plugins.py",
        "    if not trusted and (_inside(path, cwd) or _inside(base, cwd)):",
        "    if False and not trusted and (_inside(path, cwd) or _inside(base, cwd)):  # SABOTAGED",
        ["tests/test_plugins.py::test_the_users_own_settings_do_not_run_a_plugin_kept_inside_an_untrusted_folder"],
    ),
    Sabotage(
        "an untrusted folder's own settings enable plugins (enabledPlugins kept without trust)",
        "src/agentloop/agent/settings_sanitizer.py",
        'RESTRICTING_KEYS = frozenset({"$schema", "disabledMcpjsonServers"})',
        'RESTRICTING_KEYS = frozenset({"$schema", "disabledMcpjsonServers", "enabledPlugins", "extraKnownMarketplaces"})  # SABOTAGED',
        ["tests/test_plugins.py::test_an_untrusted_folders_plugin_runs_nothing_and_a_warning_says_so"],
    ),
    Sabotage(
        "a trusted folder's plugin changes and still runs (the trust digest leaves the plugin's files out)",
        "src/agentloop/agent/trust.py",
        "hook_files([s for s in clean if s.in_project], cwd) + project_plugin_files(cwd, clean))",
        "hook_files([s for s in clean if s.in_project], cwd))  # SABOTAGED",
        ["tests/test_plugins.py::test_a_trusted_folder_is_asked_again_when_a_plugin_its_settings_enable_changes"],
    ),
    Sabotage(
        "two keys of one vendor (a model and its fallback) collapse into one held key, the other unredacted",
        "src/agentloop/agent/secret_guard.py",
        "        while label in named:\n",
        "        while False:  # SABOTAGED\n",
        ["tests/test_spawn.py::test_keys_of_one_vendor_on_a_model_and_its_fallback_are_both_held"],
    ),
   # the Agent SDK's control protocol and flags (cli/sdk_control.py, sdk_requests.py, sdk_flags.py)
    Sabotage(
        "arguments the SDK's canUseTool allows instead of the model's skip the deny rules",
        "src/agentloop/agent/pipeline.py",
        '        if getattr(d, "behavior", "deny") == "deny":\n            why = getattr(d, "reason", "") or (f"rule {d.rule}" if getattr(d, "rule", None) else "a permission rule")\n            return self._deny(call, f"permission to use {call.name} with the arguments given instead',
        '        if False:  # SABOTAGED\n            why = getattr(d, "reason", "") or (f"rule {d.rule}" if getattr(d, "rule", None) else "a permission rule")\n            return self._deny(call, f"permission to use {call.name} with the arguments given instead',
        ["tests/test_sdk_control_protocol.py::test_allowed_arguments_that_a_deny_rule_refuses_are_refused"],
    ),
    Sabotage(
        "a malformed canUseTool answer from the SDK allows the call",
        "src/agentloop/cli/sdk_requests.py",
        '    return PermissionReply("deny", f"the SDK\'s canUseTool answer is malformed (behavior',
        '    return PermissionReply("allow", f"the SDK\'s canUseTool answer is malformed (behavior  # SABOTAGED',
        ["tests/test_sdk_control_protocol.py::test_a_broken_answer_to_can_use_tool_refuses_the_call_and_says_why"],
    ),
    Sabotage(
        "the SDK's --max-budget-usd is not the spend cap",
        "src/agentloop/cli/agent_args.py",
        '"--max-usd", "--max-budget-usd", dest="max_usd"',
        '"--max-usd", dest="max_usd"); g.add_argument("--max-budget-usd", dest="ignored_budget"  # SABOTAGED',
        ["tests/test_agent_sdk_python.py::test_max_budget_usd_is_the_spend_cap"],
    ),
    Sabotage(
        "the SDK's set_permission_mode switches to bypassPermissions in a session that did not begin in it",
        "src/agentloop/cli/sdk_requests.py",
        "    if mode not in agent.settings.mode_cycle():",
        "    if False:  # SABOTAGED",
        ["tests/test_sdk_control_protocol.py::test_set_permission_mode_refuses_bypass_unless_the_session_began_in_it"],
    ),
    Sabotage(
        "SDK flags agentloop cannot honour (--task-budget, --no-session-persistence, --setting-sources project...) are silently accepted",
        "src/agentloop/cli/sdk_flags.py",
        "        if given(dest) not in (None, False):\n            raise UserError(f\"{flag}: {why}\")",
        "        if False:  # SABOTAGED\n            raise UserError(f\"{flag}: {why}\")",
        ["tests/test_sdk_control_protocol.py::test_a_flag_agentloop_cannot_honour_is_an_error_naming_it"],
    ),
    Sabotage(
        "a refusal with a message (the SDK's canUseTool) to a hook's ask is taken for an allow",
        "src/agentloop/agent/hooks_and_context.py",
        '            if getattr(reply, "answer", reply) == "deny":',
        '            if reply == "deny":  # SABOTAGED',
        ["tests/test_agent_sdk_python.py::test_a_hook_that_asks_puts_the_question_to_can_use_tool_and_its_deny_holds"],
    ),
    # -- sub-agents: one room, one factory --
    Sabotage(
        "a child's model call is granted without fitting the parent's room (children overspend together)",
        "src/agentloop/agent/subagents/parent_budget.py",
        "                if self.state is None or self._room().fits(micros, tokens):",
        "                if True:  # SABOTAGED",
        ["tests/test_spend_cap_property.py", "tests/test_subagent.py", "tests/test_spend_cap_children.py"],
    ),
    Sabotage(
        "a child whose call does not fit yet stops instead of waiting for its siblings' calls to settle",
        "src/agentloop/agent/subagents/parent_budget.py",
        "                self._changed.wait(timeout=1.0)",
        "                return False  # SABOTAGED",
        ["tests/test_subagent.py::test_ten_children_at_once_all_finish_when_the_room_pays_for_their_bills_not_their_reservations"],
    ),
    Sabotage(
        "a parent interrupted while children run at once leaves them running",
        "src/agentloop/agent/subagents/runner.py",
        "bg.stop if bg is not None else interrupt_flag() or threading.Event())",
        "bg.stop if bg is not None else threading.Event())  # SABOTAGED",
        ["tests/test_subagent.py::test_a_parent_interrupted_while_children_run_stops_them_all"],
    ),
    Sabotage(
        "a child in a worktree gets the parent's rules rooted at the parent's tree (Edit(secret/**) misses the copy)",
        "src/agentloop/agent/builder.py",
        "        return self.agent.policy.rooted_at(*roots) if roots is not None else self.agent.policy",
        "        return self.agent.policy  # SABOTAGED",
        ["tests/test_subagent_guards.py"],
    ),
    Sabotage(
        "a child's apply_patch has no patch guard (writes through Edit deny rules and into .git/hooks)",
        "src/agentloop/agent/toolbox.py",
        "            self, cwd=cwd, policy=policy, sandbox=",
        "            self, cwd=cwd, policy=dataclasses.replace(policy, rules=[]), sandbox=",  # SABOTAGED: the child's setup drops the rules
        ["tests/test_subagent_guards.py", "tests/test_child_tool_guards.py::test_a_child_refuses_every_call_its_parent_refuses"],
    ),
    Sabotage(
        "a child's merge-back is not recorded as a file change (rewind cannot undo it)",
        "src/agentloop/agent/subagents/runner.py",
        "                    self.on_file_change(p, old, new if new is not None else b\"\")",
        "                    pass  # SABOTAGED",
        ["tests/test_subagent_guards.py"],
    ),
    # agentloop's own git runs in the git jail (decision 0013)
    Sabotage(
        "agentloop's own git runs on the host instead of in the git jail",
        "src/agentloop/agent/spawn.py",
        "jail_argv(bwrap, argv, cwd=cwd, write=write, paths=paths)",
        "list(argv)",
        ["tests/test_git_jail.py::test_a_program_git_runs_for_agentloop_is_jailed"],
    ),
    Sabotage(
        "the git jail leaves the homes and /tmp of the host in view",
        "src/agentloop/agent/sandbox/gitjail.py",
        '        out += ["--tmpfs", h]\n',
        "        pass  # SABOTAGED\n",
        ["tests/test_git_jail.py::test_a_program_git_runs_for_agentloop_is_jailed"],
    ),
    Sabotage(
        "where no sandbox starts, agentloop's git runs on the host",
        "src/agentloop/agent/spawn.py",
        "    bwrap = jail_bwrap()\n",
        "    bwrap = None  # SABOTAGED\n    return subprocess.run(list(argv), cwd=cwd, env=dict(genv), capture_output=True, text=True)\n",
        ["tests/test_git_jail.py::test_without_a_sandbox_agentloop_runs_no_git"],
    ),
    Sabotage(
        "a repository's filter drivers stay on inside the git jail (a driver named a=b)",
        "src/agentloop/agent/spawn.py",
        "    _no_filters(genv, drivers)\n",
        "    pass  # SABOTAGED\n",
        ["tests/test_git_jail.py::test_a_sub_agents_worktree_and_merge_back_run_none_of_the_repositorys_programs"],
    ),
    Sabotage(
        "the agentloop command keeps the provider keys in the environment /proc shows",
        "src/agentloop/cli/held_keys.py",
        '    if not names or os.name != "posix":\n',
        "    if True:  # SABOTAGED\n",
        ["tests/test_keys_in_memory.py::test_a_hook_finds_no_key_in_the_environment_of_agentloop_or_any_process_above_it"],
    ),
    Sabotage(
        "the key --api-key-env names stays in the environment /proc shows",
        "src/agentloop/cli/held_keys.py",
        "            names.add(args[i + 1])\n",
        "            pass  # SABOTAGED\n",
        ["tests/test_keys_in_memory.py::test_a_hook_finds_no_key_in_the_environment_of_agentloop_or_any_process_above_it"],
    ),
    Sabotage(
        "spawn.popen starts git on the host, outside the git jail",
        "src/agentloop/agent/spawn.py",
        '    if launcher is None and argv and os.path.basename(argv[0]) == "git":\n',
        "    if False:  # SABOTAGED\n",
        ["tests/test_git_jail.py::test_git_started_any_other_way_by_agentloop_is_refused"],
    ),
    Sabotage(
        "in a git call that writes, the jail lets the repository's config and hooks be changed",
        "src/agentloop/agent/sandbox/gitjail.py",
        "    if write:  # what git reads to find programs stays as it was, even in a call that writes\n",
        "    if False:  # SABOTAGED\n",
        ["tests/test_git_jail.py::test_a_program_in_a_call_that_writes_cannot_change_what_git_runs_later"],
    ),
    # records-acp: readers check each payload's shape; a session's listing cache is checked too
    Sabotage(
        "a forged record that chains is believed by the session readers",
        "src/agentloop/record_shapes.py",
        'return None if check is None else check(payload, "payload")',
        "return None  # SABOTAGED",
        ["tests/test_forged_records.py"],
    ),
    Sabotage(
        "a forged total in the sessions listing cache is believed",
        "src/agentloop/agent/session/store.py",
        'and _CACHED(hit.get("summary"), "summary") is None:',
        'and "uncapped" in (hit.get("summary") or {}):  # SABOTAGED',
        ["tests/test_forged_records.py::test_a_forged_total_in_the_listings_cache_is_read_again_from_the_session"],
    ),
    Sabotage(
        "ACP reads messages through the SDK's unchecked transport (batches, bad ids, parse errors)",
        "src/agentloop/cli/acp_server.py",
        "await acp.run_agent(cast(Any, agent), CheckedTransport(reader, writer))",
        "await acp.run_agent(cast(Any, agent), writer, reader)  # SABOTAGED",
        ["tests/test_acp_wire.py::test_a_batch_array_gets_one_invalid_request_error_runs_nothing_and_the_connection_goes_on"],
    ),
    Sabotage(
        "ACP takes a float or out-of-range id as a request id",
        "src/agentloop/cli/acp_wire.py",
        "return isinstance(v, int) and not isinstance(v, bool) and -MAX_SAFE_ID <= v <= MAX_SAFE_ID",
        "return True  # SABOTAGED",
        ["tests/test_acp_wire.py::test_every_id_that_is_not_a_string_null_or_safe_integer_is_refused_with_id_null"],
    ),
    Sabotage(
        "verify calls a file with no record line unreadable (exit 2) instead of reporting its problems",
        "src/agentloop/cli/cmd_verify.py",
        'code = EXIT_USAGE if unreadable else (EXIT_OK if report.ok else EXIT_PROBLEMS)',
        'code = EXIT_USAGE if unreadable or _not_a_transcript(path) else (EXIT_OK if report.ok else EXIT_PROBLEMS)  # SABOTAGED',
        ["tests/test_verify_not_a_transcript.py", "tests/test_conformance.py"],
    ),
    Sabotage(
        "a money amount given to Budget positionally becomes another cap",
        "src/agentloop/budget.py",
        "        if args:\n            raise TypeError(",
        "        if args:  # SABOTAGED\n            max_steps = args[0]  # type: ignore[assignment]\n        if False:\n            raise TypeError(",
        ["tests/test_seed_rows.py::test_a_budget_given_positionally_is_a_type_error_naming_the_keywords"],
    ),
    Sabotage(
        "a seed-format Stop hook that exits 1 keeps the agent going",
        "src/agentloop/agent/hooks/runner.py",
        "and code not in (0, None) and event not in SEED_OUTPUT_IGNORED:",
        "and code not in (0, None):  # SABOTAGED",
        ["tests/test_seed_rows.py::test_a_seed_stop_hook_that_exits_1_does_not_keep_the_agent_going"],
    ),
    # deny rules enforced where programs start (sandbox/deny_exec.py)
    Sabotage(
        "a deny rule is left to the command reader: the sandbox does not mask the denied program",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        out += self._deny_mounts(path_env, shown)\n",
        "        out += []  # SABOTAGED\n",
        ["tests/test_deny_exec.py"],
    ),
    Sabotage(
        "a denied program's other names and copies stay reachable (only the file its name resolves to is masked)",
        "src/agentloop/agent/sandbox/deny_exec.py",
        "            for p in [*links, *_copies(real, dirs)]:",
        "            for p in [real]:  # SABOTAGED",
        ["tests/test_deny_exec.py::test_every_name_and_copy_of_a_denied_programs_file_is_masked"],
    ),
    Sabotage(
        "a deny rule on a multi-call program's name is silently not enforced (no question is asked)",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        if unenforceable:\n",
        "        if False:  # SABOTAGED\n",
        ["tests/test_deny_exec.py::test_an_unenforceable_deny_rule_makes_every_command_ask"],
    ),
    # read-only auto-approval by allow-list (permissions/rules.py)
    Sabotage(
        "a compound command's redirection is not seen: (echo x) > t runs as read-only",
        "src/agentloop/agent/permissions/rules.py",
        "    if bash.units is None or bash.opaque or not bash.units or bash.loose_io():\n",
        "    if bash.units is None or bash.opaque or not bash.units:  # SABOTAGED\n",
        ["tests/test_read_only_allow_list.py"],
    ),
    Sabotage(
        "an allow rule approves a compound's write and a redirection its * stands for",
        "src/agentloop/agent/permissions/rules.py",
        "                    if any(ok and _shows_redirections(pat, text) for text, ok in u.views):\n",
        "                    if any(ok and pat.match(text) for text, ok in u.views):  # SABOTAGED\n",
        ["tests/test_read_only_allow_list.py::test_an_allow_rule_approves_a_redirection_only_to_the_target_it_shows"],
    ),
    Sabotage(
        "glob and brace words are checked by their literal prefix only (*/../../x reads outside unasked)",
        "src/agentloop/agent/permissions/rules.py",
        "                    paths = _glob_reach(os.path.join(base, c), MAX_PATH_CHECKS - seen) if pattern else [c]\n",
        "                    paths = [_GLOB_CHARS.split(c, maxsplit=1)[0]]  # SABOTAGED\n",
        ["tests/test_read_only_allow_list.py::test_a_glob_or_brace_word_that_reaches_outside_is_not_auto_approved"],
    ),
    Sabotage(
        "git status and describe are auto-approved again (they run post-index-change and fsmonitor)",
        "src/agentloop/agent/permissions/rules.py",
        '    "rev-parse", "ls-tree", "cat-file",',
        '    "status", "describe", "rev-parse", "ls-tree", "cat-file",  # SABOTAGED',
        ["tests/test_read_only_allow_list.py::test_git_lines_that_can_run_repository_programs_always_ask"],
    ),
    Sabotage(
        "uniq's operands are counted by their dashes (uniq -- v -victim writes unasked)",
        "src/agentloop/agent/permissions/rules.py",
        '    if head == "uniq" and len(_operands(args, "fsw", ("--skip-fields", "--skip-chars", "--check-chars"))) > 1:',
        '    if head == "uniq" and len([a for a in args if a == "-" or not a.startswith("-")]) > 1:  # SABOTAGED',
        ["tests/test_read_only_allow_list.py::test_uniq_with_an_output_operand_is_not_read_only"],
    ),
    Sabotage(
        "a mis-cased deny rule (bash(rm:*)) stays silently dead instead of failing closed",
        "src/agentloop/agent/permissions/rules.py",
        "                self.add_rule(b.behavior, fixed, source=b.source)\n",
        "                pass  # SABOTAGED\n",
        ["tests/test_deny_exec.py::test_a_mis_cased_deny_rule_is_named_and_enforced_as_the_tool_it_means"],
    ),
    Sabotage(
        "any option of a read-only program counts as read-only (no per-program list)",
        "src/agentloop/agent/permissions/read_only_options.py",
        "    spec = OPTIONS.get(head)\n    if spec is None:\n        return False\n",
        "    spec = OPTIONS.get(head)\n    if spec is None or True:  # SABOTAGED\n        return True\n",
        ["tests/test_read_only_allow_list.py::test_an_option_not_on_the_programs_read_only_list_asks"],
    ),
    # trust-approval: outside the sandbox only by name
    Sabotage(
        "a plain Bash rule or the mode approves a command that runs outside the sandbox",
        "src/agentloop/agent/pipeline.py",
        "        if unsandboxed_rule(self.policy, call.arguments) is not None:",
        '        if getattr(d, "behavior", "") == "allow" or unsandboxed_rule(self.policy, call.arguments) is not None:  # SABOTAGED',
        ["tests/test_unsandboxed_bash.py"],
    ),
    Sabotage(
        "a PermissionRequest hook's allow runs a command outside the sandbox",
        "src/agentloop/agent/pipeline.py",
        "        if verdict is not None and verdict[0] != \"allow\":",
        "        if verdict is not None and verdict[0] == \"allow\":\n            return None  # SABOTAGED\n        if verdict is not None:",
        ["tests/test_unsandboxed_bash.py"],
    ),
    Sabotage(
        "an editor over ACP is asked about a command outside the sandbox without being told so",
        "src/agentloop/cli/acp_ask.py",
        '        if OUTSIDE_THE_SANDBOX in str(getattr(decision, "reason", "")):  # the question says where it would run',
        "        if False:  # SABOTAGED",
        ["tests/test_unsandboxed_bash.py::test_an_editor_over_acp_is_asked_a_question_that_says_outside_the_sandbox"],
    ),
    Sabotage(
        "a project's hook runs on the host, outside the sandbox",
        "src/agentloop/agent/hooks/runner.py",
        "        if h.confined and self.confine is not None:  # a project's hook: inside the sandbox, as a Bash command",
        "        if False:  # SABOTAGED",
        ["tests/test_project_hooks_sandboxed.py::test_a_project_hook_runs_the_rewritten_code_inside_the_sandbox"],
    ),
    Sabotage(
        "an untrusted folder's command chooses the model",
        "src/agentloop/agent/trust.py",
        'c = replace(c, meta={k: v for k, v in c.meta.items() if k not in ("allowed-tools", "model")})',
        'c = replace(c, meta={k: v for k, v in c.meta.items() if k != "allowed-tools"})  # SABOTAGED',
        ["tests/test_untrusted_definitions.py::test_an_untrusted_folders_command_and_skill_do_not_choose_the_model"],
    ),
    Sabotage(
        "-p and the listings print text from elsewhere raw",
        "src/agentloop/cli/terminal_text.py",
        "    out.write(neutral(text) + end)",
        "    out.write(text + end)  # SABOTAGED",
        ["tests/test_terminal_shows_true.py::test_print_mode_neutralises_a_pipe_too_and_json_keeps_the_answer_as_written",
         "tests/test_terminal_shows_true.py::test_print_mode_warnings_and_the_sessions_listing_are_neutral"],
    ),
    Sabotage(
        "auto-approval judges link/.. as written, not where the kernel goes",
        "src/agentloop/agent/permissions/rules.py",
        "                            real = os.path.realpath(os.path.join(base, p))",
        "                            real = os.path.realpath(given)  # SABOTAGED",
        ["tests/test_read_only_reach.py::test_dot_dot_after_a_link_is_judged_where_the_kernel_goes"],
    ),
    Sabotage(
        "find's expression judged by a list of bad actions instead of an allow-list",
        "src/agentloop/agent/permissions/rules.py",
        "    return all(not a.startswith(\"-\") or a in _FIND_WORDS or _FIND_NEWER.match(a) is not None for a in args)",
        "    return not any(a in (\"-exec\", \"-delete\", \"-fprint\") for a in args)  # SABOTAGED",
        ["tests/test_read_only_reach.py::test_a_line_that_follows_links_while_walking_or_acts_asks"],
    ),
    Sabotage(
        "grep -R (follows every link while recursing) is on grep's read-only list",
        "src/agentloop/agent/permissions/read_only_options.py",
        '_GREP = ("EFGPiyvwxcLlmoqsbHhnTZzrUaIe:f:m:A:B:C:d:D:"',
        '_GREP = ("EFGPiyvwxcLlmoqsbHhnTZzrRUaIe:f:m:A:B:C:d:D:"  # SABOTAGED',
        ["tests/test_read_only_reach.py::test_a_line_that_follows_links_while_walking_or_acts_asks"],
    ),
    Sabotage(
        "a variable holding a credential by its value's shape (a JWT, a ghp_ token) reaches children",
        "src/agentloop/config/credentials.py",
        "    return (secret_named(name) or _URL_PASSWORD.search(value) is not None or token_shaped(value)",
        "    return (secret_named(name) or _URL_PASSWORD.search(value) is not None  # SABOTAGED",
        ["tests/test_secret_shapes.py::test_variables_carrying_credentials_by_convention_stay_out_of_children",
         "tests/test_secret_shapes.py::test_bash_does_not_inherit_them"],
    ),
    Sabotage(
        "MCP stdio servers inherit the environment judged again from the user's, not the agent's child environment",
        "src/agentloop/mcp/agent.py",
        "                         auth_home=start.home, allow_env=start.allow_env, inherit=start.inherit)",
        "                         auth_home=start.home, allow_env=start.allow_env, inherit=None)  # SABOTAGED",
        ["tests/test_mcp_env.py::test_the_agent_withholds_the_key_variable_it_was_configured_with"],
    ),
    Sabotage(
        "a held secret is redacted only as written, not base64-encoded",
        "src/agentloop/agent/secret_shapes.py",
        "    pats += [_WRAP.join(_b64_char(c) for c in core) for core in base64_cores(raw)]",
        "    pats += []  # SABOTAGED",
        ["tests/test_secret_shapes.py::test_each_shape_of_a_held_secret_is_redacted", "tests/test_secret_shapes.py::test_bash_printing_a_token_file_in_every_shape_shows_none_of_them"],
    ),
    Sabotage(
        "a held secret is redacted only as written, not %-encoded",
        "src/agentloop/agent/secret_shapes.py",
        "    alts = [_escape(c), _either_case(encoded), ",
        "    alts = [_escape(c),  # SABOTAGED\n            ",
        ["tests/test_secret_shapes.py::test_each_shape_of_a_held_secret_is_redacted", "tests/test_secret_shapes.py::test_webfetch_refuses_a_url_holding_a_secret_in_any_shape"],
    ),
    Sabotage(
        "a cut of a held secret (cut -c, head -c) is shown",
        "src/agentloop/agent/secret_shapes.py",
        "    piece = _pieces_pattern(value)",
        "    piece = None  # SABOTAGED",
        ["tests/test_secret_shapes.py::test_a_piece_of_a_held_secret_is_redacted_with_the_run_around_it",
         "tests/test_secret_shapes.py::test_bash_printing_a_token_file_in_every_shape_shows_none_of_them"],
    ),
    Sabotage(
        "only the piece of a held secret goes, not the run of word characters around it",
        "src/agentloop/agent/secret_shapes.py",
        '    return word + "(?:" + "|".join("".join(_escape(c) for c in w) for w in ws) + ")" + word',
        '    return "(?:" + "|".join("".join(_escape(c) for c in w) for w in ws) + ")"  # SABOTAGED',
        ["tests/test_secret_shapes.py::test_a_piece_of_a_held_secret_is_redacted_with_the_run_around_it"],
    ),
    Sabotage(
        "WebFetch sends a URL whose secret is %-encoded base64",
        "src/agentloop/agent/secret_shapes.py",
        "    return tuple(dict.fromkeys((text, unquote_plus(text), unquote(unquote(text)))))",
        "    return (text,)  # SABOTAGED",
        ["tests/test_secret_shapes.py::test_webfetch_refuses_a_url_holding_a_secret_in_any_shape"],
    ),
    Sabotage(
        "an image block whose bytes hold a secret reaches the model",
        "src/agentloop/agent/secret_guard.py",
        "        content = _withhold_images(r.content, red)  # judged by their bytes, before any text of them is touched",
        "        content = r.content  # SABOTAGED",
        ["tests/test_secret_shapes.py::test_an_image_whose_bytes_hold_a_secret_is_withheld"],
    ),
    Sabotage(
        "variables carrying credentials by convention (MYSQL_PWD, DATABASE_URL's password) reach children",
        "src/agentloop/config/credentials.py",
        "        if k not in names and v not in values and (k in keep or not carries_credentials(k, v))",
        "        if k not in names and v not in values and (k in keep or not secret_named(k))  # SABOTAGED",
        ["tests/test_secret_shapes.py::test_variables_carrying_credentials_by_convention_stay_out_of_children", "tests/test_secret_shapes.py::test_bash_does_not_inherit_them"],
    ),
    # -- Claude Code users' files, round 3 (plugins' environment, bundled scripts, managed restrictions) --
    Sabotage(
        "the protected-path rule lets every argument of a script run from .claude through (a write into .claude goes unasked)",
        "src/agentloop/agent/permissions/rules.py",
        "if lit and not w.startswith(\"-\") and i != script]",
        "if lit and not w.startswith(\"-\") and script is None]  # SABOTAGED",
        ["tests/test_claude_skill_scripts.py::test_the_protected_path_rule_guards_writes_into_claude_not_running_a_script_there"],
    ),
    Sabotage(
        "plugin and skill folders are shown to sandboxed commands writable",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        out += [\"--ro-bind\", f, f]\n    return out",
        "        out += [\"--bind\", f, f]  # SABOTAGED\n    return out",
        ["tests/test_claude_skill_scripts.py::test_an_enabled_plugins_script_runs_in_the_sandbox_from_its_folder_read_only"],
    ),
    Sabotage(
        "a plugin folder holding a hidden credential folder is shown to sandboxed commands",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        if covers is not None or any(h not in holders for h in inside):",
        "        if any(h not in holders for h in inside):  # SABOTAGED",
        ["tests/test_claude_skill_scripts.py::test_a_plugin_folder_holding_a_hidden_path_is_not_shown"],
    ),
    Sabotage(
        "a secret-named variable a SessionStart hook writes to CLAUDE_ENV_FILE reaches Bash",
        "src/agentloop/agent/secret_guard.py",
        "        kept = spawn.environment(exports, allowed=self.allowed_env, drop=self.dropped, held=self.held)",
        "        kept = spawn.ChildEnv(exports)  # SABOTAGED",
        ["tests/test_claude_plugin_environment.py::test_exports_a_session_start_hook_writes_to_claude_env_file_reach_later_bash_calls"],
    ),
    Sabotage(
        "allowManagedPermissionRulesOnly is ignored (a project's allow rule runs a command)",
        "src/agentloop/agent/permissions/rules.py",
        "        if self.managed_rules_only is None or behavior == \"deny\":",
        "        if True:  # SABOTAGED",
        ["tests/test_claude_managed_restrictions.py::test_project_allow_rules_do_not_apply_when_managed_settings_allow_only_theirs"],
    ),
    Sabotage(
        "strictKnownMarketplaces is ignored (a project's marketplace loads)",
        "src/agentloop/agent/plugins.py",
        "            if strict is not None and s.scope != \"managed\" and not _market_allowed(cwd, entry, strict[1]):",
        "            if False:  # SABOTAGED",
        ["tests/test_claude_managed_restrictions.py::test_strict_known_marketplaces_empty_keeps_a_projects_marketplace_out"],
    ),
    Sabotage(
        "a deny rule naming Task (the Agent tool's old name) does not block Agent",
        "src/agentloop/agent/permissions/rules.py",
        "    tool = TOOL_ALIASES.get(tool, tool)\n",
        "    pass  # SABOTAGED\n",
        ["tests/test_claude_task_alias.py::test_disallowed_tools_task_removes_the_agent_tool"],
    ),
    Sabotage(
        "front matter YAML expands anchors and aliases",
        "src/agentloop/agent/front_matter.py",
        "        if self.check_event(yaml.AliasEvent):",
        "        if False:  # SABOTAGED",
        ["tests/test_claude_agent_front_matter.py::test_yaml_anchors_and_aliases_are_not_expanded"],
    ),
    Sabotage(
        "an untrusted folder's command runs its front matter hooks",
        "src/agentloop/agent/hooks_and_context.py",
        "        if not trusted and (real == cwd or real.startswith(cwd + os.sep)):",
        "        if False:  # SABOTAGED",
        ["tests/test_claude_front_matter_hooks.py::test_an_untrusted_folders_command_hooks_do_not_run"],
    ),
    Sabotage(
        "what a project's sandboxed SessionStart hook writes to CLAUDE_ENV_FILE is sourced on the host",
        "src/agentloop/agent/hooks_and_context.py",
        "        wrap = self.runner.confined_source()  # None: the user's hooks wrote it, and it is sourced on the host",
        "        wrap = None  # SABOTAGED",
        ["tests/test_claude_plugin_environment.py::test_what_a_projects_session_start_hook_writes_to_claude_env_file_never_runs_on_the_host"],
    ),
    Sabotage(
        "resume does not check the payloads of the records it reads",
        "src/agentloop/agent/session/store.py",
        "            if _forged(tail[0]):",
        "            if False:  # SABOTAGED",
        ["tests/test_forged_records.py::test_a_forged_record_of_each_kind_that_chains_is_refused_by_every_reader"],
    ),
    Sabotage(
        "ACP hands a request whose params hold 1e400 to its handler",
        "src/agentloop/cli/acp_wire.py",
        '            elif "method" in message and _infinite(message.get("params")):',
        '            elif False:  # SABOTAGED',
        ["tests/test_acp_wire.py::test_a_number_past_any_double_in_params_is_invalid_params_never_an_internal_error"],
    ),
    # --- the write wall (docs/decisions/0014): one shape-based check for every write path ---
    Sabotage(
        "the write wall knows git directories by name only (a bare repository of plain files passes)",
        "src/agentloop/agent/sandbox/wall.py",
        '    return "HEAD" in s and ("objects" in s or "commondir" in s)',
        '    return False  # SABOTAGED',
        ["tests/test_write_wall.py::test_a_bare_repository_written_as_plain_files_by_a_command_is_moved_aside"],
    ),
    Sabotage(
        "the file tools, apply_patch and merge-back write what makes git run code",
        "src/agentloop/agent/sandbox/gitguard.py",
        "    after = View(pending)\n",
        "    return None  # SABOTAGED\n    after = View(pending)\n",
        ["tests/test_write_wall.py::test_write_refuses_to_complete_a_repository_that_runs_a_program",
         "tests/test_write_wall.py::test_apply_patch_refuses_a_patch_that_makes_a_repository_that_runs_a_program",
         "tests/test_write_wall.py::test_a_sub_agents_merge_back_does_not_bring_in_a_repository_that_runs_a_program"],
    ),
    Sabotage(
        "background commands are not watched while they run",
        "src/agentloop/agent/sandbox/watch.py",
        "                    self.once(None if whole else changed, BACKSTOP_SLICE if due else 0)\n",
        "                    pass  # SABOTAGED\n",
        ["tests/test_write_wall.py::test_a_background_command_planting_a_repository_is_caught_while_it_runs_and_when_it_ends",
         "tests/test_write_wall.py::test_a_background_command_writing_commondir_is_undone"],
    ),
    Sabotage(
        "agentloop starts in the home folder without asking",
        "src/agentloop/cli/agent_setup.py",
        "    if why is None or _opt(args, \"home_workspace\", False):",
        "    if True:  # SABOTAGED",
        ["tests/test_home_workspace.py::test_print_mode_in_the_home_folder_refuses_and_names_the_flag"],
    ),
    Sabotage(
        "the read-only toolchain folders show uv's credential store",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        '".local/share/uv/python", ".local/share/uv/tools",',
        '".local/share/uv",  # SABOTAGED',
        ["tests/test_home_workspace.py::test_toolchain_folders_show_without_uvs_credentials_or_dotnets_certificate_store"],
    ),
    Sabotage(
        "SSH_AUTH_SOCK is passed into the sandbox",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "    return {k: v for k, v in env.items() if k not in AGENT_SOCKET_VARIABLES}",
        "    return dict(env)  # SABOTAGED",
        ["tests/test_sandbox_leftovers.py::test_the_ssh_agents_socket_variable_does_not_reach_sandboxed_commands"],
    ),
    Sabotage(
        "a SIGKILLed agentloop's private /tmp stays forever",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "            _remove_stale_tmpdirs()\n",
        "            pass  # SABOTAGED\n",
        ["tests/test_sandbox_leftovers.py::test_a_killed_agentloops_private_tmp_is_removed_at_the_next_start"],
    ),
    Sabotage(
        "the home as the workspace is shown whole, minus a list of credential paths",
        "src/agentloop/agent/sandbox/home.py",
        "    return [h for h in homes if any(h == r or h.startswith(r.rstrip(os.sep) + os.sep) for r in roots)]",
        "    return []  # SABOTAGED",
        ["tests/test_home_allow_list.py::test_credential_stores_and_agent_sockets_in_the_home_are_not_there_for_commands",
         "tests/test_home_allow_list.py::test_start_up_files_a_command_writes_never_reach_the_disk_and_host_shells_run_nothing_new"],
    ),
    Sabotage(
        "the transcript mirror and tool-results files are written with the umask's mode",
        "src/agentloop/config/private.py",
        "        os.fchmod(fd, 0o600)  # a temporary file",
        "        os.fchmod(fd, 0o644)  # SABOTAGED",
        ["tests/test_private_session_files.py::test_the_transcript_mirror_tool_results_and_background_logs_are_private"],
    ),
    Sabotage(
        "a background command's log is created with the umask's mode",
        "src/agentloop/agent/tools/background.py",
        "        os.close(private_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))",
        "        open(path, \"wb\").close()  # SABOTAGED",
        ["tests/test_private_session_files.py::test_the_transcript_mirror_tool_results_and_background_logs_are_private"],
    ),
    Sabotage(
        "a home tightened while logging is set up is not said to the user",
        "src/agentloop/config/private.py",
        "    return tightened_notice(home) or said",
        "    return said  # SABOTAGED",
        ["tests/test_private_session_files.py::test_a_home_made_open_to_others_is_tightened_and_the_user_is_told"],
    ),
    Sabotage(
        "ACP's editor write is sent without looking at the path again",
        "src/agentloop/cli/acp_fs.py",
        "            real = ws.unchanged_path(real)  # checked again",
        "            pass  # SABOTAGED",
        ["tests/test_acp_write_recheck.py::test_a_folder_that_became_a_link_before_the_editor_write_is_refused"],
    ),
    Sabotage(
        "the plugin trust digest stops after 2,000 files",
        "src/agentloop/agent/plugins.py",
        "        out += [os.path.realpath(os.path.join(root, f)) for f in sorted(files)]\n",
        "        out = (out + [os.path.realpath(os.path.join(root, f)) for f in sorted(files)])[:2000]  # SABOTAGED\n",
        ["tests/test_plugins.py::test_a_plugin_file_after_thousands_of_others_is_still_covered_by_folder_trust"],
    ),
    Sabotage(
        "a hook file's digest ignores what lies past the bytes it reads",
        "src/agentloop/agent/trust.py",
        "            if limit <= 0 and f.read(1):",
        "            if False:  # SABOTAGED",
        ["tests/test_plugins.py::test_a_change_past_the_bytes_a_digest_reads_still_changes_it"],
    ),
    Sabotage(
        "the write watch follows no folder with inotify",
        "src/agentloop/agent/sandbox/notify.py",
        "            wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(p), _MASK))",
        "            wd = -1  # SABOTAGED",
        ["tests/test_write_watch_wait.py::test_a_change_in_a_followed_folder_wakes_the_watch_and_none_does_not"],
    ),
    Sabotage(
        "the write watch takes every inotify watch the user has",
        "src/agentloop/agent/sandbox/notify.py",
        "            if len(self._wds) >= self.cap:",
        "            if False:  # SABOTAGED",
        ["tests/test_write_watch_wait.py::test_the_watch_takes_no_more_than_its_share_of_the_users_inotify_watches"],
    ),
    Sabotage(
        "the watch undoes a start-up file the user makes in a home commands cannot reach",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "            plan.watch = [p for p in plan.watch if not hidden(p)]",
        "            plan.watch = list(plan.watch)  # SABOTAGED",
        ["tests/test_home_allow_list.py::test_a_start_up_file_the_user_makes_on_the_host_meanwhile_is_left_alone"],
    ),
    # --- money on one path (decision 0017) ---
    Sabotage(
        "a reply's output past the max_tokens it asked is believed (not charged the reservation)",
        "src/agentloop/budget.py",
        "    if usage.output_tokens > bound.output_tokens:\n",
        "    if False:  # SABOTAGED\n",
        ["tests/test_money_one_path.py::test_figures_beyond_what_the_request_allowed_are_charged_the_whole_reservation",
         "tests/test_money_one_path.py::test_a_reply_with_more_output_than_max_tokens_is_charged_its_reservation_as_an_overrun",
         "tests/test_money_one_path.py::test_a_compaction_summary_with_more_output_than_asked_is_charged_its_reservation"],
    ),
    Sabotage(
        "a server tool's count of its own uses past max_uses is believed",
        "src/agentloop/budget.py",
        "    if uses > bound.uses:\n",
        "    if False:  # SABOTAGED\n",
        ["tests/test_money_one_path.py::test_figures_beyond_what_the_request_allowed_are_charged_the_whole_reservation",
         "tests/test_money_one_path.py::test_a_web_search_reporting_more_than_its_request_allowed_is_charged_its_reservation_and_stops_the_run"],
    ),
    Sabotage(
        "a bill past the reservation (input past the byte bound) is believed",
        "src/agentloop/budget.py",
        "    if cost > bound.micros:  # input past the byte bound",
        "    if False:  # SABOTAGED",
        ["tests/test_money_one_path.py::test_figures_beyond_what_the_request_allowed_are_charged_the_whole_reservation",
         "tests/test_money_one_path.py::test_a_webfetch_prompt_call_with_figures_it_cannot_have_been_billed_is_charged_its_reservation",
         "tests/test_loop_transitions.py::test_a_bill_past_its_reservation_is_recorded_as_an_overrun_and_stops_the_run"],
    ),
    Sabotage(
        "a side call's or a tool's model call is settled off the one bill rule (charged 0)",
        "src/agentloop/agent/context/side_calls.py",
        "            b = bill(bound, answer.usage, answer.uses, what=what)\n",
        "            b = Bill(answer.usage, 0)  # SABOTAGED\n",
        ["tests/test_money_one_path.py::test_a_web_search_reporting_more_than_its_request_allowed_is_charged_its_reservation_and_stops_the_run",
         "tests/test_money_one_path.py::test_a_webfetch_prompt_call_with_figures_it_cannot_have_been_billed_is_charged_its_reservation",
         "tests/test_spend_cap_property.py::test_side_calls_and_server_tools_reporting_any_figures_never_settle_past_the_cap"],
    ),
    Sabotage(
        "an interrupt while the model answers charges the call nothing",
        "src/agentloop/loop.py",
        "    if in_call and state.phase is Phase.CALL and (state.reserved_micros or state.reserved_tokens):\n",
        "    if False:  # SABOTAGED\n",
        ["tests/test_money_one_path.py::test_an_interrupt_while_the_model_answers_is_charged_the_calls_reservation_and_replays",
         "tests/test_money_one_path.py::test_an_interrupted_stream_from_a_real_provider_is_charged_not_zero",
         "tests/test_spend_cap_property.py::test_an_interrupted_stream_is_charged_what_the_provider_billed_and_never_past_the_cap"],
    ),
    Sabotage(
        "a token count lowers the reservation below the byte bound",
        "src/agentloop/run.py",
        "        can_count=False,  # a count is a hint",
        "        can_count=d.can_count,  # SABOTAGED",
        ["tests/test_providers_count.py"],
    ),
    Sabotage(
        "the loop charges a failed call's estimate past its reservation (an OpenAI stream cut mid-reply)",
        "src/agentloop/loop.py",
        "            b = capped_bill(_call_bound(state, _dearest(state.config)), usage)\n",
        "            b = capped_bill(CallBound(10**9, 10**9, _dearest(state.config)), usage)  # SABOTAGED\n",
        ["tests/test_money_one_path.py::test_an_openai_stream_failing_mid_reply_is_charged_at_most_its_reservation"],
    ),
    Sabotage(
        "a failed call's own estimate is charged past its reservation",
        "src/agentloop/budget.py",
        "    if cost > bound.micros or usage.total > bound.tokens:  # the most it can have been billed",
        "    if False:  # SABOTAGED",
        ["tests/test_money_one_path.py::test_a_failed_calls_estimate_is_charged_at_most_its_reservation_and_no_figures_at_least_its_input"],
    ),
    # --- every byte from outside bounded (decision 0017) ---
    Sabotage(
        "pings and empty chunks count as a stream's progress (a stream of keep-alives is never cut)",
        "src/agentloop/providers/base.py",
        "        if events and not asm.idle:\n",
        "        if events:  # SABOTAGED\n",
        ["tests/test_hostile_bounds.py::test_a_stream_of_pings_is_cut_at_the_no_progress_timeout"],
    ),
    Sabotage(
        "an attempt has no deadline (bytes that keep arriving hold a call open)",
        "src/agentloop/providers/base.py",
        "        if now - last_event[1] > self.policy.call_deadline:\n",
        "        if False:  # SABOTAGED\n",
        ["tests/test_hostile_bounds.py::test_any_attempt_stops_at_its_deadline_whatever_arrives"],
    ),
    Sabotage(
        "an error body is read for as long as it drips",
        "src/agentloop/providers/bounded.py",
        "            if clock() - start > deadline:\n                break\n    except ValueError:\n        pass  # an error body",
        "            if False:  # SABOTAGED\n                break\n    except ValueError:\n        pass  # an error body",
        ["tests/test_hostile_bounds.py::test_a_500_whose_body_drips_times_out"],
    ),
    Sabotage(
        "a compressed body is decompressed whole (a gzip bomb expands in memory)",
        "src/agentloop/providers/bounded.py",
        "                out = self._z.decompress(data, PIECE)\n",
        "                out = self._z.decompress(data)  # SABOTAGED\n",
        ["tests/test_hostile_bounds.py::test_the_decoder_never_yields_more_than_a_piece_at_a_time",
         "tests/test_hostile_bounds.py::test_a_gzip_bomb_error_body_is_read_in_bounded_memory"],
    ),
    Sabotage(
        "signature deltas are not held to the stream's limit",
        "src/agentloop/providers/anthropic.py",
        "                self.kept_chars += len(sig)",
        "                pass  # SABOTAGED",
        ["tests/test_hostile_bounds.py::test_a_reply_whose_blocks_pass_the_limit_is_refused_and_the_session_still_verifies"],
    ),
    Sabotage(
        "a web search's body is read whole",
        "src/agentloop/providers/base.py",
        "            got = read_capped(raw, encoded, MAX_REPLY_BYTES + 1, model.policy.call_deadline)\n",
        "            got = b\"\".join(raw)  # SABOTAGED\n",
        ["tests/test_hostile_bounds.py::test_a_web_search_body_is_read_no_further_than_its_bound"],
    ),
    Sabotage(
        "nested lists indent without bound in WebFetch's Markdown",
        "src/agentloop/agent/tools/web_markdown.py",
        "min(MAX_INDENT, max(0, len(self.lists) - 1))",
        "max(0, len(self.lists) - 1)  # SABOTAGED",
        ["tests/test_hostile_bounds.py::test_a_page_of_ten_thousand_nested_lists_converts_in_bounded_output_and_time"],
    ),
    Sabotage(
        "apply_patch searches a hunk quadratically",
        "src/agentloop/agent/tools/apply_patch.py",
        "        found = _find(lines, w, start, norm)\n",
        "        found = next((i for i in range(start, last + 1) if all(norm(lines[i + k]) == w[k] for k in range(len(w)))), None)  # SABOTAGED\n",
        ["tests/test_hostile_bounds.py::test_a_long_hunk_is_found_in_linear_time_on_a_smaller_file"],
    ),
    Sabotage(
        "PDF extraction runs with no CPU limit",
        "src/agentloop/agent/tools/read_media.py",
        "resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))\n",
        "pass  # SABOTAGED\n",
        ["tests/test_hostile_bounds.py::test_a_pdf_whose_pages_cost_more_cpu_than_allowed_is_cut_and_says_so"],
    ),
    # sub-agents in the background: the parent's own calls see the room the children drew; the session's end stops them
    Sabotage(
        "the parent's own call ignores what background children drew from the room",
        "src/agentloop/agent/subagents/parent_budget.py",
        "                if state is None or p._room().fits(*need):",
        "                if True:  # SABOTAGED",
        ["tests/test_subagent_background.py::test_the_parents_own_call_is_refused_when_background_children_drew_the_room"],
    ),
    Sabotage(
        "a background child's bill is dropped instead of waiting for the next run",
        "src/agentloop/agent/subagents/parent_budget.py",
        "                self.pending.append((allowed, result.usage if result is not None else Usage(), ledger.spent, over))",
        "                pass  # SABOTAGED",
        ["tests/test_subagent_background.py::test_a_background_agent_returns_at_once_and_its_report_reaches_the_model_before_its_next_call",
         "tests/test_subagent_background.py::test_the_parents_own_call_is_refused_when_background_children_drew_the_room"],
    ),
    Sabotage(
        "background children's bills at the session's end are left out of its spend",
        "src/agentloop/agent/turn.py",
        "    return bg.parent.take_pending()",
        "    return 0 * bg.parent.take_pending()  # SABOTAGED",
        ["tests/test_subagent_background.py::test_the_sessions_end_stops_a_background_child_before_its_next_call"],
    ),
    Sabotage(
        "Ctrl+C and the session's end do not stop background children",
        "src/agentloop/agent/subagents/background.py",
        "                b.stop.set()",
        "                pass  # SABOTAGED",
        ["tests/test_subagent_background.py::test_the_sessions_end_stops_a_background_child_before_its_next_call",
         "tests/test_subagent_background.py::test_ctrl_c_in_the_parents_turn_stops_a_background_child_before_its_next_call"],
    ),
    Sabotage(
        "an Agent SDK MCP server's reply to another request is taken as this one's",
        "src/agentloop/mcp/sdk_transport.py",
        'if answer.get("id") == rid and ("result" in answer or "error" in answer):',
        'if "result" in answer or "error" in answer:  # SABOTAGED',
        ["tests/test_sdk_mcp_servers.py::test_a_broken_answer_to_a_tool_call_is_a_tool_error_naming_the_problem"],
    ),
    # what is shown and stored says what happened: a retried stream, tool schemas stored once, a loaded session's mode
    Sabotage(
        "a retried stream's broken text is not withdrawn before the new attempt",
        "src/agentloop/providers/base.py",
        "                if self.last is not None and self.request.on_restart is not None:",
        "                if False and self.request.on_restart is not None:  # SABOTAGED",
        ["tests/test_retried_streams.py"],
    ),
    Sabotage(
        "ACP sends the editor a retry's text again from its start",
        "src/agentloop/cli/acp_updates.py",
        "        if self._sent:\n            self._retold = \"\"",
        "        if False:  # SABOTAGED\n            self._retold = \"\"",
        ["tests/test_retried_streams.py::test_acp_a_retry_that_retells_the_text_sends_only_what_extends_it",
         "tests/test_retried_streams.py::test_acp_the_editor_gets_a_retried_answer_once"],
    ),
    Sabotage(
        "replay takes a tool-list reference to any record before it",
        "src/agentloop/replay.py",
        "    if type(s) is not int or not 0 <= s < i or conv.tools is None or conv.tools[0] != s:",
        "    if type(s) is not int or not 0 <= s < i:  # SABOTAGED",
        ["tests/test_session_growth.py::test_replay_refuses_a_tool_reference_to_anything_but_the_latest_list"],
    ),
    Sabotage(
        "a run_start refers to a recorded tool list that differs from its own",
        "src/agentloop/conversation.py",
        "    if held is not None and canonical(list(held[1])) == canonical(tools):",
        "    if held is not None:  # SABOTAGED",
        ["tests/test_session_growth.py::test_a_changed_tool_list_is_recorded_again_and_later_runs_refer_to_the_new_one"],
    ),
    Sabotage(
        "an ACP session loaded again forgets the mode it was left in",
        "src/agentloop/cli/acp_server.py",
        "        if mode is not None and mode in s.modes and mode != s.agent.permission_mode:",
        "        if False:  # SABOTAGED",
        ["tests/test_acp.py::test_a_session_left_in_plan_mode_loads_again_in_plan_mode"],
    ),
    # OpenAI's Responses API (providers/openai_responses.py)
    Sabotage(
        "a Responses reply's reasoning tokens are left out of its bill",
        "src/agentloop/providers/openai_responses.py",
        "return Usage(input_tokens=inp - cached, output_tokens=out, cache_read_tokens=cached)",
        "return Usage(input_tokens=inp - cached, output_tokens=out - thought, cache_read_tokens=cached)  # SABOTAGED",
        ["tests/test_openai_responses.py::test_cached_and_reasoning_tokens_are_priced"],
    ),
    Sabotage(
        "a Responses reply saying it cached more input than it read is believed",
        "src/agentloop/providers/openai_responses.py",
        "    if cached > inp:",
        "    if False:  # SABOTAGED",
        ["tests/test_openai_responses.py::test_a_usage_that_cannot_be_billed_is_charged_at_the_reservation"],
    ),
    Sabotage(
        "a Responses reply saying it reasoned more than it wrote is believed",
        "src/agentloop/providers/openai_responses.py",
        "    if thought > out:",
        "    if False:  # SABOTAGED",
        ["tests/test_openai_responses.py::test_a_usage_that_cannot_be_billed_is_charged_at_the_reservation",
         "tests/test_spend_cap_property_responses.py::test_a_lying_responses_provider_never_lowers_the_spend_below_its_real_bill"],
    ),
    Sabotage(
        "a Responses stream cut after its reasoning began is charged only what it streamed",
        "src/agentloop/providers/openai_responses.py",
        "        out = max(self.out_chars + 16, self.max_tokens if self.thinking else 0)",
        "        out = self.out_chars + 16  # SABOTAGED",
        ["tests/test_openai_responses.py::test_a_stream_cut_after_reasoning_began_counts_its_whole_max_tokens_of_output"],
    ),
    Sabotage(
        "a Responses reasoning item is kept as output_item.added carried it (its encrypted content incomplete)",
        "src/agentloop/providers/openai_responses.py",
        'item = slot["done"] or slot["added"] or {}',
        'item = slot["added"] or slot["done"] or {}  # SABOTAGED',
        ["tests/test_openai_responses.py::test_a_tool_call_round_trip_sends_the_reasoning_items_back_as_received_before_the_outputs"],
    ),
    Sabotage(
        "Responses reasoning items are sent back with their id (nothing stored answers to it)",
        "src/agentloop/providers/openai_responses.py",
        'return {k: v for k, v in item.items() if k != "id"}',
        'return dict(item)  # SABOTAGED',
        ["tests/test_openai_responses.py::test_a_tool_call_round_trip_sends_the_reasoning_items_back_as_received_before_the_outputs",
         "tests/test_openai_responses.py::test_system_messages_become_instructions_and_calls_carry_their_call_id"],
    ),
    Sabotage(
        "a WebSearch on the Responses API is billed its tokens but not its searches",
        "src/agentloop/providers/openai_responses.py",
        "            searches += 1",
        "            searches += 0  # SABOTAGED",
        ["tests/test_openai_responses.py::test_websearch_on_the_responses_api_uses_its_web_search_tool_and_bills_each_search"],
    ),
    Sabotage(
        "a WebSearch on the Responses API ignores the blocked_domains it cannot honour",
        "src/agentloop/providers/openai_responses.py",
        "    if blocked_domains:\n        raise model._err(",
        "    if False:  # SABOTAGED\n        raise model._err(",
        ["tests/test_openai_responses.py::test_websearch_with_blocked_domains_on_the_responses_api_makes_no_search_and_says_why"],
    ),
    Sabotage(
        "a key goes to a base URL a project's settings chose",
        "src/agentloop/providers/opening.py",
        "    if url is None or url_var is None or url_var not in chosen_by_project or key_var is None or key_var in chosen_by_project:",
        "    if True:  # SABOTAGED",
        ["tests/test_provider_gateways.py::test_a_base_url_a_project_chose_never_receives_the_users_key",
         "tests/test_provider_gateways.py::test_a_trusted_projects_base_url_gets_no_key_from_the_users_environment",
         "tests/test_trust.py::test_an_untrusted_folder_runs_nothing_names_what_it_left_out_then_trusted_runs_and_changed_asks_again"],
    ),
    Sabotage(
        "an unknown provider silently opens another provider's adapter",
        "src/agentloop/providers/__init__.py",
        "    record = PROVIDERS.get(name)\n    if record is None:",
        "    record = PROVIDERS.get(name) or next(iter(PROVIDERS.values()))  # SABOTAGED\n    if record is None:",
        ["tests/test_provider_record.py::test_an_unknown_provider_is_an_error_naming_the_known_ones"],
    ),
    Sabotage(
        "a gateway's token is dropped when no key is set",
        "src/agentloop/providers/anthropic.py",
        "        if self.target.auth_token:  # a gateway's token",
        "        if False:  # SABOTAGED a gateway's token",
        ["tests/test_provider_gateways.py::test_a_gateway_token_alone_is_sent_as_a_bearer_token"],
    ),
    # -- one record per built-in tool, one setup for parent and child (tools/record.py, tools/catalog.py) --
    Sabotage(
        "the permission rules check only the first path argument of a tool with two",
        "src/agentloop/agent/permissions/rules.py",
        "    raws = [v for k in keys if isinstance(v := tool_input.get(k), str) and v]",
        "    raws = [v for k in keys if isinstance(v := tool_input.get(k), str) and v][:1]  # SABOTAGED",
        ["tests/test_tool_records.py::test_each_path_of_a_two_path_tool_is_held_to_the_deny_rules",
         "tests/test_tool_records.py::test_a_protected_second_path_asks_in_every_mode"],
    ),
    Sabotage(
        "an allow rule covering one path of a two-path tool allows the call",
        "src/agentloop/agent/permissions/rules.py",
        "                return all(_path_match(b, paths[-1:], is_dir, probe=False) for paths, is_dir in targets)",
        "                return any(_path_match(b, paths[-1:], is_dir, probe=False) for paths, is_dir in targets)  # SABOTAGED",
        ["tests/test_tool_records.py::test_an_allow_rule_allows_a_two_path_tool_only_when_it_covers_both_paths"],
    ),
    Sabotage(
        "hooks see only the first path argument made absolute",
        "src/agentloop/agent/hooks/payloads.py",
        "    keys = path_arguments(tool_name)  # a built-in tool's every path argument (its record's)",
        "    keys = (path_arguments(tool_name) or ())[:1] or None  # SABOTAGED",
        ["tests/test_tool_records.py::test_hooks_see_every_path_of_a_tool_made_absolute"],
    ),
    Sabotage(
        "apply_patch is not an edit tool (acceptEdits asks for it where it allows Edit)",
        "src/agentloop/agent/tools/apply_patch.py",
        'APPLY_PATCH_SCHEMA, rule="edit", acp="edit", run=_run,',
        'APPLY_PATCH_SCHEMA, rule="tool", acp="edit", run=_run,  # SABOTAGED',
        ["tests/test_tool_records.py::test_apply_patch_is_an_edit_that_accept_edits_allows"],
    ),
    Sabotage(
        "a child's setup loses the recording of its writes (rewind cannot undo them)",
        "src/agentloop/agent/toolbox.py",
        "            on_write=self.on_write if here else None, session=None,",
        "            on_write=None, session=None,  # SABOTAGED",
        ["tests/test_child_tool_guards.py::test_a_childs_setup_keeps_every_guard_of_the_parents_but_what_its_folder_changes",
         "tests/test_subagent_guards.py::test_what_a_child_changes_is_recorded_so_rewind_can_undo_it"],
    ),
    Sabotage(
        "a no at the REPL's permission question lets the model carry on with the turn",
        "src/agentloop/agent/pipeline.py",
        "        self.stopping = False\n        return \"interrupted\"",
        "        self.stopping = False\n        return None  # SABOTAGED",
        ["tests/test_repl_claude_code_keys.py::test_no_at_a_permission_question_stops_the_turn_and_asks_what_to_do_instead"],
    ),
    # seams: the ! line through the pipeline, one place for money
    Sabotage(
        "the REPL's ! line is shown and sent unredacted",
        "src/agentloop/agent/pipeline.py",
        "            return self.redact(self.registry.invoke(call))",
        "            return self.registry.invoke(call)  # SABOTAGED",
        ["tests/test_one_tool_path.py::test_a_command_the_user_typed_is_redacted_by_the_pipeline_and_no_tool_hook_sees_it"],
    ),
    Sabotage(
        "the REPL's ! line runs the tool beside the pipeline",
        "src/agentloop/cli/repl.py",
        "self.agent.calls.run_typed(ToolCall(",
        "self.agent.registry.invoke(ToolCall(",
        ["tests/test_one_tool_path.py::test_no_module_of_the_agent_or_the_cli_runs_a_tool_but_the_pipeline"],
    ),
    Sabotage(
        "a manual /compact is made past what the session's ledger leaves",
        "src/agentloop/agent/context/side_calls.py",
        "        if self.ledger.reserve(micros, tokens):",
        "        if True:  # SABOTAGED",
        ["tests/test_side_costs.py::test_a_manual_compact_the_session_has_no_room_for_is_refused_before_the_call"],
    ),
    Sabotage(
        "a manual /compact's bill is left out of the session's spend",
        "src/agentloop/agent/agent.py",
        "instructions, room), room.spent",
        "instructions, room), self.stats.spent_micros  # SABOTAGED",
        ["tests/test_side_costs.py::test_a_manual_compact_is_charged_to_the_session_by_its_ledger"],
    ),
    Sabotage(
        "WebFetch's prompt call is made without a hold on what the parent's loop has left",
        "src/agentloop/agent/tools/web_fetch.py",
        "account=HeldAccount(pm.budget)",
        'account=type("Free", (), {"charged_as": None, "ask": lambda *a: None, "settle": lambda *a, **k: None})()',
        ["tests/test_web_fetch.py::test_with_no_room_under_the_cap_the_prompt_is_not_applied_and_the_result_says_so"],
    ),
    Sabotage(
        "the agent's context module decides a manual /compact's room itself again",
        "src/agentloop/agent/hooks_and_context.py",
        None,
        "\n\ndef _room_for(ledger: Ledger, micros: int) -> bool:  # SABOTAGED\n    return ledger.fits(micros)\n",
        ["tests/test_side_costs.py::test_the_agents_side_calls_are_held_and_billed_in_one_module"],
    ),
    Sabotage(
        "the one scheduler runs a batch with a writing tool side by side",
        "src/agentloop/run.py",
        "        if alongside(c):\n",
        "        if True:  # SABOTAGED\n",
        ["tests/test_parallel_tools.py::test_a_turn_with_a_writing_tool_runs_its_calls_one_at_a_time_in_order",
         "tests/test_one_tool_path.py::test_the_agents_turn_runs_read_only_calls_side_by_side_and_any_batch_with_a_writer_one_at_a_time"],
    ),
    Sabotage(
        "every tool is taken as read-only when calls are scheduled",
        "src/agentloop/run.py",
        "    return t is not None and (t.read_only or t.concurrent)",
        "    return t is not None  # SABOTAGED",
        ["tests/test_one_tool_path.py::test_the_agents_turn_runs_read_only_calls_side_by_side_and_any_batch_with_a_writer_one_at_a_time",
         "tests/test_parallel_tools.py::test_a_turn_with_a_writing_tool_runs_its_calls_one_at_a_time_in_order"],
    ),
    Sabotage(
        "rewind takes its never-asked model from the test kit again",
        "src/agentloop/cli/cmd_rewind.py",
        "    return _NoModel()",
        "    from agentloop.testing import FunctionModel  # SABOTAGED\n\n    return FunctionModel(_NoModel().complete, name=\"none\")",
        ["tests/test_layers.py::test_no_shipped_module_imports_the_test_kit"],
    ),
    Sabotage(
        "run and arun take a misspelt keyword silently",
        "src/agentloop/run.py",
        "    if unknown:\n        raise TypeError",
        "    if False:  # SABOTAGED\n        raise TypeError",
        ["tests/test_run_options.py::test_a_keyword_neither_driver_takes_is_a_type_error_naming_it"],
    ),
    Sabotage(
        "the settings flags are taken by position",
        "src/agentloop/agent/agent_settings.py",
        "@dataclass(frozen=True, kw_only=True)\nclass SettingsFlags:",
        "@dataclass(frozen=True)  # SABOTAGED\nclass SettingsFlags:",
        ["tests/test_claude_settings.py::test_the_command_lines_settings_flags_are_given_by_name_only"],
    ),
    Sabotage(
        "the toolbox writes into the agent through its view again",
        "src/agentloop/agent/toolbox.py",
        "            src.mcp_servers.spill_to(spill)",
        "            src.mcp_servers.manager.output.spill_dir = spill  # SABOTAGED",
        ["tests/test_agent_wiring.py::test_no_part_writes_into_the_agent_through_the_value_it_is_given"],
    ),
    Sabotage(
        "a sub-agent's batch runs beside the one scheduler",
        "src/agentloop/agent/builder.py",
        "            return schedule(batch, one, None, alongside=one.alongside)",
        "            return [one(c) for c in batch]  # SABOTAGED",
        ["tests/test_one_tool_path.py::test_a_sub_agents_read_only_calls_run_side_by_side_by_the_same_scheduler"],
    ),
    # --- the write watch reads what inotify names, with a backstop walk (decision 0014) ---
    Sabotage(
        "the write watch does not re-read the folders inotify names",
        "src/agentloop/agent/sandbox/watch.py",
        "                self.walk.update(changed.folders)  # kept current even while nothing runs",
        "                pass  # SABOTAGED",
        ["tests/test_write_wall.py::test_a_repository_planted_in_a_large_tree_is_moved_aside_on_its_events_alone"],
    ),
    Sabotage(
        "the write watch's backstop never runs while events keep coming",
        "src/agentloop/agent/sandbox/watch.py",
        "                due = covered and start >= slice_at  # the backstop",
        "                due = False  # SABOTAGED",
        ["tests/test_write_wall.py::test_a_change_the_kernel_did_not_report_is_found_by_the_backstop_walk"],
    ),
    Sabotage(
        "the write watch's backstop looks at no folder",
        "src/agentloop/agent/sandbox/wall.py",
        "            while self._round and count > 0:",
        "            while False:  # SABOTAGED",
        ["tests/test_write_watch_wait.py::test_the_backstop_finds_a_change_no_event_reported_a_slice_at_a_time",
         "tests/test_write_wall.py::test_a_change_the_kernel_did_not_report_is_found_by_the_backstop_walk"],
    ),
    Sabotage(
        "a look after a change walks the whole tree",
        "src/agentloop/agent/sandbox/wall.py",
        "            for d in sorted(set(folders), key=len):",
        "            self._walk()  # SABOTAGED\n            for d in ():",
        ["tests/test_write_watch_wait.py::test_a_look_after_a_change_reads_only_the_folders_that_changed"],
    ),
    Sabotage(
        "a name that makes a git directory waits like any other",
        "src/agentloop/agent/sandbox/notify.py",
        '                got.urgent = got.urgent or name in GIT_NAMES or os.path.basename(folder) == "hooks"',
        "                pass  # SABOTAGED",
        ["tests/test_write_watch_wait.py::test_a_name_that_makes_a_git_directory_is_reported_as_urgent"],
    ),
    # --- batch workers get the provider keys as a value (decision 0013) ---
    Sabotage(
        "batch workers inherit the provider keys in their environment",
        "src/agentloop/batch/runner.py",
        "    taken = {k: os.environ.pop(k) for k in sorted(provider_key_vars()) if k in os.environ}",
        "    taken = {k: os.environ[k] for k in sorted(provider_key_vars()) if k in os.environ}  # SABOTAGED",
        ["tests/test_batch_keys.py::test_a_local_batch_worker_has_no_provider_key_in_its_environment",
         "tests/test_batch_keys.py::test_a_ray_worker_has_no_provider_key_in_its_environment"],
    ),
    Sabotage(
        "a batch worker's provider is not given the key it was handed",
        "src/agentloop/batch/worker.py",
        "    env = {**os.environ, **keys.values} if keys is not None and keys.values else None",
        "    env = None  # SABOTAGED",
        ["tests/test_batch_keys.py::test_a_worker_opens_its_provider_with_the_key_it_was_handed"],
    ),
    Sabotage(
        "without a sandbox the git snapshot says nothing of why it is missing",
        "src/agentloop/agent/system_prompt.py",
        '        return f"Git: not read: {exc}"',
        "        return None  # SABOTAGED",
        ["tests/test_git_jail.py::test_without_a_sandbox_agentloop_runs_no_git"],
    ),
    Sabotage(
        "a reasoning model behind a gateway is sent max_tokens, which it refuses",
        "src/agentloop/providers/opening.py",
        '    if family is not None and family.token_field and "max_tokens_field" in record.options:',
        "    if False:  # SABOTAGED",
        ["tests/test_model_requests.py::test_azure_and_a_routers_spelling_get_the_reasoning_models_field"],
    ),
    Sabotage(
        "the AWS credentials that pay for Claude on Bedrock reach a child that allows them by name",
        "src/agentloop/config/credentials.py",
        '    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",\n',
        "",
        ["tests/test_providers_cloud.py::test_aws_credentials_never_reach_a_child_even_when_allowed_by_name"],
    ),
    Sabotage(
        "a Bedrock request goes unsigned (no SigV4) with credentials configured",
        "src/agentloop/providers/bedrock.py",
        '        if self.mode == "none":\n            return headers',
        '        if self.mode in ("none", "sigv4"):  # SABOTAGED\n            return headers',
        ["tests/test_providers_cloud.py::test_a_bedrock_call_is_signed_with_sigv4_that_verifies_and_sends_bedrocks_body"],
    ),
    Sabotage(
        "Bedrock's and Vertex's ids of a Claude model are priced at the table's highest, not Anthropic's list price",
        "src/agentloop/prices.py",
        '|-v\\d+|@[\\w.\\-]+)$")',
        ')$")  # SABOTAGED',
        ["tests/test_providers_cloud.py::test_platform_model_ids_cost_what_anthropic_lists"],
    ),
    Sabotage(
        "an AWS secret key or session token echoed in a Bedrock error reaches the message",
        "src/agentloop/providers/bedrock.py",
        "        return [*super().secrets(), *self.auth.secrets()]",
        "        return super().secrets()  # SABOTAGED",
        ["tests/test_providers_cloud.py::test_an_error_body_echoing_the_aws_secret_or_session_token_is_scrubbed"],
    ),
    Sabotage(
        "a Google access token echoed in a Vertex error reaches the message",
        "src/agentloop/providers/vertex.py",
        "        return [*super().secrets(), *(t for t in (token, *self.auth.retired) if isinstance(t, str) and t)]",
        "        return super().secrets()  # SABOTAGED",
        ["tests/test_providers_cloud.py::test_a_vertex_error_echoing_the_access_token_is_scrubbed"],
    ),
    Sabotage(
        "the user's AWS credentials go to a Bedrock base URL a project's settings chose",
        "src/agentloop/providers/bedrock.py",
        '    if base_url is None and var in chosen_by_project and own_creds and not host.endswith(".amazonaws.com"):',
        "    if False:  # SABOTAGED",
        ["tests/test_providers_cloud.py::test_a_base_url_a_project_chose_never_receives_the_users_aws_credentials_or_google_token"],
    ),
    Sabotage(
        "the user's Google access token goes to a Vertex base URL a project's settings chose",
        "src/agentloop/providers/vertex.py",
        '    if base_url is None and var in chosen_by_project and auth.credentials is not None and not host.endswith(".googleapis.com"):',
        "    if False:  # SABOTAGED",
        ["tests/test_providers_cloud.py::test_a_base_url_a_project_chose_never_receives_the_users_aws_credentials_or_google_token"],
    ),
    Sabotage(
        "an untrusted folder's restricted settings keep the hooks parsed before restrict",
        "src/agentloop/agent/settings_sanitizer.py",
        '{"hooks": hooks.restricted()}',
        '{"hooks": hooks}  # SABOTAGED',
        ["tests/test_settings_parsed_once.py::test_an_untrusted_projects_hooks_never_run_trusted_they_run_and_a_changed_hook_file_asks_again",
         "tests/test_settings_parsed_once.py::test_a_restricted_source_carries_none_of_the_hooks_parsed_before"],
    ),
    Sabotage(
        "an untrusted folder's restricted settings keep the allow and ask rules parsed before restrict",
        "src/agentloop/agent/permissions/rules.py",
        '        return PermissionSection(tuple(r for r in self.rules if r[0] == "deny"))',
        "        return self  # SABOTAGED",
        ["tests/test_settings_parsed_once.py::test_an_untrusted_projects_policy_keeps_only_its_deny_rules"],
    ),
    Sabotage(
        "a settings source's parsed sections are taken after its data was replaced",
        "src/agentloop/config/settings.py",
        "value = p.values.get(key) if p is not None and p.of is self.data else None",
        "value = p.values.get(key) if p is not None else None  # SABOTAGED",
        ["tests/test_settings_parsed_once.py::test_a_restricted_source_carries_none_of_the_hooks_parsed_before"],
    ),
    # --- the REPL's keys as Claude Code has them ---
    Sabotage(
        "Ctrl+C during a turn arms the exit",
        "src/agentloop/cli/repl.py",
        "        # while nothing runs (Claude Code's Ctrl+C: \"cancel current input or generation\")\n        self.armed = False",
        "        self.armed = result.stop_reason == \"interrupted\"  # SABOTAGED",
        ["tests/test_repl_claude_code_keys.py::test_ctrl_c_during_a_turn_stops_it_without_arming_the_exit"],
    ),
    Sabotage(
        "a streamed thinking block is shown only after the answer",
        "src/agentloop/providers/anthropic.py",
        "                self.thought = _thinking_block(ended)  # shown now, before the text that follows it",
        "                pass  # SABOTAGED",
        ["tests/test_repl_claude_code_output.py::test_streamed_thinking_is_shown_collapsed_before_the_text_that_follows_it",
         "tests/test_model_options.py::test_a_streamed_thinking_block_is_observed_when_it_ends_before_the_text_and_the_record_is_unchanged"],
    ),
    # --- credentials made anew after a 401 (apiKeyHelper's TTL and renewal; Vertex's token refresh) ---
    Sabotage(
        "a 401 renews the credentials and retries on every 401, not once a call",
        "src/agentloop/providers/base.py",
        "            self.renewed = True\n",
        "            pass  # SABOTAGED\n",
        ["tests/test_key_helper_refresh.py::test_a_second_401_is_final_and_names_no_key"],
    ),
    Sabotage(
        "a key the apiKeyHelper gave before is no longer scrubbed once it gave a new one",
        "src/agentloop/providers/base.py",
        "retired=(*t.retired, *gone))",
        "retired=t.retired)  # SABOTAGED",
        ["tests/test_key_helper_refresh.py::test_a_401_runs_the_helper_again_once_and_retries_the_call_once_with_the_new_key"],
    ),
    Sabotage(
        "the apiKeyHelper run again is given the key it gave before",
        "src/agentloop/agent/key_helper.py",
        "env=spawn.environment(self.env, held=[k for k in (self._key,) if k]),",
        "env=spawn.environment(self.env),  # SABOTAGED",
        ["tests/test_key_helper_refresh.py::test_the_helper_run_again_is_not_given_the_key_it_gave_before"],
    ),
    Sabotage(
        "a Vertex token refused and refreshed is no longer scrubbed",
        "src/agentloop/providers/vertex.py",
        "*(t for t in (token, *self.auth.retired) if isinstance(t, str) and t)]",
        "*(t for t in (token,) if isinstance(t, str) and t)]  # SABOTAGED",
        ["tests/test_providers_cloud.py::test_a_vertex_401_refreshes_the_google_credentials_once_and_retries_once"],
    ),
    Sabotage(
        "what hooks are handed of the agent can be written back (HookFacts not frozen)",
        "src/agentloop/agent/protocols.py",
        "@dataclass(frozen=True, slots=True)\nclass HookFacts:",
        "@dataclass(slots=True)  # SABOTAGED\nclass HookFacts:",
        ["tests/test_parts_take_values.py::test_a_part_given_a_frozen_value_cannot_write_back"],
    ),
    Sabotage(
        "a turn's run is typed against the whole agent again",
        "src/agentloop/agent/turn.py",
        "def run_once(a: TurnInputs,",
        "def run_once(a: Agent,  # SABOTAGED\n",
        ["tests/test_parts_take_values.py::test_no_part_is_typed_against_a_view_of_the_whole_agent"],
    ),
    # --- one scheduler for a turn's calls, and a child's hooks from the parent's factory ---
    Sabotage(
        "a call whose reservation does not hold starts anyway",
        "src/agentloop/run.py",
        "        refused = admit(calls[i])\n",
        "        refused = None  # SABOTAGED\n",
        ["tests/test_one_scheduler.py::test_a_call_whose_reservation_does_not_hold_never_starts",
         "tests/test_one_scheduler.py::test_the_agents_turn_holds_its_calls_to_the_agents_admit"],
    ),
    Sabotage(
        "the agent's turns are not held to the run's room",
        "src/agentloop/agent/hooks_and_context.py",
        "        limit, admit = facts.settings.max_parallel_agents, self.side_budget.admit\n",
        "        limit, admit = facts.settings.max_parallel_agents, None  # SABOTAGED\n",
        ["tests/test_one_scheduler.py::test_the_agents_turn_holds_its_calls_to_the_agents_admit"],
    ),
    Sabotage(
        "a call that spends starts when the run has nothing left",
        "src/agentloop/agent/subagents/parent_budget.py",
        "        if money != 0 and tokens != 0:\n",
        "        if True:  # SABOTAGED\n",
        ["tests/test_one_scheduler.py::test_the_agents_calls_that_spend_start_only_while_the_run_has_room"],
    ),
    Sabotage(
        "replay schedules a turn's calls on its own (one at a time)",
        "src/agentloop/replay.py",
        "alongside=lambda c: live and registry is not None and may_overlap(registry, c))",
        "alongside=lambda c: False)  # SABOTAGED",
        ["tests/test_one_scheduler.py::test_every_entry_point_runs_the_same_mix_in_the_same_waves"],
    ),
    Sabotage(
        "arun schedules a turn's calls on its own (every call side by side)",
        "src/agentloop/run.py",
        "        for wave in (waves(calls, alongside) if len(calls) > 1 else [(0,)] if calls else []):\n            go = _admitted(calls, wave, admit, results, emit)\n            if len(go) > 1:\n                together",
        "        for wave in ([tuple(range(len(calls)))] if calls else []):  # SABOTAGED\n            go = _admitted(calls, wave, admit, results, emit)\n            if len(go) > 1:\n                together",
        ["tests/test_one_scheduler.py::test_every_entry_point_runs_the_same_mix_in_the_same_waves"],
    ),
    Sabotage(
        "a child's tool calls fire the parent's hooks without naming the child",
        "src/agentloop/agent/builder.py",
        "                one = dataclasses.replace(one, hooks=one.hooks.for_child(agent_id, agent_type))\n",
        "                pass  # SABOTAGED\n",
        ["tests/test_subagent_guards.py::test_a_childs_tool_calls_fire_the_parents_tool_hooks_naming_the_child"],
    ),
    Sabotage(
        "a wave's sub-agents write their records out of call order",
        "src/agentloop/agent/subagents/runner.py",
        "        place.wave.wait_before(place.call)\n",
        "        pass  # SABOTAGED\n",
        ["tests/test_subagent.py::test_ten_children_at_once_all_finish_when_the_room_pays_for_their_bills_not_their_reservations"],
    ),
    Sabotage(
        "the creation supervisor judges a mkdir, then lets the caller's own call go on (CONTINUE)",
        "src/agentloop/agent/sandbox/supervisor.py",
        "            got = _serve(target, self.names.get(nr, \"\"), args)\n",
        "            if self.names.get(nr, \"\") == \"mkdir\":  # SABOTAGED: judged, then the kernel reads the path again\n"
        "                _allowed(target, AT_FDCWD, target.string(args[0]))\n"
        "                import fcntl\n"
        "                fcntl.ioctl(self.listener, _NOTIF_SEND, bytearray(_RESP.pack(nid, 0, 0, 1)), True)\n"
        "                return\n"
        "            got = _serve(target, self.names.get(nr, \"\"), args)\n",
        ["tests/test_create_supervisor.py::test_a_second_thread_changing_the_path_after_the_check_makes_nothing"],
    ),
    Sabotage(
        "the creation supervisor lets HEAD and .git be made in the workspace",
        "src/agentloop/agent/sandbox/supervisor.py",
        "                elif git_name:\n",
        "                elif git_name and False:  # SABOTAGED\n",
        ["tests/test_create_supervisor.py::test_no_command_can_make_a_head_or_a_git_entry_in_the_workspace"],
    ),
    Sabotage(
        "the creation supervisor lets a folder holding HEAD gain objects and refs",
        "src/agentloop/agent/sandbox/supervisor.py",
        "                elif head:\n",
        "                elif head and False:  # SABOTAGED\n",
        ["tests/test_create_supervisor.py::test_a_folder_holding_head_gains_nothing_and_a_git_directory_gains_no_pointer"],
    ),
    Sabotage(
        "the creation supervisor lets a git directory gain commondir, config.worktree, hooks",
        "src/agentloop/agent/sandbox/supervisor.py",
        "PLANNED_FORBIDDEN = frozenset({",
        "PLANNED_FORBIDDEN = frozenset() and frozenset({\"SABOTAGED\", ",
        ["tests/test_create_supervisor.py::test_a_folder_holding_head_gains_nothing_and_a_git_directory_gains_no_pointer"],
    ),
    Sabotage(
        "the creation filter is never installed (the supervisor thread waits, nothing is trapped)",
        "src/agentloop/agent/sandbox/supervisor.py",
        "        thread.start()  # before the filter: the thread itself is never trapped\n",
        "        thread.start()  # before the filter: the thread itself is never trapped\n        return None  # SABOTAGED\n",
        ["tests/test_create_supervisor.py::test_no_command_can_make_a_head_or_a_git_entry_in_the_workspace",
         "tests/test_create_supervisor.py::test_a_background_command_gets_the_same_refusals"],
    ),
    Sabotage(
        "the creation filter lets the x32 ABI through",
        "src/agentloop/agent/sandbox/supervisor.py",
        "    op(jset, X32_BIT, \"enosys\")  # the x32 ABI\n",
        "    pass  # SABOTAGED\n",
        ["tests/test_create_supervisor.py::test_the_filter_traps_creations_and_refuses_other_abis_on_each_machine"],
    ),
    Sabotage(
        "the creation supervisor opens its own /proc descriptors for a command",
        "src/agentloop/agent/sandbox/supervisor.py",
        "        if os.fstat(pfd).st_dev == self.sup.proc_dev:\n            where = _path_of(pfd)\n",
        "        if False:  # SABOTAGED\n            where = _path_of(pfd)\n",
        ["tests/test_create_supervisor.py::test_the_supervisor_hands_out_none_of_its_own_descriptors"],
    ),
    Sabotage(
        "the session runner never tells the creation supervisor the plan (nothing is guarded)",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        sup.set_policy(req.get(\"policy\"))",
        "        pass  # SABOTAGED",
        ["tests/test_create_supervisor.py::test_no_command_can_make_a_head_or_a_git_entry_in_the_workspace"],
    ),
    Sabotage(
        "the creation supervisor lets a workspace link lead into the sandbox's own /tmp",
        "src/agentloop/agent/sandbox/supervisor.py",
        "        why = t.sup.policy.link_refusal(pfd, text)\n",
        "        why = None  # SABOTAGED\n",
        ["tests/test_create_supervisor.py::test_a_link_from_the_workspace_into_the_sandboxs_own_tmp_is_refused"],
    ),
    Sabotage(
        "a command in a bubblewrap of its own is not started by the supervising launcher",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        if policy is not None and self.supervisor_off() is None:",
        "        if False:  # SABOTAGED",
        ["tests/test_create_supervisor.py::test_a_command_in_a_bubblewrap_of_its_own_is_supervised_too"],
    ),
    Sabotage(
        "where creations cannot be supervised, the results never say so",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        if off is not None and SUPERVISE and not self._supervisor_said:",
        "        if False:  # SABOTAGED",
        ["tests/test_create_supervisor.py::test_where_creations_cannot_be_supervised_the_sandbox_listing_and_the_first_result_say_so"],
    ),
    # --- the house's last seams (housefinish) ---
    Sabotage(
        "CLAUDE_ENV_FILE exports reach children without the secret guard's rule",
        "src/agentloop/agent/secret_guard.py",
        "self.child_env.update(kept)",
        "self.child_env.update(exports)  # SABOTAGED",
        ["tests/test_spawn.py"],
    ),
    Sabotage(
        "two spending calls side by side hold past the room together",
        "src/agentloop/agent/subagents/parent_budget.py",
        "if not room.fits(micros, tokens):",
        "if False:  # SABOTAGED",
        ["tests/test_one_scheduler.py"],
    ),
    Sabotage(
        "a child's bill is added up outside a budget Ledger",
        "src/agentloop/agent/subagents/parent_budget.py",
        "self.billed.settle(0, actual_micros, 0, actual_tokens)",
        "self.billed.spent += actual_micros  # SABOTAGED\n        self.billed.used_tokens += actual_tokens",
        ["tests/test_money_decided_in_one_place.py"],
    ),
    Sabotage(
        "a Claude Code tool name is written again outside its declaration",
        "src/agentloop/cli/preview.py",
        "if name == MULTI_EDIT and isinstance",
        "if name == \"MultiEdit\" and isinstance  # SABOTAGED",
        ["tests/test_tool_records.py::test_no_builtin_tool_name_is_written_outside_its_own_module"],
    ),
    Sabotage(
        "a provider is chosen by a name written outside providers/",
        "src/agentloop/agent/model_choice.py",
        "named = not is_spec(spec) or record_for(spec).names_models",
        "named = not spec.startswith(\"scripted:\")  # SABOTAGED",
        ["tests/test_provider_record.py::test_no_module_outside_providers_names_a_vendor"],
    ),
    Sabotage(
        "a child in a worktree keeps rules rooted at the parent's tree (every record's tool tried)",
        "src/agentloop/agent/builder.py",
        "        return self.agent.policy.rooted_at(*roots) if roots is not None else self.agent.policy",
        "        return self.agent.policy  # SABOTAGED",
        ["tests/test_child_tool_guards.py::test_a_child_refuses_every_call_its_parent_refuses"],
    ),
    Sabotage(
        "a tool without a record has its path arguments listed again (and one left out) in the rules",
        "src/agentloop/agent/permissions/rules.py",
        "_CONVENTIONAL_PATHS = claude_names.PATH_ARGUMENTS",
        "_CONVENTIONAL_PATHS = (\"file_path\", \"path\")  # SABOTAGED",
        ["tests/test_tool_records.py::test_which_arguments_are_paths_is_declared_by_the_records_and_once_for_tools_without_one"],
    ),
    Sabotage(
        "a provider's key variables from its record are not kept from children",
        "src/agentloop/config/credentials.py",
        "    _REGISTERED.update(n for n in names if n)",
        "    return  # SABOTAGED",
        ["tests/test_provider_record.py::test_a_new_providers_key_is_kept_from_children_by_its_record_alone"],
    ),
    # --- the red team's second round on git, keys and trusted commands (probegit) ---
    Sabotage(
        "agentloop's memory is left readable to the user's other processes (it stays dumpable)",
        "src/agentloop/config/credentials.py",
        "        if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE = 4",
        "        if libc.prctl(4, 1, 0, 0, 0) != 0:  # SABOTAGED",
        ["tests/test_keys_in_memory.py"],
    ),
    Sabotage(
        "a project's apiKeyHelper runs on the host, where the model can rewrite the script it names",
        "src/agentloop/agent/key_helper.py",
        "        if self.in_project:  # rule 5",
        "        if False:  # SABOTAGED",
        ["tests/test_project_settings_run_nothing_on_the_host.py::test_a_projects_api_key_helper_runs_in_a_jail_and_its_key_is_still_sent"],
    ),
    Sabotage(
        "a user's hook on the host starts with a project's env (BASH_ENV naming a workspace file)",
        "src/agentloop/agent/hooks/runner.py",
        "            env = self.env_for(event, h, host=True)",
        "            pass  # SABOTAGED",
        ["tests/test_project_settings_run_nothing_on_the_host.py::test_a_projects_env_does_not_reach_the_users_hook_on_the_host"],
    ),
    Sabotage(
        "a project's status line runs on the host",
        "src/agentloop/cli/repl.py",
        "confine=a.sandbox.confine if project else None,",
        "confine=None,  # SABOTAGED",
        ["tests/test_project_settings_run_nothing_on_the_host.py::test_a_projects_status_line_runs_in_the_sandbox_and_a_users_on_the_host"],
    ),
    Sabotage(
        "a user's MCP server on the host starts with a project's env",
        "src/agentloop/mcp/agent.py",
        "        manager.start_on_the_host(start.host_env, start.host_inherit)",
        "        pass  # SABOTAGED",
        ["tests/test_project_settings_run_nothing_on_the_host.py::test_a_projects_env_does_not_reach_the_users_mcp_server"],
    ),
    Sabotage(
        "a worktree's filter drivers are the ones remembered for its main work tree (another branch's includes)",
        "src/agentloop/agent/spawn.py",
        '    out: list[object] = [*paths]\n    for d in paths[1:3]:\n        for name in ("config", "config.worktree", "HEAD"):',
        '    out: list[object] = []  # SABOTAGED\n    for d in paths[1:3][-1:]:\n        for name in ("config", "config.worktree"):',
        ["tests/test_git_jail.py::test_a_worktree_on_its_own_branch_has_the_filters_its_branch_brings_switched_off"],
    ),
    Sabotage(
        "a key held in memory under an odd --api-key-env name reaches a child made from this process's environment",
        "src/agentloop/config/credentials.py",
        "    names = provider_key_vars() | {d for d in drop if d} | set(_HELD)\n    values = {v for v in held if v} | {v for v in _HELD.values() if len(v) >= 8}  # no key is shorter",
        "    names = provider_key_vars() | {d for d in drop if d}  # SABOTAGED\n    values = {v for v in held if v}",
        ["tests/test_git_jail.py::test_a_child_made_from_agentloops_environment_gets_no_key_whatever_the_variables_name"],
    ),
    Sabotage(
        "a sub-agent's worktree is checked out by worktree add in the main work tree (its branch's filters not listed)",
        "src/agentloop/agent/subagents/worktree.py",
        '        _git(["worktree", "add", "-q", "--no-checkout", "-b", branch, path, base], repo, [os.path.dirname(path)])\n        _git(["reset", "-q", "--hard"], path)',
        '        _git(["worktree", "add", "-q", "-b", branch, path, base], repo, [os.path.dirname(path)])  # SABOTAGED',
        ["tests/test_git_jail.py::test_a_sub_agents_worktree_is_checked_out_with_its_own_branchs_filters_switched_off"],
    ),
    Sabotage(
        "agentloop's git starts with every variable it is given (GIT_CONFIG_PARAMETERS, LD_PRELOAD, BASH_ENV)",
        "src/agentloop/agent/spawn.py",
        '    out = {k: v for k, v in _decided(env).items() if k in GIT_ENV_KEPT or k.startswith("LC_")}',
        '    out = dict(_decided(env))  # SABOTAGED',
        ["tests/test_git_jail.py::test_agentloops_git_starts_with_an_allow_list_of_variables"],
    ),
    Sabotage(
        "the sign-in browser's Python imports from the home it starts in (a webbrowser.py the model wrote)",
        "src/agentloop/agent/spawn.py",
        '[sys.executable, "-I", "-m", "webbrowser", "-t", url]',
        '[sys.executable, "-m", "webbrowser", "-t", url]',
        ["tests/test_project_settings_run_nothing_on_the_host.py::test_the_sign_in_browser_imports_nothing_from_the_home_it_starts_in"],
    ),
    Sabotage(
        "the sign-in browser is started with a project's env (its BROWSER)",
        "src/agentloop/cli/repl.py",
        "            spawn.open_url(url, env=self.agent.secrets.host_env)",
        "            spawn.open_url(url, env=self.agent.child_env)  # SABOTAGED",
        ["tests/test_project_settings_run_nothing_on_the_host.py::test_the_sign_in_browser_is_not_chosen_by_a_projects_env"],
    ),
    Sabotage(
        "the user's CLAUDE_ENV_FILE is sourced on the host with a project's env (its BASH_ENV)",
        "src/agentloop/agent/hooks_and_context.py",
        "        base = self.runner.environment if wrap is not None else self.runner.host_environment",
        "        base = self.runner.environment  # SABOTAGED",
        ["tests/test_project_settings_run_nothing_on_the_host.py::test_the_users_env_file_is_sourced_on_the_host_without_a_projects_env"],
    ),
    Sabotage(
        "the git jail shows a borrowed object store (alternates: any folder) writable in a call that writes",
        "src/agentloop/agent/sandbox/gitjail.py",
        '        out += ["--bind" if write and p not in read_only else "--ro-bind", p, p]',
        '        out += ["--bind" if write else "--ro-bind", p, p]  # SABOTAGED',
        ["tests/test_git_jail.py::test_an_object_store_a_repository_borrows_stays_read_only_in_a_call_that_writes"],
    ),
    # --- a --settings file inside the workspace runs as a project's ---
    Sabotage(
        "a --settings file inside the workspace counts as the user's own (its key helper runs on the host)",
        "src/agentloop/agent/agent_settings.py",
        "            scope = \"local\"\n",
        "            scope = \"user\"  # SABOTAGED\n",
        ["tests/test_project_settings_run_nothing_on_the_host.py::test_a_settings_file_named_on_the_command_line_inside_the_workspace_runs_as_a_projects",
         "tests/test_project_settings_run_nothing_on_the_host.py::test_a_settings_file_named_on_the_command_line_inside_the_workspace_widens_nothing"],
    ),
    Sabotage(
        "a read-only line's relative paths are judged from the workspace only, not from where its cd commands lead",
        "src/agentloop/agent/permissions/rules.py",
        "            for c, pattern in targets:\n                c = self.user_home",
        "            for c, pattern in targets[:0]:  # SABOTAGED\n                c = self.user_home",
        ["tests/test_read_only_what_the_shell_reaches.py::test_relative_paths_are_judged_from_every_folder_a_cd_of_the_line_leads_to"],
    ),
    Sabotage(
        "the permission policy does not follow the shell an earlier call left in a folder",
        "src/agentloop/agent/tools/builtin.py",
        "        follow_shell(lambda: None if (alive := shell()) is None else alive.shell_cwd)",
        "        pass  # SABOTAGED",
        ["tests/test_read_only_what_the_shell_reaches.py::test_a_cd_in_one_call_does_not_let_the_next_read_through_a_link_unasked"],
    ),
    Sabotage(
        "an input redirection's target is taken as written, not as the shell expands it",
        "src/agentloop/agent/permissions/rules.py",
        "        lit = redirect_lits[k] if k < len(redirect_lits) else False\n",
        "        lit = True  # SABOTAGED\n",
        ["tests/test_read_only_what_the_shell_reaches.py::test_an_input_redirection_is_expanded_as_the_shell_expands_it"],
    ),
    Sabotage(
        "a value stuck to bundled short options is not read where getopt reads it",
        "src/agentloop/agent/permissions/rules.py",
        "            values += _option_values(head, a)",
        "            values += []  # SABOTAGED",
        ["tests/test_read_only_what_the_shell_reaches.py::test_a_value_stuck_to_bundled_short_options_is_read_where_getopt_reads_it"],
    ),
    Sabotage(
        "jq may load modules and data files from its search path in a read-only line",
        "src/agentloop/agent/permissions/rules.py",
        "    if head == \"jq\" and not _jq_reads_only_its_operands(args):",
        "    if False:  # SABOTAGED",
        ["tests/test_read_only_what_the_shell_reaches.py::test_a_program_that_opens_files_the_line_does_not_name_asks"],
    ),
    Sabotage(
        "diff -r follows links deep in a folder in a read-only line",
        "src/agentloop/agent/permissions/rules.py",
        "    if head == \"diff\" and (\"--recursive\" in longs",
        "    if head == \"SABOTAGED\" and (\"--recursive\" in longs",
        ["tests/test_read_only_what_the_shell_reaches.py::test_a_program_that_opens_files_the_line_does_not_name_asks"],
    ),
    Sabotage(
        "the JSON output formats write 8-bit controls and direction overrides raw",
        "src/agentloop/cli/terminal_text.py",
        "    text = json.dumps(value, ensure_ascii=False)\n    return ",
        "    text = json.dumps(value, ensure_ascii=False)\n    return text  # SABOTAGED\n    return ",
        ["tests/test_terminal_shows_true.py::test_json_output_escapes_8_bit_controls_and_direction_overrides_and_keeps_the_value"],
    ),
    Sabotage(
        "a held secret's hex is matched only without separators (xxd -g1, od -tx1, 0x lists pass)",
        "src/agentloop/agent/secret_shapes.py",
        "    return _HEX_SEP.join(_either_case(f\"{b:02x}\") for b in raw)",
        "    return \"\".join(_either_case(f\"{b:02x}\") for b in raw)  # SABOTAGED",
        ["tests/test_secrets_in_dumps_and_escapes.py::test_a_secret_escaped_or_dumped_is_redacted"],
    ),
    Sabotage(
        "a hex dump's line holding a piece of a held secret is not redacted",
        "src/agentloop/agent/secret_shapes.py",
        "    if ws:\n        byte = ",
        "    if False:  # SABOTAGED\n        byte = ",
        ["tests/test_secrets_in_dumps_and_escapes.py::test_a_dump_of_a_token_file_shows_no_line_of_its_hex"],
    ),
    Sabotage(
        "a held secret written with JSON escapes is not redacted",
        "src/agentloop/agent/secret_shapes.py",
        "    alts = [_escape(c), _either_case(encoded), \"\\\\\\\\\" + _either_case(f\"u{ord(c):04x}\")]",
        "    alts = [_escape(c), _either_case(encoded)]  # SABOTAGED",
        ["tests/test_secrets_in_dumps_and_escapes.py::test_a_secret_escaped_or_dumped_is_redacted"],
    ),
    Sabotage(
        "a variable holding a credential inside other text (a header, a connection string) reaches children",
        "src/agentloop/config/credentials.py",
        "            or (len(value) < 65536 and _CREDENTIAL_TEXT.search(value) is not None))",
        "            or False)  # SABOTAGED",
        ["tests/test_secrets_in_dumps_and_escapes.py::test_a_credential_inside_a_value_or_under_a_conventional_name_stays_out_of_children"],
    ),
    Sabotage(
        "a call to WebSearch or an MCP tool may send a held secret off the machine",
        "src/agentloop/agent/pipeline.py",
        "        held = self.held_secret(call) if self.held_secret is not None else None\n",
        "        held = None  # SABOTAGED\n",
        ["tests/test_secrets_in_dumps_and_escapes.py::test_a_call_that_would_send_a_held_secret_off_the_machine_is_refused"],
    ),
    Sabotage(
        "a -p prompt with bytes that are not UTF-8 is kept as lone surrogates",
        "src/agentloop/cli/agent_entry.py",
        "def _as_utf8(text: str) -> str:\n",
        "def _as_utf8(text: str) -> str:\n    return text  # SABOTAGED\n",
        ["tests/test_terminal_shows_true.py::test_a_prompt_with_bytes_that_are_not_utf8_runs_and_is_listed_without_them"],
    ),
    Sabotage(
        "a background command's log is written to disk without redaction",
        "src/agentloop/agent/tools/background.py",
        "        if self.redact is None:\n            return data\n",
        "        if True:  # SABOTAGED\n            return data\n",
        ["tests/test_secrets_in_dumps_and_escapes.py::test_a_background_commands_log_on_disk_holds_no_held_secret_even_printed_in_two_parts"],
    ),
    Sabotage(
        "auto-approved git may use a repository a .git file in the workspace names elsewhere",
        "src/agentloop/agent/permissions/rules.py",
        "            if top is not None and _gitfile_points_away(top, roots):\n                return True  # a .git file naming another repository, the workspace's own included\n            for d in _git_dirs_from(base):\n                if d not in own and not any(d == r or d.startswith(r.rstrip(os.sep) + os.sep) for r in roots):\n                    return True  # a .git file in the workspace naming a repository elsewhere: not this workspace's\n",
        "            if top is not None and _gitfile_points_away(top, roots):\n                pass  # SABOTAGED: a .git file naming another repository, the workspace's own included\n            for d in _git_dirs_from(base):\n                if d not in own and not any(d == r or d.startswith(r.rstrip(os.sep) + os.sep) for r in roots):\n                    pass  # SABOTAGED: a .git file in the workspace naming a repository elsewhere: not this workspace's\n",
        ["tests/test_read_only_what_the_shell_reaches.py::test_git_is_not_auto_approved_in_a_repository_a_workspace_git_file_names_elsewhere"],
    ),
    Sabotage(
        "auto-approved git may read a nested repository that borrows objects from outside",
        "src/agentloop/agent/permissions/rules.py",
        "                if _borrows_objects(d, [*roots, *own]):",
        "                if False:  # SABOTAGED",
        ["tests/test_read_only_what_the_shell_reaches.py::test_git_is_not_auto_approved_in_a_nested_repository_that_borrows_objects_from_elsewhere"],
    ),
    Sabotage(
        "the write wall judges a folder holding HEAD only once it has objects",
        "src/agentloop/agent/sandbox/gitguard.py",
        '    return view.lexists(os.path.join(d, "HEAD")) or _is_gitdir(d, view)',
        '    return _is_gitdir(d, view)  # SABOTAGED',
        ["tests/test_write_wall_shapes.py::test_a_folder_holding_head_gains_no_new_name_and_no_program"],
    ),
    Sabotage(
        "the host's writes may make a new HEAD or .git (a new repository shape) outside a git directory",
        "src/agentloop/agent/sandbox/gitguard.py",
        "            if name in SHAPE_NAMES:\n",
        "            if False:  # SABOTAGED\n",
        ["tests/test_write_wall_shapes.py::test_no_write_makes_a_new_head_or_git_entry_outside_a_git_directory"],
    ),
    Sabotage(
        "the host's writes may add a name to a folder holding HEAD",
        "src/agentloop/agent/sandbox/gitguard.py",
        '            if os.path.lexists(os.path.join(parent, "HEAD")):\n',
        "            if False:  # SABOTAGED\n",
        ["tests/test_write_wall_shapes.py::test_a_folder_holding_head_gains_no_new_name_and_no_program"],
    ),
    Sabotage(
        "the host's writes may make a repository inside a git directory's sub-folder",
        "src/agentloop/agent/sandbox/gitguard.py",
        "        elif holder != parent and name in INNER_NAMES:",
        "        elif False:  # SABOTAGED",
        ["tests/test_write_wall_shapes.py::test_inside_a_git_directory_no_sub_folder_becomes_a_repository"],
    ),
    Sabotage(
        "the file tools reach a home workspace's dot folders (credential stores, start-up files)",
        "src/agentloop/agent/tools/workspace.py",
        "            return not hidden_part(real_path, self.hidden_homes)",
        "            return True  # SABOTAGED",
        ["tests/test_home_workspace_file_tools.py"],
    ),
    Sabotage(
        "Grep and Glob list the dot files at the top of a home workspace (~/.netrc)",
        "src/agentloop/agent/tools/walk.py",
        "                    if ws.hidden_homes and not ws.contains(path):",
        "                    if False:  # SABOTAGED",
        ["tests/test_home_workspace_file_tools.py::test_read_grep_and_glob_do_not_reach_the_credential_stores_of_a_home_workspace"],
    ),
    Sabotage(
        "the sockets of the user's key agents stay reachable where the sandbox shows their folder",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        hidden += [p for p in agent_sockets if not",
        "        hidden += [p for p in () if not",
        ["tests/test_agent_sockets_hidden.py"],
    ),
    Sabotage(
        "a SIGKILLed agentloop's temporary folders are removed only at a later first command",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        _remove_stale_tmpdirs()  # what a SIGKILLed agentloop left, at the next start\n",
        "",
        ["tests/test_leftovers_after_kill.py"],
    ),
    Sabotage(
        "a sub-agent's worktree left by a SIGKILLed agentloop is never removed",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        'OWNED_TMP_PREFIXES = (TMP_PREFIX, "agentloop-worktree-")',
        "OWNED_TMP_PREFIXES = (TMP_PREFIX,)  # SABOTAGED",
        ["tests/test_leftovers_after_kill.py"],
    ),
    Sabotage(
        "the checkpoint store's folders follow the umask",
        "src/agentloop/agent/session/checkpoints.py",
        "            private_dirs(os.path.dirname(path))",
        "            os.makedirs(os.path.dirname(path), 0o777, exist_ok=True)  # SABOTAGED",
        ["tests/test_private_home_under_any_umask.py"],
    ),
    Sabotage(
        "the sandbox's probe cache follows the umask",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "        private_write(os.path.join(cache_dir, PROBE_CACHE), json.dumps(key).encode())",
        "        os.makedirs(cache_dir, exist_ok=True); open(os.path.join(cache_dir, PROBE_CACHE), 'w').write(json.dumps(key))  # SABOTAGED",
        ["tests/test_private_home_under_any_umask.py"],
    ),
    Sabotage(
        "a rewind writes files back without the write wall's check",
        "src/agentloop/agent/session/checkpoints.py",
        "    _refuse_code_for_git(plan, store, roots, force)\n",
        "",
        ["tests/test_rewind_write_wall.py"],
    ),
    Sabotage(
        "folder trust's walk of a plugin does not follow its linked folders",
        "src/agentloop/agent/plugins.py",
        "    for root, dirs, files in os.walk(top, followlinks=True):",
        "    for root, dirs, files in os.walk(top):  # SABOTAGED",
        ["tests/test_plugin_trust_covers_what_hooks_run.py::test_a_script_in_a_linked_folder_of_the_plugin_is_covered"],
    ),
    Sabotage(
        "folder trust leaves out the files outside a plugin that its hooks name",
        "src/agentloop/agent/plugins.py",
        "                out += files + _files_commands_name(files, p.path, cwd)",
        "                out += files  # SABOTAGED",
        ["tests/test_plugin_trust_covers_what_hooks_run.py::test_a_script_outside_the_plugin_that_its_hook_names_is_covered"],
    ),
    Sabotage(
        "registry tokens inside the toolchain folders commands see are shown",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        "            hidden += [os.path.realpath(p) for g in TOOLCHAIN_SECRETS for p in",
        "            hidden += [os.path.realpath(p) for g in () for p in",
        ["tests/test_toolchain_secrets_hidden.py"],
    ),
    Sabotage(
        "a permission rule's new settings file follows the umask",
        "src/agentloop/cli/permissions_edit.py",
        "            mode = 0o600\n",
        "            mode = 0o666  # SABOTAGED\n",
        ["tests/test_private_home_under_any_umask.py::test_a_permission_rule_the_user_adds_is_written_private_under_umask_000"],
    ),
    Sabotage(
        "the write wall lets a program the user's repository already configures be rewritten",
        "src/agentloop/agent/sandbox/gitguard.py",
        "                if then is not None and _runs_from(d, path):",
        "                if False:  # SABOTAGED",
        ["tests/test_write_wall_shapes.py::test_a_program_the_users_repository_already_configures_is_not_rewritten"],
    ),
    Sabotage(
        "the file tools write into the hook folder a repository's core.hooksPath names",
        "src/agentloop/agent/sandbox/gitguard.py",
        "    why = _new_shape(after, roots) or _program_path_refusal(after, roots)",
        "    why = _new_shape(after, roots)  # SABOTAGED",
        ["tests/test_write_wall_shapes.py::test_the_hook_folder_a_repository_names_is_not_written"],
    ),
    # --- a created file can be run at once ---
    Sabotage(
        "the creation supervisor answers before closing its own copy of a file it made (ETXTBSY when run at once)",
        "src/agentloop/agent/sandbox/supervisor.py",
        "bytearray(_ADDFD.pack(nid, 0, fd, 0, os.O_CLOEXEC if cloexec else 0)), True)",
        "bytearray(_ADDFD.pack(nid, 2, fd, 0, os.O_CLOEXEC if cloexec else 0)), True)  # SABOTAGED: SEND",
        ["tests/test_create_supervisor.py::test_a_file_a_command_creates_can_be_run_as_soon_as_it_is_closed"],
    ),
    Sabotage(
        "editor-folder wall: commands rewrite the editor settings at the workspace's top",
        "src/agentloop/agent/sandbox/gitguard.py",
        "        for name in EDITOR_FOLDERS:\n",
        "        for name in ():  # SABOTAGED\n",
        ["tests/test_editor_folders_wall.py::test_existing_editor_settings_are_read_only_to_commands",
         "tests/test_editor_folders_wall.py::test_a_command_cannot_make_editor_settings_at_the_top"],
    ),
    Sabotage(
        "editor-folder wall: the supervisor is not told the editor folders commands may not make",
        "src/agentloop/agent/sandbox/bubblewrap.py",
        '"missing": [*plan.watch, *plan.pinned, *plan.unmade]}',
        '"missing": [*plan.watch, *plan.pinned]}  # SABOTAGED',
        ["tests/test_editor_folders_wall.py::test_a_command_cannot_make_editor_settings_at_the_top"],
    ),
    Sabotage(
        "editor-folder wall: the write watch moves aside an editor folder the user makes on the host",
        "src/agentloop/agent/sandbox/gitguard.py",
        "                p.unmade.append(path)\n",
        "                p.watch.append(path)  # SABOTAGED\n",
        ["tests/test_editor_folders_wall.py::test_the_users_editor_may_make_its_folder_while_a_command_runs"],
    ),
    Sabotage(
        "editor-folder wall: the file tools write Helix's and Zed's settings unasked",
        "src/agentloop/agent/permissions/rules.py",
        '_PROTECTED_DIRS = frozenset({".git", ".agentloop", ".claude", ".vscode", ".idea", ".helix", ".zed"})',
        '_PROTECTED_DIRS = frozenset({".git", ".agentloop", ".claude", ".vscode", ".idea"})  # SABOTAGED',
        ["tests/test_permissions.py::test_bypass_mode_still_asks_before_writing_into_protected_directories"],
    ),
    Sabotage(
        "an answer's arguments run a command outside the sandbox the question did not name",
        "src/agentloop/agent/pipeline.py",
        "            if outside is not None:  # the question said nothing of outside",
        "            if False:  # SABOTAGED",
        ["tests/test_unsandboxed_bash.py::test_an_answer_that_adds_the_argument_is_asked_again_in_words_that_say_outside"],
    ),
    Sabotage(
        "a user's skill or command linked into an untrusted folder chooses the model and tools",
        "src/agentloop/agent/trust.py",
        '    return bool(item.scope == "project") or real.startswith(top + os.sep)',
        '    return bool(item.scope == "project")  # SABOTAGED',
        ["tests/test_untrusted_definitions.py::test_a_users_skill_linked_into_an_untrusted_folder_is_that_folders"],
    ),
    Sabotage(
        "a user's agent file linked into an untrusted folder chooses the model",
        "src/agentloop/agent/subagents/agent_types.py",
        "        if model is not None and (inert or inside is not None",
        "        if model is not None and (inert or False and inside is not None",
        ["tests/test_untrusted_definitions.py::test_a_users_agent_file_linked_into_an_untrusted_folder_does_not_choose_the_model"],
    ),
    # read-only Bash lines judged in the shell's real state (tests/test_read_only_shell_state.py)
    Sabotage(
        "a read-only Bash line runs unasked whatever variable a project's settings env set for Bash",
        "src/agentloop/agent/permissions/rules.py",
        "            if trusted.get(k) == v:\n",
        "            if True:  # SABOTAGED\n",
        ["tests/test_read_only_shell_state.py"],
    ),
    Sabotage(
        "a read-only line's cd is followed through this process's CDPATH, not Bash's",
        "src/agentloop/agent/permissions/rules.py",
        "        env = os.environ if self.shell_env is None else self.shell_env\n",
        "        env = os.environ  # SABOTAGED\n",
        ["tests/test_read_only_shell_state.py::test_cd_is_followed_through_the_cdpath_bash_gets_not_this_process_s"],
    ),
    Sabotage(
        "git's read-only commands run unasked in a workspace that is a folder of a larger repository",
        "src/agentloop/agent/permissions/rules.py",
        "            top = _git_top_from(base)\n",
        "            top = None  # SABOTAGED\n",
        ["tests/test_read_only_shell_state.py::test_git_asks_in_a_workspace_that_is_a_folder_of_a_larger_repository"],
    ),
    Sabotage(
        "printf -vNAME with the variable stuck to -v counts as read-only",
        "src/agentloop/agent/permissions/rules.py",
        '    if head == "printf" and args and args[0].startswith("-") and args[0] != "--":\n',
        '    if head == "printf" and "-v" in args:  # SABOTAGED\n',
        ["tests/test_read_only_shell_state.py::test_printf_with_a_variable_stuck_to_v_asks"],
    ),
    Sabotage(
        "an empty .git folder in the workspace hides the larger repository git reads above it",
        "src/agentloop/agent/permissions/rules.py",
        "        if os.path.isfile(dot) or _is_git_dir(dot):\n            return d\n",
        "        if os.path.lexists(dot):  # SABOTAGED\n            return d\n",
        ["tests/test_read_only_shell_state.py::test_git_asks_in_a_workspace_that_is_a_folder_of_a_larger_repository"],
    ),
    Sabotage(
        "the agent judges read-only Bash lines without the environment its Bash gets",
        "src/agentloop/agent/toolbox.py",
        "    policy.follow_env(src.child_env, {k: v for k, v in src.env.items() if k not in by_project})\n",
        "    pass  # SABOTAGED\n",
        ["tests/test_read_only_shell_state.py::test_an_agent_judges_read_only_lines_in_the_environment_its_bash_gets"],
    ),
    Sabotage(
        "a glob with a bracket is matched as if its quoting were known",
        "src/agentloop/agent/permissions/rules.py",
        '        pattern = pattern[: pattern.index("[")] + "*"',
        '        pass  # SABOTAGED',
        ["tests/test_read_only_shell_state.py::test_a_bracket_or_assignment_shaped_glob_that_reaches_a_link_out_asks"],
    ),
    Sabotage(
        "an argument shaped like an assignment (cat a=/*) is taken for a literal word",
        "src/agentloop/agent/permissions/bash_reader.py",
        "                assigns = _ASSIGN.match(w) is not None and all(_ASSIGN.match(x) for x in words)",
        "                assigns = _ASSIGN.match(w) is not None  # SABOTAGED",
        ["tests/test_read_only_shell_state.py::test_a_bracket_or_assignment_shaped_glob_that_reaches_a_link_out_asks"],
    ),
    Sabotage(
        "a bracket whose first member is ] does not make a word a pattern",
        "src/agentloop/agent/permissions/bash_reader.py",
        '_GLOB_SHAPE = re.compile(r"[*?]|\\[.*\\]|',
        '_GLOB_SHAPE = re.compile(r"[*?]|\\[[^\\]]+\\]|',
        ["tests/test_read_only_shell_state.py::test_a_bracket_or_assignment_shaped_glob_that_reaches_a_link_out_asks"],
    ),
    Sabotage(
        "a Bash line with a NUL byte can be auto-approved",
        "src/agentloop/agent/permissions/rules.py",
        '    if "\\x00" in (bash.command or ""):',
        '    if False:  # SABOTAGED',
        ["tests/test_read_only_shell_state.py::test_a_line_with_a_nul_byte_is_not_auto_approved"],
    ),
    Sabotage(
        "a zero-padded brace sequence ({01..02}) is expanded unpadded",
        "src/agentloop/agent/permissions/rules.py",
        'for t in (str(n), f"{n:0{width}d}")))',
        'for t in (str(n),)))  # SABOTAGED',
        ["tests/test_read_only_shell_state.py::test_a_brace_sequence_is_expanded_as_bash_pads_and_signs_it"],
    ),
    Sabotage(
        "a brace sequence with a + sign ({+1..2}) is left unexpanded",
        "src/agentloop/agent/permissions/rules.py",
        '_SEQUENCE = re.compile(r"^([-+]?\\d+|[A-Za-z])\\.\\.([-+]?\\d+|',
        '_SEQUENCE = re.compile(r"^(-?\\d+|[A-Za-z])\\.\\.(-?\\d+|',
        ["tests/test_read_only_shell_state.py::test_a_brace_sequence_is_expanded_as_bash_pads_and_signs_it"],
    ),
    Sabotage(
        "a word with quoted braces is brace-expanded as if its quoting were known",
        "src/agentloop/agent/permissions/rules.py",
        "        if k in unsure:\n",
        "        if False:  # SABOTAGED\n",
        ["tests/test_read_only_shell_state.py::test_a_word_with_quoted_braces_asks"],
    ),
    Sabotage(
        "an argument shaped like an assignment is not tilde-expanded (cat a=~/x)",
        "src/agentloop/agent/permissions/rules.py",
        "    if (not lit and (\"$\" in w or \"`\" in w)) or _ASSIGNMENT_SHAPED.match(w):\n",
        "    if not lit and (\"$\" in w or \"`\" in w):  # SABOTAGED\n",
        ["tests/test_read_only_shell_state.py::test_an_argument_shaped_like_an_assignment_with_a_tilde_asks"],
    ),
    Sabotage(
        "the workspace's own .git file may name any repository",
        "src/agentloop/agent/permissions/rules.py",
        "            if top is not None and _gitfile_points_away(top, roots):\n",
        "            if False:  # SABOTAGED\n",
        ["tests/test_read_only_shell_state.py::test_git_asks_where_the_workspace_s_own_git_file_names_a_repository_that_does_not_name_it_back"],
    ),
    Sabotage(
        "the workspace's own repository may borrow objects from anywhere",
        "src/agentloop/agent/permissions/rules.py",
        "                if _borrows_objects(d, [*roots, *own]):\n",
        "                if d not in own and _borrows_objects(d, roots):  # SABOTAGED\n",
        ["tests/test_read_only_shell_state.py::test_git_asks_where_the_workspace_s_own_repository_borrows_objects_from_elsewhere"],
    ),
]


RETIRED = {
    'a bill past the reservation passes as a success':
        "the bill rule charges it first: 'a bill past the reservation (input past the byte bound) is believed'",
    "a provider may report more output than the call's max_tokens allowed":
        "budget.bill: 'a reply's output past the max_tokens it asked is believed'",
    "a provider's negative token count is believed (the spend goes down)":
        "budget.bill refuses negative and non-whole counts: 'a side call's or a tool's model call is settled off the one bill rule'",
    'a usage that cannot be billed is charged nothing instead of the reservation':
        "budget.bill charges the reservation: 'a bill past the reservation (input past the byte bound) is believed'",
    'a secret-named variable allowedEnvVars hands to commands is not redacted in their output':
        "secret_env_values now holds every secret-named variable: 'tool output is not redacted'",
    "a sub-agent's changes coming back are merged through a symlink out of the checkout":
        "the merge-back's git runs in the git jail, which cannot write outside the repository: 'agentloop's own git runs on the host instead of in the git jail'",
    'allow rules approve redirections to files (Bash(echo:*) runs echo hi > victim)':
        "an allow rule approves a redirection only to the target it shows: 'an allow rule approves a compound's write'",
    'bundled short options of read-only programs are not read (sort -uo victim)':
        "per-program read-only options: 'any option of a read-only program counts as read-only'",
    "the Bash reader copies the words at every word again (quadratic in the line's length)":
        "the sabotaged line is no longer on the reader's path; linearity is held by tests/test_permissions_bash.py::test_a_decision_grows_linearly_with_the_line and bench/bench_bash_reader.py",
    "the system prompt's git snapshot runs the repository's clean filters":
        "the git jail switches every filter off: 'a repository's filter drivers stay on inside the git jail'",
}
"""Sabotages of guards a later wall made redundant (the tests pass with them broken): each name, and the wall
that now holds, whose own sabotage is above."""
class Worker:
    """One copy of the tree and one pytest server on it: a sabotage is applied in the copy, its tests
    run in a child forked from the server, and the copy is put back byte for byte afterwards.

    The server has imported pytest (and nothing of agentloop), so each run skips an interpreter's
    start and pytest's import; the child imports agentloop from the copy, edited or not.

    Bytecode is written once, by ``warm`` on the untouched copy: pytest's rewritten modules, and
    ``compileall --invalidation-mode checked-hash`` for the tests' own interpreters. The runs write
    none, and a sabotaged file's bytecode is taken away for its run and put back with its source
    (``sabotage_and_test``), so an edit never runs from the untouched file's cache, however that
    cache is checked.
    """

    def __init__(self, root: str, tree: str):
        self.tree = tree
        copy_tree(tree, root)
        extra = os.environ.get("PYTHONPATH", "")
        path = os.path.join(tree, "src") + (os.pathsep + extra if extra else "")
        self.env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", tree], cwd=tree, env=self.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def warm(self, files: list[str]) -> None:
        """Compile the untouched copy: its sources and tests into hash-checked pycs, and the test files
        ``files`` with all they import through pytest's assertion rewriting (by collecting them)."""
        dirs = [d for d in ("src", "tests") if os.path.isdir(os.path.join(self.tree, d))]
        subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash", *dirs],
                       cwd=self.tree, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
        if files:  # a file that does not collect only goes uncached: the runs report it
            self.pytest(["-q", "-p", "no:cacheprovider", "--collect-only", *files], write=True)

    def pytest(self, args: list[str], timeout: int = 900, write: bool = False) -> tuple[int, str]:
        """(pytest's exit code, its output) for ``args`` in this copy (-1: it ran past ``timeout`` seconds).
        ``write``: pytest may cache its rewritten modules (``warm``, on the untouched copy only)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        fd, out = tempfile.mkstemp(prefix="pytest-", suffix=".txt", dir=os.path.dirname(self.tree))
        os.close(fd)
        self.proc.stdin.write(json.dumps({"args": args, "out": out, "timeout": timeout, "write": write}) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        with open(out, encoding="utf-8", errors="replace") as f:
            text = f.read()
        os.remove(out)
        if not reply:
            return -1, text + "\n(the pytest server died)"
        return int(json.loads(reply)["code"]), text

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


PRELOADED = ("asyncio", "concurrent.futures", "contextvars", "difflib", "fractions", "gzip", "hmac", "queue", "secrets",
             "ssl", "sysconfig", "tomllib", "unittest", "xml.etree.ElementTree", "zoneinfo",
             "execnet", "orjson", "sortedcontainers", "sniffio", "typing_extensions", "yaml")
"""What every run imports besides pytest and agentloop, imported once by the server (a fork inherits it): the
standard library's and third-party modules no sabotage edits. Never agentloop's (a run imports those afresh from
its copy, edited or not), nor a pytest plugin's distribution (pytest must import those itself, to rewrite their
asserts). Missing ones are skipped: the list saves time, it decides nothing."""


def serve(tree: str) -> int:
    """The pytest server (``--serve TREE``): a JSON job a line on stdin, its exit code a line on stdout."""
    import importlib
    import signal

    import pytest  # noqa: F401  (imported once here, inherited by every forked run)

    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass

    sys.dont_write_bytecode = True
    src = os.path.join(tree, "src")
    sys.path[:0] = [src, tree]
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: one pytest run, its output in the job's file
            code = 3
            try:
                os.setsid()  # its own process group: a run past its time is ended with all it started
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the jobs' pipe is the server's alone
                fd = os.open(job["out"], os.O_WRONLY | os.O_TRUNC)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                sys.dont_write_bytecode = not job.get("write")  # bytecode only of the untouched copy (Worker.warm)
                signal.alarm(int(job["timeout"]))
                signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a pytest started from a terminal,
                code = int(pytest.main(job["args"]))  # even when this script runs in the background (SIGINT ignored)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        try:
            os.killpg(pid, signal.SIGKILL)  # anything the run left behind in its group
        except (ProcessLookupError, PermissionError):
            pass
        print(json.dumps({"code": -1 if code < 0 else code}), flush=True)
    return 0


def failing_nodes(output: str) -> list[str]:
    """The test nodes (or, for a collection error, the files) named by the FAILED and ERROR lines of
    pytest's short summary (not a captured log line that begins with ERROR)."""
    out = []
    summary = False
    for ln in output.splitlines():
        if "short test summary info" in ln:
            summary = True
        for tag in ("FAILED ", "ERROR "):
            node = ln[len(tag):].split(" - ")[0].strip()
            if summary and ln.startswith(tag) and node.split("::")[0].endswith(".py"):
                out.append(node)
    return out


def last_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def copy_tree(dst: str, root: str = ROOT) -> None:
    for name in ("src", "tests", "pyproject.toml", "examples", "scripts", "docs", "conformance", "verifiers"):
        s = os.path.join(root, name)
        d = os.path.join(dst, name)
        if os.path.isdir(s):
            shutil.copytree(s, d, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "node_modules"))
        elif not os.path.exists(s):
            continue
        else:
            shutil.copy2(s, d)
    cache = os.path.join(root, ".cache")  # the npm MCP servers the tests run against: shared, read only
    if os.path.isdir(cache):
        os.symlink(cache, os.path.join(dst, ".cache"))


def build_c(tree: str, source: str) -> str:
    """Compile the C module ``source`` (a path under src/agentloop) in the copy, alone, and record its new
    hash in the copy's native.sha256 so the build is used (the mypyc modules are untouched: their sources
    did not change). Always compiled (``--force``): the build put back after an earlier sabotage is newer
    than the source just sabotaged, and build_ext would keep it as "up to date". Returns what went wrong, or ""."""
    pkg = os.path.join(tree, "src", "agentloop")
    name = os.path.basename(source)[: -len(".c")]
    code = ("from setuptools import Extension, setup\n"
            f"setup(name='nc', ext_modules=[Extension('agentloop.{name}', ['agentloop/{name}.c'], extra_compile_args=['-O2'])],"
            " script_args=['build_ext', '--force', '--inplace', '--build-temp', 'build'])\n")
    b = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(tree, "src"), capture_output=True, text=True, timeout=900)
    shutil.rmtree(os.path.join(tree, "src", "build"), ignore_errors=True)
    if b.returncode != 0:
        return (b.stderr or b.stdout).strip()[-500:]
    stamp = os.path.join(pkg, "native.sha256")
    if os.path.exists(stamp):
        with open(os.path.join(pkg, name + ".c"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(stamp, encoding="utf-8") as f:
            lines = f.readlines()
        with open(stamp, "w", encoding="utf-8") as f:
            f.writelines(f"{digest}  {name}.c\n" if ln.rstrip("\n").endswith(f"  {name}.c") else ln for ln in lines)
    return ""


def _native_files(tree: str) -> list[str]:
    pkg = os.path.join(tree, "src", "agentloop")
    return [os.path.join(pkg, f) for f in os.listdir(pkg) if f.endswith((".so", ".pyd")) or f == "native.sha256"]


def _bytecode(source: str) -> list[str]:
    """The cached bytecode of ``source`` (a .py file): plain pycs and pytest's rewritten ones."""
    folder = os.path.join(os.path.dirname(source), "__pycache__")
    stem = os.path.basename(source)[: -len(".py")] + "."
    if not source.endswith(".py") or not os.path.isdir(folder):
        return []
    return [os.path.join(folder, f) for f in os.listdir(folder) if f.startswith(stem) and f.endswith(".pyc")]


def within(node: str, tests: list[str]) -> bool:
    """``node`` is one of the tests ``tests`` selects (a file, a test, or a test's parameter)."""
    return any(node == t or node.startswith((t + "::", t + "[")) for t in tests)


def load_hints(path: str = HINTS) -> dict[str, list[str]]:
    try:
        with open(path, encoding="utf-8") as f:
            got = json.load(f)
    except (OSError, ValueError):
        return {}
    return {k: [n for n in v if isinstance(n, str)] for k, v in got.items() if isinstance(v, list)} if isinstance(got, dict) else {}


def sabotage_and_test(w: Worker, sab: Sabotage, hints: dict[str, list[str]]) -> tuple[bool | None, str, list[str]]:
    """Break one guard in the worker's copy, run its tests (stopping at the first failure), put the copy back.

    The tests that caught it last time (``hints``, when they are still among its tests) run first; only
    when they do not fail does the whole selection run. Either way the verdict is a failure pytest names.

    (caught, the line to print, the failing nodes); ``caught`` is None when the sabotage could not be applied.
    """
    target = os.path.join(w.tree, sab.path)
    with open(target, encoding="utf-8") as f:
        text = f.read()
    if sab.old is not None and sab.old not in text:
        return None, f"SABOTAGE STALE: {sab.name}: the guarded line is gone from {sab.path}", []
    cached = _bytecode(target)
    kept = {p: open(p, "rb").read() for p in [target] + cached + (_native_files(w.tree) if sab.rebuild else [])}
    try:
        for p in cached:  # the sabotaged file runs with no bytecode at all, whatever checks a cache's freshness
            os.remove(p)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text + sab.new if sab.old is None else text.replace(sab.old, sab.new))
        if sab.rebuild and (err := build_c(w.tree, sab.path)):
            return None, f"SABOTAGE NOT BUILT: {sab.name}: {err}", []
        first = [n for n in hints.get(sab.name, []) if within(n, sab.tests)]
        code, output = w.pytest(["-q", "-x", "-p", "no:cacheprovider", *first]) if first else (0, "")
        if not (code > 0 and failing_nodes(output)):  # no hint, or it no longer catches it: the whole selection
            code, output = w.pytest(["-q", "-x", "-p", "no:cacheprovider", *sab.tests])
    finally:
        for p in _bytecode(target):  # any a test's own interpreter wrote of the sabotaged file
            os.remove(p)
        for p, data in kept.items():
            with open(p, "wb") as f:
                f.write(data)
    nodes = failing_nodes(output)
    caught = code > 0 and bool(nodes)  # a failure pytest names; a run past its time proves nothing
    how = "timed out" if code < 0 else f"exit {code}: {last_line(output)}"
    return caught, f"{'caught ' if caught else 'MISSED '} {sab.name}: {how}", nodes


CONTROL_RUNS = 4
"""Runs a copy of the control, about: enough that one slow run does not hold the end, few enough that
pytest's start (a second or so a run) stays small beside the tests."""


def control(ws: list[Worker], nodes: set[str]) -> tuple[bool, str]:
    """Run the tests that caught a sabotage on the untouched copies: they must pass there, or the failure
    was not the sabotage's doing. A file named for a collection error must collect. The tests are packed
    by file into a few runs a copy (CONTROL_RUNS), the biggest first, each taken by whichever copy is
    free: no copy is left with the slow files while the others wait, and few runs pay pytest's start."""
    total = len(nodes)
    files = sorted(n for n in nodes if "::" not in n)
    by_file: dict[str, list[str]] = {}
    for n in sorted(n for n in nodes if "::" in n):
        by_file.setdefault(n.split("::")[0], []).append(n)
    bins: list[list[str]] = [[] for _ in range(CONTROL_RUNS * len(ws))]
    for group in sorted(by_file.values(), key=len, reverse=True):
        min(bins, key=len).extend(group)
    jobs = sorted((b for b in bins if b), key=len, reverse=True) + ([["--collect-only", *files]] if files else [])

    free: queue.Queue[Worker] = queue.Queue()
    for w in ws:
        free.put(w)

    def one(k: int) -> tuple[int, str]:
        w = free.get()  # a copy runs one pytest at a time
        try:
            return w.pytest(["-q", "-p", "no:cacheprovider", *jobs[k]])
        finally:
            free.put(w)

    report = []
    failed: list[str] = []
    ok = True
    passed = 0
    with ThreadPoolExecutor(max_workers=len(ws)) as pool:
        for code, output in pool.map(one, range(len(jobs))):
            named = failing_nodes(output)
            ok &= code == 0 or bool(named)  # a failure pytest names is tried once more below
            failed += named
            if code == 0:
                passed += 1
                continue
            report.append(f"exit {code}: {last_line(output)}\n" + "\n".join(
                ln for ln in output.splitlines() if ln.startswith(("FAILED", "ERROR", "E "))))
    report.insert(0, f"{passed} of {len(jobs)} runs passed ({total} tests or files)")
    if ok and failed:  # a test that failed beside the others on the untouched copy gets one run of its own: a test
        w = free.get()  # that only fails under load is named as flaky; one that fails again fails the control
        code, output = w.pytest(["-q", "-p", "no:cacheprovider", *failed])
        free.put(w)
        ok = code == 0
        report.append(f"again, alone: exit {code}: {last_line(output)}" + (
            " (FLAKY: these failed beside the others and pass alone; make them robust)" if ok else ""))
    return ok, "; ".join(report) or "nothing to run"


def run(sabotages: list[Sabotage], root: str = ROOT, workers: int = 3, hints: dict[str, list[str]] | None = None,
        record: str | None = None) -> int:
    """0 when every sabotage is caught by a test that passes on the untouched copy; 1 when one is not
    (missed, stale, or not built); 2 when a catching test fails on the untouched copy too."""
    jobs: queue.Queue[Worker] = queue.Queue()
    all_caught = True
    caught_by: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="agentloop-neg-") as tmp:
        pool_size = max(1, min(workers, len(sabotages)))
        with ThreadPoolExecutor(max_workers=pool_size) as pool:
            files = sorted({t.split("::")[0] for s in sabotages for t in s.tests})

            def ready(i: int) -> Worker:
                w = Worker(root, os.path.join(tmp, f"tree{i}"))
                w.warm(files)
                return w

            for w in pool.map(ready, range(pool_size)):
                jobs.put(w)

            def one(sab: Sabotage) -> tuple[bool | None, str, list[str]]:
                w = jobs.get()
                try:
                    start = time.monotonic()
                    caught, line, nodes = sabotage_and_test(w, sab, hints or {})
                    return caught, f"{line} ({time.monotonic() - start:.1f} s)", nodes
                finally:
                    jobs.put(w)

            found: dict[str, list[str]] = {}
            for sab, (caught, line, nodes) in zip(sabotages, pool.map(one, sabotages)):
                all_caught &= bool(caught)
                caught_by.update(nodes if caught else [])
                if caught:
                    found[sab.name] = nodes
                print(line, flush=True)
            ws = [jobs.get() for _ in range(pool_size)]
            ok, line = control(ws, caught_by)
            print(f"control (the catching tests on the untouched copies): {line}", flush=True)
            for w in ws:
                w.close()
    if not ok:
        print("a test that caught a sabotage fails on the untouched copy too: fix the suite first")
        return 2
    if record is not None:  # --record: what caught each sabotage, run first next time
        kept = {k: v for k, v in load_hints(record).items() if k in {s.name for s in SABOTAGES}}
        with open(record, "w", encoding="utf-8") as f:
            f.write(json.dumps(dict(sorted({**kept, **found}.items())), indent=1) + "\n")
    print("every sabotage was caught" if all_caught else "SOME SABOTAGE WENT UNNOTICED")
    return 0 if all_caught else 1


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "-v"]
    if args[:1] == ["--serve"]:
        return serve(args[1])
    record = "--record" in args
    args = [a for a in args if a not in ("--only", "--record")]  # --only WORD, as a word
    only = args  # words: run only the sabotages whose names (or sabotaged paths) hold one
    sabotages = [s for s in SABOTAGES if not only or any(w in s.name or w in s.path for w in only)]
    return run(sabotages, workers=int(os.environ.get("AGENTLOOP_TEST_WORKERS", "3")), hints=load_hints(),
               record=HINTS if record else None)


if __name__ == "__main__":
    sys.exit(main())
