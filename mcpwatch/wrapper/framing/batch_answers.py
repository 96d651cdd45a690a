"""A JSON-RPC batch's answers gathered for the one array that answers it (JSON-RPC's way), bounded by bytes."""

from __future__ import annotations

from typing import Any

from mcpwatch.wrapper.framing import frames


class BatchAnswers:
    """A batch's answers gathered for one JSON array of at most `cap` bytes (a body's or a frame's limit, named by
    `setting`), each as it will be sent: its encoding while the array has room, else an error saying so. Answers
    served from memory (an offered task's result, once per `tasks/result` of it) would otherwise make a small
    batch's answer any size, and a batch of many large answers would hold them all until its last; past the cap an
    answer is not even encoded."""

    def __init__(self, cap: int, setting: str) -> None:
        self.cap = cap
        self.setting = setting
        self.parts: list[bytes] = []
        self.total = 2  # the brackets

    def add(self, answer: dict[str, Any]) -> None:
        if self.total <= self.cap:
            encoded = frames.encode(answer)[:-1]  # without its newline
            if self.total + len(encoded) + 1 <= self.cap:
                self.parts.append(encoded)
                self.total += len(encoded) + 1
                return
            self.total = self.cap + 1  # the rest are not encoded at all
        text = (
            f"the batch's answers passed {self.cap / 1048576:g} MiB ({self.setting}), so this one was left out; "
            "send fewer requests in one batch"
        )
        self.parts.append(frames.encode(frames.error_response(answer.get("id"), frames.INTERNAL_ERROR, text))[:-1])

    def body(self) -> bytes:
        """The array, as one line."""
        return b"[" + b",".join(self.parts) + b"]\n"

    def lines(self) -> list[bytes]:
        """The answers one by one, each one line of JSON (for an event stream's messages)."""
        return [part + b"\n" for part in self.parts]
