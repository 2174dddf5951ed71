"""A test's trainer: runs the real hone-train with the worker's arguments, passing its output
through, and holds it (SIGSTOP, then SIGCONT) for HONE_TEST_EPOCH_PACE seconds after each epoch
line, so that a small real job stays running long enough for a browser to watch, pause and cancel
it without the CPU training more data. A SIGTERM (the worker's stop, pause or cancel, sent to the
process group) lets the held trainer go at once, so it checkpoints and ends as it would unpaced.

usage: paced_trainer.py HONE-TRAIN ARGS..."""
import os
import signal
import subprocess
import sys
import time


def main():
    pace = float(os.environ.get("HONE_TEST_EPOCH_PACE", "0") or 0)
    child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
    stopping = []

    def on_term(sig, _frame):
        stopping.append(sig)
        try:
            child.send_signal(signal.SIGCONT)
            child.send_signal(sig)
        except OSError:
            pass

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    for line in child.stdout:
        sys.stdout.buffer.write(line)
        sys.stdout.flush()
        if pace > 0 and not stopping and line.startswith(b'{"epoch"'):
            try:
                child.send_signal(signal.SIGSTOP)
                end = time.time() + pace
                while not stopping and time.time() < end:
                    time.sleep(min(0.05, end - time.time()))
            finally:
                child.send_signal(signal.SIGCONT)
    rc = child.wait()
    if rc < 0:  # ended by a signal: end the same way
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
