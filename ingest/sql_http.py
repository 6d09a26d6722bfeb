"""ClickHouse's HTTP interface on the embedded store: SQL for finance tools while ``up`` holds it.

    endpoint = SqlEndpoint(config.sql, store)       # a WSGI app; ``start(host)`` serves it on
    endpoint.start("127.0.0.1")                     # [sql] port in a thread, ``stop()`` ends it

The part of the interface clickhouse-connect, curl and the HTTP ClickHouse data sources of
Grafana, Metabase and DBeaver use:

* ``GET /ping`` and ``GET /`` answer ``Ok.``; ``GET|POST /?query=...``, the query in the body,
  or both (joined by a newline, as ClickHouse does: the body then carries INSERT data);
* the output format from the query's ``FORMAT``, else ``default_format``, else TabSeparated; the
  engine writes every ClickHouse format itself (JSON*, TSV*, CSV*, Native, RowBinary*, Arrow,
  Parquet, ...);
* ``database``, ``param_<name>`` (ClickHouse's ``{name:Type}`` placeholders), ``query_id``;
  session and transport parameters (``session_id``, ``wait_end_of_query``, ``compress``, ...)
  are accepted and ignored: every request runs alone, to its end, before the answer is sent;
* users from ``[[sql.users]]`` by HTTP basic auth, ``X-ClickHouse-User`` / ``X-ClickHouse-Key``
  or ``user`` / ``password`` parameters; wrong ones get 401 and code 516;
* response compression (``enable_http_compression=1`` with ``Accept-Encoding`` gzip, deflate,
  zstd or lz4) and compressed request bodies (``Content-Encoding``);
* errors as ClickHouse writes them: ``Code: N. DB::Exception: ... (NAME)``, the
  ``X-ClickHouse-Exception-Code`` header and ClickHouse's HTTP status for the code.

Roles. A **reader**'s statement is checked by ``ingest.sqlguard`` (the one policy for typed SQL:
SELECT / SHOW / DESCRIBE / EXISTS / EXPLAIN over the store's database, no file / URL / remote
functions, no INTO OUTFILE, no SETTINGS) and runs as its canonical text on a handle set to
``readonly = 1`` with the ``[sql]`` limits (time, memory, result rows), so the engine refuses
what slipped past as well. A reader may lower a limit per request, never raise it; of the other
settings only output-shaping ones (``output_format_*``, ``date_time_output_format``, ...) are
applied. An **admin** may run anything the policy allows an admin (writes too) with any setting;
a GET request is read-only for everyone, as in ClickHouse.

Every request opens its own engine handle (chDB: about 0.1 ms), so session state never leaks
between users and requests run side by side.
"""
from __future__ import annotations

import base64
import gzip
import json
import logging
import os
import queue
import re
import threading
import time
import uuid
import zlib

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from base.errors import ClickHouseError, ConfigError, QueryRefused
from ingest import sqlguard

log = logging.getLogger(__name__)

SERVER_NAME = "gpuledger"
MAX_CONCURRENT = 16

# request parameters that are not settings: ClickHouse's own, and transport ones clients send
TRANSPORT = frozenset("""
query database default_format user password query_id session_id session_timeout session_check compress
decompress wait_end_of_query buffer_size client_protocol_version quota_key role send_progress_in_http_headers
http_headers_progress_interval_ms enable_http_compression http_zlib_compression_level
http_native_compression_disable_checksumming_on_decompress cancel_http_readonly_queries_on_client_close
add_http_cors_header http_response_buffer_size extremes_in_output
""".split())
# settings a reader may set: they shape the output, nothing else
READER_SETTINGS = frozenset({"date_time_output_format", "date_time_input_format", "extremes", "session_timezone",
                             "cast_string_to_dynamic_use_inference", "output_format_json_quote_64bit_integers"})
READER_SETTING_PREFIXES = ("output_format_",)

CONTENT_TYPES = {
    "TabSeparated": "text/tab-separated-values; charset=UTF-8",
    "CSV": "text/csv; charset=UTF-8; header=absent",
    "JSON": "application/json; charset=UTF-8",
    "XML": "application/xml; charset=UTF-8",
    "Pretty": "text/plain; charset=UTF-8",
}

# ClickHouse error code -> name, HTTP status (its HTTPHandler's mapping, for the codes met here)
ERRORS = {
    36: ("BAD_ARGUMENTS", 400), 62: ("SYNTAX_ERROR", 400), 27: ("CANNOT_PARSE_INPUT_ASSERTION_FAILED", 400),
    6: ("CANNOT_PARSE_TEXT", 400), 53: ("TYPE_MISMATCH", 400), 43: ("ILLEGAL_TYPE_OF_ARGUMENT", 400),
    42: ("NUMBER_OF_ARGUMENTS_DOESNT_MATCH", 400), 456: ("UNKNOWN_QUERY_PARAMETER", 400),
    457: ("BAD_QUERY_PARAMETER", 400), 60: ("UNKNOWN_TABLE", 404), 81: ("UNKNOWN_DATABASE", 404),
    46: ("UNKNOWN_FUNCTION", 404), 47: ("UNKNOWN_IDENTIFIER", 404), 73: ("UNKNOWN_FORMAT", 404),
    115: ("UNKNOWN_SETTING", 404), 164: ("READONLY", 403), 497: ("ACCESS_DENIED", 403),
    291: ("DATABASE_ACCESS_DENIED", 403), 452: ("SETTING_CONSTRAINT_VIOLATION", 403),
    516: ("AUTHENTICATION_FAILED", 401), 159: ("TIMEOUT_EXCEEDED", 500), 241: ("MEMORY_LIMIT_EXCEEDED", 500),
    396: ("TOO_MANY_ROWS_OR_BYTES", 500), 202: ("TOO_MANY_SIMULTANEOUS_QUERIES", 503),
    307: ("TOO_MANY_BYTES", 413), 48: ("NOT_IMPLEMENTED", 501), 1001: ("STD_EXCEPTION", 500),
}
_CODE = re.compile(r"Code: (\d+)\. ")
_NAME = re.compile(r"\(([A-Z][A-Z0-9_]+)\)(?:\s*\(version [^)]*\))?\.?\s*$")
_TRAILING_FORMAT = re.compile(r"\bFORMAT\s+(\w+)\s*;?\s*$", re.I)
_SETTING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def clickhouse_error(code: int, message: str, status: int | None = None, name: str = "") -> ClickHouseError:
    """A ClickHouseError with ClickHouse's name and HTTP status for ``code`` (unless given)."""
    known = ERRORS.get(code, ("", 500))
    return ClickHouseError(code, message, status or known[1], name or known[0] or "UNKNOWN_EXCEPTION")


def engine_error(exc: Exception) -> ClickHouseError:
    """A ClickHouseError for what the engine raised (its code, name and text kept)."""
    text = str(exc).strip()
    match = _CODE.search(text)
    code = int(match.group(1)) if match else 1001
    message = text[match.end():] if match else text
    while message.startswith("DB::Exception: "):
        message = message[len("DB::Exception: "):]
        nested = _CODE.match(message)             # "Code: 164. DB::Exception: Code: 164. DB::Exception: ..."
        if nested:
            message = message[nested.end():]
    name = _NAME.search(message)
    message = message[:name.start()].rstrip(" .") if name else message.rstrip(" .")
    message = message.split(" (version ")[0].rstrip(" .")
    return clickhouse_error(code, message, name=name.group(1) if name else "")


class SqlEndpoint:
    """The SQL port: authenticate, check, run on the engine, answer in ClickHouse's shape."""

    def __init__(self, config, store, *, on_query=None):
        self.config, self.store = config, store
        self.database = store.target.database
        self.path = os.path.realpath(store.target.path)
        self.on_query = on_query or (lambda ok, error: None)
        self._checkers: queue.SimpleQueue = queue.SimpleQueue()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)
        self._server = None
        self._thread = None
        self.port = None
        self.version, self.timezone = store.rows("SELECT version(), timezone()")[0]

    # ---- serving -----------------------------------------------------------------------------

    def start(self, host: str) -> None:
        try:
            self._server = make_server(host, self.config.port, self, threaded=True)
        except OSError as exc:
            raise ConfigError(f"cannot serve SQL on {host}:{self.config.port} ({exc.strerror}): set another "
                              "[sql] port (GPULEDGER_SQL_PORT), or [sql] enabled = false") from None
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="sql-http", daemon=True)
        self._thread.start()
        roles = sorted({u.role for u in self.config.users})
        log.info("SQL (ClickHouse HTTP interface) on http://%s:%d for %d user(s) (%s)", host, self.port,
                 len(self.config.users), ", ".join(roles))

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __call__(self, environ, start_response):
        return self.respond(Request(environ))(environ, start_response)

    # ---- one request -------------------------------------------------------------------------

    def respond(self, request: Request) -> Response:
        query_id = request.args.get("query_id") or str(uuid.uuid4())
        headers = {"X-ClickHouse-Server-Display-Name": SERVER_NAME, "X-ClickHouse-Query-Id": query_id,
                   "X-ClickHouse-Timezone": self.timezone}
        try:
            if request.path in ("/ping", "/replicas_status") and request.method in ("GET", "HEAD"):
                return Response("Ok.\n", headers=headers, content_type="text/plain; charset=UTF-8")
            if request.path not in ("/", "/query"):
                raise clickhouse_error(0, f"There is no handle {request.path}. Use / or /ping", status=404,
                                      name="UNKNOWN_EXCEPTION")
            params, body = self._read(request)
            if request.method in ("GET", "HEAD") and "query" not in params:
                return Response("Ok.\n", headers=headers, content_type="text/plain; charset=UTF-8")
            user = self._authenticate(request, params)
            if not self._slots.acquire(timeout=30):
                raise clickhouse_error(202, f"Too many simultaneous queries. Maximum: {MAX_CONCURRENT}")
            try:
                data, fmt, summary = self._run(user, request.method, params, body)
            finally:
                self._slots.release()
            self.on_query(True, None)
        except ClickHouseError as exc:
            if exc.status >= 500 and exc.code not in (159, 241, 396, 202):
                self.on_query(False, f"{exc.code}: {exc}")
            return Response(exc.body(), status=exc.status, content_type="text/plain; charset=UTF-8",
                            headers={**headers, "X-ClickHouse-Exception-Code": str(exc.code)})
        headers.update({"X-ClickHouse-Format": fmt, "X-ClickHouse-Summary": json.dumps(summary)})
        data, encoding = self._compress(request, params, data)
        if encoding:
            headers["Content-Encoding"] = encoding
        return Response(data, headers=headers, content_type=_content_type(fmt))

    def _read(self, request: Request) -> tuple[dict[str, str], bytes]:
        """The request's parameters (URL and form fields) and its body (decompressed)."""
        limit = int(self.config.max_body_mb * 1024 * 1024)
        if (request.content_length or 0) > limit:
            raise clickhouse_error(307, f"request body over the {self.config.max_body_mb:g} MB limit "
                                       "([sql] max_body_mb)", status=413)
        params = {k: v for k, v in request.args.items()}
        body = b""
        if request.method == "POST":
            if request.mimetype == "multipart/form-data":    # curl -d sends url-encoded type: a body
                params.update(request.form.items())
            else:
                body = request.get_data(cache=False)
                body = _decompress(body, request.headers.get("Content-Encoding", ""), limit)
        return params, body

    def _authenticate(self, request: Request, params: dict[str, str]):
        name, password = "default", ""
        header = request.headers.get("Authorization", "")
        if header[:6].lower() == "basic ":
            try:
                name, _, password = base64.b64decode(header[6:].strip()).decode("utf-8").partition(":")
            except (ValueError, UnicodeDecodeError):
                raise clickhouse_error(516, "malformed HTTP basic authorization") from None
        elif "X-ClickHouse-User" in request.headers:
            name, password = request.headers["X-ClickHouse-User"], request.headers.get("X-ClickHouse-Key", "")
        elif "user" in params:
            name, password = params["user"], params.get("password", "")
        user = self.config.user(name)
        if user is None or not user.accepts(password):
            raise clickhouse_error(516, f"{name}: Authentication failed: password is incorrect, or there is no "
                                       "user with such name (users are [[sql.users]] in the platform's config)")
        return user

    def _run(self, user, method: str, params: dict[str, str], body: bytes):
        query = params.get("query", "").encode("utf-8")
        text = query + b"\n" + body if query and body else query or body
        if not text.strip():
            raise clickhouse_error(62, "Empty query")
        bind = {k[6:]: v for k, v in params.items() if k.startswith("param_")}
        settings = {k: v for k, v in params.items() if k not in TRANSPORT and not k.startswith("param_")}
        for key in settings:
            if not _SETTING_NAME.fullmatch(key):
                raise clickhouse_error(115, f"Unknown setting {key!r}")
        database = params.get("database") or self.database
        reader = user.role == sqlguard.READER
        if reader:
            if database != self.database:
                raise clickhouse_error(291, f"{user.name}: a reader reads only database {self.database}; "
                                           f"set the connection's database to {self.database}")
            sql = self._check(_text(text), bind, sqlguard.READER)
            settings = self._reader_settings(settings)
        else:
            sql = text
            if text.lstrip()[:6].upper() != b"INSERT":          # INSERT data cannot be parsed as SQL
                self._check(_text(text), bind, sqlguard.ADMIN)
        shown = _TRAILING_FORMAT.search(_text(sql[-200:]) if isinstance(sql, bytes) else sql[-200:])
        fmt = shown.group(1) if shown else params.get("default_format") or "TabSeparated"
        started = time.perf_counter()
        result = self._execute(sql, fmt, bind, settings, database, reader=reader, read_only=method != "POST")
        data = result.bytes() or b""
        summary = _summary(result, time.perf_counter() - started, writes=not reader and _starts(sql, b"INSERT"))
        return data, fmt, summary

    def _check(self, text: str, bind: dict[str, str], role: str) -> str:
        """``sqlguard.check_query`` with this request's parameters bound (its parser needs them)."""
        store = self._checker()
        try:
            canonical = sqlguard.check_query(_Bound(store, bind), text, role)
        except QueryRefused as exc:
            message = str(exc).removeprefix("query refused: ").replace(" (gpuledger query without --write)", "") \
                .replace("print the result (--format csv) and redirect it instead", "ask for FORMAT CSV and save the answer")
            if message.startswith(("it cannot be parsed", "more than one statement")):
                raise clickhouse_error(62, f"query refused: {message}") from None
            if message.startswith("it cannot be checked"):
                raise clickhouse_error(36, f"query refused: {message}") from None
            code = 164 if " statements are not allowed for " in message else 497
            raise clickhouse_error(code, f"query refused: {message}") from None
        except Exception as exc:
            raise engine_error(exc) from None
        finally:
            self._checkers.put(store)
        return canonical

    def _checker(self):
        try:
            return self._checkers.get_nowait()
        except queue.Empty:
            return self.store.clone()

    def _reader_settings(self, asked: dict[str, str]) -> dict[str, str]:
        """What a reader's request may set, with the limits last (lowered where asked)."""
        limits = {"max_execution_time": self.config.max_execution_time_s,
                  "max_memory_usage": self.config.max_memory_mb * 1024 * 1024,
                  "max_result_rows": self.config.max_result_rows}
        out: dict[str, str] = {}
        for key, value in asked.items():
            if key in limits:
                if not value.isdigit() or not 0 < int(value) <= limits[key]:
                    raise clickhouse_error(452, f"Setting {key} shouldn't be greater than {limits[key]} or 0 "
                                               f"for a reader, got {value!r} (limits are [sql] in the platform's config)")
                limits[key] = int(value)
            elif key == "readonly":
                if value not in ("1", "2"):
                    raise clickhouse_error(164, "Cannot modify 'readonly' setting in readonly mode")
            elif key in READER_SETTINGS or key.startswith(READER_SETTING_PREFIXES):
                out[key] = value
            elif key == "result_overflow_mode" and value == "throw":
                pass
            else:
                raise clickhouse_error(164, f"Cannot modify '{key}' setting in readonly mode (a reader may set "
                                           "output_format_*, date_time_output_format and lower max_execution_time, "
                                           "max_memory_usage, max_result_rows)")
        return {**out, **{k: str(v) for k, v in limits.items()}, "result_overflow_mode": "throw", "readonly": "1"}

    def _execute(self, sql, fmt: str, bind: dict[str, str], settings: dict[str, str], database: str, *,
                 reader: bool, read_only: bool):
        import chdb

        conn = chdb.connect(self.path)
        try:
            try:
                conn.query(f"USE `{database.replace('`', '')}`")
                for key, value in settings.items():
                    conn.query(f"SET {key} = {_quote(value)}")
                if read_only and not reader:
                    conn.query("SET readonly = 2")
                return conn.query(sql, fmt, params=bind)
            except Exception as exc:
                raise engine_error(exc) from None
        finally:
            conn.close()

    # ---- answer ------------------------------------------------------------------------------

    def _compress(self, request: Request, params: dict[str, str], data: bytes) -> tuple[bytes, str]:
        if params.get("enable_http_compression") not in ("1", "true") or not data:
            return data, ""
        accepted = [part.split(";")[0].strip().lower() for part in request.headers.get("Accept-Encoding", "").split(",")]
        for encoding in accepted:
            if encoding == "gzip":
                return gzip.compress(data, compresslevel=3), "gzip"
            if encoding == "deflate":
                return zlib.compress(data, 3), "deflate"
            if encoding == "zstd" and _zstd():
                return _zstd().compress(data), "zstd"
            if encoding == "lz4" and _lz4():
                return _lz4().compress(data), "lz4"
        return data, ""


class _Bound:
    """A Store stand-in for ``sqlguard``: its parse queries see the request's ``param_`` values."""

    def __init__(self, store, bind: dict[str, str]):
        self.target, self._store, self._bind = store.target, store, bind
        self.client = self

    def query(self, sql: str, parameters: dict | None = None):
        if parameters or not self._bind:              # sqlguard's own parameters (the query text)
            return self._store.client.query(sql, parameters=parameters)
        return _Rows(self._store, sql, self._bind)    # EXPLAIN AST of the query: needs its values


class _Rows:
    """``result_rows`` of ``sql`` run with ClickHouse parameters ``bind`` given as text."""

    def __init__(self, store, sql: str, bind: dict[str, str]):
        import chdb

        conn = chdb.connect(os.path.realpath(store.target.path))
        try:
            conn.query(f"USE `{store.target.database}`")
            out = conn.query(sql, "JSONCompact", params=bind).bytes()
        finally:
            conn.close()
        self.result_rows = [tuple(r) for r in json.loads(out)["data"]]


def _summary(result, elapsed: float, writes: bool) -> dict[str, str]:
    try:
        rows, size = result.rows_read(), result.bytes_read()
    except Exception:
        rows = size = 0
    return {"read_rows": str(rows), "read_bytes": str(size), "written_rows": str(rows if writes else 0),
            "written_bytes": str(size if writes else 0), "total_rows_to_read": str(rows),
            "result_rows": "0", "result_bytes": "0", "elapsed_ns": str(int(elapsed * 1e9))}


def _content_type(fmt: str) -> str:
    for prefix, kind in CONTENT_TYPES.items():
        if fmt.startswith(prefix) or (prefix == "TabSeparated" and fmt.startswith("TSV")):
            return kind
    return "application/octet-stream"


def _decompress(body: bytes, encoding: str, limit: int) -> bytes:
    encoding = encoding.strip().lower()
    try:
        if encoding in ("", "identity"):
            data = body
        elif encoding == "gzip":
            data = gzip.decompress(body)
        elif encoding == "deflate":
            data = zlib.decompress(body)
        elif encoding == "zstd" and _zstd():
            data = _zstd().decompress(body)
        elif encoding == "lz4" and _lz4():
            data = _lz4().decompress(body)
        else:
            raise clickhouse_error(48, f"Content-Encoding {encoding!r} is not supported (gzip, deflate, zstd, lz4 are)",
                                  status=415)
    except ClickHouseError:
        raise
    except Exception as exc:
        raise clickhouse_error(36, f"the request body is not valid {encoding}: {exc}") from None
    if len(data) > limit:
        raise clickhouse_error(307, "request body over the size limit ([sql] max_body_mb) once decompressed", status=413)
    return data


def _zstd():
    try:
        from compression import zstd
    except ImportError:
        try:
            from backports import zstd
        except ImportError:
            return None
    return zstd


def _lz4():
    try:
        import lz4.frame
    except ImportError:
        return None
    return lz4.frame


def _text(data) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise clickhouse_error(36, "the query is not valid UTF-8 text") from None


def _starts(sql, word: bytes) -> bool:
    raw = sql if isinstance(sql, bytes) else sql.encode()
    return raw.lstrip()[:len(word)].upper() == word


def _quote(value: str) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def install(platform, config, store) -> SqlEndpoint | None:
    """Add the SQL port to ``platform`` (served while the platform serves), if it is to run."""
    sql = config.sql
    if not sql.enabled:
        return None
    if not sql.users:
        log.info("SQL port off: no [[sql.users]] configured (there is never an anonymous SQL port)")
        return None
    if not store.target.embedded:
        log.info("SQL port off: the store is a ClickHouse server (%s); connect SQL clients to it directly",
                 store.target)
        return None
    endpoint = SqlEndpoint(sql, store)
    platform.add_part("sql", f"ClickHouse HTTP interface on port {sql.port}, {len(sql.users)} user(s)")

    def on_query(ok: bool, error: str | None) -> None:
        from datetime import datetime, timezone

        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if ok:
            platform.parts["sql"]["last_ok"] = now
        else:
            platform.parts["sql"]["last_error"] = f"{now}: {error}"[:500]

    endpoint.on_query = on_query
    platform.add_service(endpoint)
    return endpoint
