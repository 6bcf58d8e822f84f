"""Shared bits of the deploy tests: paths, Debian's python, a tiny case runner."""

import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("FAULTLINE_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
CHART_DIR = os.path.join(SOURCE_DIR, "deploy", "helm", "faultline")


def use_debian_python(*modules):
    """Re-run this script under /usr/bin/python3 when the running python lacks a module that
    deploy/packages.txt installs for Debian's python (python3-yaml, python3-kubernetes)."""
    missing = []
    for m in modules:
        try:
            __import__(m)
        except ImportError:
            missing.append(m)
    if not missing:
        return
    debian = "/usr/bin/python3"
    if os.path.exists(debian) and os.path.realpath(sys.executable) != os.path.realpath(debian) \
            and not os.environ.get("FAULTLINE_DEPLOY_REEXEC"):
        os.environ["FAULTLINE_DEPLOY_REEXEC"] = "1"
        os.execv(debian, [debian] + sys.argv)
    sys.stderr.write("missing python modules %s: apt-get install -y $(cat deploy/packages.txt)\n" % missing)
    sys.exit(1)


class Cases:
    """Runs named checks; each raises AssertionError (or anything) to fail. Ends with the
    'N passed, N failed' line that CI reads."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def run(self, name, fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except AssertionError as e:
            self.failed += 1
            self.failures.append(name)
            print("FAIL %s\n     %s" % (name, str(e).replace("\n", "\n     ")), flush=True)
            return False
        except Exception:  # a bug in the test or the tool: show it whole
            self.failed += 1
            self.failures.append(name)
            print("FAIL %s\n%s" % (name, traceback.format_exc()), flush=True)
            return False
        self.passed += 1
        print("ok   %s" % name, flush=True)
        return True

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)
