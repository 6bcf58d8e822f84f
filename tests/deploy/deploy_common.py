"""Shared bits of the deploy tests, on top of tests/lib/faultline_testlib.py (imported here as `tl`): paths,
Debian's python, a tiny case runner, promtool."""

import os
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("FAULTLINE_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
CHART_DIR = os.path.join(SOURCE_DIR, "deploy", "helm", "faultline")
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import faultline_testlib as tl  # noqa: E402,F401


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


def promtool_check_rules(promtool, text):
    """`promtool check rules` over a rule file with this text; AssertionError with its output when it fails."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([promtool, "check", "rules", f.name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        assert p.returncode == 0, p.stdout
    finally:
        os.unlink(f.name)
