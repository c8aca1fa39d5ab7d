"""One way to start a process: the spawn path decides every child's environment, and git run for agentloop runs no repository code.

Codex keeps variables named like ``*KEY*``, ``*SECRET*`` and ``*TOKEN*`` out of
the commands it runs by default (its ``shell_environment_policy``'s default
excludes); agentloop does the same for every child, adds ``*PASSWORD*`` and
``*CREDENTIAL*``, and lets the user's own settings hand one over by name
(``allowedEnvVars``).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from agentloop.agent import spawn
from agentloop.agent.agent import Agent
from agentloop.agent.hooks.runner import HookRunner
from agentloop.config.credentials import child_environment, secret_named
from agentloop.config.settings import load_settings
from agentloop.mcp.env import server_environment
from agentloop.testing import ScriptedModel, reply

SRC = Path(__file__).resolve().parent.parent / "src" / "agentloop"

_SPAWN_ATTRS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"system", "popen", "fork", "forkpty", "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp",
           "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
           "posix_spawn", "posix_spawnp"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "pty": {"spawn", "fork"},
    "anyio": {"open_process", "run_process"},
    "webbrowser": {"open", "open_new", "open_new_tab"},
    "multiprocessing": {"Process", "Pool", "get_context"},
}
_SPAWN_NAMES = {"stdio_client", "Popen", "create_subprocess_exec", "create_subprocess_shell", "open_process",
                "run_process", "posix_spawn", "posix_spawnp", "check_output", "check_call"}

ALLOWED_SITES = {
    "agent/spawn.py": None,  # the spawn path itself: any number
    # the sandbox's own launches (its probe of bwrap, a command in a bubblewrap of its own, the session's
    # runner): spawn.popen hands them the argv and the environment it decided
    "agent/sandbox/bubblewrap.py": 3,
    # stdio MCP servers are started by the MCP library, with mcp/env.py's environment (the same rule)
    "mcp/client.py": 1,
    # inside the sandbox: the supervising launcher of a command with a bubblewrap of its own forks and execs the
    # argv bubblewrap was given (spawn.popen decided it and its environment), so that it stays the ancestor
    "agent/sandbox/supervisor.py": 2,
    # batch workers are agentloop's own processes running models (they need the keys); they run no tool
    "batch/runner.py": 1,
    # the agentloop command executing itself again without the provider keys in its environment (decision 0013)
    "cli/held_keys.py": 1,
}
"""Where a process may start besides the spawn path, and how many places each file has."""


def _spawn_sites(tree: ast.AST) -> list[int]:
    lines: list[int] = []
    alias = {a.asname or a.name: a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            mod = alias.get(f.value.id, f.value.id) if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            if isinstance(f, ast.Attribute) and f.attr in _SPAWN_ATTRS.get(mod, ()):
                lines.append(node.lineno)
            elif isinstance(f, ast.Attribute) and f.attr in ("create_subprocess_exec", "create_subprocess_shell"):
                lines.append(node.lineno)
            elif isinstance(f, ast.Name) and f.id in _SPAWN_NAMES:
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module in ("subprocess", "os", "pty", "asyncio", "webbrowser"):
            if any(a.name in _SPAWN_ATTRS.get(node.module, set()) for a in node.names):
                lines.append(node.lineno)
    return sorted(lines)


def test_no_process_starts_outside_the_spawn_path() -> None:
    """A new subprocess/Popen/exec/fork call anywhere in the package fails here: start it through agent/spawn.py."""
    found: dict[str, list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        sites = _spawn_sites(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if sites:
            found[rel] = sites
    assert "agent/spawn.py" in found, "the scan no longer sees the spawn path's own calls"
    wrong = {f: s for f, s in found.items() if f not in ALLOWED_SITES}
    assert not wrong, f"processes started outside agent/spawn.py: {wrong}"
    for f, n in ALLOWED_SITES.items():
        if n is not None:
            assert len(found.get(f, [])) == n, f"{f}: {found.get(f)} (expected {n} known places; start new ones through spawn)"


def test_the_scan_sees_every_way_of_starting_a_process() -> None:
    src = """
import subprocess, os, asyncio
import subprocess as sp, multiprocessing as mp
from subprocess import Popen
subprocess.run(["x"]); subprocess.Popen(["x"]); os.system("x"); os.execve("x", [], {})
os.fork(); asyncio.create_subprocess_exec("x"); loop.create_subprocess_exec("x"); Popen(["x"]); stdio_client(p)
sp.check_output(["x"]); mp.Process(target=f)
"""
    assert len(_spawn_sites(ast.parse(src))) == 12


@pytest.mark.parametrize(("name", "secret"), [
    ("GITHUB_TOKEN", True), ("github_token", True), ("NPM_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True),
    ("DB_PASSWORD", True), ("GOOGLE_APPLICATION_CREDENTIALS", True), ("SSH_KEY_PATH", True), ("apikey", True),
    ("PATH", False), ("HOME", False), ("SSH_AUTH_SOCK", False), ("LANG", False), ("GIT_AUTHOR_NAME", False),
])
def test_secret_named_variables_are_those_codex_excludes_and_more(name: str, secret: bool) -> None:
    assert secret_named(name) is secret


def test_the_child_environment_keeps_secret_names_only_when_allowed_and_provider_keys_never() -> None:
    env = {"PATH": "/bin", "GITHUB_TOKEN": "ghp_x", "Db_Password": "pw", "OPENAI_API_KEY": "sk-1", "LANG": "C"}
    assert child_environment(env) == {"PATH": "/bin", "LANG": "C"}
    assert child_environment(env, allowed=["GITHUB_TOKEN", "OPENAI_API_KEY"]) == {"PATH": "/bin", "LANG": "C", "GITHUB_TOKEN": "ghp_x"}


def test_popen_cuts_an_environment_that_did_not_come_from_the_spawn_path(tmp_path: Path) -> None:
    """A caller that hands ``popen`` a raw environment gets the rule applied with nothing allowed (fails closed)."""
    raw = {"PATH": os.environ["PATH"], "GITHUB_TOKEN": "ghp_raw_123456", "ANTHROPIC_API_KEY": "sk-ant-1"}
    p = spawn.popen(["sh", "-c", "env"], cwd=str(tmp_path), env=raw)
    out = p.communicate()[0].decode()
    assert "ghp_raw" not in out and "sk-ant" not in out and "PATH=" in out
    decided = spawn.environment(raw, allowed=["GITHUB_TOKEN"])
    p = spawn.popen(["sh", "-c", "env"], cwd=str(tmp_path), env=decided)
    assert "GITHUB_TOKEN=ghp_raw_123456" in p.communicate()[0].decode()


def _env_of_bash(tmp_path: Path, user_settings: dict[str, object] | None, project_settings: dict[str, object] | None) -> str:
    home = tmp_path / "home"
    proj = tmp_path / "proj"
    proj.mkdir()
    (home / ".claude").mkdir(parents=True)
    if user_settings is not None:
        (home / ".claude" / "settings.json").write_text(json.dumps(user_settings))
    if project_settings is not None:
        (proj / ".claude").mkdir()
        (proj / ".claude" / "settings.json").write_text(json.dumps(project_settings))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "AGENTLOOP_HOME": str(tmp_path / "al"),
           "GITHUB_TOKEN": "ghp_user_token_0123456789", "MY_SERVICE_PASSWORD": "hunter2-hunter2", "OPENAI_API_KEY": "sk-planted-0123456789"}
    model = ScriptedModel([reply("", [("Bash", {"command": "env | grep -E '^(GITHUB_TOKEN|MY_SERVICE_PASSWORD|OPENAI_API_KEY)=' | cut -d= -f1 | sort | tr '\\n' ' '; echo END"})]), reply("done")])
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), env=env, model=model, permission_mode="bypassPermissions",
              sandbox="danger-full-access", trust=True)
    try:
        res = a.ask("go")
        notices = list(a.startup_notices)
    finally:
        a.close()
    out = [m["content"] for m in res.messages if m.get("role") == "tool"][0]
    return out + "|" + " ".join(notices)


def test_bash_gets_no_secret_named_variable_unless_the_user_allows_it(tmp_path: Path) -> None:
    assert _env_of_bash(tmp_path, None, None).startswith("END")


def test_the_users_allowed_env_vars_hand_over_exactly_the_names_it_lists(tmp_path: Path) -> None:
    out = _env_of_bash(tmp_path, {"allowedEnvVars": ["GITHUB_TOKEN", "OPENAI_API_KEY"]}, None)
    assert out.startswith("GITHUB_TOKEN END"), out  # the provider key stays out even when named


def test_a_projects_allowed_env_vars_is_not_honoured_and_says_so(tmp_path: Path) -> None:
    out = _env_of_bash(tmp_path, None, {"allowedEnvVars": ["GITHUB_TOKEN"]})
    assert out.startswith("END"), out
    assert "allowedEnvVars ignored: only the user's own settings" in out


def test_hooks_and_mcp_servers_get_no_secret_named_variable(tmp_path: Path) -> None:
    dump = tmp_path / "hook-env.json"
    settings = {"hooks": {"SessionStart": [{"hooks": [{"type": "command",
        "command": f"python3 -c 'import json, os; json.dump(dict(os.environ), open(\"{dump}\", \"w\"))'"}]}]}}
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GITHUB_TOKEN": "ghp_1234567890", "AWS_SECRET_ACCESS_KEY": "x" * 20}
    runner = HookRunner.from_settings(load_settings(str(tmp_path), str(tmp_path)), project_dir=str(tmp_path), env=env)
    runner.run("SessionStart", {"source": "startup"})
    got = json.loads(dump.read_text())
    assert "GITHUB_TOKEN" not in got and "AWS_SECRET_ACCESS_KEY" not in got and got.get("PATH")
    srv = server_environment(env, {"EXPLICIT_TOKEN": "given"}, project_dir=str(tmp_path))
    assert "GITHUB_TOKEN" not in srv and srv["EXPLICIT_TOKEN"] == "given"  # what the server's own env names, it gets
    assert server_environment(env, {}, allowed=["GITHUB_TOKEN"])["GITHUB_TOKEN"] == "ghp_1234567890"


# --- git that agentloop runs for itself -----------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose hooks, fsmonitor, pager, external diff, textconv and filter each leave a marker when run."""
    r = tmp_path / "repo"
    marks = tmp_path / "marks"
    marks.mkdir()
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _git(r, "config", "user.email", "t@example.com")
    _git(r, "config", "user.name", "T")
    (r / "a.txt").write_text("one\n")
    (r / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    _git(r, "add", "-A")
    _git(r, "commit", "-q", "-m", "init")

    def script(name: str, body: str = "") -> str:
        p = tmp_path / f"{name}.sh"
        p.write_text(f"#!/bin/sh\nenv > {marks}/{name}\n{body}\n")
        p.chmod(0o755)
        return str(p)

    hooks = r / ".git" / "hooks"
    for hook in ("post-checkout", "pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\nenv > {marks}/hook-{hook}\n")
        (hooks / hook).chmod(0o755)
    _git(r, "config", "core.fsmonitor", script("fsmonitor"))
    _git(r, "config", "diff.external", script("external-diff"))
    _git(r, "config", "core.pager", script("pager", "cat"))
    _git(r, "config", "filter.evil.clean", script("clean", "cat"))
    _git(r, "config", "filter.evil.smudge", script("smudge", "cat"))
    _git(r, "config", "diff.evil.textconv", script("textconv", 'cat "$1"'))
    return r, marks


def test_git_for_a_sub_agents_worktree_runs_none_of_the_repositorys_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Agent tool's worktree (add, status, add -A, commit, rev-parse, diff) with the real git: no marker is left.

    Then the same repository under plain git leaves them, so the repository is hostile as built.
    """
    from agentloop import Budget, Price, Registry, TranscriptWriter, run
    from agentloop.agent.subagents.runner import SubagentRunner
    from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage
    from agentloop.tools import Tool

    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-in-the-agent-0123")
    r, marks = _hostile_repo(tmp_path)

    def make_tools(cwd: str) -> Registry:
        def write(path: str, content: str) -> str:
            Path(cwd, path).write_text(content)
            return "ok"
        schema = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}
        return Registry([Tool("Write", "write a file", schema, write)])

    class Model:
        name = "m"
        n = 0

        def complete(self, req: ModelRequest) -> ModelReply:
            child = "sub-agent" in str(req.messages[0].get("content", ""))
            done = any(m.get("role") == "tool" for m in req.messages)
            if done:
                return ModelReply(text="ok", usage=Usage(10, 1))
            if child:
                return ModelReply(tool_calls=(ToolCall("c0", "Write", {"path": "a.txt", "content": "two\n"}),), usage=Usage(10, 1))
            return ModelReply(tool_calls=(ToolCall("p0", "Agent", {"description": "edit", "prompt": "change a", "isolation": "worktree"}),), usage=Usage(10, 1))

    prices = {"m": Price(input=1_000_000, output=1_000_000)}
    model = Model()
    runner = SubagentRunner(model=model, make_tools=make_tools, cwd=str(r), transcript_dir=str(tmp_path / "sub"), prices=prices, model_name="m")
    reg = make_tools(str(tmp_path))
    reg.register(runner.tool())
    with TranscriptWriter(tmp_path / "parent.jsonl") as w:
        runner.record = w.append
        run(model, reg, [{"role": "user", "content": "task"}], Budget(max_steps=6), transcript=w, prices=prices,
            prepare=runner.parent.bind, model_name="m")
    wt = runner.children[0]["worktree"]
    assert wt["changed"], wt
    assert _git(r, "show", f"{wt['branch']}:a.txt") == "two"
    assert spawn.git(["diff", wt["base"], wt["branch"]], cwd=str(r)).stdout.count("+two") == 1
    assert sorted(os.listdir(marks)) == []
    # the same repository under plain git runs its code: the markers above could have appeared
    (r / "a.txt").write_text("three\n")
    subprocess.run(["git", "diff"], cwd=r, capture_output=True, check=False)
    subprocess.run(["git", "commit", "-qam", "x"], cwd=r, capture_output=True, check=False)
    assert {"fsmonitor", "external-diff", "clean", "hook-pre-commit"} <= set(os.listdir(marks))
    assert "sk-planted" in (marks / "fsmonitor").read_text()


def test_the_git_environment_reads_no_config_but_the_repositorys_and_carries_no_key() -> None:
    env = spawn.git_environment({"PATH": "/bin", "OPENAI_API_KEY": "sk-1", "GIT_DIR": "/elsewhere", "GIT_EXTERNAL_DIFF": "x",
                                 "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.pager", "GIT_CONFIG_VALUE_0": "x"})
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and Path(env["GIT_CONFIG_GLOBAL"]).read_text() == ""
    assert not {"OPENAI_API_KEY", "GIT_DIR", "GIT_EXTERNAL_DIFF", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0"} & set(env)


# --- hooks' process groups ------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("timeout", [None, 2])
def test_a_hook_that_leaves_a_background_child_does_not_hold_the_agent(tmp_path: Path, timeout: int | None) -> None:
    """Hooks reference ("Hook execution details"): a hook runs to its exit or its timeout; what it left running ends with it.

    The child holds the hook's stdout open; before, the agent read it until the child exited (12 s here: past
    the 5 s allowed, and past the 5 s the child is then given to be gone).
    """
    import time

    pidfile = tmp_path / "child.pid"
    command = f"sleep 12 & echo $! > {pidfile}; " + ("sleep 60" if timeout else "echo '{}'")
    handler: dict[str, object] = {"type": "command", "command": command}
    if timeout:
        handler["timeout"] = timeout
    (tmp_path / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [handler]}]}}))
    runner = HookRunner.from_settings(load_settings(str(tmp_path), str(tmp_path)), project_dir=str(tmp_path),
                                      env={"PATH": os.environ["PATH"]})
    t0 = time.monotonic()
    runner.run("SessionStart", {"source": "startup"})
    took = time.monotonic() - t0
    assert took < (timeout or 0) + 5, took
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5  # (no more: the child would end of itself after 12 s)
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the hook's background child outlived it"


# --- private files ---------------------------------------------------------------------


def test_everything_a_session_leaves_in_agentloops_home_is_the_users_alone(tmp_path: Path) -> None:
    """Session files, locks, the index, anchors, sub-agent transcripts: files 0600, folders 0700; a 0755 home is tightened at start."""
    import stat as st

    from agentloop.agent.session.store import list_sessions

    home = tmp_path / "al"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    proj = tmp_path / "proj"
    proj.mkdir()
    model = ScriptedModel([reply("", [("Bash", {"command": "echo hi"})]), reply("done")])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "AGENTLOOP_HOME": str(home)}
    a = Agent(cwd=str(proj), home=str(home), env=env, model=model, permission_mode="bypassPermissions",
              sandbox="danger-full-access", trust=True)
    try:
        notices = list(a.startup_notices)
        a.ask("go")
    finally:
        a.close()
    list_sessions(str(proj), str(home))  # writes the sessions index
    assert st.S_IMODE(home.stat().st_mode) == 0o700
    assert any("open to others (755); it is 0700 now" in n for n in notices), notices
    seen = 0
    for root, dirs, files in os.walk(home):
        for d in dirs:
            assert st.S_IMODE(os.stat(os.path.join(root, d)).st_mode) == 0o700, os.path.join(root, d)
        for f in files:
            assert st.S_IMODE(os.stat(os.path.join(root, f)).st_mode) == 0o600, os.path.join(root, f)
            seen += 1
    assert seen >= 3  # the session file, its lock, the index at least


def test_a_home_left_open_is_made_private_and_said_once(tmp_path: Path) -> None:
    from agentloop.config.private import private_home

    home = tmp_path / "al"
    home.mkdir()
    home.chmod(0o755)
    assert private_home(str(home)) == f"{home}: agentloop's home was open to others (755); it is 0700 now"
    assert private_home(str(home)) is None
    fresh = tmp_path / "a" / "b" / "al"
    assert private_home(str(fresh)) is None
    assert all(os.stat(p).st_mode & 0o077 == 0 for p in (tmp_path / "a", tmp_path / "a" / "b", fresh))


def test_the_browser_for_a_sign_in_starts_without_the_keys(tmp_path: Path) -> None:
    """Python's webbrowser honours $BROWSER: a script there records the environment the browser got."""
    import time

    dump = tmp_path / "browser-env"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\nenv > {dump}.tmp && mv {dump}.tmp {dump}\n")
    browser.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BROWSER": str(browser),
           "OPENAI_API_KEY": "sk-planted-0123456789", "GITHUB_TOKEN": "ghp_planted_0123456789"}
    spawn.open_url("http://127.0.0.1:9/authorize", env=spawn.environment(env))
    deadline = time.monotonic() + 30
    while not dump.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    got = dump.read_text()
    assert "BROWSER=" in got and "sk-planted" not in got and "ghp_planted" not in got


def test_keys_of_one_vendor_on_a_model_and_its_fallback_are_both_held() -> None:
    """A model and its fallback of the same vendor, each with a key of its own: both keys are held (so both
    are redacted and kept from children), not one label's last key."""
    from types import SimpleNamespace

    from agentloop.agent.secret_guard import held_keys

    fallback = SimpleNamespace(target=SimpleNamespace(api_key="sk-ant-fallback-key-2222"), vendor="anthropic", fallback=None)
    model = SimpleNamespace(target=SimpleNamespace(api_key="sk-ant-primary-key-1111"), vendor="anthropic", fallback=fallback)
    held = held_keys(model, {}, None)
    assert sorted(held.values()) == ["sk-ant-fallback-key-2222", "sk-ant-primary-key-1111"]


def test_a_secret_named_variable_the_user_allows_is_redacted_in_tool_output() -> None:
    """``allowedEnvVars`` hands a secret-named variable to commands; what they print of its value is still
    redacted, whether or not the name is one the redactor picks out by itself (``DEPLOY_KEYS``)."""
    from agentloop.agent.secret_guard import SecretGuard
    from agentloop.config.settings import SettingsSource

    env = {"DEPLOY_KEYS": "deploy-value-0123456789", "PATH": os.environ.get("PATH", "")}
    user = SettingsSource("/home/u/.claude/settings.json", "user", {"allowedEnvVars": ["DEPLOY_KEYS"]})
    guard = SecretGuard.create(ScriptedModel([reply("x")]), env, None, [user])
    assert guard.child_env.get("DEPLOY_KEYS") == "deploy-value-0123456789"  # handed over, as asked
    assert "deploy-value-0123456789" not in guard.redactor.text("the key is deploy-value-0123456789")


def test_exports_added_to_the_child_environment_pass_the_rule_every_child_environment_passes() -> None:
    """Claude Code's hooks reference ("Persist environment variables"): what SessionStart hooks write to
    ``CLAUDE_ENV_FILE`` is there for later Bash commands. The secret guard adds it (``carry_exports``) by the same
    rule it made the child environment with: a provider key (even allowed), a held key's value under any name, a
    secret name, a URL holding a password and a credential-shaped value stay out, each named in a warning; what
    ``allowedEnvVars`` names passes and is redacted in output."""
    from agentloop.agent.secret_guard import SecretGuard
    from agentloop.config.settings import SettingsSource

    env = {"PATH": os.environ.get("PATH", ""), "MY_KEY_ENV": "sk-held-by-the-agent-0123456789"}
    user = SettingsSource("/home/u/.claude/settings.json", "user", {"allowedEnvVars": ["DEPLOY_TOKEN", "OPENAI_API_KEY"]})
    guard = SecretGuard.create(ScriptedModel([reply("x")]), env, "MY_KEY_ENV", [user])
    exports = {
        "NODE_ENV": "production", "DEPLOY_TOKEN": "allowed-deploy-value-42", "OPENAI_API_KEY": "sk-provider-0123456789abcdef",
        "GITHUB_TOKEN": "t", "DATABASE_URL": "postgres://u:pw@db/x", "GH": "ghp_0123456789abcdefghij0123",
        "COPY_OF_KEY": "sk-held-by-the-agent-0123456789", "MY_KEY_ENV": "other",
    }
    warnings = guard.carry_exports(exports, "CLAUDE_ENV_FILE")
    kept = {k: guard.child_env[k] for k in exports if k in guard.child_env}
    assert kept == {"NODE_ENV": "production", "DEPLOY_TOKEN": "allowed-deploy-value-42"}
    named = sorted(w.split(":")[1].split()[0] for w in warnings)
    assert named == ["COPY_OF_KEY", "DATABASE_URL", "GH", "GITHUB_TOKEN", "MY_KEY_ENV", "OPENAI_API_KEY"]
    assert "allowed-deploy-value-42" not in guard.redactor.text("printed allowed-deploy-value-42")


def test_only_the_secret_guard_changes_the_child_environment() -> None:
    """Nothing writes into the environment children start with but the guard's own method: no module updates,
    assigns into or pops a ``child_env`` (the hooks hand exports to ``SecretGuard.carry_exports``)."""
    src = Path(__file__).resolve().parents[1] / "src" / "agentloop"

    def writes(tree: ast.AST) -> list[int]:
        out = []
        for n in ast.walk(tree):
            target = None
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in (
                    "update", "pop", "setdefault", "clear", "__setitem__", "popitem"):
                target = n.func.value
            elif isinstance(n, (ast.Assign, ast.AugAssign, ast.Delete)):
                for t in (n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]):
                    if isinstance(t, ast.Subscript):
                        target = t.value
            name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
            if name == "child_env":
                out.append(n.lineno)
        return sorted(out)

    assert writes(ast.parse("child_env.update(x)\nself.child_env['A'] = 1\nenv.update(x)\n")) == [1, 2]
    found = [f"{p.relative_to(src)}:{line}" for p in sorted(src.rglob("*.py")) if p.name != "secret_guard.py"
             for line in writes(ast.parse(p.read_text(encoding="utf-8")))]
    assert found == []
