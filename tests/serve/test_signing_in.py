"""Signing in through the real app (API.md §19): create_app(auth=…) over httpx's ASGI
transport for each way — a token table from a file, JWTs with a secret and with an issuer's
keys served over HTTP here (RS256), a trusted proxy header — and one `convo serve --users`
process. Who signs in decides whose conversations they see."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from rawserver import Raw, RawServer
from serve_kit import ROOT, TEMPLATE, Served, free_port, model

from convo.serve import JWT, SharedToken, TokenTable, TrustedHeader, create_app
from convo.serve._http.auth import Auth

SECRET = "s" * 32


def calls(auth: Auth, *requests: tuple[str, str, dict[str, str]]) -> list[tuple[int, Any]]:
    """Send ``(method, path, headers)`` requests to an app signing in with ``auth``: each
    answer's status and JSON."""
    async def send() -> list[tuple[int, Any]]:
        app = create_app(TEMPLATE, model(), auth=auth)
        transport = httpx.ASGITransport(app=app)
        answers = []
        async with httpx.AsyncClient(transport=transport, base_url="http://convo") as client:
            for method, path, headers in requests:
                response = await client.request(method, path, headers=headers,
                                                json={} if method == "POST" else None)
                answers.append((response.status_code, response.json()))
        return answers

    return asyncio.run(send())


def whose(auth: Auth, headers: dict[str, str]) -> tuple[int, Any]:
    """Create a conversation and list: the caller as the list shows them."""
    (created, body), (listed, items) = calls(auth, ("POST", "/api/conversations", headers),
                                             ("GET", "/api/conversations", headers))
    if created != 201:
        return created, body
    assert listed == 200
    item = items["conversations"][0]
    return listed, item.get("user", "(a user: no user field)")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# -- a token table from a file --------------------------------------------------------------


def test_a_users_file_names_each_person(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"t-ann": {"user": "ann"},
                                 "t-olga": {"user": "olga", "role": "operator"}}))
    table = TokenTable.from_file(users)
    assert whose(table, bearer("t-olga")) == (200, "olga")
    assert whose(table, bearer("t-ann")) == (200, "(a user: no user field)")
    answers = calls(table, ("GET", "/api/conversations", bearer("t-bob")),
                    ("GET", "/api/conversations", {}),
                    ("GET", "/api/conversations", {"Authorization": "Basic dDp1"}),
                    ("GET", "/api/health", {}))
    assert answers == [
        (401, {"error": "this token is not known to this server"}),
        (401, {"error": "this server needs a token: send the header Authorization: Bearer "
                        "<token>"}),
        (401, {"error": "this server needs a token: send the header Authorization: Bearer "
                        "<token>"}),
        (200, {"status": "ok"})]


def test_the_example_users_file_signs_in_three_people() -> None:
    table = TokenTable.from_file(ROOT / "examples" / "refund_bot.users.json")
    assert whose(table, bearer("olga-5d7e02b9")) == (200, "olga")
    assert whose(table, bearer("ann-2f8c1e7d")) == (200, "(a user: no user field)")


@pytest.mark.parametrize(("content", "error"), [
    (None, "cannot read the users file: [Errno 2] No such file or directory"),
    ("{nope", "cannot read the users file: Expecting property name enclosed in double quotes"),
    ("[1]", 'TokenTable wants a mapping {token: {"user": ..., "role"?: ...}}, got list'),
    ('{"t-1234": {"name": "ann"}}', 'the token ending "1234" must map to {"user": "...", '
                                    '"role"?: "user"|"operator"}, got {\'name\': \'ann\'}'),
    ('{"t": {"user": "ann", "role": "admin"}}', "user 'ann' has role 'admin'; a role is "
                                                '"user" or "operator"'),
    ('{"": {"user": "ann"}}', "each key must be a token (a non-empty string), got ''"),
])
def test_a_bad_users_file_is_named_in_its_error(tmp_path: Path, content: str | None,
                                                error: str) -> None:
    users = tmp_path / "users.json"
    if content is not None:
        users.write_text(content)
    with pytest.raises(ValueError) as caught:
        TokenTable.from_file(users)
    assert str(caught.value).startswith(f"{users}: {error}")


def test_convo_serve_with_a_users_file(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"t-ann": {"user": "ann"}, "t-bob": {"user": "bob"},
                                 "t-olga": {"user": "olga", "role": "operator"}}))
    served = Served("examples/refund_bot.py", tmp_path, "--store", "memory", "--mock",
                    "--users", str(users))
    try:
        client = served.client
        cid = client.post("/api/conversations", json={}, headers=bearer("t-ann")).json()["id"]
        assert client.get(f"/api/conversations/{cid}", headers=bearer("t-bob")
                          ).status_code == 404
        assert client.get(f"/api/conversations/{cid}", headers=bearer("t-olga")
                          ).status_code == 200
        assert client.get("/api/conversations", headers=bearer("t-olga")).json()[
            "conversations"][0]["user"] == "ann"
        assert client.get("/api/conversations").status_code == 401
    finally:
        log = served.stop()
    # Each request's line on stderr names who signed in (nobody, for the refused one).
    assert [line.split(" user=")[1] for line in log.splitlines()
            if line.startswith("convo: ") and " user=" in line][-5:] == [
        "ann", "bob", "olga", "olga", "-"]


def test_convo_serve_names_a_bad_users_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    users = tmp_path / "users.json"
    users.write_text('{"t": {"user": "ann", "role": "boss"}}')
    result = subprocess.run([sys.executable, "-m", "convo", "serve", "examples/refund_bot.py",
                             "--mock", "--store", "memory", "--port", str(free_port()),
                             "--users", str(users)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    assert result.stderr.endswith(f"convo: error: {users}: user 'ann' has role 'boss'; a role "
                                  'is "user" or "operator"\n')


# -- JWT with a secret ----------------------------------------------------------------------


def signed(claims: dict[str, Any], key: Any = SECRET, algorithm: str = "HS256",
           **headers: Any) -> dict[str, str]:
    return bearer(jwt.encode(claims, key, algorithm=algorithm, headers=headers or None))


# Tokens are made when this module is collected: a day either side, so that a slow run (a
# loaded machine once took 50 minutes to reach these tests) never sees a good token expire.
NOW = int(time.time())
DAY = 24 * 3600
GOOD = {"sub": "ann", "aud": "convo", "iss": "https://id.example", "exp": NOW + DAY}


@pytest.mark.parametrize(("claims", "who"), [
    (GOOD, "(a user: no user field)"),
    ({**GOOD, "role": "operator"}, "ann"),
    ({**GOOD, "role": ["staff", "operator"]}, "ann"),
    ({**GOOD, "role": ["staff"]}, "(a user: no user field)"),
    ({**GOOD, "groups": "operator"}, "(a user: no user field)"),  # not the role claim
])
def test_a_jwt_names_the_user_and_the_role(claims: dict[str, Any], who: str) -> None:
    auth = JWT(SECRET, audience="convo", issuer="https://id.example")
    assert whose(auth, signed(claims)) == (200, who)


def test_the_role_claim_is_named_by_role_claim() -> None:
    auth = JWT(SECRET, audience="convo", issuer="https://id.example", role_claim="groups")
    assert whose(auth, signed({**GOOD, "groups": ["operator"]})) == (200, "ann")


@pytest.mark.parametrize(("claims", "error"), [
    ({**GOOD, "exp": NOW - DAY}, "Signature has expired"),
    ({**GOOD, "nbf": NOW + DAY}, "The token is not yet valid (nbf)"),
    ({**GOOD, "aud": "other"}, "Audience doesn't match"),
    ({k: v for k, v in GOOD.items() if k != "aud"}, 'Token is missing the "aud" claim'),
    ({**GOOD, "iss": "https://evil.example"}, "Invalid issuer"),
    ({k: v for k, v in GOOD.items() if k != "sub"}, 'Token is missing the "sub" claim'),
    ({**GOOD, "sub": 7}, "Subject must be a string"),
    ({**GOOD, "sub": ""}, 'its "sub" (the user) is empty'),
])
def test_a_jwt_that_fails_a_check_is_a_401(claims: dict[str, Any], error: str) -> None:
    auth = JWT(SECRET, audience="convo", issuer="https://id.example")
    assert calls(auth, ("GET", "/api/conversations", signed(claims))) == [
        (401, {"error": f"this token is refused: {error}"})]


def test_a_jwt_with_another_key_or_algorithm_is_a_401() -> None:
    auth = JWT(SECRET)
    claims = {"sub": "ann", "exp": NOW + DAY}
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert calls(auth, ("GET", "/api/conversations", signed(claims, "t" * 32)),
                 ("GET", "/api/conversations", signed(claims, "s" * 64, "HS512")),
                 ("GET", "/api/conversations", signed(claims, private, "RS256")),
                 ("GET", "/api/conversations", bearer("not.a.jwt"))) == [
        (401, {"error": "this token is refused: Signature verification failed"}),
        (401, {"error": "this token is refused: The specified alg value is not allowed"}),
        (401, {"error": "this token is refused: The specified alg value is not allowed"}),
        (401, {"error": "this token is refused: Invalid header padding"})]
    assert whose(JWT("s" * 64), signed(claims, "s" * 64, "HS512")) == (
        200, "(a user: no user field)")


def test_a_short_secret_or_none_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match=r"a JWT secret must be at least 32 bytes \(RFC 7518 "
                                         r"§3.2\), got 6"):
        JWT("secret")
    with pytest.raises(ValueError, match="JWT needs exactly one of secret"):
        JWT(SECRET, jwks_url="http://127.0.0.1:1/keys")


# -- JWT with an issuer's keys (JWKS) --------------------------------------------------------


def _jwk(private: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    numbers = private.public_key().public_numbers()

    def b64(n: int) -> str:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64(numbers.n),
            "e": b64(numbers.e)}


class Issuer:
    """An identity provider's key endpoint on 127.0.0.1: ``keys`` served as a JWKS."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.keys = {"keys": [_jwk(self.key, "k1")]}
        self.server = RawServer(Raw([json.dumps(self.keys).encode()]))
        self.url = f"http://127.0.0.1:{self.server.port}/keys"

    def close(self) -> None:
        self.server.close()


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    served = Issuer()
    yield served
    served.close()


def test_a_jwt_checked_with_the_issuers_keys(issuer: Issuer) -> None:
    auth = JWT(jwks_url=issuer.url, audience="convo")
    claims = {"sub": "olga", "aud": "convo", "exp": NOW + DAY, "role": "operator"}
    assert whose(auth, signed(claims, issuer.key, "RS256", kid="k1")) == (200, "olga")
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert calls(auth, (
        "GET", "/api/conversations", signed(claims, other, "RS256", kid="k1")), (
        "GET", "/api/conversations", signed({**claims, "exp": NOW - DAY}, issuer.key, "RS256",
                                            kid="k1")), (
        "GET", "/api/conversations", signed({**claims, "nbf": NOW + DAY}, issuer.key,
                                            "RS256", kid="k1")), (
        "GET", "/api/conversations", signed({**claims, "aud": "x"}, issuer.key, "RS256",
                                            kid="k1")), (
        "GET", "/api/conversations", signed(claims, issuer.key, "RS256", kid="k9")), (
        "GET", "/api/conversations", signed(claims, SECRET, "HS256", kid="k1"))) == [
        (401, {"error": "this token is refused: Signature verification failed"}),
        (401, {"error": "this token is refused: Signature has expired"}),
        (401, {"error": "this token is refused: The token is not yet valid (nbf)"}),
        (401, {"error": "this token is refused: Audience doesn't match"}),
        (401, {"error": 'this token is refused: Unable to find a signing key that matches: '
                        '"k9"'}),
        (401, {"error": "this token is refused: The specified alg value is not allowed"})]


def test_an_issuer_that_does_not_answer_is_a_503() -> None:
    url = f"http://127.0.0.1:{free_port()}/keys"  # nothing listens there
    auth = JWT(jwks_url=url)
    token = signed({"sub": "ann"}, rsa.generate_private_key(public_exponent=65537,
                                                            key_size=2048), "RS256", kid="k1")
    [(status, body)] = calls(auth, ("GET", "/api/conversations", token))
    assert status == 503
    assert body["error"].startswith(f"the issuer's keys at {url} could not be fetched to "
                                    "check this token: Fail to fetch data from the url")


# -- a trusted header, and the shared token ------------------------------------------------


def test_a_trusted_header_names_the_user_and_operators() -> None:
    auth = TrustedHeader("X-Forwarded-User", operators="olga, oscar")
    assert whose(auth, {"X-Forwarded-User": "oscar"}) == (200, "oscar")
    assert whose(auth, {"x-forwarded-user": "ann"}) == (200, "(a user: no user field)")
    missing = {"error": "this server is reached through a proxy that signs people in: the "
                        "header X-Forwarded-User is missing"}
    assert calls(auth, ("GET", "/api/conversations", {}),
                 ("POST", "/api/conversations", {"X-Forwarded-User": "  "}),
                 ("GET", "/api/conversations/x", {"X-Other": "ann"})) == [
        (401, missing), (401, missing), (401, missing)]


TWICE = ("the header X-User came with 2 values; it must name one user: the proxy in front "
         "must replace a header a client sent, not add its own beside it")


def test_a_trusted_header_with_two_values_is_refused() -> None:
    # A proxy that appends: the client's "olga" first, then the proxy's signed-in "ann",
    # as two lines or joined with a comma. Neither value is believed.
    async def send(headers: list[tuple[str, str]]) -> tuple[int, Any]:
        app = create_app(TEMPLATE, model(), auth=TrustedHeader("X-User", operators="olga"))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://convo") as client:
            response = await client.post("/api/conversations", headers=headers, json={})
            return response.status_code, response.json()

    for headers in ([("X-User", "olga"), ("X-User", "ann")], [("X-User", "olga, ann")],
                    [("X-User", "olga"), ("x-user", "olga")], [("X-User", "olga,")]):
        assert asyncio.run(send(headers)) == (401, {"error": TWICE}), headers
    assert asyncio.run(send([("X-User", " olga ")]))[0] == 201


def test_convo_serve_refuses_a_trusted_header_sent_twice(tmp_path: Path) -> None:
    served = Served("examples/refund_bot.py", tmp_path, "--store", "memory", "--mock",
                    "--trust-header", "X-User", "--operators", "olga")
    try:
        twice = served.client.get("/api/feedback", headers=[("X-User", "olga"),
                                                            ("X-User", "ann")])
        assert (twice.status_code, twice.json()) == (401, {"error": TWICE})
        assert served.client.get("/api/feedback", headers={"X-User": "olga"}
                                 ).status_code == 200
    finally:
        served.stop()


def test_the_shared_token_takes_the_scheme_in_any_case() -> None:
    auth = SharedToken("t0ken")
    assert whose(auth, {"Authorization": "bearer t0ken"}) == (200, "(a user: no user field)")
    assert calls(auth, ("GET", "/api/conversations", bearer("t0ke"))) == [
        (401, {"error": "this server needs a token: send the header Authorization: Bearer "
                        "<token>"})]
