"""Plausible text for the simulated backend: different per model (a voice) and per question (its terms).

Deterministic: everything comes from the `random.Random` the backend seeds per call.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence

from mcpwatch.council.prompts import RANKING_HEADER, first_sentence

_STOP = {
    "about", "after", "also", "and", "are", "best", "between", "both", "can", "could", "does", "doing", "for",
    "from", "have", "how", "into", "is", "it", "its", "more", "most", "should", "some", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "what", "when", "where", "which", "while", "who",
    "why", "will", "with", "would", "your", "you", "our", "we", "use", "using", "way", "ways", "good", "small",
    "choose", "pick", "decide", "make", "need", "want", "get", "one", "two", "new", "better", "any", "all",
    "explain", "tell", "give", "write", "list", "compare", "describe", "think", "know", "really", "just", "like",
    "choice", "option", "options", "thing", "things", "idea", "kind", "sort", "lot", "much", "many", "very",
}  # fmt: skip
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.\-]{2,}")

_OPENINGS = (
    "Short answer: {topic} comes down to {t0}, and the rest follows from that.",
    "The most useful way to approach {topic} is through {t0} and {t1}.",
    "It depends on your constraints, but for {topic} the sensible default is to start from {t0}.",
    "Most of the difficulty in {topic} sits in {t0}; {t1} matters less than it first appears.",
    "There are two defensible positions on {topic}, and the choice hinges on {t1}.",
)
_POINTS = (
    "Measure {t} before changing anything: the first intuition about it is often wrong.",
    "Treat {t} as a trade-off, not a goal; name what you give up for it.",
    "Keep {t} simple at first and add structure only when a real case demands it.",
    "The failure mode to watch is {t} drifting silently; make it visible early.",
    "Evidence on {t} is mixed, so prefer a reversible decision.",
    "Write down the assumptions behind {t}; most disagreements trace back to them.",
    "Small, frequent adjustments to {t} beat one large redesign.",
    "Ask who bears the cost of {t}; that usually settles the priority.",
)
_CLOSINGS = (
    "If you only do one thing, make {t0} explicit.",
    "Revisit the decision once you have real data on {t1}.",
    "In practice, the teams that do this well review {t0} regularly.",
    "That covers the main considerations; the details depend on your context.",
)
_VERDICTS = (
    "is clear and well argued",
    "covers the key trade-offs",
    "is accurate but thin on specifics",
    "makes a good point about the main risk",
    "is plausible but leaves out an important caveat",
    "is concise and practical",
    "overstates its confidence",
)


def key_terms(query: str, count: int = 3) -> list[str]:
    """The question's most content-bearing words: names (capitalised mid-sentence) and long words first."""
    scored: list[tuple[int, int, str]] = []
    for index, match in enumerate(_WORD.finditer(query)):
        term = match.group().strip(".-")
        low = term.lower()
        if low in _STOP or (low.endswith("ly") and len(low) > 4) or any(low == t.lower() for _, _, t in scored):
            continue  # stop words, adverbs, repeats
        before = query[: match.start()].rstrip()
        named = term[:1].isupper() and bool(before) and before[-1] not in ".?!:"
        scored.append((-(2 * named + (len(term) >= 6)), index, term if named else low))
    seen = [term for _, _, term in sorted(scored)]
    while len(seen) < count:
        seen.append(("the approach", "the constraints", "the evidence")[len(seen) % 3])
    return seen[:count]


def _topic(query: str) -> str:
    flat = " ".join(query.split()).rstrip("?.! ")
    if len(flat) > 80:
        flat = flat[:79].rstrip() + "…"
    return f"“{flat}”" if flat else "this question"


def _voice(model: str) -> int:
    """A stable per-model style, so members sound different from one another."""
    return int.from_bytes(hashlib.sha256(model.encode()).digest()[:2], "big") % 3


def answer_text(model: str, query: str, rng: random.Random) -> str:
    t0, t1, t2 = key_terms(query)
    topic = _topic(query)
    opening = rng.choice(_OPENINGS).format(topic=topic, t0=t0, t1=t1)
    points = [p.format(t=t) for p, t in zip(rng.sample(_POINTS, 3), (t0, t1, t2), strict=True)]
    closing = rng.choice(_CLOSINGS).format(t0=t0, t1=t1)
    voice = _voice(model)
    if voice == 0:
        body = "\n".join(f"- {p}" for p in points)
        return f"{opening}\n\n{body}\n\n{closing}"
    if voice == 1:
        body = "\n".join(f"{i}. {p}" for i, p in enumerate(points, 1))
        return f"{opening}\n\nThree considerations:\n{body}\n\n{closing}"
    return f"{opening} {' '.join(points)} {closing}"


def _quality(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:2], "big") / 65535.0


def review_text(blocks: dict[str, str], rng: random.Random) -> str:
    """A short critique of each anonymised answer, ending in the FINAL RANKING list."""
    scored = sorted(blocks, key=lambda label: -(0.6 * _quality(blocks[label]) + 0.4 * rng.random()))
    lines = [f"Response {label} {rng.choice(_VERDICTS)}." for label in sorted(blocks)]
    ranking = [f"{i}. Response {label}" for i, label in enumerate(scored, 1)]
    return "\n".join([*lines, "", RANKING_HEADER, *ranking])


def _sentences(text: str) -> list[str]:
    """An answer's sentences, without list markers or the "Three considerations:" lead-in."""
    flat = " ".join(re.sub(r"(?m)^\s*(?:[-*]|\d+\.)\s+|^Three considerations:\s*$", " ", text).split())
    return [part for part in re.split(r"(?<=[.!?])\s+", flat) if part]


def synthesis_text(query: str, answers: Sequence[tuple[str, str]], rng: random.Random, *, ranked: bool = False) -> str:
    """The chairman's synthesis: the council's view, a sentence from each member (never the same one twice),
    and a recommendation. `ranked`: the answers come best first from peer review."""
    t0, t1, _ = key_terms(query)
    topic = _topic(query)
    if not answers:
        return f"The council could not form a view on {topic}."
    quoted: set[str] = set()

    def fresh(text: str) -> str:
        for sentence in _sentences(text):
            if sentence not in quoted:
                quoted.add(sentence)
                return sentence
        return first_sentence(text)

    lead, lead_text = answers[0]
    agreed = rng.choice(("agrees", "broadly agrees", "converges on the view"))
    intro = f"The strongest contribution came from {lead}" if ranked else f"{lead} puts it this way"
    lines = [
        f"The council {agreed} that {topic} turns on {t0}, with {t1} as the main secondary concern.",
        "",
        f"{intro}: {fresh(lead_text)}",
    ]
    lines += [f"{name} adds: {fresh(text)}" for name, text in answers[1:]]
    lines += ["", f"Recommendation: make {t0} explicit first, then revisit {t1} once there is evidence."]
    return "\n".join(lines)
