#!/usr/bin/env python3
"""The systemd unit, verified against a real install.

1. `DESTDIR=<tmp>/root cmake --install $FAULTLINE_BUILD_DIR --prefix /usr` (the real binary and
   rules; the unit too when the build installs it, see deploy/install.cmake).
2. The temporary root gets the host's unit files (for the dependencies every service has:
   sysinit.target, basic.target, network-online.target ...) and /usr/bin/kill (ExecReload).
3. `systemd-analyze verify --root=<root> faultline.service`: a non-zero status or any message
   (systemd 252 only warns, status 0, on an unknown key) fails. Also with the kmsg drop-in.
4. `systemd-analyze security --offline=true --root=<root>`: prints the exposure score; fails
   above 2.0 or when deploy/systemd/README.md records a different score.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import SOURCE_DIR, Cases  # noqa: E402

UNIT_SRC = os.path.join(SOURCE_DIR, "deploy", "systemd", "faultline.service")
KMSG_SRC = os.path.join(SOURCE_DIR, "deploy", "systemd", "kmsg.conf")
README = os.path.join(SOURCE_DIR, "deploy", "systemd", "README.md")
MAX_EXPOSURE = 2.0


def sh(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    return p.returncode, p.stdout


def make_root(build):
    root = tempfile.mkdtemp(prefix="fl-systemd-root-")
    # Debian 12 is merged-/usr: /bin, /sbin, /lib are links into /usr.
    for d in ("bin", "sbin", "lib", "lib64"):
        os.makedirs(os.path.join(root, "usr", d), exist_ok=True)
        os.symlink("usr/" + d, os.path.join(root, d))
    env = dict(os.environ, DESTDIR=root)
    rc, out = sh(["cmake", "--install", build, "--prefix", "/usr"], env=env)
    assert rc == 0, "cmake --install failed:\n" + out
    return root


def populate(root):
    """What the unit refers to outside faultline: the host's units and kill."""
    unit_dir = os.path.join(root, "usr", "lib", "systemd", "system")
    os.makedirs(unit_dir, exist_ok=True)
    installed = os.path.join(unit_dir, "faultline.service")
    had_unit = os.path.exists(installed)
    for name in os.listdir("/usr/lib/systemd/system"):
        src = os.path.join("/usr/lib/systemd/system", name)
        dst = os.path.join(unit_dir, name)
        if os.path.lexists(dst):
            continue
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        elif os.path.isdir(src):
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copy2(src, dst)
    kill = shutil.which("kill") or "/usr/bin/kill"
    shutil.copy2(kill, os.path.join(root, "usr", "bin", "kill"))
    if not had_unit:
        shutil.copy2(UNIT_SRC, installed)
    return installed, had_unit


def verify(root):
    rc, out = sh(["systemd-analyze", "verify", "--man=no", "--generators=no", "--root=" + root,
                  "faultline.service"])
    assert rc == 0 and not out.strip(), "systemd-analyze verify (status %d):\n%s" % (rc, out)


def exposure(root):
    rc, out = sh(["systemd-analyze", "security", "--offline=true", "--root=" + root,
                  "--threshold=%d" % int(MAX_EXPOSURE * 10), "--no-pager", "faultline.service"])
    m = re.search(r"Overall exposure level for faultline\.service: ([0-9.]+) (\w+)", out)
    assert m, "no exposure level in:\n" + out
    lines = [l for l in out.splitlines() if l.startswith("\u2717")]
    return float(m.group(1)), m.group(2), lines, rc


def main():
    cases = Cases()
    build = os.environ.get("FAULTLINE_BUILD_DIR")
    if not build or not os.path.exists(os.path.join(build, "cmake_install.cmake")):
        print("FAIL FAULTLINE_BUILD_DIR must name a configured and built faultline build tree")
        print("0 passed, 1 failed")
        sys.exit(1)
    if not shutil.which("systemd-analyze"):
        print("FAIL systemd-analyze not found (apt-get install systemd)")
        print("0 passed, 1 failed")
        sys.exit(1)
    root = make_root(build)
    try:
        installed, had_unit = populate(root)

        def install_tree():
            binary = os.path.join(root, "usr", "bin", "faultline")
            assert os.access(binary, os.X_OK), "no executable %s" % binary
            rc, out = sh([binary, "version"])
            assert rc == 0, "installed faultline version: %s" % out
            rules = os.path.join(root, "usr", "share", "faultline", "rules")
            assert os.path.isdir(rules)
            # The installed catalog must load as `run` will load it (scan shares the loader).
            p = subprocess.run([binary, "scan", "--rules", rules], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            assert p.returncode == 0, "the installed rules do not load:\n" + p.stdout[-3000:]
            with open(UNIT_SRC) as f:
                m = re.search(r"^ExecStart=(\S+)", f.read(), re.M)
            assert m and m.group(1) == "/usr/bin/faultline", "ExecStart runs %s" % (m and m.group(1))
            if had_unit:
                with open(installed) as a, open(UNIT_SRC) as b:
                    assert a.read() == b.read(), "the installed unit differs from deploy/systemd/faultline.service"
            else:
                print("     note: the build does not install the unit (include deploy/install.cmake); "
                      "verifying deploy/systemd/faultline.service placed at the same path")
        cases.run("cmake --install with DESTDIR: binary runs, installed rules load, unit runs /usr/bin/faultline",
                  install_tree)

        cases.run("systemd-analyze verify --root: no errors or warnings", verify, root)

        def score():
            level, word, exposed, rc = exposure(root)
            print("     exposure %.1f %s; not confined: %s" % (
                level, word, ", ".join(l.split()[1] for l in exposed)))
            assert level <= MAX_EXPOSURE and rc == 0, "exposure %.1f above %.1f" % (level, MAX_EXPOSURE)
            with open(README, encoding="utf-8") as f:
                text = f.read()
            assert re.search(r"exposure[^\n]*\b%.1f\b" % level, text, re.I), \
                "deploy/systemd/README.md does not record the exposure level %.1f" % level
        cases.run("systemd-analyze security --offline: exposure recorded in README and <= %.1f" % MAX_EXPOSURE,
                  score)

        def kmsg():
            d = os.path.join(root, "etc", "systemd", "system", "faultline.service.d")
            os.makedirs(d, exist_ok=True)
            shutil.copy2(KMSG_SRC, os.path.join(d, "kmsg.conf"))
            try:
                verify(root)
                level, word, exposed, rc = exposure(root)
                print("     with kmsg.conf: exposure %.1f %s" % (level, word))
                with open(README, encoding="utf-8") as f:
                    assert re.search(r"kmsg[^\n]*\b%.1f\b" % level, f.read()), \
                        "deploy/systemd/README.md does not record the kmsg exposure %.1f" % level
            finally:
                shutil.rmtree(d)
        cases.run("with the kmsg.conf drop-in: verify clean, exposure recorded", kmsg)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    cases.finish()


if __name__ == "__main__":
    main()
