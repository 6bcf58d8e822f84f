#!/usr/bin/env python3
"""logtee: run a command; copy its stdout and stderr to our stdout and to a size-rotated file.

    python3 logtee.py --file /var/log/vllm/vllm.log --max-bytes 52428800 --backups 3 -- vllm serve MODEL ...

Made for an inference server with a faultline sidecar: the server's output still reaches the
container's stdout (kubectl logs, the node's log agent), and a copy lands in a file on a volume
the sidecar reads. Standard library only, so it runs in any image that has python3 (every vLLM,
SGLang and TensorRT-LLM image does).

Why not `cmd 2>&1 | tee file`: the file grows without bound, the pipeline's status is tee's,
and SIGTERM reaches the shell, not the server. Why not the server's own logging config
(e.g. VLLM_LOGGING_CONFIG_PATH with a RotatingFileHandler): it sees only records of Python's
logging, not what CUDA, NCCL, C++ extensions or a dying worker print to stderr, which is where
most fatal errors appear; and several processes rotating one file corrupt it.

Semantics:
- The command's stdout and stderr share one pipe, so their lines interleave in order.
- The file is rotated by renaming (file -> file.1 -> ... -> file.N, oldest dropped) when it
  would exceed --max-bytes, only at a line boundary (a line is never split across files; one
  line longer than the limit makes a file longer than the limit). faultline follows renames.
- SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 are passed to the command. When it exits,
  what it wrote is drained (up to --drain-timeout seconds if a grandchild keeps the pipe open),
  then logtee exits with its status (128+N if killed by signal N). Orphans are reaped (PID 1).
- A failure to write the file (disk full, volume gone) is reported once on stderr and the
  copy to stdout goes on: logging never takes the server down. The same holds for stdout.
"""

import argparse
import errno
import os
import select
import signal
import sys
import time

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def log(msg):
    try:
        os.write(2, ("logtee: %s\n" % msg).encode())
    except OSError:
        pass


class RotatingFile:
    def __init__(self, path, max_bytes, backups):
        self.path = path
        self.max_bytes = max(1, max_bytes)
        self.backups = max(0, backups)
        self.fd = None
        self.size = 0
        self.broken = False
        self.retry_at = 0.0
        self._open()

    def _open(self):
        try:
            d = os.path.dirname(self.path)
            if d:
                os.makedirs(d, exist_ok=True)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
            self.size = os.fstat(self.fd).st_size
        except OSError as e:
            self._fail("cannot open %s: %s" % (self.path, e))

    def _fail(self, msg):
        if not self.broken:
            log(msg + " (output still goes to stdout)")
        self.broken = True
        self.retry_at = time.monotonic() + 30.0
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.fd = None

    def _rotate(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        try:
            if self.backups == 0:
                os.unlink(self.path)
            else:
                for i in range(self.backups - 1, 0, -1):
                    src = "%s.%d" % (self.path, i)
                    if os.path.exists(src):
                        os.replace(src, "%s.%d" % (self.path, i + 1))
                os.replace(self.path, self.path + ".1")
        except FileNotFoundError:
            pass
        except OSError as e:
            self._fail("cannot rotate %s: %s" % (self.path, e))
            return
        self._open()

    def _write_all(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        self.size += len(data)

    def write(self, data):
        if self.broken:
            # Retry now and then: the volume may have room again.
            if time.monotonic() < self.retry_at:
                return
            self.broken = False
            self._open()
            if self.broken:
                return
            log("writing %s again" % self.path)
        try:
            while data:
                room = self.max_bytes - self.size
                if len(data) <= room:
                    self._write_all(data)
                    return
                # Cut after the first newline at or after the limit; rotate there.
                cut = data.find(b"\n", max(0, room - 1))
                if cut < 0:
                    self._write_all(data)  # the line goes on in the next chunk
                    return
                self._write_all(data[: cut + 1])
                data = data[cut + 1 :]
                self._rotate()
                if self.broken:
                    return
        except OSError as e:
            self._fail("cannot write %s: %s" % (self.path, e))


def write_stdout(data, state):
    if state["stdout_broken"]:
        return
    view = memoryview(data)
    try:
        while view:
            n = os.write(1, view)
            view = view[n:]
    except OSError as e:
        state["stdout_broken"] = True
        log("stdout: %s; writing the file only" % e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", required=True, help="the log file to write and rotate")
    ap.add_argument("--max-bytes", type=int, default=50 * 1024 * 1024, help="rotate beyond this size")
    ap.add_argument("--backups", type=int, default=3, help="rotated files to keep (file.1 ... file.N)")
    ap.add_argument("--drain-timeout", type=float, default=5.0,
                    help="seconds to keep reading after the command exits while others hold its output open")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- command [args...]")
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given (logtee.py [options] -- command ...)")

    out = RotatingFile(args.file, args.max_bytes, args.backups)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.dup2(w, 1)
            os.dup2(w, 2)
            if w > 2:
                os.close(w)
            # Python ignores SIGPIPE and SIGXFSZ; ignored dispositions survive exec.
            for s in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(s, signal.SIG_DFL)
            os.execvp(cmd[0], cmd)
        except OSError as e:
            os.write(2, ("logtee: cannot run %s: %s\n" % (cmd[0], e)).encode())
        os._exit(127)
    os.close(w)

    status = {"code": None}

    def reap(*_):
        while True:
            try:
                p, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if p == 0:
                return
            if p == pid:
                status["code"] = os.waitstatus_to_exitcode(st)

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for s in FORWARDED:
        signal.signal(s, forward)
    signal.signal(signal.SIGCHLD, reap)
    reap()  # in case the command already exited

    state = {"stdout_broken": False}
    deadline = None
    while True:
        if status["code"] is not None and deadline is None:
            deadline = time.monotonic() + args.drain_timeout
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        if timeout is None:
            timeout = 1.0  # wake up now and then to notice the command's exit
        try:
            ready, _, _ = select.select([r], [], [], timeout)
        except InterruptedError:
            continue
        if not ready:
            if deadline is not None and time.monotonic() >= deadline:
                log("the command exited but something still holds its output open; stopping after %.1fs"
                    % args.drain_timeout)
                break
            continue
        try:
            data = os.read(r, 1 << 16)
        except OSError as e:
            if e.errno == errno.EINTR:
                continue
            raise
        if not data:
            break
        write_stdout(data, state)
        out.write(data)

    while status["code"] is None:
        try:
            p, st = os.waitpid(pid, 0)
        except ChildProcessError:
            break
        if p == pid:
            status["code"] = os.waitstatus_to_exitcode(st)
    reap()
    code = status["code"]
    if code is None:
        code = 1
    if code < 0:
        code = 128 - code
    sys.exit(code)


if __name__ == "__main__":
    main()
