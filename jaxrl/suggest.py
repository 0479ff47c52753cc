""" "Did you mean" for names a user types: ``close(name, valid)`` gives the nearest valid
names (``difflib.get_close_matches``, case-insensitive, cutoff 0.6, as Python's own
``NameError`` suggestions) and ``did_you_mean(name, valid)`` the clause an error message
ends with. It imports nothing of jaxrl, so that every registry and validator may use it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close(name: str, valid: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` of ``valid`` nearest to ``name`` (best first), compared case-folded and
    with ``-`` and ``_`` taken as equal."""
    fold = lambda s: str(s).casefold().replace("-", "_")
    by_folded: dict[str, str] = {}
    for v in valid:
        by_folded.setdefault(fold(v), v)
    matches = difflib.get_close_matches(fold(name), list(by_folded), n=n, cutoff=cutoff)
    return [by_folded[m] for m in matches]


def did_you_mean(name: str, valid: Iterable[str], n: int = 3) -> str:
    """``" (did you mean 'x'?)"`` (or ``'x' or 'y'``), or ``""`` when nothing is close."""
    return phrase(close(name, valid, n))


def phrase(matches: list[str]) -> str:
    """``" (did you mean 'x' or 'y'?)"`` for ``matches``, ``""`` for none."""
    if not matches:
        return ""
    return " (did you mean " + " or ".join(f"'{m}'" for m in matches) + "?)"
