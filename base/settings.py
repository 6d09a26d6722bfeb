"""Turning a parsed TOML document into typed, validated dataclasses.

Every section of the config is a dataclass; its fields' type hints are the schema. A wrong key
or value raises ConfigError naming the file, the dotted key and what was expected.
Supported hints: str, int, float, bool, Secret, Literal[...], X | None, list[X], dict[str, X],
and nested dataclasses.
"""
from __future__ import annotations

import dataclasses
import hmac
import os
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from base.errors import ConfigError


class Secret:
    """A secret read from the environment or a file; never shown in repr, logs or pages.

    In the config a secret is written ``{ env = "VAR" }`` or ``{ file = "/run/secrets/x" }``;
    literal secrets in the file are refused so the file itself can be shared and committed.
    """

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str):
        self._value, self.source = value, source

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret(from {self.source})"

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __bool__(self) -> bool:
        return bool(self._value)


def build(cls, data: Any, where: str, file: str, env: typing.Mapping[str, str]):
    """Validate ``data`` against dataclass ``cls``; ``where`` is the dotted key path so far."""
    if not isinstance(data, dict):
        _fail(file, where, f"a table (section) of keys, got {_kind(data)}")
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"{file}: unknown key {_join(where, unknown[0])!r}; keys allowed in "
            f"{where or 'the top level'}: {', '.join(sorted(fields))}"
        )
    values = {}
    for name, field in fields.items():
        key = _join(where, name)
        if name in data:
            values[name] = convert(hints[name], data[name], key, file, env)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            _fail(file, key, f"a value ({_describe(hints[name])}); this key is required")
    instance = cls(**values)
    check = getattr(instance, "validate", None)
    if check:
        problem = check()
        if problem:
            key, expected = problem
            _fail(file, _join(where, key), expected)
    return instance


def convert(hint, value, key: str, file: str, env):
    origin, args = get_origin(hint), get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return convert(inner[0], value, key, file, env)
    if origin is Literal:
        if value not in args:
            _fail(file, key, f"one of {', '.join(repr(a) for a in args)}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            _fail(file, key, f"a list, got {_kind(value)}")
        return [convert(args[0], item, f"{key}[{i}]", file, env) for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            _fail(file, key, f"a table, got {_kind(value)}")
        return {str(k): convert(args[1], v, f"{key}.{k}", file, env) for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        return build(hint, value, key, file, env)
    if hint is Secret:
        return read_secret(value, key, file, env)
    if hint is bool:
        if not isinstance(value, bool):
            _fail(file, key, f"true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(file, key, f"a whole number, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(file, key, f"a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            _fail(file, key, f"a string, got {value!r}")
        return value
    raise TypeError(f"config schema uses unsupported type {hint!r} at {key}")


def read_secret(value, key: str, file: str, env) -> Secret:
    if not isinstance(value, dict) or set(value) not in ({"env"}, {"file"}):
        _fail(file, key, 'a secret reference, { env = "VARIABLE" } or { file = "/path/outside/the/repo" }; '
              "secrets are never written in the config itself")
    if "env" in value:
        name = value["env"]
        if name not in env:
            _fail(file, key, f"a secret in environment variable {name}, which is not set")
        return Secret(env[name], f"env {name}")
    path = expand_home(value["file"])
    try:
        return Secret(path.read_text().strip(), f"file {path}")
    except OSError as exc:
        _fail(file, key, f"a readable secret file, but {path} cannot be read ({exc.strerror})")


def _fail(file: str, key: str, expected: str):
    raise ConfigError(f"{file}: key {key!r}: expected {expected}")


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _kind(value) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), type(value).__name__)


def _describe(hint) -> str:
    return getattr(hint, "__name__", str(hint))


def home() -> Path:
    """The user's home: ``$HOME``, or the account's home directory when HOME is unset or empty
    (services, cron, containers), or the working directory as a last resort."""
    if os.environ.get("HOME"):
        return Path(os.environ["HOME"])
    try:
        import pwd

        return Path(pwd.getpwuid(os.getuid()).pw_dir or os.getcwd())
    except (ImportError, KeyError):
        return Path(os.getcwd())


def expand_home(path: str | Path) -> Path:
    """``path`` with a leading ``~`` replaced by ``home()``."""
    text = str(path)
    if text == "~" or text.startswith("~/"):
        return home() / text[2:]
    return Path(os.path.expanduser(text))


def data_home() -> Path:
    """Where gpuledger keeps its local data by default: ``$XDG_DATA_HOME/gpuledger`` or
    ``~/.local/share/gpuledger``."""
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else home() / ".local" / "share") / "gpuledger"


def bearer_matches(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header is ``Bearer <token>`` (compared in constant time)."""
    scheme, _, given = (header or "").partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
