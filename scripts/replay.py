#!/usr/bin/env python3
"""Replays a log file into another file at a given rate, as a running server would write it.

    scripts/replay.py tests/corpus/real/cuda_oom__vllm-9630.log /tmp/demo/vllm.log --rate 20

Then, in another terminal:

    faultline run --source /tmp/demo/vllm.log --start-at beginning

Options:
  --rate N          lines per second (default 50; 0: as fast as possible)
  --cri             wrap each line as a Kubernetes CRI log line (timestamp stdout F ...)
  --loop            start over at the end of the input (until interrupted)
  --rotate-lines N  rename DEST to DEST.1 every N lines and continue in a new DEST (rename rotation)
  --truncate        create DEST empty first (default: append)
Python 3 standard library only.
"""
import argparse
import datetime
import os
import sys
import time


def cri_wrap(line):
    now = datetime.datetime.now(datetime.timezone.utc)
    return "%s.%09dZ stdout F %s" % (now.strftime("%Y-%m-%dT%H:%M:%S"), now.microsecond * 1000, line)


def main():
    ap = argparse.ArgumentParser(description="Append a log to a file at a given rate.")
    ap.add_argument("source", help="log file to replay ('-': standard input)")
    ap.add_argument("dest", help="file to append to (created if missing)")
    ap.add_argument("--rate", type=float, default=50.0, help="lines per second (0: unthrottled)")
    ap.add_argument("--cri", action="store_true", help="write CRI-formatted lines")
    ap.add_argument("--loop", action="store_true", help="replay again at the end")
    ap.add_argument("--rotate-lines", type=int, default=0, help="rename rotation every N lines")
    ap.add_argument("--truncate", action="store_true", help="start with an empty destination")
    args = ap.parse_args()

    if args.source == "-":
        lines = sys.stdin.read().splitlines()
    else:
        with open(args.source, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    if not lines:
        sys.exit("replay: %s is empty" % args.source)
    os.makedirs(os.path.dirname(os.path.abspath(args.dest)), exist_ok=True)
    out = open(args.dest, "w" if args.truncate else "a", buffering=1, encoding="utf-8")
    written = 0
    start = time.monotonic()
    try:
        while True:
            for line in lines:
                out.write((cri_wrap(line) if args.cri else line) + "\n")
                written += 1
                if args.rotate_lines and written % args.rotate_lines == 0:
                    out.close()
                    os.replace(args.dest, args.dest + ".1")
                    out = open(args.dest, "a", buffering=1, encoding="utf-8")
                if args.rate > 0:
                    ahead = written / args.rate - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(ahead)
            if not args.loop:
                break
    except KeyboardInterrupt:
        pass
    finally:
        out.close()
    print("replay: %d lines written to %s" % (written, args.dest), file=sys.stderr)


if __name__ == "__main__":
    main()
