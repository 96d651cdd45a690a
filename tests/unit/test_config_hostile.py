"""An mcpwatch.toml that cannot be used stops every program that reads it with one line naming the file (or the key),
at once: no traceback, no hang, whatever its size, nesting, encoding or kind; and no value in any key makes the
settings check raise anything but that one line."""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

from mcpwatch.config import CHECKS, load_settings, settings_from_mapping
from mcpwatch.errors import UserError

from checkout import REPO, mcpwatch_cmd

FILES = {
    "nested 5,000 deep": ("a = " + "[" * 5000 + "]" * 5000 + "\n").encode(),
    "inline tables nested 5,000 deep": ("a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n").encode(),
    "binary garbage": bytes(range(256)) * 64,
    "huge": b"# padding\n" * (300 * 1024),
    "not UTF-8": "[deadline]\nmargin_s = 5 # caf\u00e9\n".encode("latin-1"),
    "a value quoting 100,000 characters": b'[otel]\nendpoint = "' + b"x" * 100_000 + b'"\n',
    "an endpoint with an unclosed IPv6 address": b'[otel]\nendpoint = "http://[::1"\n',
    "a key holding an escape sequence": b'[deadline]\n"\\u001b]0;pwned\\u0007" = 1\n',
}


def run_in_process(config: Path, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The command run in this process (`tests/clirun.py`): a traceback would fail the test outright."""
    return run_cli(command, "--config", str(config), *args)


def run_with(config: Path, command: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """The command as a process of its own: a file that blocks its reader must not block the test."""
    return subprocess.run(
        mcpwatch_cmd(command, "--config", str(config), *args), cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def assert_one_line(result: subprocess.CompletedProcess[str], path: Path) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and len(lines[0]) < 1000, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "\x1b" not in result.stderr


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_file_that_cannot_be_used_is_one_line(tmp_path: Path, name: str) -> None:
    config = tmp_path / "mcpwatch.toml"
    config.write_bytes(FILES[name])
    for command in (("wrap", "--", "true"), ("hosts",)):
        assert_one_line(run_in_process(config, *command), config)


def test_a_directory_or_a_fifo_is_one_line_and_never_read(tmp_path: Path) -> None:
    directory = tmp_path / "dir.toml"
    directory.mkdir()
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # reading it would block forever
    for path in (directory, fifo):
        assert_one_line(run_with(path, "hosts", timeout=20), path)
    # found by name in the working directory, not given: the same, rather than silently skipped
    (tmp_path / "cwd").mkdir()
    os.mkfifo(tmp_path / "cwd" / "mcpwatch.toml")
    result = subprocess.run(mcpwatch_cmd("hosts"), cwd=tmp_path / "cwd", capture_output=True, text=True, timeout=20)
    assert result.returncode == 2 and "not a regular file" in result.stderr and len(result.stderr.splitlines()) == 1


WEIRD: list[Any] = [
    None,
    True,
    -1,
    10**400,
    float("inf"),
    float("nan"),
    "",
    "\x00\x1b[2J",
    [],
    [[[]]],
    {},
    {"a": {"b": []}},
    "http://[::1",
    "http://h:99999",
    datetime.datetime(2026, 1, 1),
    datetime.time(1, 2),
]


def test_no_value_in_any_key_raises_anything_but_a_user_error() -> None:
    tables = [(section, key) for section, keys in CHECKS.items() for key in keys]
    tables += [("hosts", "x"), ("state_sync", "policies"), ("late_results", "reuse")]
    for section, key in tables:
        for value in WEIRD:
            policy = {"match": value, "ttl_s": value}
            for raw in ({section: {key: value}}, {section: value}, {section: {key: [policy]}}):
                try:
                    settings_from_mapping(raw)
                except UserError as exc:
                    assert "\n" not in str(exc), raw


def test_a_log_path_holding_a_nul_is_refused_naming_the_key() -> None:
    """It passed the check, then the wrapper ran with every event unwritten ("embedded null byte")."""
    with pytest.raises(UserError, match=r"log\.path must be a file path without a NUL"):
        settings_from_mapping({"log": {"path": "/tmp/events\x00.db"}})
    assert settings_from_mapping({"log": {"path": "/tmp/events.db"}}).log.path == "/tmp/events.db"


def test_a_config_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Windows editors write one; TOML parsers read it as a statement ("Invalid statement (at line 1, column 1)")."""
    config = tmp_path / "mcpwatch.toml"
    config.write_bytes("\ufeff[log]\nfold_window_ms = 0\n".encode())
    assert load_settings(config).log.fold_window_ms == 0


@pytest.mark.parametrize(
    "headers",
    [{"Authorization": "Bearer a\r\nX-Injected: 1"}, {"Auth": "a\x00b"}, {"Bad Name": "v"}, {"Auth:": "v"}],
    ids=["a line break", "a NUL", "a space in the name", "a colon in the name"],
)
def test_an_otlp_header_the_http_client_would_refuse_is_refused_naming_the_key(headers: dict[str, str]) -> None:
    """It passed the check; the HTTP client refused it only when the exporter sent, on its own thread."""
    with pytest.raises(UserError, match=r"otel\.headers "):
        settings_from_mapping({"otel": {"headers": headers}})
    assert settings_from_mapping({"otel": {"headers": {"Authorization": "Bearer x\ty"}}}).otel.headers
