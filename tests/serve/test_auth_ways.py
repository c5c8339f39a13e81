"""The ways of signing in (serve/auth.py) turn headers into a caller, or refuse with 401."""

from __future__ import annotations

import asyncio
import time

import jwt
import pytest

from convo.serve import JWT, SharedToken, TokenTable, TrustedHeader
from convo.serve._http.auth import Caller, Open
from convo.serve._http.bodies import HTTPProblem


def who(auth: object, **headers: str) -> Caller:
    return asyncio.run(auth.identify(headers))  # type: ignore[attr-defined]


def refused(auth: object, **headers: str) -> str:
    with pytest.raises(HTTPProblem) as caught:
        who(auth, **headers)
    assert caught.value.status == 401
    return str(caught.value)


def test_open_and_shared_token_make_everyone_the_default_user() -> None:
    assert who(Open()) == Caller("default", "user")
    assert who(SharedToken("s3"), authorization="Bearer s3") == Caller("default", "user")
    assert "Authorization: Bearer <token>" in refused(SharedToken("s3"), authorization="Bearer x")


def test_token_table_names_each_person_and_their_role() -> None:
    table = TokenTable({"t-ann": {"user": "ann"}, "t-op": {"user": "olga", "role": "operator"}})
    assert who(table, authorization="Bearer t-ann") == Caller("ann", "user")
    assert who(table, authorization="Bearer t-op").operator
    assert refused(table, authorization="Bearer nope") == "this token is not known to this server"
    with pytest.raises(ValueError, match="role 'admin'; a role is \"user\" or \"operator\""):
        TokenTable({"t": {"user": "x", "role": "admin"}})


def test_trusted_header_names_the_user_and_operators() -> None:
    auth = TrustedHeader("X-Forwarded-User", operators=["olga"])
    assert who(auth, **{"x-forwarded-user": "olga"}) == Caller("olga", "operator")
    assert who(auth, **{"x-forwarded-user": "ann"}) == Caller("ann", "user")
    assert "the header X-Forwarded-User is missing" in refused(auth)


def test_jwt_with_a_secret_checks_signature_expiry_audience_and_role() -> None:
    auth = JWT("k" * 64, audience="convo", issuer="https://id.example")
    now = int(time.time())
    claims = {"sub": "ann", "aud": "convo", "iss": "https://id.example", "exp": now + 60}
    token = jwt.encode({**claims, "role": ["staff", "operator"]}, "k" * 64, algorithm="HS384")
    assert who(auth, authorization=f"Bearer {token}") == Caller("ann", "operator")
    expired = jwt.encode({**claims, "exp": now - 60}, "k" * 64, algorithm="HS256")
    assert refused(auth, authorization=f"Bearer {expired}") == \
        "this token is refused: Signature has expired"
    other = jwt.encode({**claims, "aud": "other"}, "k" * 64, algorithm="HS256")
    assert refused(auth, authorization=f"Bearer {other}") == \
        "this token is refused: Audience doesn't match"
    forged = jwt.encode(claims, "x" * 64, algorithm="HS256")
    assert refused(auth, authorization=f"Bearer {forged}") == \
        "this token is refused: Signature verification failed"
    with pytest.raises(ValueError, match="exactly one of secret"):
        JWT()
