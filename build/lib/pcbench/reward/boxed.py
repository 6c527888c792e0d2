"""Find the final answer of a response: the content of its last ``\\boxed{...}``.

Prompts ask for the final answer in ``\\boxed{}``, so the reward only ever looks at the
last box (earlier boxes are scratch work or self-corrections). The scan is linear in the
text: candidates are found with ``str.rfind`` (C speed, even on 1 MB responses) and the
brace matching jumps between special characters with one compiled character-class regex,
which cannot backtrack.
"""

from __future__ import annotations

import re
from typing import Literal

# Macros whose argument is the answer. ``\fbox`` is what some models emit instead.
_MACROS = ("\\boxed", "\\fbox")

# Only these characters matter for brace matching; everything else is skipped at C speed.
_SPECIAL = re.compile(r"[{}\\]")

# The ``\boxed 42`` form: LaTeX would box one token, but graders (and models) mean the
# run of text up to the next space or math delimiter.
_SPACES = re.compile(r"[ \t]*")
_TOKEN = re.compile(r"[^\s$]+")

BoxStatus = Literal["ok", "absent", "unbalanced", "too_long"]


def _match_braces(text: str, open_pos: int, limit: int | None) -> tuple[BoxStatus, int]:
    """Index of the ``}`` closing the ``{`` at ``open_pos``.

    ``\\{`` and ``\\}`` are escaped literals, not grouping, so a backslash skips the
    character after it. ``limit`` bounds how far past ``open_pos`` we look, so a 1 MB
    unclosed box costs at most ``limit`` characters of scanning.
    """
    end = len(text) if limit is None else min(len(text), open_pos + 2 + limit)
    depth = 0
    pos = open_pos
    while True:
        m = _SPECIAL.search(text, pos, end)
        if m is None:
            break
        ch = m.group()
        pos = m.end()
        if ch == "\\":
            pos += 1  # skip the escaped character (``\{``, ``\}``, ``\\``)
        elif ch == "{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return "ok", m.start()
    if limit is not None and end < len(text):
        return "too_long", -1
    return "unbalanced", -1


def _candidates(text: str):
    """Yield (start, length) of every boxing macro, rightmost first.

    Each macro keeps its own rfind cursor, which only moves left, so all candidates
    together cost one pass over the text per macro (a fresh rfind of an absent macro
    for every candidate would be quadratic).
    """
    cursors = {macro: text.rfind(macro) for macro in _MACROS}
    while True:
        macro = max(cursors, key=cursors.__getitem__)
        start = cursors[macro]
        if start < 0:
            return
        yield start, len(macro)
        cursors[macro] = text.rfind(macro, 0, start)


def find_last_boxed(text: str, limit: int | None = None) -> tuple[BoxStatus, str | None]:
    """Status and content of the last box.

    ``limit`` caps the content length: a longer box is reported as ``"too_long"`` without
    scanning past the cap. A macro followed by anything but ``{`` or a space (for example
    ``\\boxedsymbol``) is not a box, and the search moves to the previous candidate.
    """
    for start, mlen in _candidates(text):
        after = start + mlen
        gap = _SPACES.match(text, after).end()  # ``\boxed {x}`` is ``\boxed{x}`` in LaTeX
        if text.startswith("{", gap):
            status, close = _match_braces(text, gap, limit)
            return (status, None) if status != "ok" else ("ok", text[gap + 1 : close])
        if gap > after:
            m = _TOKEN.match(text, gap, len(text) if limit is None else gap + limit + 1)
            if m is not None:
                if limit is not None and m.end() - gap > limit:
                    return "too_long", None
                return "ok", m.group()
        # not a box after all (``\boxedfoo``, a bare ``\boxed``): try the previous one
    return "absent", None


def extract_last_boxed(text: str, max_len: int | None = None) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\boxed x`` / ``\\fbox{...}`` in ``text``.

    Returns None when there is no box, when the last box is never closed (a truncated
    response), or when its content is longer than ``max_len`` characters.

    >>> extract_last_boxed(r"so \\boxed{1} no wait \\boxed{\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    """
    status, content = find_last_boxed(text, max_len)
    return content if status == "ok" else None
