"""A loopback TCP proxy for tests that need a request in flight at a chosen moment: it passes a
client's bytes to an upstream port and back, and holds each chunk a client sends that holds a
marker (say b"/report HTTP/1.1") for `hold` seconds, or until let_go(), before passing it on,
setting `held` when it starts holding the first one. A held chunk is passed on afterwards even
when the client has given up on it by then (what upstream makes of a request whose client is gone
is up to it). Stdlib only."""
import socket
import threading


class HoldProxy:
    def __init__(self, upstream_port, hold=1.0):
        self.upstream = ("127.0.0.1", upstream_port)
        self.hold = hold
        self.marker = None  # bytes; None holds nothing
        self.held = threading.Event()
        self._go = threading.Event()
        self.holds = 0
        self._holding = 0
        self._lock = threading.Lock()
        self._srv = socket.socket()
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(64)
        self.port = self._srv.getsockname()[1]
        self.base = "http://127.0.0.1:%d" % self.port
        self._done = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, marker):
        """Holds every later chunk that contains marker (bytes; None: none, what is held now
        still waits out its time); clears `held`."""
        with self._lock:
            self.marker = marker
            self.held.clear()
            self._go.clear()

    def holding(self):
        """How many chunks are held right now."""
        with self._lock:
            return self._holding

    def let_go(self):
        """Passes on what is held now, and from now on every marked chunk at once."""
        with self._lock:
            self.marker = None
            self._go.set()

    def close(self):
        self._done = True
        try:
            self._srv.close()
        except OSError:
            pass

    def _accept(self):
        while not self._done:
            try:
                client, _ = self._srv.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.upstream, timeout=10)
                up.settimeout(None)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pump, args=(client, up, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, client, False), daemon=True).start()

    def _pump(self, src, dst, from_client):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if from_client:
                    with self._lock:
                        hit = self.marker is not None and self.marker in data
                        if hit:
                            self.holds += 1
                            self._holding += 1
                    if hit:
                        self.held.set()
                        self._go.wait(self.hold)
                        with self._lock:
                            self._holding -= 1
                dst.sendall(data)
        except OSError:
            pass
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for s in (dst, src):
            try:
                s.close()
            except OSError:
                pass
