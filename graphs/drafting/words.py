"""Words as the structural draft compares them: a crude stem (suffixes cut: "authentication"
and "authenticate" meet), weighted by how rare they are in the document; and a conditional
sentence cut into its condition and its consequence."""

from __future__ import annotations

import math
import re
from collections import Counter

# how a sentence states a condition ("If ...", "When ...") or the other branch ("Otherwise ...")
CONDITION = re.compile(r"^(?:if|when|whenever|unless|in case|in the event|should)\b", re.I)
OTHERWISE = re.compile(r"^(?:otherwise|else|if not|failing that)\b", re.I)
_STOP = set(
    "a an the of to in on at by for from with and or but if when whenever unless case event "
    "should is are was were be been being it its this that these those there their them they "
    "then than any all each some no not none never yes do does did has have had can could "
    "will would may might must shall as into onto over under about after before once "
    "otherwise else also just only so such which who what whether out up".split()
)
_SUFFIXES = ("ations", "ation", "ments", "ment", "ions", "ion", "ings", "ing", "ies", "ied",
             "ates", "ated", "ate", "es", "ed", "ly", "s", "e")  # fmt: skip


def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def stems(text: str) -> set[str]:
    words = re.findall(r"[a-z]+", text.lower().replace("'s", ""))
    return {stem(w) for w in words if w not in _STOP and len(w) > 1}


def opens_with_condition(text: str) -> bool:
    """Whether ``text`` states a condition or the other branch of one, at its start."""
    return bool(CONDITION.match(text) or OTHERWISE.match(text))


def split_condition(text: str) -> tuple[str, str]:
    """A conditional sentence's condition and consequence: cut at its first comma, colon or
    ``then``; a sentence with no cut is all condition."""
    m = re.search(r",|:|;|\bthen\b", text)
    return (text[: m.start()], text[m.end() :]) if m else (text, "")


class Weights:
    """Words weighted by rarity in the document (inverse document frequency)."""

    def __init__(self, texts: list[str]) -> None:
        self.n = max(1, len(texts))
        self.df = Counter(w for t in texts for w in stems(t))

    def overlap(self, a: set[str], b: set[str]) -> float:
        return sum(math.log(1 + self.n / self.df.get(w, 1)) for w in a & b)


def name_stems(name: str) -> set[str]:
    """A catalog name's words, its server left out: ``customer_service.verify_customer_account``
    -> verify, customer, account; ``ops.Orders.deliveredAt`` -> order, deliver."""
    return identifier_stems(" ".join(name.split(".")[1:] or name.split(".")))


def identifier_stems(text: str) -> set[str]:
    """The words of identifiers (``order_id``, ``deliveredAt``): cut at case and underscores."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    return stems(re.sub(r"[_\-]+", " ", spaced))
