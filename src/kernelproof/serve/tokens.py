"""API tokens: made once, shown once, stored only as a hash.

The tokens file holds one JSON object per line: ``{"name": ..., "sha256": ..., "created":
...}``. A token is 32 random bytes (URL-safe base64), so a plain SHA-256 of it cannot be
reversed or guessed: no slow password hash is needed, and a lookup is one dictionary access on
the hash, which leaks nothing about other tokens through its timing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from kernelproof.errors import UsageError

__all__ = ["TOKEN_PREFIX", "TokenBook", "create_token", "revoke_token", "token_hash"]

#: Prefix of every token: says what the secret is when it turns up in a log or a leak scan.
TOKEN_PREFIX = "kp_"

#: Random bytes per token: 256 bits, beyond any guessing.
TOKEN_BYTES = 32

#: What a token's name may be: it is shown on public leaderboards and in URLs.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def token_hash(token: str) -> str:
    """The SHA-256 of a token, as stored."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class TokenBook:
    """The names of the tokens in a tokens file, by hash."""

    names_by_hash: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> TokenBook:
        """Read ``path``; a missing file or a bad line is a :class:`UsageError` naming it."""
        if not path.is_file():
            raise UsageError(
                f"no tokens file at {path}; make a token first with "
                f"`kernelproof token create NAME --tokens {path}`"
            )
        names: dict[str, str] = {}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                names[str(entry["sha256"])] = str(entry["name"])
            except (ValueError, KeyError, TypeError):
                raise UsageError(
                    f"{path}:{number}: not a token entry (a JSON object with "
                    "'name' and 'sha256'); remove the line or make the file again "
                    "with `kernelproof token create`"
                ) from None
        return cls(names)

    def name_of(self, token: str) -> str | None:
        """The name of ``token``, or ``None`` when it is not in the book."""
        return self.names_by_hash.get(token_hash(token))


def create_token(name: str, path: Path) -> str:
    """Make a token called ``name``, append its hash to ``path`` and return the token itself.

    The file is created with mode 0600; names must be unique within it.
    """
    if not NAME_PATTERN.match(name):
        raise UsageError(
            f"token name {name!r} is not allowed: use 1 to 64 letters, digits, "
            "'.', '_' or '-', starting with a letter or digit (it is shown on the "
            "leaderboards)"
        )
    if path.is_file() and name in TokenBook.load(path).names_by_hash.values():
        raise UsageError(f"{path} already has a token named {name!r}; choose another name")
    if not path.parent.is_dir():
        raise UsageError(f"cannot write {path}: the folder {path.parent} does not exist")
    token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    entry = {
        "name": name,
        "sha256": token_hash(token),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    return token


def revoke_token(name: str, path: Path) -> int:
    """Remove every token called ``name`` from ``path``; returns how many were removed. A
    running server reads the file again at its next request, so the token stops working at
    once. The file is rewritten atomically (a new 0600 file renamed over it)."""
    book = TokenBook.load(path)  # refuses a missing or broken file before changing anything
    if name not in book.names_by_hash.values():
        raise UsageError(
            f"{path} has no token named {name!r}; its tokens are: "
            f"{', '.join(sorted(set(book.names_by_hash.values()))) or 'none'}"
        )
    kept, removed = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and json.loads(line).get("name") == name:
            removed += 1
        elif line.strip():
            kept.append(line)
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in kept))
    os.replace(fresh, path)
    return removed
