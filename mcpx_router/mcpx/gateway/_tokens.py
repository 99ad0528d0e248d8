"""Gateway tokens that outlive the gateway process: a pluggable verifier, and signed tokens.

The gateway asks a `TokenVerifier` who a bearer token is. Its own opaque tokens (development
tokens it hands out, pre-shared ones from its configuration) live in its memory and die with
it: right on one's own machine. A deployment gives it a `JWTVerifier` instead (or as well):
tokens signed by `JWTIssuer` with a shared HS256 secret, or an RS256 key pair, stay valid across
restarts and on every gateway instance that knows the key.

    issuer = JWTIssuer(secret, audience="mcpx:prod")          # in the deployment's token service
    token = issuer.issue("planner", "room")                  # a participant's token for one topic
    Gateway(GatewayConfig(verifier=JWTVerifier(secret, audience="mcpx:prod"), dev_tokens=False))
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import jwt

from ._gateway_state import TokenGrant, TokenVerifier, valid_id

__all__ = ["JWTIssuer", "JWTVerifier", "TokenVerifier", "claims_grant", "verifier_from_file"]

TOPIC_CLAIM: Final = "topic"
"""The topic the token is for; `topics` (a list) grants several."""


def claims_grant(claims: Mapping[str, Any]) -> TokenGrant | None:
    """The grant a token's (already verified) claims make, or None when they make none.

    `sub` is the participant id; `topic` a topic name, or `topics` a non-empty list of them.
    """
    pid = claims.get("sub")
    if not valid_id(pid):
        return None
    if TOPIC_CLAIM in claims:
        topics: Any = [claims[TOPIC_CLAIM]]
    else:
        topics = claims.get("topics")
    if not isinstance(topics, list) or not topics:
        return None
    if not all(isinstance(t, str) and 0 < len(t) <= 256 for t in topics):
        return None
    return TokenGrant(pid, frozenset(topics))


class JWTVerifier:
    """Accepts JWTs signed with `key` (an HS256 secret, or an RS256 public key in PEM) that carry
    `sub` (participant id), `topic` (or `topics`), `aud` (= `audience`) and `exp`, unexpired.

    `issuer`, when given, must match the `iss` claim; `leeway` seconds of clock skew are allowed.
    """

    def __init__(
        self,
        key: str | bytes,
        *,
        audience: str,
        algorithms: Sequence[str] = ("HS256",),
        issuer: str | None = None,
        leeway: float = 0.0,
    ) -> None:
        if not key:
            raise ValueError("JWTVerifier needs a key: an HS256 secret or an RS256 public key")
        if not audience:
            raise ValueError("JWTVerifier needs an audience: the name deployments put in `aud`")
        if not algorithms or any(a.lower() == "none" for a in algorithms):
            raise ValueError(f"JWTVerifier needs signing algorithms, not {list(algorithms)!r}")
        self._key = key
        self._audience = audience
        self._algorithms = list(algorithms)
        self._issuer = issuer
        self._leeway = leeway

    def verify(self, token: str) -> TokenGrant | None:
        required = ["exp", "aud", "sub"] + (["iss"] if self._issuer is not None else [])
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=self._algorithms,
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._leeway,
                options={"require": required, "verify_sub": False},
            )
        except (jwt.PyJWTError, ValueError, TypeError):
            # A malformed, forged, expired or misdirected token is refused, whatever its shape.
            return None
        if not isinstance(claims, dict):
            return None
        return claims_grant(claims)


class JWTIssuer:
    """Signs participant tokens for `JWTVerifier` (a deployment's token service uses it).

    `key` is the HS256 secret, or for RS256 the private key in PEM. Tokens last `ttl` seconds.
    """

    def __init__(
        self,
        key: str | bytes,
        *,
        audience: str,
        algorithm: str = "HS256",
        issuer: str | None = None,
        ttl: float = 3600.0,
    ) -> None:
        if not key or not audience or not ttl > 0:
            raise ValueError("JWTIssuer needs a key, an audience and a positive ttl")
        self._key = key
        self._audience = audience
        self._algorithm = algorithm
        self._issuer = issuer
        self._ttl = ttl

    def issue(self, participant_id: str, topic: str, *, ttl: float | None = None) -> str:
        """A token for `participant_id` in `topic`, valid for `ttl` (default: the issuer's) seconds."""
        if not valid_id(participant_id) or not topic:
            raise ValueError(f"invalid participant id {participant_id!r} or topic {topic!r}")
        now = time.time()
        lasts = max(1.0, self._ttl if ttl is None else ttl)
        claims: dict[str, Any] = {
            "sub": participant_id,
            TOPIC_CLAIM: topic,
            "aud": self._audience,
            "iat": int(now),
            # Whole seconds, rounded up: a token never lives shorter than asked (a floored `now`
            # plus one second could expire a moment after it was issued).
            "exp": math.ceil(now + lasts),
        }
        if self._issuer is not None:
            claims["iss"] = self._issuer
        return jwt.encode(claims, self._key, algorithm=self._algorithm)


def verifier_from_file(path: str | Path, audience: str) -> JWTVerifier:
    """A verifier with the key in `path`: an RS256 public key if it is PEM, else an HS256 secret
    (the file's content, stripped). Raises `ValueError` for an unreadable or empty file."""
    try:
        key = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the token key {str(path)!r}: {exc}") from None
    if not key:
        raise ValueError(f"the token key file {str(path)!r} is empty")
    algorithms = ["RS256"] if key.startswith("-----BEGIN") else ["HS256"]
    return JWTVerifier(key, audience=audience, algorithms=algorithms)
