"""`mcpwatch hosts wrap|unwrap|scan` attacked: as a user with odd but real files (CRLF, TOML control characters,
thousands of servers), as another process writing the file meanwhile, as another local user owning mcpwatch's own
records, and as someone reading the operator's screen. Each test failed before the fix it names."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.cli import main
from mcpwatch.hostconfig import plan as planner
from mcpwatch.hostconfig import wrapargs, writer


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["hosts", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_crlf_file_stays_crlf_when_keys_are_inserted_and_round_trips(home, capsys, isolated_state):
    """An entry without `args` gains one, and a URL entry is rewritten whole: every new line ends as the file's do."""
    claude = Path.cwd() / ".mcp.json"
    text = (
        '{\r\n  "mcpServers": {\r\n    "a": {\r\n      "command": "x"\r\n    },\r\n    "u": {\r\n'
        '      "type": "http",\r\n      "url": "https://example.invalid/mcp"\r\n    }\r\n  }\r\n}\r\n'
    )
    claude.write_bytes(text.encode())
    code, _, err = cli(capsys, "wrap", "--all", "--file", str(claude))
    assert code == 0, err
    data = claude.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n"), data
    (isolated_state / "hosts" / "wrapped.json").unlink()  # rebuilt from the wrap lines: CRLF as well
    assert cli(capsys, "unwrap", "--all", "--file", str(claude))[0] == 0
    data = claude.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n"), data


def test_a_crlf_codex_url_entry_stays_crlf(home, capsys):
    codex = home / ".codex" / "config.toml"
    codex.write_bytes(b'[mcp_servers.web]\r\nurl = "https://example.invalid/mcp"\r\nenabled = true\r\n')
    before = codex.read_bytes()
    assert cli(capsys, "wrap", "web")[0] == 0
    data = codex.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n"), data
    assert cli(capsys, "unwrap", "web")[0] == 0
    assert codex.read_bytes() == before


def test_a_codex_value_holding_del_is_written_as_valid_toml(home, capsys):
    """TOML forbids a raw U+007F in a string (JSON does not): the wrapped args must still parse."""
    codex = home / ".codex" / "config.toml"
    codex.write_text('[mcp_servers.odd]\ncommand = "srv"\nargs = ["x\\u007fy", "tab\\there"]\n')
    before = codex.read_bytes()
    code, _, err = cli(capsys, "wrap", "odd")
    assert code == 0, err
    entry = tomllib.loads(codex.read_text())["mcp_servers"]["odd"]
    assert wrapargs.read(entry["command"], entry["args"]).inner == ("srv", "x\x7fy", "tab\there")
    assert cli(capsys, "unwrap", "odd")[0] == 0
    assert codex.read_bytes() == before


def test_finding_codex_entries_is_linear_in_the_number_of_tables(home, capsys, monkeypatch):
    """A config.toml of N servers: each entry's span is found without walking every header again (N² before)."""
    codex = home / ".codex" / "config.toml"
    count = 1500
    codex.write_text("".join(f'[mcp_servers.s{i}]\ncommand = "c"\nargs = ["a"]\n\n' for i in range(count)))
    walked = [0]

    class Counted(tuple[Any, ...]):
        def __iter__(self) -> Iterator[Any]:
            for item in tuple.__iter__(self):
                walked[0] += 1
                yield item

    real_scan = planner.tomlspans.scan

    def counting_scan(text: str) -> Any:
        layout = real_scan(text)
        return type(layout)(Counted(layout.headers), Counted(layout.values))

    monkeypatch.setattr(planner.tomlspans, "scan", counting_scan)
    planner._toml_layout.cache_clear()
    code, _, err = cli(capsys, "wrap", "--host", "codex", "--all")
    assert code == 0, err
    assert walked[0] < 40 * count, walked[0]
    assert len(tomllib.loads(codex.read_text())["mcp_servers"]) == count


def test_the_indent_of_a_json_file_of_many_servers_is_worked_out_once_per_text(home, capsys):
    """Every inserted or replaced value asked for the file's indent step, which split the whole file each time:
    N servers cost N whole-file splits (minutes for 10,000 servers)."""
    from mcpwatch.hostconfig import jsonc

    cursor = home / ".cursor" / "mcp.json"
    cursor.write_text(json.dumps({"mcpServers": {f"s{i}": {"command": "c"} for i in range(2000)}}, indent=2))
    jsonc.unit_indent.cache_clear()
    code, _, err = cli(capsys, "wrap", "--host", "cursor", "--all")
    assert code == 0, err
    assert jsonc.unit_indent.cache_info().misses <= 4, jsonc.unit_indent.cache_info()
    assert '\n      "args": ["wrap"' in cursor.read_text()  # the two-space step, as the file has it


@pytest.mark.parametrize(
    ("relative", "text"),
    [
        (".mcp.json", '{"mcpServers": {"a": {"command": "x"}}, "z": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        (".codex/config.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
        (".codex/config.toml", "a = " + "{b=" * 2_000 + "1" + "}" * 2_000 + "\n"),
    ],
)
def test_deep_nesting_is_one_line_in_scan_wrap_and_host_config_never_a_recursion_error(home, capsys, relative, text):
    """Python's C JSON parser and tomllib both raise RecursionError on deep nesting: a project's .mcp.json is
    anyone's to write, and a wrapper with --host-config pointing at it must still start."""
    from mcpwatch.commands.wrap import apply_host_config

    path = (Path.cwd() if relative == ".mcp.json" else home) / relative
    path.write_text(text)
    code, out, _ = cli(capsys, "scan", "--json")
    assert code == 0
    problems = [f["problem"] for f in json.loads(out)["files"] if f["file"] == str(path)]
    assert problems and "deep" in problems[0], problems
    code, _, err = cli(capsys, "wrap", "a", "--file", str(path))
    assert code == 2 and err.count("\n") == 1 and "deep" in err
    assert path.read_text() == text
    warning = apply_host_config(f"{path}#a", None, {})
    assert warning is not None and "deep" in warning


def test_a_fifo_swapped_in_after_the_check_does_not_block_the_read(tmp_path, monkeypatch):
    """Another process replaces the config with a FIFO between the check and the open: the read must not wait
    for a writer that never comes (a wrapper's --host-config is read at start)."""
    import threading

    from mcpwatch.hostconfig import entries
    from mcpwatch.hostconfig.formats import GENERIC

    fifo = tmp_path / "mcp.json"
    os.mkfifo(fifo)
    monkeypatch.setattr(entries.Path, "is_file", lambda self: True)  # the check saw the regular file
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.append(entries.read_config(fifo, GENERIC, "file")), daemon=True)
    reader.start()
    reader.join(timeout=30)  # a guard against a hang, not a speed bound: the read returns at once or never
    if reader.is_alive():  # unblock the stuck open so the thread ends
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
    assert found and found[0].problem == "not a regular file", found


def test_a_write_by_the_host_while_mcpwatch_writes_is_not_overwritten(home, monkeypatch):
    """The host saves the file after mcpwatch compared it but while its new copy is being flushed: the host's text
    stays, and the refusal says so (the compare happened before the slow part before)."""
    cursor = home / ".cursor" / "mcp.json"
    read = cursor.read_text()
    hosts_text = read.replace("linear", "linear2")
    real_fsync = os.fsync

    def host_writes_meanwhile(fd: int) -> None:
        real_fsync(fd)
        cursor.write_text(hosts_text)

    monkeypatch.setattr(writer.os, "fsync", host_writes_meanwhile)
    with pytest.raises(writer.WriteRefused, match="changed since mcpwatch read it"):
        writer.write(cursor, read, read.replace("npx", "mcpwatch"))
    assert cursor.read_text() == hosts_text
    assert not [p for p in cursor.parent.iterdir() if p.name.endswith(".tmp")]


def test_the_files_group_is_kept(home, capsys):
    if os.geteuid() != 0:
        pytest.skip("giving a file a group this user is not in needs root")
    cursor = home / ".cursor" / "mcp.json"
    os.chown(cursor, os.geteuid(), 4242)
    cursor.chmod(0o640)
    assert cli(capsys, "wrap", "linear")[0] == 0
    info = cursor.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (os.geteuid(), 4242, 0o640)


def _wrapped_then_poisoned(home: Path, capsys, isolated_state: Path) -> tuple[Path, Path]:
    """Wrap Cursor's `linear`, then put a record in wrapped.json that would 'restore' a command of someone else's."""
    cursor = home / ".cursor" / "mcp.json"
    assert cli(capsys, "wrap", "linear")[0] == 0
    records = isolated_state / "hosts" / "wrapped.json"
    data = json.loads(records.read_text())
    for value in data.values():
        value["original"] = '{"command": "/tmp/evil", "args": []}'
    records.write_text(json.dumps(data))
    return cursor, records


@pytest.mark.parametrize("how", ["group-writable", "another user's"])
def test_records_another_user_could_write_are_refused_not_restored(home, capsys, isolated_state, how):
    cursor, records = _wrapped_then_poisoned(home, capsys, isolated_state)
    if how == "group-writable":
        records.chmod(0o664)
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(records, 65534, 65534)
    before = cursor.read_bytes()
    code, out, err = cli(capsys, "unwrap", "linear")
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and "wrapped.json" in err and "Traceback" not in err
    assert cursor.read_bytes() == before and b"/tmp/evil" not in before


def test_a_hosts_folder_another_user_could_write_is_refused_before_any_file_is_written(home, capsys, isolated_state):
    cursor = home / ".cursor" / "mcp.json"
    folder = isolated_state / "hosts"
    (folder / "backups").mkdir(parents=True)
    folder.chmod(0o777)
    before = cursor.read_bytes()
    code, _, err = cli(capsys, "wrap", "linear")
    assert code == 2 and err.count("\n") == 1 and "hosts" in err and "chmod" in err
    assert cursor.read_bytes() == before


def test_a_wrapped_url_servers_headers_go_to_its_env_not_its_arguments(home, capsys, isolated_state, monkeypatch):
    """A process's arguments are in `ps` for every local user; its environment is its owner's alone, as the host's
    own copy of the header is. Unwrapping, exact or rebuilt, gives the headers back and the env as it was."""
    import argparse

    from mcpwatch.commands.wrap import _header_lines
    from mcpwatch.errors import UserError

    claude = Path.cwd() / ".mcp.json"
    claude.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "bare": {"type": "http", "url": "https://a.invalid/mcp", "headers": {"Authorization": "Bearer T1"}},
                    "withenv": {
                        "type": "http",
                        "url": "https://b.invalid/mcp",
                        "headers": {"X-Api-Key": "T2", "X-Team": "blue"},
                        "env": {"MCPWATCH_HEADER_1": "taken", "KEEP": "1"},
                    },
                }
            },
            indent=2,
        )
    )
    before = json.loads(claude.read_text())["mcpServers"]
    assert cli(capsys, "wrap", "--all", "--file", str(claude))[0] == 0
    now = json.loads(claude.read_text())["mcpServers"]
    for key, secret in (("bare", "T1"), ("withenv", "T2")):
        assert not any(secret in arg for arg in now[key]["args"]), now[key]["args"]
        line = wrapargs.read(now[key]["command"], now[key]["args"])
        assert wrapargs.headers_of(line, now[key]["env"]) == before[key]["headers"]
    assert now["withenv"]["env"]["MCPWATCH_HEADER_1"] == "taken" and now["withenv"]["env"]["KEEP"] == "1"
    line = wrapargs.read(now["withenv"]["command"], now["withenv"]["args"])
    for variable in line.header_envs:  # what the wrapper sends, started with the entry's env by the host
        monkeypatch.setenv(variable, now["withenv"]["env"][variable])
    sent = _header_lines(argparse.Namespace(header=[], header_env=list(line.header_envs)))
    assert sent == ["X-Api-Key: T2", "X-Team: blue"]
    with pytest.raises(UserError, match="--header-env NOPE: the variable is not set"):
        _header_lines(argparse.Namespace(header=[], header_env=["NOPE"]))
    (isolated_state / "hosts" / "wrapped.json").unlink()  # rebuilt from the wrap lines and the env
    assert cli(capsys, "unwrap", "--all", "--file", str(claude))[0] == 0
    assert json.loads(claude.read_text())["mcpServers"] == before


def test_scan_masks_header_values_and_url_secrets_in_the_table_and_the_json(home, capsys):
    claude = Path.cwd() / ".mcp.json"
    claude.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "remote": {
                        "type": "http",
                        "url": "https://example.invalid/mcp?api_key=SECRETQUERY&region=eu",
                        "headers": {"Authorization": "Bearer SECRETHEADER"},
                    },
                    "local": {"command": "srv", "args": ["--token", "SECRETARG", "--api-key=SECRETEQ", "--port", "80"]},
                    "handmade": {
                        "command": "mcpwatch",
                        "args": ["wrap", "--url", "https://x.invalid/mcp", "--header", "Authorization: Bearer SECRET"],
                    },
                }
            }
        )
    )
    for args in (("scan",), ("scan", "--json")):
        code, out, _ = cli(capsys, *args)
        assert code == 0
        for secret in ("Bearer SECRET", "SECRETQUERY", "SECRETARG", "SECRETEQ"):
            assert secret not in out, (args, secret)
        assert "Authorization: ***" in out and "region=eu" in out and "--port 80" in out
