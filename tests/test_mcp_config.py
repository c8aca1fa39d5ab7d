"""MCP configuration: Claude Code's .mcp.json format, settings files, ${VAR} expansion, and errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentloop.mcp.config import (
    ConfigError,
    ServerConfig,
    add_server,
    expand,
    load_servers,
    parse_servers,
    read_object,
    remove_server,
    scope_path,
)


def write(p: Path, data: Any) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def test_mcp_json_in_claude_code_format_loads_stdio_http_and_sse_servers(tmp_path: Path) -> None:
    write(tmp_path / "proj/.mcp.json", {
        "mcpServers": {
            "api": {"type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp",
                    "headers": {"Authorization": "Bearer ${API_KEY}"}},
            "db": {"command": "npx", "args": ["-y", "some-server"], "env": {"DB_URL": "${DB_URL}"}, "timeout": 1500},
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
            "new": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
        },
        "otherKey": True,
    })
    servers = load_servers(str(tmp_path / "proj"), str(tmp_path / "home"))
    assert list(servers) == ["api", "db", "old", "new"]
    assert servers["api"].transport == "http" and servers["api"].headers == {"Authorization": "Bearer ${API_KEY}"}
    assert servers["db"].transport == "stdio" and servers["db"].args == ("-y", "some-server")
    assert servers["db"].timeout_ms == 1500
    assert servers["old"].transport == "sse"
    assert servers["new"].transport == "http"
    assert servers["db"].source.endswith(".mcp.json") and servers["db"].scope == "project"


def test_var_and_var_with_default_expand_in_every_field() -> None:
    cfg = parse_servers({"mcpServers": {
        "s": {"command": "${BIN}", "args": ["--db", "${DB:-local.db}", "${EMPTY:-fallback}"], "env": {"K": "x${K}y"}},
        "h": {"type": "http", "url": "${BASE:-http://127.0.0.1:1}/mcp", "headers": {"A": "Bearer ${TOKEN}"}},
    }}, "cfg.json")
    env = {"BIN": "/bin/srv", "K": "1", "EMPTY": "", "TOKEN": "t0k", "BASE": "http://127.0.0.1:5"}
    s = cfg["s"].expanded(env)
    assert s.command == "/bin/srv" and s.args == ("--db", "local.db", "fallback") and s.env == {"K": "x1y"}
    h = cfg["h"].expanded(env)
    assert h.url == "http://127.0.0.1:5/mcp" and h.headers == {"A": "Bearer t0k"}


def test_unset_variable_without_default_names_file_place_and_variable() -> None:
    cfg = parse_servers({"mcpServers": {"h": {"type": "http", "url": "http://x/mcp", "headers": {"A": "Bearer ${NOPE_TOKEN}"}}}}, "/p/.mcp.json")
    with pytest.raises(ConfigError) as e:
        cfg["h"].expanded({})
    msg = str(e.value)
    assert msg.startswith("/p/.mcp.json: mcpServers.h.headers.A:") and "NOPE_TOKEN is not set" in msg


def test_text_that_only_looks_like_a_variable_is_left_alone() -> None:
    assert expand("$HOME ${1X} ${} $${A:-b}", {}) == "$HOME ${1X} ${} $b"


def test_higher_precedence_source_wins_the_whole_entry(tmp_path: Path) -> None:
    home, proj = tmp_path / "home", tmp_path / "proj"
    write(home / "settings.json", {"mcpServers": {"a": {"command": "user-a"}, "u": {"command": "only-user"}}})
    write(proj / ".agentloop/settings.json", {"mcpServers": {"a": {"command": "proj-settings-a", "args": ["1"]}}})
    write(proj / ".mcp.json", {"mcpServers": {"a": {"command": "mcp-json-a"}, "b": {"command": "mcp-json-b"}}})
    write(proj / ".agentloop/settings.local.json", {"mcpServers": {"b": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}})
    s = load_servers(str(proj), str(home))
    assert s["a"].command == "mcp-json-a" and s["a"].args == ()
    assert s["b"].transport == "http" and s["b"].scope == "local"
    assert s["u"].scope == "user"


BAD: list[tuple[Any, str]] = [
    ({"mcpServers": []}, "mcpServers: must be an object"),
    ({"mcpServers": {"a": "npx"}}, "mcpServers.a: must be an object"),
    ({"mcpServers": {"a": {"args": []}}}, "mcpServers.a: a stdio server needs a 'command'"),
    ({"mcpServers": {"a": {"command": 3}}}, "mcpServers.a.command: must be a string"),
    ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "mcpServers.a.args: must be an array"),
    ({"mcpServers": {"a": {"command": "x", "args": ["ok", 2]}}}, "mcpServers.a.args[1]: must be a string"),
    ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, "mcpServers.a.env.K: must be a string"),
    ({"mcpServers": {"a": {"url": "http://h/mcp"}}}, "has a 'url' but no 'type'"),
    ({"mcpServers": {"a": {"type": "ws", "url": "ws://h"}}}, "mcpServers.a.type: 'ws' is not supported"),
    ({"mcpServers": {"a": {"type": "http"}}}, "mcpServers.a: a http server needs a 'url'"),
    ({"mcpServers": {"a": {"type": "http", "url": "ftp://h"}}}, "mcpServers.a.url: must start with http"),
    ({"mcpServers": {"a": {"type": "sse", "url": "http://h", "headers": []}}}, "mcpServers.a.headers: must be an object"),
    ({"mcpServers": {"a": {"command": "x", "timeout": -1}}}, "mcpServers.a.timeout:"),
    ({"mcpServers": {"a": {"command": "x", "timeout": True}}}, "mcpServers.a.timeout:"),
    ({"mcpServers": {"a b": {"command": "x"}}}, "mcpServers.a b: a server name may use only"),
    ({"mcpServers": {"a": {"command": "x\u0000y"}}}, "mcpServers.a.command: must not contain a NUL"),
]


@pytest.mark.parametrize(("data", "expected"), BAD)
def test_bad_entries_are_config_errors_naming_file_and_place(tmp_path: Path, data: Any, expected: str) -> None:
    p = write(tmp_path / ".mcp.json", data)
    with pytest.raises(ConfigError) as e:
        load_servers(str(tmp_path), str(tmp_path / "home"))
    assert str(e.value).startswith(f"{p}: ")
    assert expected in str(e.value)


@pytest.mark.parametrize(("text", "expected"), [
    ("{\n  \"mcpServers\": {,}\n}", "not valid JSON at line 2, column 18"),
    ("[1, 2]", "must hold a JSON object, not an array"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"n": ' + "1" * 5000 + "}", "not usable JSON"),
    ("\xff\xfe", "is not UTF-8 text (byte 0"),
])
def test_unparseable_files_are_config_errors(tmp_path: Path, text: str, expected: str) -> None:
    p = tmp_path / ".mcp.json"
    p.write_text(text, encoding="latin-1" if "\xff" in text else "utf-8")
    with pytest.raises(ConfigError) as e:
        load_servers(str(tmp_path), str(tmp_path / "home"))
    assert str(e.value).startswith(f"{p}: ") and expected in str(e.value)


def test_a_malformed_settings_file_is_named_too(tmp_path: Path) -> None:
    p = write(tmp_path / "home/settings.json", {"mcpServers": {"x": {"command": ["a"]}}})
    with pytest.raises(ConfigError, match=f"^{p}: mcpServers.x.command: must be a string"):
        load_servers(str(tmp_path / "proj"), str(tmp_path / "home"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
entry_keys = st.sampled_from(["command", "args", "env", "type", "url", "headers", "timeout", "x"])
entries = st.dictionaries(entry_keys, json_values | st.sampled_from(["http", "sse", "stdio", "http://h/m"]), max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(json_values, st.dictionaries(st.just("mcpServers"), st.dictionaries(st.text(max_size=6), entries | json_values, max_size=3))))
def test_any_json_gives_servers_or_a_config_error(data: Any) -> None:
    try:
        servers = parse_servers(data, "f.json")
    except ConfigError as e:
        assert str(e).startswith("f.json: ")
        return
    for s in servers.values():
        try:
            s.expanded({})
        except ConfigError as e:
            assert str(e).startswith("f.json: ")


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_file_bytes_give_servers_or_a_config_error(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    d = tmp_path_factory.mktemp("fuzz")
    (d / ".mcp.json").write_bytes(raw)
    try:
        load_servers(str(d), str(d / "home"))
    except ConfigError as e:
        assert str(e).startswith(str(d / ".mcp.json"))


def test_add_writes_claude_code_shape_and_keeps_other_keys_then_remove(tmp_path: Path) -> None:
    p = write(tmp_path / ".mcp.json", {"mcpServers": {"keep": {"command": "k"}}, "note": "mine"})
    add_server(str(p), ServerConfig("api", "http", url="https://h/mcp", headers={"A": "b"}))
    add_server(str(p), ServerConfig("db", "stdio", command="npx", args=("-y", "srv"), env={"K": "${V}"}))
    data = json.loads(p.read_text())
    assert data["note"] == "mine"
    assert data["mcpServers"]["api"] == {"type": "http", "url": "https://h/mcp", "headers": {"A": "b"}}
    assert data["mcpServers"]["db"] == {"command": "npx", "args": ["-y", "srv"], "env": {"K": "${V}"}}
    with pytest.raises(ConfigError, match="mcpServers.db: already exists"):
        add_server(str(p), ServerConfig("db", "stdio", command="other"))
    assert remove_server(str(p), "db") is True
    assert remove_server(str(p), "db") is False
    assert list(json.loads(p.read_text())["mcpServers"]) == ["keep", "api"]


def test_scopes_map_to_files(tmp_path: Path) -> None:
    cwd, home = str(tmp_path / "p"), str(tmp_path / "h")
    assert scope_path("project", cwd, home) == str(tmp_path / "p/.mcp.json")
    assert scope_path("user", cwd, home) == str(tmp_path / "h/settings.json")
    assert scope_path("local", cwd, home) == str(tmp_path / "p/.agentloop/settings.local.json")


def test_read_object_of_missing_file_is_none(tmp_path: Path) -> None:
    assert read_object(str(tmp_path / "nope.json")) is None


def test_disabled_mcpjson_servers_are_not_loaded(tmp_path: Path) -> None:
    home, proj = tmp_path / "home", tmp_path / "proj"
    write(proj / ".mcp.json", {"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}})
    write(proj / ".agentloop/settings.local.json", {"disabledMcpjsonServers": ["b"], "mcpServers": {"c": {"command": "c"}}})
    assert list(load_servers(str(proj), str(home))) == ["a", "c"]
    # the list names .mcp.json servers only: a server of the same name elsewhere still loads
    write(home / "settings.json", {"disabledMcpjsonServers": ["c"]})
    assert list(load_servers(str(proj), str(home))) == ["a", "c"]
    write(home / "settings.json", {"disabledMcpjsonServers": "b"})
    with pytest.raises(ConfigError, match=r"settings.json: disabledMcpjsonServers: must be an array of server names"):
        load_servers(str(proj), str(home))
