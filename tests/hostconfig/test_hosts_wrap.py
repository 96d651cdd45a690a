"""`mcpwatch hosts wrap|unwrap` on each host's real-world-shaped file: every server wrapped, every other byte kept,
unwrapping byte-identical, and each refusal one line that changes nothing."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from examples import HOME_FILES, PROJECT_FILES

from mcpwatch.cli import main
from mcpwatch.hostconfig import jsonc, wrapargs

ALL_FILES = [("home", relative) for relative in HOME_FILES] + [("project", relative) for relative in PROJECT_FILES]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["hosts", *args])
    out, err = capsys.readouterr()
    return code, out, err


def path_of(home: Path, base: str, relative: str) -> Path:
    return (home if base == "home" else Path.cwd()) / relative


def servers(path: Path) -> dict[str, dict]:
    text = path.read_text()
    if path.suffix == ".toml":
        return tomllib.loads(text)["mcp_servers"]
    doc = jsonc.parse(text).value
    found = dict(doc.get("servers") or doc.get("mcpServers") or {})
    for project in (doc.get("projects") or {}).values():
        found.update(project.get("mcpServers", {}))
    return found


def snapshot(home: Path) -> dict[str, bytes | str]:
    """Every config file's bytes (a dangling link: where it points)."""
    files = {f"{base}:{rel}": path_of(home, base, rel) for base, rel in ALL_FILES}
    return {key: path.read_bytes() if path.exists() else os.readlink(path) for key, path in files.items()}


@pytest.mark.parametrize(("base", "relative"), ALL_FILES)
def test_wrap_then_unwrap_leaves_each_hosts_file_byte_identical(home, capsys, base, relative):
    path = path_of(home, base, relative)
    before = path.read_bytes()
    code, out, err = cli(capsys, "wrap", "--all", "--file", str(path))
    assert code == 0, err
    after = path.read_text()
    wrapped = servers(path)
    assert len(wrapped) >= 2
    for key, entry in wrapped.items():  # every server now runs the wrapper, by absolute path, naming its host config
        line = wrapargs.read(entry.get("command"), entry.get("args"))
        assert line is not None, (key, entry)
        assert os.path.isabs(entry["command"]) and line.name == key
        assert line.host_config == f"{path}#{key}"
        assert "url" not in entry and "httpUrl" not in entry and "serverUrl" not in entry
    for comment in ("//", "/*", "#"):  # the comments outside the rewritten values survive
        if comment in before.decode() and not (comment == "#" and path.suffix != ".toml"):
            kept = [line for line in before.decode().splitlines() if line.strip().startswith(comment)]
            assert all(line in after for line in kept), kept
    code, out, err = cli(capsys, "unwrap", "--all", "--file", str(path))
    assert code == 0, err
    assert "restored as it was" in out
    assert path.read_bytes() == before


def test_wrapping_keeps_env_cwd_timeout_and_the_command_after_the_separator(home, capsys):
    gemini = home / ".gemini" / "settings.json"
    original = servers(gemini)
    assert cli(capsys, "wrap", "pythonTools", "httpServer", "--host", "gemini-cli")[0] == 0
    now = servers(gemini)
    tools, remote = now["pythonTools"], now["httpServer"]
    for key in ("cwd", "env", "timeout", "trust"):
        assert tools[key] == original["pythonTools"][key]
    line = wrapargs.read(tools["command"], tools["args"])
    assert line is not None and list(line.inner) == ["python", *original["pythonTools"]["args"]]
    url_line = wrapargs.read(remote["command"], remote["args"])
    assert url_line is not None and url_line.url == "http://127.0.0.1:8123/mcp"
    assert url_line.headers == () and "Bearer abc" not in " ".join(remote["args"])  # not in the process list
    assert wrapargs.headers_of(url_line, remote["env"]) == {"Authorization": "Bearer abc"}
    assert remote["timeout"] == 5000


def test_wrapping_twice_changes_nothing_and_says_so(home, capsys):
    assert cli(capsys, "wrap", "--all")[0] == 0
    first = snapshot(home)
    code, out, _ = cli(capsys, "wrap", "--all")
    assert code == 0 and "already wrapped" in out and "edited" not in out
    assert snapshot(home) == first


def test_dry_run_prints_the_diff_and_changes_nothing(home, capsys, isolated_state):
    before = snapshot(home)
    code, out, _ = cli(capsys, "wrap", "--all", "--dry-run")
    assert code == 0
    assert "would be wrapped" in out and "+++ ~/.codex/config.toml (after)" in out
    assert '-command = "npx"   # the docs server' in out
    assert snapshot(home) == before
    assert not (isolated_state / "hosts").exists()


def test_a_backup_of_the_old_file_is_kept(home, capsys, isolated_state):
    cursor = home / ".cursor" / "mcp.json"
    before = cursor.read_text()
    code, out, _ = cli(capsys, "wrap", "--host", "cursor", "--all")
    assert code == 0 and "the old file is kept at" in out
    backups = list((isolated_state / "hosts" / "backups").iterdir())
    assert [b.read_text() for b in backups] == [before]
    assert (backups[0].stat().st_mode & 0o777) == 0o600


def test_unwrap_of_an_entry_changed_after_wrapping_rebuilds_it_from_the_wrap_line(home, capsys):
    codex = home / ".codex" / "config.toml"
    original = servers(codex)
    assert cli(capsys, "wrap", "--host", "codex", "--all")[0] == 0
    codex.write_text(codex.read_text().replace("startup_timeout_sec = 20", "startup_timeout_sec = 30"))
    code, out, err = cli(capsys, "unwrap", "--host", "codex", "--all")
    assert code == 0, err
    assert "rebuilt from its mcpwatch wrap line" in out
    now = servers(codex)
    assert now["docs"]["command"] == "npx" and now["docs"]["args"] == original["docs"]["args"]
    assert now["docs"]["startup_timeout_sec"] == 30 and now["docs"]["env"] == original["docs"]["env"]
    assert now["figma"] == original["figma"]  # untouched since wrapping: restored exactly


def test_structural_unwrap_restores_a_url_entry_of_every_json_host(home, capsys, isolated_state):
    before = {key: servers(path_of(home, b, r)) for key, (b, r) in enumerate(ALL_FILES)}
    assert cli(capsys, "wrap", "--all")[0] == 0
    (isolated_state / "hosts" / "wrapped.json").unlink()  # no record: unwrap must rebuild every entry
    code, _, err = cli(capsys, "unwrap", "--all")
    assert code == 0, err
    after = {key: servers(path_of(home, b, r)) for key, (b, r) in enumerate(ALL_FILES)}

    def current(files: dict) -> dict:  # Gemini's deprecated httpUrl comes back as url (Streamable HTTP too)
        return {
            k: {n: {("url" if f == "httpUrl" else f): v for f, v in e.items()} for n, e in s.items()}
            for k, s in files.items()
        }

    assert after == current(before)


# --- refusals: one line, nothing changed ----------------------------------------------------------------------


def refused(home: Path, capsys, *args: str) -> str:
    before = snapshot(home)
    code, out, err = cli(capsys, *args)
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("mcpwatch: ") and "Traceback" not in err
    assert snapshot(home) == before
    return err


def test_a_server_that_does_not_exist_is_refused(home, capsys):
    err = refused(home, capsys, "wrap", "files", "nosuch")
    assert "no server named 'nosuch'" in err and "servers:" in err and "nothing was changed" in err


def test_a_config_that_does_not_parse_is_refused(home, capsys):
    gemini = home / ".gemini" / "settings.json"
    gemini.write_text(gemini.read_text().replace('"theme": "GitHub",', '"theme": "GitHub",,'))
    err = refused(home, capsys, "wrap", "--host", "gemini-cli", "--all")
    assert "settings.json" in err and "not valid JSON: line 2" in err


def test_a_named_server_in_a_file_that_does_not_parse_is_refused(home, capsys):
    codex = home / ".codex" / "config.toml"
    codex.write_text(codex.read_text() + "\n[broken\n")
    err = refused(home, capsys, "wrap", "docs", "--host", "codex")
    assert "config.toml" in err and "not valid TOML" in err


def test_a_read_only_file_is_refused(home, capsys):
    cursor = home / ".cursor" / "mcp.json"
    cursor.chmod(0o444)
    err = refused(home, capsys, "wrap", "linear")
    assert "mcp.json is not writable (mode 0444)" in err


def test_a_file_owned_by_another_user_is_refused(home, capsys):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    cursor = home / ".cursor" / "mcp.json"
    os.chown(cursor, 65534, 65534)
    err = refused(home, capsys, "wrap", "linear")
    assert "belongs to another user (uid 65534)" in err


def test_a_file_changed_since_it_was_read_is_not_overwritten(home, monkeypatch):
    from mcpwatch.hostconfig.writer import WriteRefused, write

    cursor = home / ".cursor" / "mcp.json"
    read = cursor.read_text()
    cursor.write_text(read.replace("linear", "linear2"))  # the host wrote it in between
    with pytest.raises(WriteRefused, match="changed since mcpwatch read it"):
        write(cursor, read, read.replace("npx", "mcpwatch"))
    assert "linear2" in cursor.read_text() and "npx" in cursor.read_text()


def test_a_symlinked_config_is_edited_at_its_target_and_the_link_stays(home, capsys, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    link = home / ".cursor" / "mcp.json"
    real = dotfiles / "cursor-mcp.json"
    real.write_bytes(link.read_bytes())
    link.unlink()
    link.symlink_to(real)
    before = real.read_bytes()
    code, out, err = cli(capsys, "wrap", "linear")
    assert code == 0, err
    assert f"a symlink: edited {real}" in out
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert wrapargs.read(**{k: servers(real)["linear"][k] for k in ("command", "args")}) is not None
    assert cli(capsys, "unwrap", "linear")[0] == 0
    assert real.read_bytes() == before and link.is_symlink()


def test_a_dangling_symlink_is_refused(home, capsys, tmp_path):
    link = home / ".cursor" / "mcp.json"
    link.unlink()
    link.symlink_to(tmp_path / "gone.json")
    err = refused(home, capsys, "wrap", "--host", "cursor", "--all")
    assert "mcp.json: No such file or directory" in err
    scanned = json.loads((cli(capsys, "scan", "--json"))[1])
    assert any(f["file"] == str(link) and f["problem"] for f in scanned["files"])


def test_an_sse_server_named_is_refused_and_skipped_under_all(home, capsys):
    claude = Path.cwd() / ".mcp.json"
    claude.write_text(
        '{"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, "cmd": {"command": "true"}}}\n'
    )
    err = refused(home, capsys, "wrap", "old")
    assert "an SSE server" in err
    code, out, _ = cli(capsys, "wrap", "--all", "--file", str(claude))
    assert code == 0 and "skipped Claude Code old" in out and "Claude Code cmd (project, " in out


def test_a_codex_server_with_a_bearer_token_variable_is_refused(home, capsys):
    codex = home / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace("enabled = true", 'bearer_token_env_var = "FIGMA_TOKEN"'))
    err = refused(home, capsys, "wrap", "figma")
    assert "bearer_token_env_var" in err and "wrap it by hand" in err


def test_no_names_and_no_all_is_refused(home, capsys):
    err = refused(home, capsys, "wrap")
    assert "name the servers to change, or give --all" in err
    err = refused(home, capsys, "wrap", "--host", "nosuchhost", "--all")
    assert "--host must be one of" in err


def test_keys_that_look_like_flags_or_hold_a_hash_round_trip_and_reach_their_entry(home, capsys):
    from mcpwatch.hostconfig.timeouts import split_ref

    cursor = home / ".cursor" / "mcp.json"
    cursor.write_text(
        '{"mcpServers": {"--url": {"command": "a", "timeout": 1}, "x#y": {"url": "http://127.0.0.1:1/mcp"}}}\n'
    )
    before = cursor.read_bytes()
    assert cli(capsys, "wrap", "--host", "cursor", "--all")[0] == 0
    flaglike = servers(cursor)["--url"]
    assert "--name=--url" in flaglike["args"]
    line = wrapargs.read(flaglike["command"], flaglike["args"])
    assert line is not None and line.name == "--url" and line.inner == ("a",) and line.url is None
    hashed = wrapargs.read(servers(cursor)["x#y"]["command"], servers(cursor)["x#y"]["args"])
    assert hashed is not None and split_ref(hashed.host_config or "") == (cursor, "x#y")
    assert cli(capsys, "unwrap", "--host", "cursor", "--all")[0] == 0
    assert cursor.read_bytes() == before


def test_a_file_with_many_servers_is_parsed_a_bounded_number_of_times(home, capsys, monkeypatch):
    """Planning reads the file once and checks the result once, whatever the number of servers (a project's
    .mcp.json is anyone's to write: thousands of entries must not make wrapping quadratic)."""
    cursor = home / ".cursor" / "mcp.json"
    servers_text = ", ".join(f'"s{i}": {{"command": "c{i}", "args": ["a"]}}' for i in range(2000))
    cursor.write_text('{"mcpServers": {' + servers_text + "}}\n")
    calls = []
    real = jsonc.parse
    monkeypatch.setattr(jsonc, "parse", lambda text: calls.append(len(text)) or real(text))
    code, _, err = cli(capsys, "wrap", "--host", "cursor", "--all")
    assert code == 0, err
    big = [n for n in calls if n > 100_000]
    assert 1 <= len(big) <= 4, len(big)
    assert len(servers(cursor)) == 2000 and all(
        wrapargs.read(e["command"], e["args"]) for e in servers(cursor).values()
    )


def test_gemini_url_is_streamable_http_unless_its_type_says_sse(home, capsys):
    gemini = home / ".gemini" / "settings.json"
    gemini.write_text(
        '{"mcpServers": {"plain": {"url": "http://127.0.0.1:1/mcp"}, '
        '"typed": {"url": "http://127.0.0.1:2/mcp", "type": "http", "trust": true}, '
        '"old": {"url": "http://127.0.0.1:3/sse", "type": "sse"}}}\n'
    )
    before = gemini.read_bytes()
    err = refused(home, capsys, "wrap", "old")
    assert "an SSE server" in err
    code, _, err = cli(capsys, "wrap", "plain", "typed")
    assert code == 0, err
    now = servers(gemini)
    assert "type" not in now["typed"] and now["typed"]["trust"] is True  # Gemini has no "stdio" type: dropped
    assert wrapargs.read(now["plain"]["command"], now["plain"]["args"]).url == "http://127.0.0.1:1/mcp"
    assert cli(capsys, "unwrap", "--host", "gemini-cli", "--all")[0] == 0
    assert gemini.read_bytes() == before


def test_via_cli_without_claude_on_path_edits_the_file_and_says_so(home, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(home / "empty"))
    before = (home / ".claude.json").read_bytes()
    code, out, err = cli(capsys, "wrap", "files", "--host", "claude-code", "--via-cli")
    assert code == 0, err
    assert "`claude` is not on PATH; editing the file in place" in out and "edited the file in place" in out
    code, out, err = cli(capsys, "wrap", "linear", "--via-cli")  # Cursor has no such CLI: in place, said
    assert code == 0 and "Cursor has no CLI that carries every field" in out
    assert cli(capsys, "unwrap", "files", "--host", "claude-code")[0] == 0
    assert (home / ".claude.json").read_bytes() == before


def test_codex_inline_tables_round_trip_and_dotted_keys_are_refused_in_one_line(home, capsys):
    codex = home / ".codex" / "config.toml"
    codex.write_text(
        '# inline\n[mcp_servers]\ndocs = { command = "npx", args = ["-y", "docs"], tool_timeout_sec = 90 }\n'
        'web = { url = "http://127.0.0.1:1/mcp" }  # remote\n'
    )
    before = codex.read_bytes()
    assert cli(capsys, "wrap", "--host", "codex", "--all")[0] == 0
    now = servers(codex)
    assert wrapargs.read(now["docs"]["command"], now["docs"]["args"]).inner == ("npx", "-y", "docs")
    assert now["docs"]["tool_timeout_sec"] == 90 and "# remote" in codex.read_text()
    assert cli(capsys, "unwrap", "--host", "codex", "--all")[0] == 0
    assert codex.read_bytes() == before
    codex.write_text('mcp_servers.docs.command = "npx"\nmcp_servers.docs.args = ["x"]\n')
    err = refused(home, capsys, "wrap", "docs")
    assert "laid out in a way mcpwatch does not edit" in err


def test_lone_surrogates_nul_and_bidi_in_a_config_never_raise_and_round_trip(home, capsys):
    r"""`"\ud800"` is legal JSON but not UTF-8: it is written back as its escape, and every output shows it visibly."""
    cursor = home / ".cursor" / "mcp.json"
    text = (
        '{"mcpServers": {"\\ud800bad\\u202e": {"command": "x\\u0000y", "args": ["\\udfff"]}, '
        '"ok": {"url": "http://127.0.0.1:1/\\ud800", "headers": {"K\\udc00": "v"}}}}\n'
    )
    cursor.write_text(text)
    assert main(["hosts", "scan"]) == 0 and main(["hosts", "scan", "--json"]) == 0
    shown = capsys.readouterr().out
    assert "\\ud800bad\\u202e" in shown and "\u202e" not in shown
    code, _, err = cli(capsys, "wrap", "--host", "cursor", "--all")
    assert code == 0, err
    wrapped = servers(cursor)
    line = wrapargs.read(wrapped["\ud800bad\u202e"]["command"], wrapped["\ud800bad\u202e"]["args"])
    assert line is not None and line.inner == ("x\x00y", "\udfff") and line.name == "\ud800bad\u202e"
    ok_line = wrapargs.read(wrapped["ok"]["command"], wrapped["ok"]["args"])
    assert wrapargs.headers_of(ok_line, wrapped["ok"]["env"]) == {"K\udc00": "v"}
    assert cursor.read_bytes().decode("utf-8")  # still UTF-8
    assert cli(capsys, "unwrap", "--host", "cursor", "--all")[0] == 0
    assert cursor.read_text() == text
