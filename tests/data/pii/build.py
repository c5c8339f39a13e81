"""Builds the pii corpus (positives.tsv, near_misses.tsv) deterministically: run it from the
repository's root (python tests/data/pii/build.py) to write the files again.

positives.tsv: ``kind<TAB>text<TAB>item`` — one email, phone, card (valid Luhn) or IBAN (valid
mod-97) in a sentence. near_misses.tsv: ``why<TAB>text`` — text that must be left alone:
card-shaped numbers failing Luhn, IBANs with wrong check digits (both decided by a check
digit), dates and order numbers that look like phone numbers.
"""

from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
rng = random.Random(43)

SENTENCES = ["Please use {} for this.", "My details: {}", "It is {}, thanks!", "{}",
             "You can reach it at {} any time.", "Noted ({}) in the file.",
             "the value was {} yesterday"]


def say(item: str) -> str:
    return rng.choice(SENTENCES).format(item)


def luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return str((10 - total % 10) % 10)


def card(valid: bool) -> str:
    prefix, size = rng.choice([("4", 16), ("4", 13), ("51", 16), ("55", 16), ("34", 15),
                               ("37", 15), ("6011", 16), ("35", 16), ("4", 19), ("2221", 16)])
    body = prefix + "".join(rng.choice("0123456789") for _ in range(size - len(prefix) - 1))
    last = luhn_digit(body)
    if not valid:
        last = str((int(last) + rng.randint(1, 9)) % 10)
    digits = body + last
    style = rng.choice(["compact", "space", "dash"])
    if style == "compact":
        return digits
    groups = [digits[i:i + 4] for i in range(0, len(digits), 4)]
    return (" " if style == "space" else "-").join(groups)


COUNTRIES = {"DE": 18, "GB": 18, "FR": 23, "NL": 14, "ES": 20, "IT": 23, "NO": 11, "BE": 12,
             "CH": 17, "AT": 16}


def iban(valid: bool) -> str:
    country = rng.choice(list(COUNTRIES))
    size = COUNTRIES[country]
    letters = 4 if country in ("GB", "NL") else 0
    bban = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(letters)) + \
        "".join(rng.choice("0123456789") for _ in range(size - letters))
    number = int("".join(str(int(ch, 36)) for ch in bban + country + "00"))
    check = 98 - number % 97
    if not valid:
        check = (check + rng.randint(1, 96)) % 97 + 2
        if check == 98 - number % 97:
            check = check % 97 + 2
    compact = f"{country}{check:02d}{bban}"
    if rng.random() < 0.5:
        return compact
    return " ".join(compact[i:i + 4] for i in range(0, len(compact), 4))


def email() -> str:
    user = rng.choice(["alice", "bob.smith", "c.d+news", "team_ops", "x9", "maria-luisa"])
    host = rng.choice(["example.com", "mail.example.org", "ex.co.uk", "corp-mail.net", "a.io"])
    return f"{user}{rng.randint(0, 99)}@{host}"


def phone() -> str:
    d = lambda n: "".join(rng.choice("0123456789") for _ in range(n))  # noqa: E731
    return rng.choice([
        f"+1 ({d(3)}) {d(3)}-{d(4)}", f"({d(3)}) {d(3)}-{d(4)}", f"{d(3)}-{d(3)}-{d(4)}",
        f"{d(3)}.{d(3)}.{d(4)}", f"+44 20 {d(4)} {d(4)}", f"020 {d(4)} {d(4)}",
        f"+49 30 {d(6)}", f"+33 1 {d(2)} {d(2)} {d(2)} {d(2)}", f"{d(3)}-{d(4)}",
        f"+1-{d(3)}-{d(3)}-{d(4)}", f"+61 2 {d(4)} {d(4)}", f"+{d(2)}{d(9)}"])


def date() -> str:
    y, m, day = rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(1, 28)
    return rng.choice([f"{y}-{m:02d}-{day:02d}", f"{day:02d}.{m:02d}.{y}", f"{m:02d}/{day:02d}/{y}",
                       f"{y}/{m:02d}/{day:02d}", f"{day:02d}-{m:02d}-{y}",
                       f"{y}-{m:02d}-{day:02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"])


def order() -> str:
    return rng.choice(["order #", "Order ", "invoice no. ", "ticket ", "ref: ", "tracking ",
                       "Order nr. "]) + phone().lstrip("+")


def main() -> None:
    positives = [("email", email) for _ in range(60)] + [("phone", phone) for _ in range(60)] \
        + [("card", lambda: card(True)) for _ in range(60)] \
        + [("iban", lambda: iban(True)) for _ in range(60)]
    rows = []
    for kind, make in positives:
        item = make()
        rows.append(f"{kind}\t{say(item)}\t{item}")
    (HERE / "positives.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    misses = [("luhn", lambda: card(False)) for _ in range(70)] \
        + [("iban_check", lambda: iban(False)) for _ in range(60)] \
        + [("date", date) for _ in range(50)] + [("order", order) for _ in range(50)]
    rows = [f"{why}\t{say(make())}" for why, make in misses]
    (HERE / "near_misses.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
