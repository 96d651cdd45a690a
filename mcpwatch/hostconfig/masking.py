"""Secrets in a server's command line or URL shown as `***`: `hosts scan` runs on shared screens and its JSON ends
up in bug reports, while the tokens it would show (header values, `--token X`, `?api_key=`) stay in the file. The
host's file and the diff of `wrap --dry-run` (which the user asked to see) are left as they are."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
# names of flags, query parameters and URL parts whose value is a credential
_SECRET_NAME = re.compile(
    r"(?i)(^key$|token|secret|passw|pwd|api[-_]?key|apikey|auth|credential|bearer|cookie|session|signature|sig$|"
    r"access[-_]?key|private[-_]?key|client[-_]?secret)"
)


def _url(text: str) -> str:
    """A URL with its password and its secret-named query values masked; anything else unchanged."""
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        name, colon, _ = user.partition(":")
        netloc = f"{name}{':' + MASK if colon else ''}@{host}"
    query = "&".join(
        f"{name}={MASK}" if sep and _SECRET_NAME.search(name) else f"{name}{sep}{value}"
        for name, sep, value in (pair.partition("=") for pair in parts.query.split("&"))
    )
    if netloc == parts.netloc and query == parts.query:
        return text
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def header(item: str) -> str:
    """`Name: value` with the value masked (every header value may be a credential: Authorization, X-Api-Key…)."""
    name, colon, value = item.partition(":")
    return f"{name}: {MASK}" if colon and value.strip() else item


def args(items: list[str]) -> list[str]:
    """A command line with the values of `--header`, of secret-named flags (`--token X`, `--api-key=X`) and the
    secrets in URLs masked."""
    out: list[str] = []
    pending: str | None = None  # what the previous flag says this item is: "header" | "value"
    for item in items:
        if pending == "header":
            out.append(header(item))
        elif pending == "value" and not item.startswith("-"):
            out.append(MASK)
        else:
            pending = None
        if pending is not None:
            pending = None
            continue
        flag, equals, value = item.partition("=")
        if item.startswith("-") and flag == "--header":
            out.append(f"--header={header(value)}" if equals else item)
            pending = None if equals else "header"
        elif item.startswith("-") and _SECRET_NAME.search(flag):
            out.append(f"{flag}={MASK}" if equals else item)
            pending = None if equals else "value"
        else:
            out.append(_url(item))
    return out


def url(text: str) -> str:
    return _url(text)
