"""The one loader of the project's SQL, which lives in ``sql/`` (shipped as package data):

* ``sql/migrations/NNN_name.sql`` — numbered, append-only migrations: tables only;
* ``sql/views/v_*.sql`` — one view a file, re-applied after every migration run;
* ``sql/<group>/<name>.sql`` — named queries (``rollup/``, ``alerts/``, ``queries/``, ``roles/``).

``sql("rollup/cost", team_rules=expr)`` reads ``sql/rollup/cost.sql`` and fills its
``__TEAM_RULES__`` placeholder. Placeholders are for SQL fragments this code builds (with their
own query parameters); values always travel as ClickHouse query parameters (``{name:Type}``).
A placeholder left unfilled, or a fill the file does not use, is refused.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from base.errors import SqlFileError

# sql/ sits beside this package both in a checkout and when installed (it ships as package data)
SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
MIGRATIONS_DIR = SQL_DIR / "migrations"
VIEWS_DIR = SQL_DIR / "views"
MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
PLACEHOLDER = re.compile(r"__([A-Z][A-Z0-9_]*)__")
_VIEW_NAME = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?", re.I)


@cache
def text(name: str) -> str:
    """The raw text of ``sql/<name>.sql``."""
    path = SQL_DIR / f"{name}.sql"
    try:
        return path.read_text()
    except FileNotFoundError:
        raise SqlFileError(f"no SQL file {path} (is the package installed with its sql/ data?)") from None


def sql(name: str, **fills: str) -> str:
    """``sql/<name>.sql`` with every ``__PLACEHOLDER__`` filled from ``fills`` (keys lower case)."""
    return fill(text(name), name, **fills)


def fill(body: str, name: str, **fills: str) -> str:
    wanted = set(PLACEHOLDER.findall(body))
    given = {key.upper(): value for key, value in fills.items()}
    missing, unused = sorted(wanted - set(given)), sorted(set(given) - wanted)
    if missing or unused:
        raise SqlFileError(f"sql/{name}.sql: " + "; ".join(
            ([f"placeholder(s) left unfilled: {', '.join(f'__{m}__' for m in missing)}"] if missing else [])
            + ([f"no placeholder for {', '.join(f'__{u}__' for u in unused)}"] if unused else [])))
    return PLACEHOLDER.sub(lambda m: given[m.group(1)], body)


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[tuple[int, str, Path]]:
    """(version, name, path) of every migration, in order. Refuses duplicate numbers."""
    found: dict[int, Path] = {}
    for path in sorted(directory.glob("*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if not match:
            raise SqlFileError(f"{path}: a migration's name must be NNN_name.sql (three digits, lower case)")
        version = int(match.group(1))
        if version in found:
            raise SqlFileError(f"two migrations numbered {version:03d}: {found[version].name} and {path.name}")
        found[version] = path
    return [(v, MIGRATION_NAME.match(p.name).group(2), p) for v, p in sorted(found.items())]


def view_files(directory: Path = VIEWS_DIR) -> list[tuple[str, str]]:
    """(view name, CREATE OR REPLACE VIEW statement) of every view, each after the views it reads."""
    views = {}
    for path in sorted(directory.glob("*.sql")):
        statements = split_statements(path.read_text())
        match = _VIEW_NAME.match(statements[0]) if len(statements) == 1 else None
        if not match or match.group(1) != path.stem:
            raise SqlFileError(f"{path}: expected one CREATE OR REPLACE VIEW {path.stem} statement")
        views[path.stem] = statements[0]
    ordered: list[str] = []

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in ordered:
            return
        if name in trail:
            raise SqlFileError(f"views read each other in a cycle: {' -> '.join(trail + (name,))}")
        for other in views:
            if other != name and re.search(rf"\b{other}\b", views[name]):
                visit(other, trail + (name,))
        ordered.append(name)

    for name in views:
        visit(name, ())
    return [(name, views[name]) for name in ordered]


def split_statements(text: str) -> list[str]:
    """Split SQL text on top-level semicolons, ignoring those inside quotes and comments."""
    statements, current = [], []
    i, n = 0, len(text)
    quote = None
    while i < n:
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < n:
                current.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in ("'", '"', "`"):
            quote = ch
            current.append(ch)
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        elif ch == ";":
            statements.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    statements.append("".join(current).strip())
    return [s for s in statements if s]
