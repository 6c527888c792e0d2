"""docs/config.md, the config-key reference, generated from the typed schema in pcbench/config.py.

    python -m pcbench.config_doc          # rewrite docs/config.md
    python -m pcbench.config_doc --check  # exit 1 when docs/config.md is stale (tests/docs/test_config_doc.py)

One row per key: its dotted name, type, default and the comment beside it in the schema, so the
meaning lives in one place (the schema) and the page cannot drift from it. Groups typed `Any`
(model, data, backend, verl) are composed from conf/ and checked by pcbench/rules.py; the page
points there instead of listing them.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from pathlib import Path

from omegaconf import MISSING

from pcbench import config

DOC = Path(__file__).resolve().parents[1] / "docs" / "config.md"
FIELD_COMMENT = re.compile(r"^\s+(\w+):[^#]*#\s*(.+)$")
HEADER = ["# Config keys", "",
          "Generated from the typed schema (`pcbench/config.py`) by `python -m pcbench.config_doc`; a test fails",
          "when this page is stale. Set any key on the command line: `python -m pcbench.run train.steps=30`.",
          "Ranges and cross-key rules are checked by `check_config` (`pcbench/rules.py`); groups typed `Any`",
          "are composed from `conf/<group>/*.yaml` and listed there.", ""]


def field_comments(cls) -> dict[str, str]:
    """{field: the comment on its line} of a dataclass's source."""
    found = (FIELD_COMMENT.match(line) for line in inspect.getsource(cls).splitlines())
    return {match.group(1): match.group(2).strip() for match in found if match}


def default_text(fld: dataclasses.Field) -> str:
    if fld.default_factory is not dataclasses.MISSING:
        value = fld.default_factory()
        return "{}" if value == {} else "(group)"
    if fld.default is MISSING:
        return "required"
    return f"`{fld.default!r}`" if not isinstance(fld.default, str) else f'`"{fld.default}"`'


def rows(cls, prefix: str = "") -> list[list[str]]:
    comments = field_comments(cls)
    out = []
    for fld in dataclasses.fields(cls):
        key = prefix + fld.name
        typ = fld.type if isinstance(fld.type, str) else getattr(fld.type, "__name__", str(fld.type))
        nested = getattr(config, typ, None)
        if dataclasses.is_dataclass(nested):
            out.extend(rows(nested, key + "."))
            continue
        meaning = comments.get(fld.name, "")
        if typ == "Any" and not meaning:
            meaning = f"a config group: one of `conf/{fld.name}/*.yaml`"
        out.append([f"`{key}`", typ, default_text(fld), meaning.replace("|", "\\|")])
    return out


def render() -> str:
    table = ["| key | type | default | meaning |", "|---|---|---|---|"]
    table += ["| " + " | ".join(cells) + " |" for cells in rows(config.RootConfig)]
    return "\n".join(HEADER + table) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        stale = not DOC.exists() or DOC.read_text() != text
        print(f"{DOC}: {'stale, run python -m pcbench.config_doc' if stale else 'up to date'}")
        return int(stale)
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
