"""The front's guard, case by case: listen addresses, Host, Origin and the bearer token."""

from __future__ import annotations

import pytest

from mcpwatch.errors import UserError
from mcpwatch.httpserve.guard import FrontGuard, check_listen_address, read_token_file


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.255.255.254", "localhost", "LOCALHOST", "::1"])
def test_loopback_listen_addresses_need_no_flag(host):
    check_listen_address(host, allow_remote=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "10.0.0.1", "myhost.example", "::ffff:10.0.0.1"])
def test_other_listen_addresses_need_allow_remote(host):
    with pytest.raises(UserError, match="reachable from other machines: add --allow-remote"):
        check_listen_address(host, allow_remote=False)
    check_listen_address(host, allow_remote=True)


def headers(**values: str | list[str]) -> list[tuple[bytes, bytes]]:
    out = []
    for name, value in values.items():
        for one in value if isinstance(value, list) else [value]:
            out.append((name.replace("_", "-").encode(), one.encode()))
    return out


LOCAL = FrontGuard()
REMOTE = FrontGuard(remote=True, token="t" * 20, names=frozenset({"box.lan"}))
BEARER = "Bearer " + "t" * 20


@pytest.mark.parametrize(
    ("guard", "given", "status"),
    [
        (LOCAL, headers(host="127.0.0.1:8800"), None),
        (LOCAL, headers(host="localhost"), None),
        (LOCAL, headers(host="[::1]:8800"), None),
        (LOCAL, headers(host="127.0.0.9:1"), None),
        (LOCAL, headers(host="evil.example"), 421),
        (LOCAL, headers(host="127.0.0.1.nip.io:8800"), 421),
        (LOCAL, headers(host="[::ffff:127.0.0.1"), 421),  # unclosed bracket
        (LOCAL, headers(host="192.168.1.5:8800"), 421),
        (LOCAL, [], 400),
        (LOCAL, headers(host=["127.0.0.1", "127.0.0.1"]), 400),
        (LOCAL, headers(host="127.0.0.1", origin="http://localhost:3000"), None),
        (LOCAL, headers(host="127.0.0.1", origin="http://evil.example"), 403),
        (LOCAL, headers(host="127.0.0.1", origin="null"), 403),
        (LOCAL, headers(host="127.0.0.1", origin=["http://localhost", "http://localhost"]), 403),
        (REMOTE, headers(host="192.168.1.5:8800", authorization=BEARER), None),
        (REMOTE, headers(host="box.lan:8800", authorization=BEARER), None),
        (REMOTE, headers(host="evil.example:8800", authorization=BEARER), 421),
        (REMOTE, headers(host="192.168.1.5", origin="http://evil.example", authorization=BEARER), 403),
        (REMOTE, headers(host="192.168.1.5"), 401),
        (REMOTE, headers(host="192.168.1.5", authorization=BEARER + "x"), 401),
        (REMOTE, headers(host="192.168.1.5", authorization=[BEARER, BEARER]), 401),
    ],
)
def test_requests_are_checked_in_order(guard, given, status):
    refusal = guard.refusal(given)
    assert (refusal.status if refusal else None) == status


def test_token_files(tmp_path):
    good = tmp_path / "good"
    good.write_text("  abcdefghijklmnop-0123\n")
    assert read_token_file(str(good)) == "abcdefghijklmnop-0123"
    for content in ("", "short", "has a space in the middle of it", "é" * 20, "x" * 5000):
        bad = tmp_path / "bad"
        bad.write_text(content)
        with pytest.raises(UserError, match="must hold one token"):
            read_token_file(str(bad))
