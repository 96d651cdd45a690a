"""The shipped alerting rules: valid for `promtool check rules`, and their unit tests (`promtool test rules`,
tests/prometheus/alerts_test.yml) pass — series that must fire do, series that must not do not."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from mcpwatch.commands.prometheus import shipped

from checkout import REPO, mcpwatch_cmd
from promserver import binary

HERE = Path(__file__).parent


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary("promtool"), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_promtool_checks_the_rules_printed_by_the_command(tmp_path):
    printed = subprocess.run(mcpwatch_cmd("prometheus", "rules"), cwd=REPO, capture_output=True, text=True)
    assert printed.returncode == 0 and printed.stdout == shipped("rules")
    (tmp_path / "alerts.yml").write_text(printed.stdout)
    checked = promtool("check", "rules", "alerts.yml", cwd=tmp_path)
    assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, checked.stdout + checked.stderr


def test_promtool_unit_tests_of_the_rules_pass(tmp_path):
    (tmp_path / "alerts.yml").write_text(shipped("rules"))
    shutil.copy(HERE / "alerts_test.yml", tmp_path)
    tested = promtool("test", "rules", "alerts_test.yml", cwd=tmp_path)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_the_unit_tests_fail_when_a_rule_stops_firing(tmp_path):
    """The unit tests can fail: a deadline threshold of 50 % no longer fires for a tool cut on 20 % of its calls."""
    (tmp_path / "alerts.yml").write_text(shipped("rules").replace("> 0.05", "> 0.5"))
    shutil.copy(HERE / "alerts_test.yml", tmp_path)
    tested = promtool("test", "rules", "alerts_test.yml", cwd=tmp_path)
    assert tested.returncode != 0 and "McpwatchToolDeadlines" in tested.stdout + tested.stderr


def test_every_alert_names_its_wrapper_and_points_at_a_playbook_entry_that_exists():
    rules = shipped("rules")
    playbook = (REPO / "mcpwatch" / "docs" / "playbook.md").read_text()
    alerts = re.findall(r"- alert: (\w+)", rules)
    assert len(alerts) == 6
    summaries = re.findall(r'summary: "(.*)"', rules)
    assert len(summaries) == 6 and all("{{ $labels.wrapper }}" in s for s in summaries)
    assert all("{{ $labels.tool }}" in s or "(tool: any)" in s for s in summaries)
    runbooks = re.findall(r"runbook: '(.*)'", rules)
    assert len(runbooks) == 6
    for runbook in runbooks:
        for entry in re.findall(r'"([^"]+)"', runbook):
            assert f'**"{entry}"**' in playbook, entry
        assert "(mcpwatch/docs/playbook.md)" in runbook
