"""convo.guards' built-ins (API.md §27): pii on the corpus in tests/data/pii (precision and
recall as docs/guards.md reports them; no false positive where a check digit decides),
max_length, matches, json_schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from convo import LinearTemplate, MockModel, Runner, ToolingTemplate, UserTemplate
from convo.guards import json_schema, matches, max_length, pii
from convo.guards._pii import find, iban_valid, luhn, redact

DATA = Path(__file__).resolve().parents[1] / "data" / "pii"


def corpus() -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    positives = [tuple(line.split("\t")) for line in
                 (DATA / "positives.tsv").read_text(encoding="utf-8").splitlines()]
    misses = [tuple(line.split("\t")) for line in
              (DATA / "near_misses.tsv").read_text(encoding="utf-8").splitlines()]
    return positives, misses  # type: ignore[return-value]


def test_the_corpus_is_big_enough() -> None:
    positives, misses = corpus()
    assert len(positives) >= 200 and len(misses) >= 200
    assert {kind for kind, _, _ in positives} == {"email", "phone", "card", "iban"}
    assert {why for why, _ in misses} == {"luhn", "iban_check", "date", "order"}


def test_precision_and_recall_on_the_corpus_are_what_docs_say() -> None:
    positives, misses = corpus()
    found = sum(any(text[s:e] == item and k == kind for s, e, k in find(text))
                for kind, text, item in positives)
    false = sum(len(find(text)) for _, text in misses) + sum(
        sum(1 for s, e, k in find(text) if text[s:e] != item or k != kind)
        for kind, text, item in positives)
    recall, precision = found / len(positives), found / (found + false)
    assert (found, false) == (240, 0)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "guards.md").read_text()
    assert f"| recall | {recall:.3f} (240 of 240) |" in docs
    assert f"| precision | {precision:.3f} (0 false finds in 470 texts) |" in docs


def test_no_false_positive_where_a_check_digit_decides() -> None:
    _, misses = corpus()
    decided = [text for why, text in misses if why in ("luhn", "iban_check")]
    assert len(decided) == 130
    assert [text for text in decided if find(text)] == []
    assert [text for text in decided if redact(text) != text] == []


def test_the_check_digits() -> None:
    assert luhn("4111111111111111") and not luhn("4111111111111112")
    assert iban_valid("DE89 3704 0044 0532 0130 00") and not iban_valid("DE88370400440532013000")
    assert redact("pay 4111-1111-1111-1111 to DE89370400440532013000, mail a@b.io or "
                  "+44 20 7946 0958") == "pay [card] to [iban], mail [email] or [phone]"
    assert redact("on 2024-11-28, order #415-555-0132, 4111 1111 1111 1112") == \
        "on 2024-11-28, order #415-555-0132, 4111 1111 1111 1112"


def _reply_with(guard: object, reply: str) -> str:
    session = Runner(MockModel([reply]), LinearTemplate([UserTemplate("hi"),
                                                         ToolingTemplate([])]),
                     guards=[guard]).run()
    return str(session.messages[-1].content)


def test_pii_redacts_a_reply_and_names_itself() -> None:
    guard = pii()
    assert (guard.name, guard.on, guard.action, guard.stream) == ("pii", "output", "redact",
                                                                  "hold")
    assert _reply_with(guard, "Card 4111 1111 1111 1111, mail bob@example.com.") == \
        "Card [card], mail [email]."
    assert _reply_with(pii(kinds=("email",)), "4111 1111 1111 1111 bob@example.com") == \
        "4111 1111 1111 1111 [email]"
    assert _reply_with(pii(action="block"), "bob@example.com") == \
        "Sorry, I can't help with that."
    with pytest.raises(ValueError, match="pii: kinds must be among 'email', 'phone', 'card', "
                                         "'iban'; got 'ssn'"):
        pii(kinds=("ssn",))


def test_max_length_matches_and_json_schema() -> None:
    assert _reply_with(max_length(5, message="Too long."), "123456") == "Too long."
    assert _reply_with(max_length(6), "123456") == "123456"
    assert _reply_with(matches(r"(?i)password"), "the PASSWORD is") == \
        "Sorry, I can't help with that."
    schema = {"type": "object", "required": ["answer"],
              "properties": {"answer": {"type": "integer"}}}
    assert _reply_with(json_schema(schema), '{"answer": 42}') == '{"answer": 42}'
    session = Runner(MockModel(['{"answer": "x"}']), LinearTemplate([
        UserTemplate("hi"), ToolingTemplate([])]), guards=[json_schema(schema)]).run()
    assert session.messages[-1].metadata["guard"]["reason"] == \
        "does not match the schema at answer: 'x' is not of type 'integer'"
    assert (max_length(1).name, matches("x").name, json_schema(schema).name) == (
        "max_length", "matches", "json_schema")


def test_the_cheap_pre_scan_passes_over_nothing_a_find_needs() -> None:
    # An IBAN of capitals with only its 2 check digits, and a phone of exactly 7 digits: the
    # fewest digits each can have; a sentence with a few digits and capitals holds none.
    from convo.guards import _pii

    bban = "WESTABCDEFGHIJK"
    check = 98 - int("".join(str(int(ch, 36)) for ch in bban + "GB00")) % 97
    iban = f"GB{check:02d}{bban}"
    assert _pii.iban_valid(iban)
    assert pii().check(f"Pay to {iban} today.", None) == "Pay to [iban] today."
    assert pii().check("Call 912 3456 now.", None) == "Call [phone] now."
    assert _pii.maybe("It is sunny in Oslo, 21 degrees.") is False
    assert _pii.maybe("Call 912 3456 now.") is True
