"""The HTTP server of ``gpuledger up``: werkzeug's WSGI server answering with a fixed pool of threads.

werkzeug's ``threaded=True`` starts a thread for every connection. When a fleet's agents push at
once, hundreds of threads then contend for the GIL and are created and torn down hundreds of times
a second: at 10,000 GPUs (``bench.bench_fleet10k``) a quarter of the receiver's CPU went to the
kernel switching and spinning between them. Here ``threads`` long-lived workers take the accepted
connections from a queue, in the order they came; connections beyond that wait in the queue and
in the kernel's listen backlog (``LISTEN_BACKLOG``) until a worker is free. A request that waits
for its group's insert (``ingest.group_commit``) holds its worker meanwhile, so the pool must
cover the requests of a group and the next: ``server.threads`` (256 by default).
"""
from __future__ import annotations

import queue
import threading

from werkzeug.serving import BaseWSGIServer

LISTEN_BACKLOG = 1024       # connections the kernel queues while every worker is busy (werkzeug: 128)


class PooledWSGIServer(BaseWSGIServer):
    """``BaseWSGIServer`` whose connections are served by ``threads`` worker threads."""

    multithread = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, host: str, port: int, app, threads: int, handler=None):
        super().__init__(host, port, app, handler=handler)
        self._connections: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = [threading.Thread(target=self._work, name=f"http-{n}", daemon=True) for n in range(threads)]
        for worker in self._workers:
            worker.start()

    def process_request(self, request, client_address) -> None:
        self._connections.put((request, client_address))

    def _work(self) -> None:
        while (job := self._connections.get()) is not None:
            request, client_address = job
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
