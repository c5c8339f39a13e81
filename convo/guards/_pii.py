"""Finding personal data in text: emails, phone numbers, card numbers (Luhn) and IBANs
(mod-97), for the ``pii`` guard (API.md §27).

A card or an IBAN counts only when its check digits are right: a 16-digit order number that
fails Luhn, or an IBAN-shaped string with wrong check digits, is left alone. A phone number is
7–15 digits (an optional ``+``, spaces, dots, dashes, parentheses) that is none of these: a
card- or IBAN-shaped number (valid or not), a date (``2024-11-28``, ``28.11.2024``,
``11/28/2024``), a decimal number, or a number right after "order", "invoice", "ref", "no."
or ``#`` (an order number). docs/guards.md reports precision and recall on the corpus in
tests/data/pii.
"""

from __future__ import annotations

import re
from typing import Final

KINDS: Final = ("email", "phone", "card", "iban")

EMAIL: Final = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
                          r"\.[A-Za-z]{2,}(?![\w-])")
IBAN: Final = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
CARD: Final = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
PHONE: Final = re.compile(r"(?<![\w#+/.-])(?:\+|\()?\d[\d .()\-/]{4,24}\d(?![\w/-])")
DATE: Final = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b")
DECIMAL: Final = re.compile(r"\d+\.\d+")
ORDER: Final = re.compile(r"(?:order|invoice|ref|reference|tracking|ticket|no\.?|nr\.?|#)"
                          r"\s*[:#]?\s*$", re.IGNORECASE)

# What every find holds at least (an email's ``@``, an IBAN's country and check digits, the
# digits of a phone or card number with their separators): a text without it has none, and
# is passed over without the patterns above.
MAYBE: Final = re.compile(r"@|[A-Z]{2}\d\d|\d[\d .()/-]{4,}\d")
_NOT_DIGIT: Final = re.compile(r"\D")
# Cheaper still, for ASCII text (``\d`` also matches other scripts' digits): a phone or card
# number has at least 7 digits; an IBAN at least 15 capitals and digits, 2 digits among them.
# Counted in C (the text's bytes, each digit made ``0``, each capital ``A``, anything else
# ``.``), where one pattern search costs several times as much on a reply's sentence; a text
# with fewer than 7 digits and capitals (a short sentence, most often) after one count.
_CLASSES: Final = bytes(48 if 48 <= b <= 57 else 65 if 65 <= b <= 90 else 46 for b in range(256))

Span = tuple[int, int, str]


def luhn(digits: str) -> bool:
    """Whether ``digits`` passes the Luhn check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(text: str) -> bool:
    """Whether ``text`` (spaces allowed) is an IBAN with valid check digits (mod 97 == 1)."""
    compact = text.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def maybe(text: str) -> bool:
    """Whether ``text`` may hold any find (``False``: it holds none); cheap, for most replies."""
    if "@" in text or not text.isascii():
        return MAYBE.search(text) is not None
    classes = text.encode().translate(_CLASSES)
    kept = len(classes) - classes.count(46)  # its digits and capitals
    if kept < 7:
        return False  # no phone or card number, no IBAN
    digits = classes.count(48)
    if digits >= 7 or (digits >= 2 and kept >= 15):
        return MAYBE.search(text) is not None
    return False


def find(text: str, kinds: tuple[str, ...] = KINDS) -> list[Span]:
    """The personal data in ``text``: ``(start, end, kind)``, in order, not overlapping."""
    if not maybe(text):
        return []
    spans: list[Span] = []
    taken: list[tuple[int, int]] = []  # card- and IBAN-shaped numbers, valid or not

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    if "email" in kinds:
        for m in EMAIL.finditer(text):
            spans.append((m.start(), m.end(), "email"))
            taken.append(m.span())
    for m in IBAN.finditer(text):
        if free(*m.span()):
            taken.append(m.span())
            if "iban" in kinds and iban_valid(m.group()):
                spans.append((m.start(), m.end(), "iban"))
    for m in CARD.finditer(text):
        digits = _NOT_DIGIT.sub("", m.group())
        if free(*m.span()) and 13 <= len(digits) <= 19:
            taken.append(m.span())
            if "card" in kinds and luhn(digits):
                spans.append((m.start(), m.end(), "card"))
    if "phone" in kinds:
        for m in PHONE.finditer(text):
            start = m.start()
            if m.group().startswith("(") and m.group().count("(") > m.group().count(")"):
                start += 1  # "(020 7946 0958)": the parenthesis is the sentence's
            if free(start, m.end()) and _phone(text, text[start:m.end()], start):
                spans.append((start, m.end(), "phone"))
    return sorted(spans)


def _phone(text: str, found: str, start: int) -> bool:
    digits = sum(ch.isdigit() for ch in found)
    if not 7 <= digits <= 15 or found.count("(") != found.count(")"):
        return False
    before = text[:start].rstrip(" ")
    if before[-1:].isdigit():
        return False  # the tail of a longer number (an order number's)
    if DATE.match(found) or DECIMAL.fullmatch(found) or "/" in found:
        return False
    if not found.startswith("+") and digits >= 13 and found.isdigit():
        return False  # a long plain number: an id, not a phone
    return ORDER.search(text[max(0, start - 16):start]) is None


def redact(text: str, kinds: tuple[str, ...] = KINDS) -> str:
    """``text`` with each find replaced by ``[email]``, ``[phone]``, ``[card]`` or ``[iban]``."""
    spans = find(text, kinds)
    if not spans:
        return text
    out, at = [], 0
    for start, end, kind in spans:
        out += [text[at:start], f"[{kind}]"]
        at = end
    out.append(text[at:])
    return "".join(out)
