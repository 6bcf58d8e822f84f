#!/usr/bin/env python3
"""The .deb that `cpack -G DEB` makes from the build tree (deploy/install.cmake): its files, its
control data (Depends computed by dpkg-shlibdeps must cover what the binary links), its
maintainer scripts, and the unit inside it verified by systemd-analyze on the unpacked tree."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import SOURCE_DIR, Cases  # noqa: E402


def sh(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return p.returncode, p.stdout


def main():
    cases = Cases()
    build = os.environ.get("FAULTLINE_BUILD_DIR", "")
    config = os.path.join(build, "CPackConfig.cmake")
    if not os.path.exists(config):
        print("FAIL no %s: include(deploy/install.cmake) in the top-level CMakeLists.txt" % config)
        print("0 passed, 1 failed")
        sys.exit(1)
    out = tempfile.mkdtemp(prefix="fl-deb-")
    try:
        debs = []

        def package():
            rc, text = sh(["cpack", "-G", "DEB", "--config", config, "-B", out])
            assert rc == 0, "cpack failed:\n" + text[-4000:]
            debs.extend(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".deb"))
            assert len(debs) == 1, os.listdir(out)
            print("     %s" % os.path.basename(debs[0]))
        if not cases.run("cpack -G DEB builds one package", package):
            cases.finish()
        deb = debs[0]

        def contents():
            rc, text = sh(["dpkg-deb", "-c", deb])
            assert rc == 0, text
            paths = {l.split()[-1].lstrip(".") for l in text.splitlines()}
            paths = {p.split(" -> ")[0] for p in paths}
            for want in ("/usr/bin/faultline", "/usr/lib/systemd/system/faultline.service",
                         "/usr/share/faultline/systemd/kmsg.conf", "/usr/share/faultline/grafana/faultline.json"):
                assert want in paths, "%s missing from the package" % want
            assert [p for p in paths if p.startswith("/usr/share/faultline/rules/") and p.endswith(".yaml")], \
                "no rules in the package"
            assert not [p for p in paths if p.startswith("/usr/local")], "files under /usr/local"
            if os.path.exists(os.path.join(SOURCE_DIR, "deploy", "config.example.yaml")):
                assert "/etc/faultline/config.yaml" in paths
                rc, conf = sh(["dpkg-deb", "--info", deb, "conffiles"])
                assert "/etc/faultline/config.yaml" in conf, "config.yaml is not a conffile"
        cases.run("package files: binary, unit, drop-in, dashboard, rules (and the config as a conffile)", contents)

        def man_completion_docs():
            rc, text = sh(["dpkg-deb", "-c", deb])
            assert rc == 0, text
            paths = {l.split()[-1].lstrip(".") for l in text.splitlines()}
            for want in ("/usr/share/man/man1/faultline.1", "/usr/share/bash-completion/completions/faultline",
                         "/usr/share/zsh/vendor-completions/_faultline", "/usr/share/doc/faultline/README.md",
                         "/usr/share/doc/faultline/docs/config.md", "/usr/share/doc/faultline/rules/README.md"):
                assert want in paths, "%s missing from the package" % want
            # The rule tests' fixtures travel with the catalog, so `faultline test` runs on the installed rules.
            assert [p for p in paths if p.startswith("/usr/share/faultline/rules/") and p.endswith(".log")], \
                "no rule test fixtures in the package"
            unpacked = tempfile.mkdtemp(prefix="fl-deb-x-", dir=out)
            rc, text = sh(["dpkg-deb", "-x", deb, unpacked])
            assert rc == 0, text
            with open(os.path.join(unpacked, "usr/share/man/man1/faultline.1")) as f:
                man = f.read()
            assert man.startswith(".TH FAULTLINE 1") and "\\-\\-check\\-config" in man, man[:400]
            with open(os.path.join(unpacked, "usr/share/bash-completion/completions/faultline")) as f:
                bash = f.read()
            assert "complete -o filenames -F _faultline faultline" in bash and "--check-config" in bash, bash[:400]
            rc, text = sh(["bash", "-n", os.path.join(unpacked, "usr/share/bash-completion/completions/faultline")])
            assert rc == 0, "bash completion does not parse: " + text
            with open(os.path.join(unpacked, "usr/share/zsh/vendor-completions/_faultline")) as f:
                assert f.read().startswith("#compdef faultline")
            if shutil.which("zsh"):  # the shipped file, found on fpath where Debian's zsh looks for it
                dump = os.path.join(out, "zcompdump")
                rc, text = sh(["zsh", "-f", "-c", 'fpath=("$1" $fpath); autoload -U compinit; compinit -u -d "$2"; '
                               'print -r -- "faultline: ${_comps[faultline]}"', "zsh",
                               os.path.join(unpacked, "usr/share/zsh/vendor-completions"), dump])
                assert rc == 0 and "faultline: _faultline" in text, "zsh does not register the completion:\n" + text
            if shutil.which("man"):
                rc, text = sh(["man", "-l", "-P", "cat", os.path.join(unpacked, "usr/share/man/man1/faultline.1")],
                              env=dict(os.environ, MANWIDTH="100"))
                assert rc == 0 and "FAULTLINE SCAN" in text, "man cannot render the page:\n" + text[-2000:]
        cases.run("package files: man page, bash and zsh completion (generated from the help text), docs", man_completion_docs)

        def control():
            rc, text = sh(["dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Depends"])
            assert rc == 0, text
            fields = dict(l.split(": ", 1) for l in text.splitlines() if ": " in l)
            assert fields.get("Package") == "faultline", fields
            depends = {d.strip().split()[0] for d in fields.get("Depends", "").split(",") if d.strip()}
            binary = os.environ.get("FAULTLINE_BIN")
            if binary and os.access(binary, os.X_OK):
                rc, need = sh([os.path.join(SOURCE_DIR, "deploy", "docker", "runtime-packages.sh"), binary])
                assert rc == 0, need
                # A dependency may name a virtual package the library package provides (libspdlog1.10-fmt9).
                covered = set(depends)
                for pkg in need.split():
                    rc2, prov = sh(["dpkg-query", "-W", "-f", "${Provides}", pkg])
                    names = {p.strip().split()[0] for p in prov.split(",") if p.strip()} if rc2 == 0 else set()
                    if names & depends:
                        covered.add(pkg)
                missing = sorted(set(need.split()) - covered)
                assert not missing, "Depends lacks %s (has %s)" % (missing, sorted(depends))
            for script in ("postinst", "prerm", "postrm"):
                rc, s = sh(["dpkg-deb", "--info", deb, script])
                assert rc == 0 and s.startswith("#!/bin/sh"), "%s missing" % script
        cases.run("control: Depends covers every runtime library package; maintainer scripts present", control)

        def unit_in_package():
            root = os.path.join(out, "root")
            rc, text = sh(["dpkg-deb", "-x", deb, root])
            assert rc == 0, text
            for d in ("bin", "sbin", "lib"):
                if not os.path.lexists(os.path.join(root, d)):
                    os.makedirs(os.path.join(root, "usr", d), exist_ok=True)
                    os.symlink("usr/" + d, os.path.join(root, d))
            unit_dir = os.path.join(root, "usr", "lib", "systemd", "system")
            for name in os.listdir("/usr/lib/systemd/system"):
                src, dst = os.path.join("/usr/lib/systemd/system", name), os.path.join(unit_dir, name)
                if os.path.lexists(dst):
                    continue
                if os.path.islink(src):
                    os.symlink(os.readlink(src), dst)
                elif os.path.isfile(src):
                    shutil.copy2(src, dst)
            shutil.copy2(shutil.which("kill"), os.path.join(root, "usr", "bin", "kill"))
            with open(os.path.join(unit_dir, "faultline.service")) as f:
                assert re.search(r"^ExecStart=/usr/bin/faultline run ", f.read(), re.M)
            rc, text = sh(["systemd-analyze", "verify", "--man=no", "--generators=no", "--root=" + root,
                           "faultline.service"])
            assert rc == 0 and not text.strip(), text
        cases.run("the packaged unit passes systemd-analyze verify on the unpacked package", unit_in_package)

        def install_and_remove():
            # The real thing on this Debian machine: dpkg -i, use the installed binary and rules, purge.
            assert os.geteuid() == 0, "installing a package needs root (CI runs as root)"
            rc, st = sh(["dpkg-query", "-W", "-f", "${Status}", "faultline"])
            assert not (rc == 0 and "installed" in st and "not-installed" not in st), \
                "a faultline package is already installed here; not touching it"
            rc, text = sh(["dpkg", "-i", deb])
            assert rc == 0, "dpkg -i failed:\n" + text[-3000:]
            try:
                rc, text = sh(["/usr/bin/faultline", "version"])
                assert rc == 0 and text.startswith("faultline "), text
                rc, text = sh(["/usr/bin/faultline", "check", "/usr/share/faultline/rules"])
                assert rc == 0 and text.startswith("ok:"), text
                # The installed catalog carries its test fixtures: every rule test runs and passes there.
                rc, text = sh(["/usr/bin/faultline", "test", "/usr/share/faultline/rules"])
                assert rc == 0 and " 0 failed" in text, "rule tests on the installed catalog:\n" + text[-3000:]
                rc, text = sh(["/usr/bin/faultline", "run", "--config", "/etc/faultline/config.yaml",
                               "--state-dir", os.path.join(out, "state"), "--check-config"])
                assert rc == 0, "the packaged config does not validate:\n" + text[-2000:]
            finally:
                rc, text = sh(["dpkg", "--purge", "faultline"])
            assert rc == 0, "dpkg --purge failed:\n" + text[-3000:]
            for gone in ("/usr/bin/faultline", "/usr/share/faultline", "/etc/faultline/config.yaml",
                         "/usr/lib/systemd/system/faultline.service"):
                assert not os.path.lexists(gone), "%s left behind after purge" % gone
        cases.run("dpkg -i installs it; the installed binary checks the installed rules; purge removes it cleanly",
                  install_and_remove)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    cases.finish()


if __name__ == "__main__":
    main()
