"""The HTTP server of ``gpuledger up``: werkzeug's WSGI server answering with a fixed pool of threads.

werkzeug's ``threaded=True`` starts a thread for every connection. When a fleet's agents push at
once, hundreds of threads then contend for the GIL and are created and torn down hundreds of times
a second: at 10,000 GPUs (``bench.bench_fleet10k``) a quarter of the receiver's CPU went to the
kernel switching and spinning between them. Here ``threads`` long-lived workers take the accepted
connections from a queue, in the order they came; connections beyond that wait in the queue and
in the kernel's listen backlog (``LISTEN_BACKLOG``) until a worker is free. A request that waits
for its group's insert (``ingest.group_commit``) holds its worker meanwhile, so the pool must
cover the requests of a group and the next: ``server.threads`` (256 by default).

werkzeug answers every request with ``Connection: close``, so a worker is held only while its
request arrives and is answered. A client that stalls (connects and sends nothing, or stops half-way)
would hold one for good: a connection silent for ``IDLE_S`` seconds is closed.
"""
from __future__ import annotations

import queue
import threading

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler

LISTEN_BACKLOG = 1024       # connections the kernel queues while every worker is busy (werkzeug: 128)
IDLE_S = 10.0               # a connection that sends nothing for this long is closed


class RequestHandler(WSGIRequestHandler):
    """werkzeug's handler, except that closing a stalled connection is not logged as an error."""

    def log_error(self, format: str, *args) -> None:
        if not format.startswith("Request timed out"):
            super().log_error(format, *args)


class PooledWSGIServer(BaseWSGIServer):
    """``BaseWSGIServer`` whose connections are served by ``threads`` worker threads."""

    multithread = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, host: str, port: int, app, threads: int, handler=None, idle_s: float = IDLE_S):
        super().__init__(host, port, app, handler=handler or RequestHandler)
        self.idle_s = idle_s
        self._connections: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = [threading.Thread(target=self._work, name=f"http-{n}", daemon=True) for n in range(threads)]
        for worker in self._workers:
            worker.start()

    def process_request(self, request, client_address) -> None:
        self._connections.put((request, client_address))

    def _work(self) -> None:
        while (job := self._connections.get()) is not None:
            request, client_address = job
            request.settimeout(self.idle_s)
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)

    def server_close(self) -> None:
        """Close the socket and let every worker end once the connections it was given are served."""
        super().server_close()
        for _ in self._workers:
            self._connections.put(None)
