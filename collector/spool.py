"""The agent's durable on-disk spool: batches wait here until the store has them.

Every batch is appended (and fsynced) to a segment file before anything tries to send it, and
it leaves the spool only when acknowledged — after the store, or the platform's batch
endpoint, confirmed the insert. So:

* a store outage of any length loses nothing while the spool has room: batches pile up on
  disk and are sent, oldest first, once the store answers again;
* a restart (crash, kill -9, reboot) replays every batch that was not acknowledged;
* nothing is stored twice: a batch's id is its ``insert_deduplication_token``, so a batch
  inserted just before a crash and replayed after it is dropped by ClickHouse as a duplicate;
* when the unsent batches would exceed ``max_bytes`` — or the disk itself is full — the *oldest*
  are dropped to make room (on a full disk, whole finished segments are freed this way; if none
  can be, the new batch is dropped).
  Each drop is logged (WARNING, with the rows lost), counted, and exported as
  ``gpuledger_spool_dropped_batches_total`` / ``gpuledger_spool_dropped_rows_total``. The
  agent never stops or crashes because the spool is full.

Layout of the directory (one agent per directory)::

    seg-000000000007.log   records: magic "GLB1", u32 length, u32 crc32, u32 rows,
                           u16 id length, id, batch JSON (collector.batches)
    seg-000000000007.ack   one line per resolved batch: "A <id>" acknowledged, "D <id>" dropped
                           (written, not fsynced: a lost line only causes a harmless replay)

A segment (and its .ack) is deleted once all of its batches are resolved. A record cut short
by a crash mid-write fails its checksum on replay and is discarded with a warning (it was
never acknowledged to anyone, so nothing that was promised is lost). Disk use stays within
``max_bytes`` plus about two segments.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import struct
import threading
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from base.errors import SpoolError
from base.settings import expand_home
from collector.batches import Batch, BatchError

log = logging.getLogger(__name__)

MAGIC = b"GLB1"
_HEAD = struct.Struct("<4sIIIH")          # magic, payload length, crc32, rows, id length
_SEGMENT = re.compile(r"seg-(\d{12})\.log")


@dataclass
class _Entry:
    segment: int
    offset: int
    length: int                           # whole record, header included
    rows: int
    created: float = 0.0                  # when it was spooled (replayed: its batch id's time)


@dataclass
class SpoolStats:
    appended_batches: int = 0
    acked_batches: int = 0
    dropped_batches: int = 0
    dropped_rows: int = 0
    discarded_records: int = 0            # torn / corrupt records found on replay


def _free_bytes(directory: Path) -> int:
    """Free space where the spool lives (so segments stay small enough to be freed on a full disk)."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        st = os.statvfs(probe)
        return st.f_bavail * st.f_frsize
    except OSError:
        return 1 << 62


class Spool:
    """Append, peek, ack; see the module docstring. Safe to use from two threads."""

    def __init__(self, directory: str | os.PathLike, max_bytes: int = 256 << 20,
                 segment_bytes: int | None = None, fsync: bool = True):
        self.dir = expand_home(directory)
        self.max_bytes = int(max_bytes)
        self.segment_bytes = segment_bytes or max(64 << 10, min(8 << 20, self.max_bytes // 16, _free_bytes(self.dir) // 8))
        self._fsync = fsync
        self._lock = threading.RLock()
        self._pending: OrderedDict[str, _Entry] = OrderedDict()
        self._live: dict[int, int] = {}       # segment -> unresolved batches in it
        self.pending_bytes = 0
        self.stats = SpoolStats()
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._replay()
            self._open_segment(max(self._segments(), default=0) + 1)
        except OSError as e:
            raise SpoolError(f"cannot use spool directory {self.dir}: {e.strerror or e}; "
                             "point --spool-dir / collector.spool_dir at a writable "
                             "directory") from e
        if self._pending:
            log.info("spool %s: replaying %d unsent batch(es), %d rows, from before the restart",
                     self.dir, len(self._pending), self.pending_rows)

    # ---- what is waiting ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._pending)

    @property
    def pending_rows(self) -> int:
        return sum(e.rows for e in self._pending.values())

    def peek(self, limit: int = 1) -> list[Batch]:
        """The oldest unacknowledged batches, oldest first (they stay until ``ack``)."""
        out = []
        with self._lock:
            for batch_id, entry in list(self._pending.items())[:limit]:
                try:
                    out.append(self._read(batch_id, entry))
                except (BatchError, OSError) as e:
                    log.error("spool %s: batch %s cannot be read back (%s); dropping it",
                              self.dir, batch_id, e)
                    self._resolve(batch_id, "D")
                    self.stats.dropped_batches += 1
                    self.stats.dropped_rows += entry.rows
        return out

    # ---- changes -----------------------------------------------------------------------
    def append(self, batch: Batch) -> None:
        """Store ``batch`` durably; drop the oldest unsent batches if the spool is full."""
        payload = batch.to_json()
        bid = batch.id.encode()
        size = _HEAD.size + len(bid) + len(payload)
        with self._lock:
            if batch.id in self._pending:
                return                            # already waiting: appending twice is a no-op
            while self._pending and self.pending_bytes + size > self.max_bytes:
                self._drop_oldest()
            if size > self.max_bytes:
                self._count_drop(batch.id, len(batch.rows), "it alone is larger than the spool")
                return
            if self._size >= self.segment_bytes:
                self._roll()
            head = _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload, zlib.crc32(bid)),
                              len(batch.rows), len(bid))
            offset = self._size
            if not self._write_record(head + bid + payload, offset):
                self._count_drop(batch.id, len(batch.rows), "the disk is full")
                return
            self._size += size
            self._pending[batch.id] = _Entry(self._seg, offset, size, len(batch.rows), time.time())
            self._live[self._seg] = self._live.get(self._seg, 0) + 1
            self.pending_bytes += size
            self.stats.appended_batches += 1

    def ack(self, batch_id: str) -> None:
        """The store has this batch: forget it (durably)."""
        with self._lock:
            if batch_id in self._pending:
                self._resolve(batch_id, "A")
                self.stats.acked_batches += 1

    def close(self) -> None:
        with self._lock:
            if self._file and not self._file.closed:
                self._file.close()
                if self._live.get(self._seg, 0) == 0:
                    self._delete(self._seg)

    def oldest_unsent_age(self, now: float | None = None) -> float:
        """Seconds since the oldest unsent batch was spooled (0 when none waits)."""
        with self._lock:
            oldest = next(iter(self._pending.values()), None)
        if oldest is None:
            return 0.0
        return max(0.0, (time.time() if now is None else now) - oldest.created)

    # ---- metrics -----------------------------------------------------------------------
    def collect(self):
        """prometheus-client metric families (pass to GpuMetricsCollector.add_source)."""
        st = self.stats
        yield GaugeMetricFamily("gpuledger_spool_pending_batches",
                                "Batches on disk waiting for the store.", value=len(self))
        yield GaugeMetricFamily("gpuledger_spool_pending_bytes",
                                "Bytes of batches waiting for the store.", value=self.pending_bytes)
        yield GaugeMetricFamily("gpuledger_spool_max_bytes", "The spool's size limit.",
                                value=self.max_bytes)
        yield GaugeMetricFamily("gpuledger_spool_oldest_unsent_age_seconds",
                                "Age of the oldest unsent batch (0 when none).", value=self.oldest_unsent_age())
        yield CounterMetricFamily("gpuledger_spool_acked_batches",
                                  "Batches the store confirmed.", value=st.acked_batches)
        yield CounterMetricFamily("gpuledger_spool_dropped_batches",
                                  "Unsent batches dropped because the spool was full.",
                                  value=st.dropped_batches)
        yield CounterMetricFamily("gpuledger_spool_dropped_rows",
                                  "Rows in dropped batches (lost samples).", value=st.dropped_rows)

    # ---- internals ---------------------------------------------------------------------
    def _write_record(self, record: bytes, offset: int) -> bool:
        """Append ``record`` durably at ``offset``. On a full disk, cut the partial write off and
        drop the oldest batches until a finished segment is deleted and the write fits; False
        when nothing more can be freed (the caller drops this batch: counted, logged)."""
        fd = self._file.fileno()
        while True:
            try:
                view = memoryview(record)
                while view:
                    view = view[os.write(fd, view):]
                if self._fsync:
                    os.fsync(fd)
                return True
            except OSError as e:
                if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
                os.ftruncate(fd, offset)          # no partial record stays behind
                if not self._free_a_segment():
                    return False

    def _free_a_segment(self) -> bool:
        """Drop the oldest batches until one older segment is deleted; False if none can be."""
        while any(entry.segment != self._seg for entry in self._pending.values()):
            before = len(self._live)
            self._drop_oldest(why="the disk is full")
            if len(self._live) < before:
                return True
        return False

    def _drop_oldest(self, why: str = "the spool is full") -> None:
        batch_id, entry = next(iter(self._pending.items()))
        self._resolve(batch_id, "D")
        self._count_drop(batch_id, entry.rows, why)

    def _count_drop(self, batch_id: str, rows: int, why: str) -> None:
        self.stats.dropped_batches += 1
        self.stats.dropped_rows += rows
        log.warning("spool %s: dropped batch %s (%d rows) because %s (limit %.1f MB, "
                    "%d dropped so far); the store has been unreachable too long or the limit "
                    "is too small (collector.spool_max_mb)", self.dir, batch_id, rows, why,
                    self.max_bytes / 1e6, self.stats.dropped_batches)

    def _resolve(self, batch_id: str, mark: str) -> None:
        entry = self._pending.pop(batch_id)
        self.pending_bytes -= entry.length
        # not fsynced, and a failed write (full disk) is only logged: an ack lost in a crash
        # means a replay, which the batch's deduplication token makes harmless (and a lost drop
        # mark only re-sends a batch)
        try:
            with open(self._path(entry.segment, "ack"), "a", encoding="utf-8") as f:
                f.write(f"{mark} {batch_id}\n")
        except OSError as e:
            log.warning("spool %s: cannot note batch %s as %s (%s); after a restart it is sent "
                        "again, which stores nothing twice", self.dir, batch_id,
                        "sent" if mark == "A" else "dropped", e.strerror or e)
        self._live[entry.segment] -= 1
        if self._live[entry.segment] == 0 and entry.segment != self._seg:
            self._delete(entry.segment)

    def _read(self, batch_id: str, entry: _Entry) -> Batch:
        with open(self._path(entry.segment, "log"), "rb") as f:
            f.seek(entry.offset)
            record = f.read(entry.length)
        _, _, _, _, id_len = _HEAD.unpack_from(record)
        return Batch.from_json(record[_HEAD.size + id_len:])

    def _path(self, segment: int, kind: str) -> Path:
        return self.dir / f"seg-{segment:012d}.{kind}"

    def _segments(self) -> list[int]:
        return sorted(int(m.group(1)) for p in self.dir.iterdir() if (m := _SEGMENT.fullmatch(p.name)))

    def _open_segment(self, segment: int) -> None:
        self._seg, self._size = segment, 0
        self._file = open(self._path(segment, "log"), "ab", buffering=0)
        self._live.setdefault(segment, 0)
        self._sync_dir()

    def _roll(self) -> None:
        self._file.close()
        old = self._seg
        self._open_segment(old + 1)
        if self._live.get(old, 0) == 0:
            self._delete(old)

    def _delete(self, segment: int) -> None:
        for kind in ("log", "ack"):
            try:
                self._path(segment, kind).unlink()
            except FileNotFoundError:
                pass
        self._live.pop(segment, None)

    def _sync_dir(self) -> None:
        if self._fsync:
            fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _replay(self) -> None:
        for segment in self._segments():
            resolved = self._resolved(segment)
            path = self._path(segment, "log")
            data = path.read_bytes()
            good = self._scan(segment, data, resolved)
            if good < len(data):
                self.stats.discarded_records += 1
                log.warning("spool %s: %s ends with %d bytes of an incomplete or corrupt record "
                            "(a crash during a write); discarded", self.dir, path.name,
                            len(data) - good)
                with open(path, "r+b") as f:
                    f.truncate(good)
            if self._live.get(segment, 0) == 0:
                self._delete(segment)

    def _resolved(self, segment: int) -> set[str]:
        try:
            lines = self._path(segment, "ack").read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return set()
        return {line[2:] for line in lines if line[:2] in ("A ", "D ")}

    def _scan(self, segment: int, data: bytes, resolved: set[str]) -> int:
        """Index the segment's unresolved records; return the length of its intact prefix."""
        pos = 0
        self._live[segment] = 0
        try:
            written = self._path(segment, "log").stat().st_mtime
        except OSError:
            written = time.time()
        while pos + _HEAD.size <= len(data):
            magic, length, crc, rows, id_len = _HEAD.unpack_from(data, pos)
            end = pos + _HEAD.size + id_len + length
            if magic != MAGIC or end > len(data):
                break
            bid = data[pos + _HEAD.size:pos + _HEAD.size + id_len]
            if zlib.crc32(data[pos + _HEAD.size + id_len:end], zlib.crc32(bid)) != crc:
                break
            batch_id = bid.decode()
            if batch_id not in resolved and batch_id not in self._pending:
                self._pending[batch_id] = _Entry(segment, pos, end - pos, rows, _spooled_at(batch_id, written))
                self._live[segment] += 1
                self.pending_bytes += end - pos
            pos = end
        return pos


def _spooled_at(batch_id: str, fallback: float) -> float:
    """When a replayed batch was made: the sample time its id carries (``collector.batches.new_id``:
    host/table/<ms>/<random>), not later than its segment's last write; else that write's time."""
    parts = batch_id.rsplit("/", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return min(int(parts[1]) / 1000, fallback)
    return fallback
