"""The deadline budget: precedence, every fallback and warning path, and the operator layer."""

from __future__ import annotations

import logging
import math

import pytest

from mcpwatch.config import DeadlineSettings
from mcpwatch.reliability.deadline import (
    ENV_EXPLICIT,
    ENV_HOST_TIMEOUT,
    ENV_MARGIN,
    Budget,
    DeadlinePolicy,
    InvalidValue,
    fmt_seconds,
)


class Harness:
    def __init__(self, settings: DeadlineSettings | None = None, **env: str) -> None:
        self.env: dict[str, str] = dict(env)
        self.warnings: list[str] = []
        self.policy = DeadlinePolicy(settings or DeadlineSettings(), environ=self.env, on_warning=self.warnings.append)

    def budget(self, tool: str | None = None) -> Budget:
        return self.policy.budget(tool)


# --- defaults and the derived budget ----------------------------------------------------------------------


def test_default_budget_is_host_timeout_minus_margin():
    h = Harness()
    budget = h.budget()
    assert budget.seconds == 110
    assert budget.source == "derived"
    assert budget.host_timeout_s == 120
    assert budget.margin_s == 10
    assert budget.override_s is None
    assert budget.explanation == "host timeout 120 s − margin 10 s"
    assert budget.enabled
    assert h.warnings == []


def test_to_dict_has_the_status_keys():
    assert Harness().budget().to_dict() == {
        "host_timeout_s": 120,
        "margin_s": 10,
        "override_s": None,
        "budget_s": 110,
        "source": "derived",
        "explanation": "host timeout 120 s − margin 10 s",
        "host": None,
        "clock": None,
    }


def test_env_host_timeout_and_margin_derive_the_budget():
    h = Harness(**{ENV_HOST_TIMEOUT: "300", ENV_MARGIN: "15.5"})
    budget = h.budget()
    assert budget.seconds == 284.5
    assert budget.source == "derived"
    assert budget.explanation == (f"host timeout 300 s ({ENV_HOST_TIMEOUT}) − margin 15.5 s ({ENV_MARGIN})")
    assert h.warnings == []


def test_zero_margin_is_allowed():
    h = Harness(**{ENV_MARGIN: "0"})
    assert h.budget().seconds == 120
    assert h.warnings == []


def test_surrounding_whitespace_in_a_variable_is_ignored():
    assert Harness(**{ENV_HOST_TIMEOUT: " 60 \n"}).budget().seconds == 50


@pytest.mark.parametrize("blank", ["", "   "])
def test_blank_variable_is_ignored_and_reported_once(blank):
    h = Harness(**{ENV_HOST_TIMEOUT: blank, ENV_MARGIN: blank, ENV_EXPLICIT: blank})
    for _ in range(3):
        assert h.budget().seconds == 110
    assert h.warnings == [
        f"{ENV_HOST_TIMEOUT}={blank!r} is blank; using host timeout 120 s",
        f"{ENV_MARGIN}={blank!r} is blank; using margin 10 s",
        f"{ENV_EXPLICIT}={blank!r} is blank; ignoring it",
    ]


@pytest.mark.parametrize(
    ("host", "margin", "derived"),
    [("5", "10", "-5"), ("10", "10", "0"), ("0.5", "0.5", "0")],
)
def test_non_positive_derived_budget_is_clamped_to_one_second_with_a_warning(host, margin, derived):
    h = Harness(**{ENV_HOST_TIMEOUT: host, ENV_MARGIN: margin})
    budget = h.budget()
    assert budget.seconds == 1
    assert budget.source == "clamped"
    assert "clamped to 1 s" in budget.explanation
    assert len(h.warnings) == 1
    assert f"= {derived} s is not positive; clamped to 1 s" in h.warnings[0]


def test_clamp_warning_is_given_once_for_the_same_values():
    h = Harness(**{ENV_HOST_TIMEOUT: "5", ENV_MARGIN: "10"})
    for _ in range(5):
        h.budget()
    assert len(h.warnings) == 1


# --- explicit deadline --------------------------------------------------------------------------------------


def test_env_explicit_deadline_wins_over_derived():
    h = Harness(**{ENV_EXPLICIT: "45", ENV_HOST_TIMEOUT: "300"})
    budget = h.budget()
    assert budget.seconds == 45
    assert budget.source == "explicit"
    assert budget.explanation == f"{ENV_EXPLICIT}=45"
    assert budget.host_timeout_s == 300  # still reported, for the console


def test_explicit_positive_value_is_used_as_given_even_above_the_host_timeout():
    budget = Harness(**{ENV_EXPLICIT: "500"}).budget()
    assert budget.seconds == 500
    assert budget.source == "explicit"


def test_explicit_tiny_value_is_not_clamped():
    assert Harness(**{ENV_EXPLICIT: "0.25"}).budget().seconds == 0.25


@pytest.mark.parametrize("value", ["0", "-1", "-0.5", "0.0"])
def test_explicit_zero_or_negative_disables_the_budget(value):
    h = Harness(**{ENV_EXPLICIT: value})
    budget = h.budget()
    assert budget.seconds is None
    assert not budget.enabled
    assert budget.source == "disabled"
    assert budget.explanation == f"{ENV_EXPLICIT}={value} disables the budget"
    assert h.warnings == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("abc", "must be a number of seconds, got 'abc'"),
        ("45s", "must be a number of seconds, got '45s'"),
        ("inf", "must be finite, got 'inf'"),
        ("nan", "must be finite, got 'nan'"),
        ("0.01", "is too small ('0.01' s; at least 0.05 s)"),
        ("1e-300", "is too small ('1e-300' s; at least 0.05 s)"),
    ],
)
def test_bad_explicit_value_warns_and_falls_back_to_derived(value, problem):
    h = Harness(**{ENV_EXPLICIT: value})
    budget = h.budget()
    assert budget.seconds == 110
    assert budget.source == "derived"
    assert h.warnings == [f"{ENV_EXPLICIT} {problem}; ignoring it"]


def test_bad_explicit_value_falls_back_to_the_per_tool_entry():
    h = Harness(DeadlineSettings(tools={"consult_council": 100}), **{ENV_EXPLICIT: "soon"})
    budget = h.budget("consult_council")
    assert (budget.seconds, budget.source) == (100, "tool")
    assert len(h.warnings) == 1


# --- host timeout and margin fallbacks ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("abc", "must be a number of seconds"),
        ("inf", "must be finite"),
        ("-inf", "must be finite"),
        ("nan", "must be finite"),
        ("0", "must be greater than 0"),
        ("-30", "must not be negative"),
        ("1e300", "is absurdly large ('1e300' s; at most 604800 s)"),
        ("1_0", "must be a number of seconds"),  # float() would read 10
        ("١٢٠", "must be a number of seconds"),  # float() would read 120
        ("0x10", "must be a number of seconds"),
    ],
)
def test_bad_host_timeout_warns_and_falls_back_to_the_default(value, problem):
    h = Harness(**{ENV_HOST_TIMEOUT: value})
    budget = h.budget()
    assert budget.host_timeout_s == 120
    assert budget.seconds == 110
    assert len(h.warnings) == 1
    assert h.warnings[0].startswith(ENV_HOST_TIMEOUT)
    assert value in h.warnings[0]
    assert problem in h.warnings[0]
    assert h.warnings[0].endswith("using host timeout 120 s")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("ten", "must be a number of seconds"),
        ("nan", "must be finite"),
        ("inf", "must be finite"),
        ("-1", "must not be negative"),
    ],
)
def test_bad_margin_warns_and_falls_back_to_the_default(value, problem):
    h = Harness(**{ENV_MARGIN: value})
    budget = h.budget()
    assert budget.margin_s == 10
    assert budget.seconds == 110
    assert len(h.warnings) == 1
    assert h.warnings[0].startswith(ENV_MARGIN)
    assert value in h.warnings[0]
    assert problem in h.warnings[0]
    assert h.warnings[0].endswith("using margin 10 s")


def test_bad_env_value_falls_back_to_the_toml_value_not_the_default():
    h = Harness(DeadlineSettings(host_timeout_s=200, margin_s=20), **{ENV_HOST_TIMEOUT: "x", ENV_MARGIN: "-2"})
    budget = h.budget()
    assert (budget.host_timeout_s, budget.margin_s, budget.seconds) == (200, 20, 180)
    assert h.warnings[0].endswith("using host timeout 200 s")
    assert h.warnings[1].endswith("using margin 20 s")


def test_each_bad_value_is_warned_about_once_per_value():
    h = Harness(**{ENV_HOST_TIMEOUT: "abc"})
    for _ in range(10):
        h.budget()
    assert len(h.warnings) == 1
    h.env[ENV_HOST_TIMEOUT] = "xyz"
    h.budget()
    h.budget()
    assert len(h.warnings) == 2
    h.env[ENV_MARGIN] = "abc"  # same text, different variable: a separate warning
    h.budget()
    assert len(h.warnings) == 3
    h.env[ENV_HOST_TIMEOUT] = "abc"  # seen before
    h.budget()
    assert len(h.warnings) == 3


def test_environment_is_read_afresh_on_every_call():
    h = Harness()
    assert h.budget().seconds == 110
    h.env[ENV_HOST_TIMEOUT] = "60"
    assert h.budget().seconds == 50
    h.env[ENV_EXPLICIT] = "7"
    assert h.budget().seconds == 7
    del h.env[ENV_EXPLICIT]
    assert h.budget().seconds == 50


def test_without_environ_the_process_environment_is_read_each_call(monkeypatch):
    policy = DeadlinePolicy(DeadlineSettings(), on_warning=lambda _m: None)
    assert policy.budget().seconds == 110
    monkeypatch.setenv(ENV_HOST_TIMEOUT, "90")
    assert policy.budget().seconds == 80
    monkeypatch.setenv(ENV_EXPLICIT, "0")
    assert policy.budget().source == "disabled"


def test_without_on_warning_warnings_are_logged(caplog):
    policy = DeadlinePolicy(DeadlineSettings(), environ={ENV_MARGIN: "oops"})
    with caplog.at_level(logging.WARNING, logger="mcpwatch.reliability.deadline"):
        policy.budget()
    assert any(ENV_MARGIN in r.getMessage() and "oops" in r.getMessage() for r in caplog.records)


# --- mcpwatch.toml layer ----------------------------------------------------------------------------------------


def test_toml_values_are_used_beneath_the_environment():
    settings = DeadlineSettings(host_timeout_s=200, margin_s=20)
    assert Harness(settings).budget().seconds == 180
    assert Harness(settings, **{ENV_MARGIN: "50"}).budget().seconds == 150


def test_toml_explicit_deadline():
    budget = Harness(DeadlineSettings(explicit_s=45)).budget()
    assert (budget.seconds, budget.source) == (45, "explicit")
    assert budget.explanation == "mcpwatch.toml deadline.explicit_s = 45 s"


def test_toml_explicit_zero_disables():
    budget = Harness(DeadlineSettings(explicit_s=0)).budget()
    assert budget.seconds is None
    assert budget.source == "disabled"
    assert budget.explanation == "mcpwatch.toml deadline.explicit_s = 0 s disables the budget"


def test_per_tool_budget_applies_only_to_that_tool():
    h = Harness(DeadlineSettings(tools={"consult_council": 100}))
    budget = h.budget("consult_council")
    assert (budget.seconds, budget.source) == (100, "tool")
    assert budget.explanation == "mcpwatch.toml [deadline.tools] consult_council = 100 s"
    assert h.budget("other").source == "derived"
    assert h.budget().source == "derived"


def test_precedence_env_explicit_over_tool_over_toml_explicit():
    settings = DeadlineSettings(explicit_s=45, tools={"slow": 100})
    h = Harness(settings)
    assert h.budget("slow").seconds == 100
    assert h.budget("fast").seconds == 45
    h.env[ENV_EXPLICIT] = "30"
    assert h.budget("slow").seconds == 30
    assert h.budget("fast").seconds == 30


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        (DeadlineSettings(host_timeout_s=0), "deadline.host_timeout_s"),
        (DeadlineSettings(host_timeout_s=math.inf), "deadline.host_timeout_s"),
        (DeadlineSettings(margin_s=-1), "deadline.margin_s"),
        (DeadlineSettings(margin_s=math.nan), "deadline.margin_s"),
    ],
)
def test_bad_settings_built_in_code_warn_and_use_the_default(settings, key):
    h = Harness(settings)
    assert h.budget().seconds == 110
    assert len(h.warnings) == 1
    assert h.warnings[0].startswith(key)


def test_non_finite_toml_explicit_and_tool_values_are_ignored_with_a_warning():
    h = Harness(DeadlineSettings(explicit_s=math.nan, tools={"t": math.inf}))
    assert h.budget("t").source == "derived"
    assert h.warnings == [
        "deadline.tools.t must be finite, got inf; ignoring it",
        "deadline.explicit_s must be finite, got nan; ignoring it",
    ]


def test_toml_budgets_below_the_floor_built_in_code_are_ignored_with_a_warning():
    h = Harness(DeadlineSettings(explicit_s=0.01, tools={"t": 5e-324}))
    assert h.budget("t").source == "derived"
    assert h.warnings == [
        "deadline.tools.t is too small (5e-324 s; at least 0.05 s); ignoring it",
        "deadline.explicit_s is too small (0.01 s; at least 0.05 s); ignoring it",
    ]


def test_a_derived_budget_below_the_floor_is_clamped_to_one_second():
    h = Harness(**{ENV_HOST_TIMEOUT: "10", ENV_MARGIN: "9.99"})
    budget = h.budget()
    assert (budget.seconds, budget.source) == (1, "clamped")
    assert h.warnings == [
        "deadline budget host timeout 10 s (MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC) − margin 9.99 s "
        "(MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC) = 0.01 s is below 0.05 s; clamped to 1 s"
    ]
    h.env[ENV_MARGIN] = "9.95"  # exactly the floor is a usable budget
    assert h.budget().seconds == pytest.approx(0.05)


# --- operator layer ---------------------------------------------------------------------------------------------


def test_operator_margin_wins_over_env_until_reset():
    h = Harness(**{ENV_MARGIN: "20"})
    budget = h.policy.set_margin(5)
    assert budget.seconds == 115
    assert budget.margin_s == 5
    assert budget.explanation == "host timeout 120 s − margin 5 s (operator)"
    assert h.policy.overrides == {"host_timeout_s": None, "margin_s": 5.0, "deadline_s": None}
    assert h.policy.reset().seconds == 100
    assert h.policy.overrides == {"host_timeout_s": None, "margin_s": None, "deadline_s": None}


def test_operator_host_timeout_wins_over_env():
    h = Harness(**{ENV_HOST_TIMEOUT: "60"})
    assert h.policy.set_host_timeout("300").seconds == 290
    assert h.budget().host_timeout_s == 300


def test_operator_deadline_wins_over_env_explicit_and_per_tool():
    h = Harness(DeadlineSettings(tools={"slow": 100}), **{ENV_EXPLICIT: "45"})
    budget = h.policy.set_deadline(30)
    assert (budget.seconds, budget.source, budget.override_s) == (30, "override", 30)
    assert budget.explanation == "operator override 30 s"
    assert h.budget("slow").seconds == 30
    cleared = h.policy.set_deadline(None)
    assert (cleared.seconds, cleared.source, cleared.override_s) == (45, "explicit", None)


@pytest.mark.parametrize("value", [0, -5, "0"])
def test_operator_deadline_of_zero_or_less_disables(value):
    h = Harness()
    budget = h.policy.set_deadline(value)
    assert budget.seconds is None
    assert budget.source == "disabled"
    assert budget.override_s == float(value)
    assert "operator override" in budget.explanation


def test_operator_override_skips_bad_env_values_without_warning():
    h = Harness(**{ENV_EXPLICIT: "junk"})
    h.policy.set_deadline(20)
    assert h.budget().seconds == 20
    assert h.warnings == []


def test_operator_margin_can_drive_the_clamp():
    h = Harness()
    budget = h.policy.set_margin(200)
    assert (budget.seconds, budget.source) == (1, "clamped")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "margin must be a number of seconds, got 'abc'"),
        ("", "margin must be a number of seconds, got ''"),
        (None, "margin must be a number of seconds, got None"),
        ([5], "margin must be a number of seconds, got [5]"),
        (True, "margin must be a number of seconds, got True"),
        (math.inf, "margin must be finite, got inf"),
        ("nan", "margin must be finite, got 'nan'"),
        (-1, "margin must not be negative, got -1"),
        (604_801, "margin is absurdly large (604801 s; at most 604800 s)"),
        (10**400, "margin is absurdly large"),
    ],
)
def test_refused_margin_changes_nothing(value, message):
    h = Harness()
    h.policy.set_margin(3)
    before = (h.budget(), h.policy.overrides)
    with pytest.raises(InvalidValue) as caught:
        h.policy.set_margin(value)
    assert str(caught.value).startswith(message)
    assert (h.budget(), h.policy.overrides) == before


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "host timeout must be greater than 0, got 0"),
        ("-3", "host timeout must not be negative, got '-3'"),
        (False, "host timeout must be a number of seconds, got False"),
        (float("nan"), "host timeout must be finite, got nan"),
        (1e9, "host timeout is absurdly large"),
    ],
)
def test_refused_host_timeout_changes_nothing(value, message):
    h = Harness()
    before = (h.budget(), h.policy.overrides)
    with pytest.raises(InvalidValue) as caught:
        h.policy.set_host_timeout(value)
    assert str(caught.value).startswith(message)
    assert (h.budget(), h.policy.overrides) == before


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.inf, "deadline must be finite"),
        ("-inf", "deadline must be finite"),
        ("later", "deadline must be a number of seconds"),
        (True, "deadline must be a number of seconds"),
        (604_800.5, "deadline is absurdly large (604800.5 s; at most 604800 s)"),
        (-1e9, "deadline is absurdly large (-1000000000.0 s; at most 604800 s)"),
    ],
)
def test_refused_deadline_changes_nothing(value, message):
    h = Harness()
    h.policy.set_deadline(40)
    before = (h.budget(), h.policy.overrides)
    with pytest.raises(InvalidValue) as caught:
        h.policy.set_deadline(value)
    assert str(caught.value).startswith(message)
    assert (h.budget(), h.policy.overrides) == before


@pytest.mark.parametrize("value", [5e-324, 0.01, "0.049", 0.04999])
def test_operator_deadline_below_the_floor_is_refused_as_too_small(value):
    h = Harness()
    before = (h.budget(), h.policy.overrides)
    with pytest.raises(InvalidValue, match=r"^deadline is too small \(.* s; at least 0\.05 s\)$"):
        h.policy.set_deadline(value)
    assert (h.budget(), h.policy.overrides) == before


def test_operator_deadline_at_the_floor_is_used_and_zero_still_disables():
    h = Harness()
    assert h.policy.set_deadline(0.05).seconds == 0.05
    assert h.policy.set_deadline(0).source == "disabled"
    assert h.policy.set_deadline(-3).source == "disabled"
    assert h.policy.set_deadline(-604_800).source == "disabled"


def test_invalid_value_is_a_value_error():
    assert issubclass(InvalidValue, ValueError)


def test_operator_accepts_numeric_text_and_a_week_exactly():
    h = Harness()
    assert h.policy.set_margin(" 2.5 ").margin_s == 2.5
    assert h.policy.set_margin("+.5e1").margin_s == 5.0
    assert h.policy.set_host_timeout(604_800).host_timeout_s == 604_800
    for odd in ("1_0", "١٢٠", "0x10", "1e", ""):
        with pytest.raises(InvalidValue, match="must be a number of seconds"):
            h.policy.set_margin(odd)
    assert h.policy.budget().margin_s == 5.0


@pytest.mark.parametrize(("value", "text"), [(120.0, "120"), (0.5, "0.5"), (1e20, "1e+20"), (-5.0, "-5")])
def test_fmt_seconds(value, text):
    assert fmt_seconds(value) == text


def test_a_budget_set_by_a_wrap_flag_is_explained_by_the_flag(monkeypatch):
    from mcpwatch.reliability import deadline

    monkeypatch.setattr(deadline, "SET_BY_FLAG", {ENV_EXPLICIT: "--deadline"})
    explained = DeadlinePolicy(DeadlineSettings(), environ={ENV_EXPLICIT: "1.0"}).budget(None)
    assert (explained.seconds, explained.explanation) == (1.0, "--deadline=1.0")
    monkeypatch.setattr(deadline, "SET_BY_FLAG", {ENV_HOST_TIMEOUT: "--host-timeout"})
    derived = DeadlinePolicy(DeadlineSettings(), environ={ENV_HOST_TIMEOUT: "30"}).budget(None)
    assert "(--host-timeout)" in derived.explanation and ENV_HOST_TIMEOUT not in derived.explanation
