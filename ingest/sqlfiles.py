"""Reading the project's SQL: numbered migrations and named queries live in ``sql/``."""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


def migration_files(sql_dir: Path = SQL_DIR) -> list[tuple[int, str, Path]]:
    """(version, name, path) of every migration, in order. Refuses duplicate numbers."""
    found: dict[int, Path] = {}
    for path in sorted(sql_dir.glob("*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if not match:
            continue
        version = int(match.group(1))
        if version in found:
            raise ValueError(f"two migrations numbered {version:03d}: {found[version].name} and {path.name}")
        found[version] = path
    return [(v, MIGRATION_NAME.match(p.name).group(2), p) for v, p in sorted(found.items())]


@cache
def query(name: str) -> str:
    """The text of a named query: ``query("analytics/minute")`` reads ``sql/analytics/minute.sql``."""
    return (SQL_DIR / f"{name}.sql").read_text()


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
