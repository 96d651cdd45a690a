"""mcpwatch.toml: where it is found, what it accepts, and the one-line error (exit 2) for everything else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcpwatch.config import find_config_file, load_settings, settings_from_mapping
from mcpwatch.errors import UserError
from mcpwatch.reliability.seconds import ABSURD_S

from checkout import REPO, mcpwatch_cmd


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_manuals_example_loads_with_every_key(tmp_path: Path) -> None:
    page = (REPO / "mcpwatch" / "docs" / "configuration.md").read_text(encoding="utf-8")
    example = page.split("## mcpwatch.toml", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    settings = load_settings(write(tmp_path / "mcpwatch.toml", example))
    assert (settings.deadline.host_timeout_s, settings.deadline.margin_s) == (None, 10.0)  # unset: the host decides
    assert settings.deadline.tools == {"consult_council": 100.0}
    assert settings.hosts == {"codex-mcp-client": {"wall_s": 300}}
    assert settings.tombstones.cap == 100_000 and settings.upstream.write_timeout_s == 5.0
    assert len(settings.state_sync.policies) == 2 and settings.log.flush_interval_ms == 100
    assert settings.console.theme == "mcpwatch-dark" and settings.source == str(tmp_path / "mcpwatch.toml")
    assert settings.limits.max_frame_mb == 16 and settings.limits.max_frame_bytes == 16 * 1024 * 1024
    assert (settings.front.head_timeout_s, settings.operator.min_body_kib_s) == (5.0, 16.0)
    assert (settings.tasks.bridge, settings.tasks.ttl_s, settings.tasks.reuse_s) == ("required", 3600.0, 600.0)


def test_search_order_explicit_then_env_then_cwd_then_user_dir(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_config_file() is None and load_settings() == load_settings(None)
    user = write(isolated_state / "config" / "mcpwatch" / "mcpwatch.toml", "[operator]\nport = 1\n")
    assert find_config_file() == user
    here = write(tmp_path / "mcpwatch.toml", "[operator]\nport = 2\n")
    assert find_config_file() == here
    named = write(tmp_path / "named.toml", "[operator]\nport = 3\n")
    monkeypatch.setenv("MCPWATCH_CONFIG", str(named))
    assert load_settings().operator.port == 3
    explicit = write(tmp_path / "explicit.toml", "[operator]\nport = 4\n")
    assert load_settings(explicit).operator.port == 4
    with pytest.raises(UserError, match=r"config file not found: .*missing.toml$"):
        load_settings(tmp_path / "missing.toml")
    monkeypatch.setenv("MCPWATCH_CONFIG", str(tmp_path / "gone.toml"))
    with pytest.raises(UserError, match=r"gone.toml \(from MCPWATCH_CONFIG\)"):
        load_settings()


HUGE = "1" + "0" * 400


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[nope]\n", "[nope] is not a known section"),
        ("deadline = 3\n", "[deadline] must be a table"),
        ("[deadline]\nmargin = 3\n", "deadline.margin is not a known key (known in [deadline]: host_timeout_s"),
        ("[deadline]\nmargin_s = 'ten'\n", "deadline.margin_s must be a number of seconds, got 'ten'"),
        ("[deadline]\nmargin_s = true\n", "deadline.margin_s must be a number of seconds, got True"),
        ("[deadline]\nmargin_s = nan\n", "deadline.margin_s must be finite, got nan"),
        ("[deadline]\nmargin_s = -inf\n", "deadline.margin_s must be finite, got -inf"),
        ("[deadline]\nmargin_s = -1\n", "deadline.margin_s must not be negative, got -1"),
        ("[deadline]\nhost_timeout_s = 0\n", "deadline.host_timeout_s must be greater than 0"),
        ("[deadline]\nhost_timeout_s = 1e9\n", "deadline.host_timeout_s is absurdly large (1000000000.0 s; at most"),
        (f"[deadline]\nmargin_s = {HUGE}\n", "deadline.margin_s is absurdly large (a 401-digit number; at most"),
        (f"[deadline]\nmargin_s = -{HUGE}\n", "deadline.margin_s must not be negative, got a 401-digit number"),
        ("[deadline]\ntools = 3\n", "deadline.tools must be a table of tool name = seconds"),
        ("[deadline.tools]\nslow = 0\n", "deadline.tools.slow must be greater than 0"),
        ("[deadline.tools]\nslow = 0.001\n", "deadline.tools.slow is too small (0.001 s; at least 0.05 s)"),
        ("[deadline]\nexplicit_s = 5e-324\n", "deadline.explicit_s is too small (5e-324 s; at least 0.05 s)"),
        ("[deadline]\npropagate = 1\n", "deadline.propagate must be true or false, got 1"),
        ("[tombstones]\ncap = 0\n", "tombstones.cap must be a whole number from 1 to 100000000, got 0"),
        ("[log]\nqueue_max = 1.5\n", "log.queue_max must be a whole number from 1 to 10000000, got 1.5"),
        ("[log]\nflush_interval_ms = 0\n", "log.flush_interval_ms must be a whole number from 1 to 60000, got 0"),
        ("[log]\nflush_interval_ms = 10000000000000\n", "log.flush_interval_ms must be a whole number from 1 to"),
        ("[log]\npath = ''\n", "log.path must be a non-empty string"),
        ("[operator]\nport = 70000\n", "operator.port must be a whole number from 0 to 65535, got 70000"),
        ("[state_sync]\ndefault_cache_control = 'max-age'\n", "must be one of no-store, immutable, got 'max-age'"),
        ("[state_sync]\npolicies = 1\n", "state_sync.policies must be an array of tables"),
        ("[[state_sync.policies]]\nmatch = 'a.*'\nttl = 3\n", "state_sync.policies[0] has unknown key(s): ttl"),
        ("[[state_sync.policies]]\nmatch = 'a..b'\ncache_control = 'immutable'\n", "[state_sync] "),
        ("[state_sync]\npolicies = [5]\n", "state_sync.policies[0] must be a table, got 5"),
        ("[tasks]\noffer = ['docs.*', '']\n", "tasks.offer[1] must be a non-empty string, got ''"),
        ("[[late_results.reuse]]\nmatch = 'a'\nttl_s = 'soon'\n", "late_results.reuse[0].ttl_s must be a number"),
        ("[limits]\nmax_frame_mb = 0\n", "limits.max_frame_mb must be a whole number from 1 to 1024, got 0"),
        ("[limits]\nmax_frame_mb = 2.5\n", "limits.max_frame_mb must be a whole number from 1 to 1024, got 2.5"),
        ("[limits]\nmax_frame_mb = 'big'\n", "limits.max_frame_mb must be a whole number from 1 to 1024, got 'big'"),
        ("[deadline\n", "not valid TOML"),
        # a key that looks like another is quoted as TOML writes it, told apart from the one it mimics
        ("[[late_results.reuse]]\nmatch = 'a'\n'ttl_s ' = 1\n", 'reuse[0] has unknown key(s): "ttl_s " (known: '),
        ("[late_results]\n'keep_bytes ' = 2000\n", 'late_results."keep_bytes " is not a known key'),
        ("['late_results ']\nkeep_bytes = 2000\n", '["late_results "] is not a known section'),
        ('[deadline.tools]\n"a.b\\u001b" = "x"\n', 'deadline.tools."a.b\\u001b" must be a number of seconds'),
    ],
)
def test_each_bad_value_names_the_file_and_the_key(tmp_path: Path, toml: str, message: str) -> None:
    path = write(tmp_path / "bad.toml", toml)
    with pytest.raises(UserError) as caught:
        load_settings(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_a_number_python_will_not_read_is_one_line(tmp_path: Path) -> None:
    """TOML integers have no length limit; Python reads none past 4,300 digits and raised a ValueError out of the
    parser, which reached the user as a traceback."""
    path = write(tmp_path / "long.toml", "[late_results]\nkeep_bytes = " + "9" * 5000 + "\n")
    with pytest.raises(UserError) as caught:
        load_settings(path)
    assert str(caught.value) == f"{path}: not usable TOML: a number too long to read (thousands of digits)"


def test_explicit_deadline_may_be_zero_or_negative_to_disable() -> None:
    settings = settings_from_mapping({"deadline": {"explicit_s": -5, "margin_s": 0}})
    assert (settings.deadline.explicit_s, settings.deadline.margin_s) == (-5.0, 0.0)
    assert settings_from_mapping({"deadline": {"explicit_s": -ABSURD_S}}).deadline.explicit_s == -ABSURD_S
    with pytest.raises(UserError, match=r"deadline.explicit_s is absurdly large \(a 401-digit number; at most"):
        settings_from_mapping({"deadline": {"explicit_s": -(10**400)}})  # the operator refuses it too


def test_the_cli_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.toml", f"[deadline]\nmargin_s = {HUGE}\n")
    for command in (["wrap", "--config", str(bad), "--no-log", "--", "cat"], ["watch", "--config", str(bad)]):
        done = subprocess.run(
            mcpwatch_cmd(*command), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"mcpwatch: {bad}: deadline.margin_s is absurdly large (a 401-digit number; at most 604800 s)"
        ]
        assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_file_that_cannot_be_read_as_text(tmp_path: Path) -> None:
    not_utf8 = tmp_path / "latin.toml"
    not_utf8.write_bytes(b"[log]\npath = '\xe9'\n")
    with pytest.raises(UserError, match=r"latin.toml: not UTF-8 text \(byte 14\)"):
        load_settings(not_utf8)
    with pytest.raises(UserError, match="is a directory, not a config file"):
        load_settings(tmp_path)  # a directory


@pytest.mark.parametrize("value", ["0", "-1", "true", '"fast"', "2e6"])
def test_a_minimum_body_rate_must_be_a_positive_rate(tmp_path: Path, value: str) -> None:
    with pytest.raises(UserError, match=r"front.min_body_kib_s must be a number of KiB/s above 0"):
        load_settings(write(tmp_path / "mcpwatch.toml", f"[front]\nmin_body_kib_s = {value}\n"))
