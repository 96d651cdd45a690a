"""`mcpwatch hosts wrap|unwrap|scan` attacked: as a user with odd but real files (CRLF, TOML control characters,
thousands of servers), as another process writing the file meanwhile, as another local user owning mcpwatch's own
records, and as someone reading the operator's screen. Each test failed before the fix it names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcpwatch.cli import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["hosts", *args])
    out, err = capsys.readouterr()
    return code, out, err


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
