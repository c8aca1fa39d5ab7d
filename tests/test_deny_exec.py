"""A deny rule on a program holds wherever the program is started from: the sandbox masks it.

The lines of ``tests/data/launchers/exec_launchers.json`` each make the real bash and the real programs
start ``rm v`` in their own way (a program that runs commands, an interpreter, git's options, the
dynamic loader, a copy of the binary, code bash builds from pieces in arithmetic). Each runs twice in
the real bubblewrap sandbox: with no deny rule (the oracle: the file ``v`` is gone, so the line does
reach ``rm`` on this machine) and under ``allow: ["Bash"]``, ``deny: ["Bash(rm:*)"]`` (the file must
survive, and the refusal names the rule; ``"check": "refusal"`` marks a program that deletes its target
itself when the command it ran failed: there the refusal must show). A program that is not installed skips its lines, saying so.

Claude Code's permissions reference is the behaviour followed: "deny rules block the tool", and
``Bash(rm *)`` is the documented way to forbid a program; its sandboxing page adds that the sandbox's
OS-level limits "apply to all subprocess commands spawned by Bash". What a deny rule promises is a
program, not an effect (README, "Security"; docs/decisions/0016).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.config.settings import SettingsSource

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason=f"no sandbox here: {_why}")
DATA = Path(__file__).parent / "data" / "launchers" / "exec_launchers.json"
LAUNCHERS: list[dict[str, Any]] = json.loads(DATA.read_text())
PATH = "/usr/bin:/bin"
REFUSAL = "agentloop: rm is denied by rule Bash(rm:*)"


def policy(allow: list[str], deny: list[str], cwd: str = "/proj") -> PermissionPolicy:
    src = SettingsSource(f"{cwd}/.agentloop/settings.json", "project", {"permissions": {"allow": allow, "deny": deny}})
    return PermissionPolicy.from_settings([src], cwd=cwd)


class Box:
    """One real sandbox over ``work``, with the deny rules of ``deny``; ``run`` a line in a fresh folder holding ``v``."""

    def __init__(self, base: Path, deny: list[str]):
        self.work = base / "proj"
        self.work.mkdir(parents=True, exist_ok=True)
        (base / "al").mkdir(exist_ok=True)
        ss = sbx.settings_from([], mode=None, cwd=str(self.work), user_home=str(base / "home"))
        self.sandbox = sbx.Sandbox.create(ss, roots=[str(self.work)], agentloop_home=str(base / "al"), user_home=str(base / "home"))
        self.sandbox.denied_programs = policy(["Bash"], deny, str(self.work)).denied_programs
        self.runs = 0

    def run(self, line: str, repo: str | None = None) -> tuple[bool, str]:
        """Did ``v`` survive ``line``, and what did it print. ``repo``: a git repository made there first, by
        the host's git (a command cannot make one in the workspace: docs/decisions/0025)."""
        self.runs += 1
        d = self.work / f"run-{self.runs}"
        d.mkdir()
        (d / "v").write_text("keep\n")
        if repo is not None:
            import subprocess

            subprocess.run(["git", "init", "-q", str(d / repo)], check=True, env={"PATH": PATH, "HOME": str(d)})
        env = {"PATH": PATH, "HOME": str(d), "LANG": "C.UTF-8"}
        p = self.sandbox.launch(["/bin/bash", "--norc", "--noprofile", "-c", line], str(d), line, env, [])
        out = p.stdout.read()
        p.wait(60)
        return (d / "v").exists(), out.decode(errors="replace")

    def close(self) -> None:
        self.sandbox.close()


@pytest.fixture(scope="module")
def boxes() -> Iterator[tuple[Box, Box]]:
    base = Path(tempfile.mkdtemp(prefix="agentloop-deny-exec-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    open_box, denied_box = Box(base / "open", []), Box(base / "denied", ["Bash(rm:*)"])
    try:
        yield open_box, denied_box
    finally:
        open_box.close()
        denied_box.close()
        shutil.rmtree(base, ignore_errors=True)


def installed(program: str) -> bool:
    return shutil.which(program, path=PATH) is not None


@pytest.mark.parametrize("entry", LAUNCHERS, ids=[f"{e['class'].split()[0]}:{e['line'][:48]}" for e in LAUNCHERS])
def test_a_launcher_that_reaches_rm_reaches_the_refusal_under_a_deny_rule(boxes: tuple[Box, Box], entry: dict[str, Any]) -> None:
    open_box, denied_box = boxes
    if not installed(entry["program"]):
        pytest.skip(f"{entry['program']} is not installed here")
    survived, out = open_box.run(entry["line"], entry.get("repo"))
    assert not survived, f"the oracle: with no deny rule the line should remove v in the sandbox ({out!r})"
    survived, out = denied_box.run(entry["line"], entry.get("repo"))
    if entry.get("check") == "refusal":  # the program removes its target itself when rm fails: the refusal shows
        assert REFUSAL in out, f"the deny rule did not hold: {entry['line']!r} ran rm ({out!r})"
    else:
        assert survived, f"the deny rule did not hold: {entry['line']!r} removed v ({out!r})"


def test_the_refusal_names_the_program_and_the_rule(boxes: tuple[Box, Box]) -> None:
    _open, denied_box = boxes
    survived, out = denied_box.run("rm v; echo status=$?")
    assert survived and REFUSAL in out and "status=126" in out, out
    survived, out = denied_box.run("python3 -c 'import os; os.system(\"rm v\")'")
    assert survived and REFUSAL in out, out


def test_programs_not_denied_still_run_and_a_program_is_not_an_effect(boxes: tuple[Box, Box]) -> None:
    # the promise is the program: python's own unlink is not rm (README, "Security")
    _open, denied_box = boxes
    survived, out = denied_box.run("ls v && cat v && rmdir --help >/dev/null && echo fine")
    assert survived and "fine" in out, out
    survived, out = denied_box.run("python3 -c 'import os; os.remove(\"v\")'")
    assert not survived, out


def test_only_rules_naming_a_whole_program_are_masked() -> None:
    p = policy(["Bash"], ["Bash(rm:*)", "Bash(curl *)", "Bash(git push:*)", "Bash(rm*)", "Bash(ls)", "Read(./x)"])
    assert [(d.name, d.rule) for d in p.denied_programs()] == [("rm", "Bash(rm:*)"), ("curl", "Bash(curl *)")]


def test_an_agent_with_a_deny_rule_masks_the_program_for_commands_a_person_approved(tmp_path: Path) -> None:
    """The wiring: the agent's own deny rules reach its sandbox. A line the reader cannot see into
    (``python3 -c``) asks; approved, it still reaches the refusal, not ``rm``."""
    from agentloop.agent.agent import Agent
    from agentloop.testing import ScriptedModel, reply

    base = Path(tempfile.mkdtemp(prefix="agentloop-deny-agent-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    try:
        proj = base / "proj"
        (proj / ".agentloop").mkdir(parents=True)
        (base / "home").mkdir()
        (proj / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}))
        (proj / "v").write_text("keep\n")
        lines = ["python3 -c 'import os; os.system(\"rm v\")'", "x='a[$'; x+='(rm v)]'; echo $((x))", "echo v | xargs rm"]
        model = ScriptedModel([reply("", [("Bash", {"command": c})]) for c in lines] + [reply("done")])
        env = {"PATH": PATH, "HOME": str(base / "home"), "LANG": "C.UTF-8", "AGENTLOOP_HOME": str(base / "al")}
        a = Agent(cwd=str(proj), home=str(base / "al"), env=env, model=model, ask_permission=lambda c, d: "allow", trust=True)
        try:
            res = a.ask("go")
        finally:
            a.close()
        outs = [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
        assert (proj / "v").read_text() == "keep\n", outs
        assert sum(REFUSAL in o for o in outs) >= 2, outs
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- what "the program" covers: every name and copy of its file; a multi-call program fails closed ----


def _program(d: Path, name: str, body: str = "#!/bin/sh\necho real\n") -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(body)
    p.chmod(0o755)
    return p


def test_every_name_and_copy_of_a_denied_programs_file_is_masked(tmp_path: Path) -> None:
    from agentloop.agent.sandbox.deny_exec import DeniedProgram, plan_masks

    bin1, bin2 = tmp_path / "bin1", tmp_path / "bin2"
    real = _program(bin1, "zapper", "#!/bin/sh\necho zapper-real-4f1c\n")
    bin2.mkdir()
    os.link(real, bin2 / "hardname")  # another name of the same file
    (bin2 / "zapper").symlink_to(real)  # another PATH directory's copy by name
    shutil.copy(real, bin2 / "copied")  # the same bytes under another name, where programs are run from
    _program(bin2, "other", "#!/bin/sh\necho another-program\n")
    masks = plan_masks([DeniedProgram("zapper", "Bash(zapper:*)")], [str(bin1), str(bin2)], lambda p: True)
    assert set(masks.files) == {str(real), str(bin2 / "hardname"), str(bin2 / "copied")}, masks
    assert masks.unenforceable == []
    assert all(m == "agentloop: zapper is denied by rule Bash(zapper:*)" for m in masks.files.values())


def test_a_name_that_is_a_multi_call_program_cannot_be_enforced_and_says_so(tmp_path: Path) -> None:
    from agentloop.agent.sandbox.deny_exec import DeniedProgram, plan_masks

    d = tmp_path / "bin"
    _program(d, "busybox")
    (d / "zapper").symlink_to(d / "busybox")
    masks = plan_masks([DeniedProgram("zapper", "Bash(zapper:*)")], [str(d)], lambda p: True)
    assert masks.unenforceable and "Bash(zapper:*)" in masks.unenforceable[0] and "multi-call" in masks.unenforceable[0]
    assert str(d / "busybox") not in masks.files, "masking it would stop every program it provides"


def test_a_multi_call_program_beside_the_denied_one_is_masked_whole(tmp_path: Path) -> None:
    from agentloop.agent.sandbox.deny_exec import DeniedProgram, plan_masks

    d = tmp_path / "bin"
    real = _program(d, "zapper")
    _program(d, "busybox", "#!/bin/sh\necho many-programs\n")  # not a system file: never run to ask what it provides, so it counts as providing it
    masks = plan_masks([DeniedProgram("zapper", "Bash(zapper:*)")], [str(d)], lambda p: True)
    assert str(real) in masks.files and str(d / "busybox") in masks.files, masks
    assert "runs zapper" in masks.files[str(d / "busybox")]


def test_an_unenforceable_deny_rule_makes_every_command_ask(tmp_path: Path) -> None:
    d = tmp_path / "bin"
    _program(d, "busybox")
    (d / "zapper").symlink_to(d / "busybox")
    (tmp_path / "proj").mkdir()
    ss = sbx.settings_from([], mode=None, cwd=str(tmp_path / "proj"), user_home=str(tmp_path / "home"))
    s = sbx.Sandbox.create(ss, roots=[str(tmp_path / "proj")], agentloop_home=str(tmp_path / "al"), user_home=str(tmp_path / "home"))
    try:
        s.command_path = f"{d}:{PATH}"  # the PATH commands get, not agentloop's own
        assert s.needs_prompt("ls") is None
        s.denied_programs = policy(["Bash"], ["Bash(zapper:*)"]).denied_programs
        why = s.needs_prompt("ls")
        assert why is not None and "Bash(zapper:*) cannot be enforced" in why and "asks" in why
    finally:
        s.close()


# --- rules as written: one that can never match is named; a mis-cased deny fails closed ----------


def test_a_mis_cased_deny_rule_is_named_and_enforced_as_the_tool_it_means() -> None:
    """Claude Code's tool names are case-sensitive (``Bash``); ``bash(rm:*)`` would otherwise be silently dead."""
    p = policy(["Bash", "read(./x)"], ["bash(rm:*)", "Frobnicate", "mcp__srv__tool", "Web*"])
    said = p.check_names(["Bash", "Read", "Write"])
    assert any("bash(rm:*)" in w and "enforced as Bash(rm:*)" in w for w in said), said
    assert any("Frobnicate" in w and "can never match" in w for w in said), said
    assert any("read(./x)" in w and "allows nothing" in w for w in said), said
    assert not any("mcp__srv__tool" in w or "Web*" in w for w in said), "MCP names and patterns are not judged here"
    assert p.decide("Bash", {"command": "rm -rf v"}).behavior == "deny"
    assert [d.name for d in p.denied_programs()] == ["rm"], "the sandbox masks what the corrected rule names"
    assert p.decide("Read", {"file_path": "/proj/x"}).behavior == "allow", "Read needs no rule; the dead allow adds nothing"


def test_a_dead_rule_is_among_the_warnings_the_agent_says_at_start(tmp_path: Path) -> None:
    """``config_warnings`` is what ``-p`` prints on stderr and the REPL shows (``cli.agent_setup.report_config``)."""
    from agentloop.agent.agent import Agent
    from agentloop.testing import ScriptedModel, reply

    proj = tmp_path / "proj"
    (proj / ".agentloop").mkdir(parents=True)
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["bash(rm:*)"]}}))
    env = {"PATH": PATH, "HOME": str(tmp_path), "AGENTLOOP_HOME": str(tmp_path / "al")}
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), env=env, model=ScriptedModel([reply("done")]), trust=True)
    try:
        assert any("bash(rm:*)" in w and "Bash(rm:*)" in w for w in a.config_warnings), a.config_warnings
    finally:
        a.close()


def test_a_deny_rule_on_the_shell_bash_commands_run_in_cannot_be_enforced_and_every_command_asks(tmp_path: Path) -> None:
    """Masking bash would stop every Bash call, not only the ``bash`` ones the rule names: fail closed, saying why."""
    (tmp_path / "proj").mkdir()
    ss = sbx.settings_from([], mode=None, cwd=str(tmp_path / "proj"), user_home=str(tmp_path / "home"))
    s = sbx.Sandbox.create(ss, roots=[str(tmp_path / "proj")], agentloop_home=str(tmp_path / "al"), user_home=str(tmp_path / "home"))
    try:
        s.denied_programs = policy(["Bash"], ["Bash(bash:*)"]).denied_programs
        why = s.needs_prompt("ls")
        assert why is not None and "the shell every Bash command runs in" in why, why
    finally:
        s.close()
