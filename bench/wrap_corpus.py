#!/usr/bin/env python3
"""Wraps a raw log as a container runtime writes it: Kubernetes CRI or docker json-file.

  wrap_corpus.py --format cri|docker [--split-at 4096] [--start 2026-11-29T10:08:01] IN OUT

Each line becomes one CRI line (`<RFC 3339 time> stdout F <line>`) or one docker json-file line
(`{"log":"<line>\\n","stream":"stdout","time":"..."}`, with Docker's `\\u003c`/`\\u003e`/`\\u0026` escapes); a line
longer than --split-at bytes is split into `P` fragments ending with an `F` (CRI) or into entries without the
trailing `\\n` (docker), as the runtimes do. Every fifth line goes to stderr. The wrapper's times start at --start
and step 1.5 ms a line. Output depends only on the input and the arguments. Standard library only; the escaping and
splitting are gen_corpus.py's.
"""
import argparse
import datetime as dt
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_corpus import docker_escape, split_utf8  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--format", choices=("cri", "docker"), required=True)
    ap.add_argument("--split-at", type=int, default=4096)
    ap.add_argument("--start", default="2026-11-29T10:08:01")
    ap.add_argument("input")
    ap.add_argument("output")
    a = ap.parse_args()
    start = dt.datetime.fromisoformat(a.start).replace(tzinfo=dt.timezone.utc)
    epoch0 = int(start.timestamp())
    cri = a.format == "cri"
    sec_cache = {}
    with open(a.input, encoding="utf-8", errors="surrogateescape", newline="\n") as f, \
            open(a.output + ".tmp", "w", encoding="utf-8", errors="surrogateescape", newline="\n",
                 buffering=1 << 20) as g:
        w = g.write
        for i, line in enumerate(f):
            text = line[:-1] if line.endswith("\n") else line
            ns = i * 1_500_000
            sec = epoch0 + ns // 1_000_000_000
            ts_sec = sec_cache.get(sec)
            if ts_sec is None:
                ts_sec = dt.datetime.fromtimestamp(sec, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
                sec_cache.clear()
                sec_cache[sec] = ts_sec
            frac = ("%09d" % (ns % 1_000_000_000)).rstrip("0")
            ts = ts_sec + ("." + frac if frac else "") + "Z"
            stream = "stderr" if i % 5 == 4 else "stdout"
            pieces = split_utf8(text, a.split_at) if len(text) > a.split_at // 4 else [text]
            for k, piece in enumerate(pieces):
                last = k == len(pieces) - 1
                if cri:
                    w("%s %s %s %s\n" % (ts, stream, "F" if last else "P", piece))
                else:
                    w('{"log":"%s%s","stream":"%s","time":"%s"}\n'
                      % (docker_escape(piece), "\\n" if last else "", stream, ts))
    os.replace(a.output + ".tmp", a.output)


if __name__ == "__main__":
    main()
