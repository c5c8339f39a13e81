"""Who is calling (API.md §19): each way of signing in turns a request's headers into a
``Caller`` — a user id and a role, ``user`` or ``operator`` — or refuses it with a 401.

- ``SharedToken(token)``: one bearer token; every caller is the user ``"default"`` (§9).
- ``TokenTable({token: {"user", "role"?}})``: a bearer token per person (``--users FILE``).
- ``JWT(secret | jwks_url=…)``: a signed bearer token; ``sub`` is the user, the role claim
  (a string, or a list holding ``"operator"``) the role; ``exp``, ``nbf``, ``aud`` and ``iss``
  are checked. PyJWT (the ``jwt`` extra) is imported only when the first token is read.
- ``TrustedHeader(name, operators=…)``: a proxy in front has signed the person in and names
  them in a header; a request without it, or with two values of it (two lines, or a
  comma-joined list), is refused.
- ``Open()``: no sign-in (no token given): every caller is the user ``"default"``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Protocol

import attrs

from .bodies import HTTPProblem

USER, OPERATOR = "user", "operator"
ROLES: Final = (USER, OPERATOR)
DEFAULT_USER: Final = "default"
HMAC_BYTES: Final = {"HS256": 32, "HS384": 48, "HS512": 64}
INSTALL_JWT: Final = ('JWT sign-in needs PyJWT: install the jwt extra '
                      '(pip install -e ".[jwt]" in convo\'s checkout)')


@attrs.frozen(slots=True)
class Caller:
    """Who sent a request: a user id and a role."""

    user: str
    role: str = USER

    @property
    def operator(self) -> bool:
        return self.role == OPERATOR


class Auth(Protocol):
    """A way of signing in: the caller of a request, or ``HTTPProblem(401)``."""

    async def identify(self, headers: Mapping[str, str]) -> Caller: ...


def _bearer(headers: Mapping[str, str], how: str) -> str:
    given = headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPProblem(401, f"this server needs {how}: send the header "
                               "Authorization: Bearer <token>")
    return token.strip()


@attrs.frozen(slots=True)
class Open:
    """No sign-in: every caller is the user ``"default"``."""

    async def identify(self, headers: Mapping[str, str]) -> Caller:
        return Caller(DEFAULT_USER)


@attrs.frozen(slots=True)
class SharedToken:
    """One token for everybody: every caller is the user ``"default"``."""

    token: str = attrs.field(repr=False)

    async def identify(self, headers: Mapping[str, str]) -> Caller:
        given = _bearer(headers, "a token")  # the scheme's case is free (RFC 9110 §11.1)
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            raise HTTPProblem(401, "this server needs a token: send the header "
                                   "Authorization: Bearer <token>")
        return Caller(DEFAULT_USER)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _entry(token: Any, entry: Any, where: str) -> Caller:
    if not isinstance(token, str) or not token:
        raise ValueError(f"{where}: each key must be a token (a non-empty string), "
                         f"got {token!r}")
    if not isinstance(entry, Mapping) or not isinstance(entry.get("user"), str) \
            or not entry["user"]:
        raise ValueError(f'{where}: the token ending "{token[-4:]}" must map to '
                         f'{{"user": "...", "role"?: "user"|"operator"}}, got {entry!r}')
    role = entry.get("role", USER)
    if role not in ROLES:
        raise ValueError(f'{where}: user {entry["user"]!r} has role {role!r}; '
                         f'a role is "user" or "operator"')
    return Caller(entry["user"], role)


@attrs.frozen(slots=True)
class TokenTable:
    """A bearer token per person: ``{token: {"user": "ann", "role": "operator"}}`` (``role``
    defaults to ``"user"``). ``TokenTable.from_file(path)`` reads it from a JSON file."""

    table: Mapping[str, Mapping[str, Any]] = attrs.field(repr=False)
    _callers: dict[bytes, Caller] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.table, Mapping):
            raise ValueError('TokenTable wants a mapping {token: {"user": ..., "role"?: ...}}, '
                             f"got {type(self.table).__name__}")
        callers = {_digest(token): _entry(token, entry, "TokenTable")
                   for token, entry in self.table.items()}
        object.__setattr__(self, "_callers", callers)

    @classmethod
    def from_file(cls, path: str | Path) -> TokenTable:
        try:
            table = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: cannot read the users file: {exc}") from exc
        try:
            return cls(table)
        except ValueError as exc:
            raise ValueError(f"{path}: {str(exc).removeprefix('TokenTable: ')}") from None

    async def identify(self, headers: Mapping[str, str]) -> Caller:
        caller = self._callers.get(_digest(_bearer(headers, "a token")))
        if caller is None:
            raise HTTPProblem(401, "this token is not known to this server")
        return caller


def _names(names: Iterable[str]) -> frozenset[str]:
    """Operators' names: a list, or one string of names split at commas ("ann,olga")."""
    if isinstance(names, str):
        names = names.split(",")
    return frozenset(n.strip() for n in names if n.strip())


@attrs.frozen(slots=True)
class TrustedHeader:
    """A proxy in front signs people in and names them in the header ``name``; the users in
    ``operators`` are operators. Only for a server the proxy alone can reach."""

    name: str
    operators: Iterable[str] = attrs.field(default=(), kw_only=True, converter=_names)

    async def identify(self, headers: Mapping[str, str]) -> Caller:
        # Every line of the header, not the first: a proxy that appends its own line after
        # the client's (or joins them with commas, RFC 9110 §5.3) must not let the client's
        # choose who it is. A name with a comma is refused for the same reason.
        getlist = getattr(headers, "getlist", None)
        lines = getlist(self.name.lower()) if getlist is not None else [
            headers.get(self.name.lower(), "")]
        values = [v.strip() for line in lines for v in line.split(",")]
        if len(values) > 1:
            raise HTTPProblem(401, f"the header {self.name} came with {len(values)} values; "
                                   "it must name one user: the proxy in front must replace "
                                   "a header a client sent, not add its own beside it")
        user = values[0] if values else ""
        if not user:
            raise HTTPProblem(401, f"this server is reached through a proxy that signs "
                                   f"people in: the header {self.name} is missing")
        return Caller(user, OPERATOR if user in self.operators else USER)


def _role(claims: Mapping[str, Any], claim: str) -> str:
    value = claims.get(claim)
    if value == OPERATOR or (isinstance(value, list) and OPERATOR in value):
        return OPERATOR
    return USER


@attrs.define(slots=True)
class JWT:
    """Signed bearer tokens: HS256/384/512 with ``secret``, or any algorithm of the keys at
    ``jwks_url``. ``sub`` is the user; ``role_claim`` (a string, or a list holding
    ``"operator"``) the role; ``exp`` and ``nbf`` are checked when present, ``aud`` and
    ``iss`` when ``audience`` / ``issuer`` are given."""

    secret: str | None = attrs.field(default=None, repr=False)
    jwks_url: str | None = attrs.field(default=None, kw_only=True)
    audience: str | None = attrs.field(default=None, kw_only=True)
    issuer: str | None = attrs.field(default=None, kw_only=True)
    role_claim: str = attrs.field(default="role", kw_only=True)
    _jwks: Any = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if (self.secret is None) == (self.jwks_url is None):
            raise ValueError("JWT needs exactly one of secret=... (HS256/384/512) or "
                             "jwks_url=... (the issuer's public keys)")
        if self.secret is not None and len(self.secret.encode()) < HMAC_BYTES["HS256"]:
            raise ValueError(f"a JWT secret must be at least {HMAC_BYTES['HS256']} bytes "
                             f"(RFC 7518 §3.2), got {len(self.secret.encode())}")

    def _hmac(self) -> tuple[Any, list[str]]:
        """The secret and the HMAC algorithms it is long enough for (RFC 7518 §3.2: a key at
        least as long as the hash), so no token is checked with a key too short for it."""
        assert self.secret is not None
        size = len(self.secret.encode())
        return self.secret, [alg for alg, least in HMAC_BYTES.items() if size >= least]

    async def identify(self, headers: Mapping[str, str]) -> Caller:
        token = _bearer(headers, "a signed token (JWT)")
        try:
            import jwt
        except ImportError as exc:
            raise ImportError(INSTALL_JWT) from exc
        try:
            if self.secret is not None:
                key, algorithms = self._hmac()
            else:
                key, algorithms = await asyncio.to_thread(self._signing_key, token)
            claims = jwt.decode(token, key, algorithms=algorithms, audience=self.audience,
                                issuer=self.issuer, options={"require": ["sub"]})
        except jwt.PyJWKClientConnectionError as exc:  # the issuer, not the token, failed
            raise HTTPProblem(503, f"the issuer's keys at {self.jwks_url} could not be "
                                   f"fetched to check this token: {exc}") from None
        except jwt.PyJWTError as exc:
            raise HTTPProblem(401, f"this token is refused: {exc}") from None
        if not claims["sub"]:
            raise HTTPProblem(401, 'this token is refused: its "sub" (the user) is empty')
        return Caller(str(claims["sub"]), _role(claims, self.role_claim))

    def _signing_key(self, token: str) -> tuple[Any, list[str]]:
        import jwt

        if self._jwks is None:
            self._jwks = jwt.PyJWKClient(str(self.jwks_url), cache_keys=True)
        signing = self._jwks.get_signing_key_from_jwt(token)
        # The key's own algorithm, never the token's say: no HS256 signed with a public key.
        return signing.key, [signing.algorithm_name]


def from_options(token: str | None, auth: Auth | None) -> Auth:
    """The sign-in of ``create_app(token=, auth=)``: at most one of them."""
    if token is not None and auth is not None:
        raise ValueError("give create_app either token= (one shared token) or auth= "
                         "(SharedToken, TokenTable, JWT or TrustedHeader), not both")
    if auth is not None:
        return auth
    return Open() if token is None else SharedToken(token)
