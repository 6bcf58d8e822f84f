#!/usr/bin/env python3
"""Fails (exit 1) when the sanitizer build's daemons left ASan/UBSan reports in DIR, printing each; exit 0 when none.

  sanitizer_reports.py DIR
"""
import os
import sys


def main():
    reports_dir = sys.argv[1]
    reports = sorted(os.listdir(reports_dir)) if os.path.isdir(reports_dir) else []
    for name in reports:
        with open(os.path.join(reports_dir, name), errors="replace") as f:
            print("== %s\n%s" % (name, f.read()[:20000]))
    print("%d sanitizer report(s) in %s" % (len(reports), reports_dir))
    return 1 if reports else 0


if __name__ == "__main__":
    sys.exit(main())
