"""What the council asks its models at each stage, and how it reads the answers back.

Peer review is anonymised: reviewers see "Response A", "Response B", … and end with a `FINAL RANKING:` list,
which `parse_ranking` reads. The chairman sees the answers with their authors and the aggregate ranking.
`fallback_synthesis` is the council's own answer when the chairman cannot give one in time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

RANKING_HEADER = "FINAL RANKING:"
_LABEL = re.compile(r"Response\s+([A-Z]{1,2})\b")
_REVIEW_BLOCK = re.compile(
    r"^Response ([A-Z]{1,2}):\n(.*?)(?=\n\nResponse [A-Z]{1,2}:\n|\n\nEvaluate each|\Z)", re.S | re.M
)
_SYNTH_BLOCK = re.compile(
    r"^Answer from (.+?):\n(.*?)(?=\n\nAnswer from |\n\nPeer-review ranking|\n\nNo peer review|\Z)", re.S | re.M
)
_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)", re.S)


def label_for(index: int) -> str:
    """A, B, …, Z, AA, AB, …: the anonymous names of the answers under review."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return letters[index] if index < 26 else letters[index // 26 - 1] + letters[index % 26]


def answer_messages(query: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are one member of a council of models. Answer the question directly."},
        {"role": "user", "content": query},
    ]


def review_messages(query: str, labelled: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    blocks = "\n\n".join(f"Response {label}:\n{text.strip()}" for label, text in labelled)
    prompt = (
        "You are reviewing anonymised answers to the question below.\n\n"
        f"Question: {query}\n\n{blocks}\n\n"
        "Evaluate each response briefly for accuracy and insight. Then end with the line "
        f"'{RANKING_HEADER}' followed by a numbered list from best to worst, for example:\n"
        f"{RANKING_HEADER}\n1. Response C\n2. Response A"
    )
    return [{"role": "user", "content": prompt}]


def synthesis_messages(
    query: str, answers: Sequence[tuple[str, str]], ranking: Sequence[tuple[str, int]] | None
) -> list[dict[str, str]]:
    blocks = "\n\n".join(f"Answer from {name}:\n{text.strip()}" for name, text in answers)
    if ranking:
        lines = "\n".join(f"{i}. {name} ({points} points)" for i, (name, points) in enumerate(ranking, 1))
        review = f"Peer-review ranking (Borda count, best first):\n{lines}"
    else:
        review = "No peer review is available; weigh the answers yourself."
    prompt = (
        "You are the chairman of a council of models. Several members answered the question below.\n\n"
        f"Question: {query}\n\n{blocks}\n\n{review}\n\n"
        "Write the council's single best answer: keep what the members agree on, resolve disagreements, "
        "and say where uncertainty remains."
    )
    return [{"role": "user", "content": prompt}]


def parse_ranking(text: str, labels: Sequence[str]) -> list[str]:
    """The labels in ranked order: from the FINAL RANKING section if there is one, else from the whole text."""
    known = set(labels)
    upper = text.upper()
    at = upper.rfind(RANKING_HEADER)
    section = text[at + len(RANKING_HEADER) :] if at >= 0 else text
    ranked: list[str] = []
    for match in _LABEL.finditer(section):
        label = match.group(1)
        if label in known and label not in ranked:
            ranked.append(label)
    return ranked


def review_blocks(prompt: str) -> dict[str, str]:
    """The labelled answers inside a review prompt (the simulated reviewer reads them)."""
    return {m.group(1): m.group(2).strip() for m in _REVIEW_BLOCK.finditer(prompt)}


def synthesis_blocks(prompt: str) -> list[tuple[str, str]]:
    """The (author, answer) pairs inside a synthesis prompt (the simulated chairman reads them)."""
    return [(m.group(1), m.group(2).strip()) for m in _SYNTH_BLOCK.finditer(prompt)]


def first_sentence(text: str, limit: int = 220) -> str:
    flat = " ".join(text.split())
    match = _SENTENCE.match(flat)
    sentence = match.group(1) if match else flat
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def fallback_synthesis(
    query: str, answers: Sequence[tuple[str, str]], ranking: Sequence[tuple[str, int]] | None, reason: str
) -> str:
    """The council's own summary when no chairman answer is available: the best-ranked answer, then the rest."""
    if not answers:
        return ""
    order = [name for name, _ in ranking] if ranking else []
    by_name = dict(answers)
    ordered = [n for n in order if n in by_name] + [n for n, _ in answers if n not in order]
    best = ordered[0]
    lines = [
        f"Summary of {len(answers)} council answer{'s' if len(answers) != 1 else ''} ({reason}).",
        "",
        f"Best-ranked answer ({best}):" if ranking else f"First answer ({best}):",
        by_name[best].strip(),
    ]
    others = ordered[1:]
    if others:
        lines += ["", "Other members, in brief:"]
        lines += [f"- {name}: {first_sentence(by_name[name])}" for name in others]
    return "\n".join(lines)
