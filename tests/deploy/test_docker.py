#!/usr/bin/env python3
"""The Dockerfile, checked without a container engine: its shape (two stages on
debian:bookworm-slim, the build stage running scripts/install-deps.sh and the CMake install,
a runtime stage with no build tools, a numeric non-root user), and its one computed step:
deploy/docker/runtime-packages.sh run on the real binary (FAULTLINE_BIN) must name installed,
non -dev Debian packages that cover every library the binary loads. With a working
`docker info`, the image is also built and run (`faultline version`)."""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import SOURCE_DIR, Cases  # noqa: E402

DOCKERFILE = os.path.join(SOURCE_DIR, "Dockerfile")
RUNTIME_PACKAGES = os.path.join(SOURCE_DIR, "deploy", "docker", "runtime-packages.sh")


def stages():
    with open(DOCKERFILE, encoding="utf-8") as f:
        text = re.sub(r"\\\n", " ", f.read())
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    args, out, cur = {}, [], None
    for l in lines:
        word, _, rest = l.partition(" ")
        word = word.upper()
        if word == "ARG" and cur is None:
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip()
        elif word == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            image = re.sub(r"\$\{(\w+)\}", lambda g: args.get(g.group(1), ""), m.group(1))
            cur = {"image": image, "name": m.group(2), "steps": []}
            out.append(cur)
        elif cur is not None:
            cur["steps"].append((word, rest))
    return out


def t_shape():
    st = stages()
    assert [s["name"] for s in st] == ["build", "runtime"], [s["name"] for s in st]
    for s in st:
        assert s["image"] == "debian:bookworm-slim", s["image"]
    build, runtime = st
    b = " ".join(r for w, r in build["steps"] if w == "RUN")
    assert "install-deps.sh" in b, "the build stage must install what scripts/install-deps.sh installs"
    assert "cmake -S . -B /build" in b and "cmake --install /build" in b and "DESTDIR=/out" in b
    assert "-DCMAKE_INSTALL_PREFIX=/usr" in b, "rules are found under the configured prefix"
    assert "runtime-packages.sh" in b
    r = " ".join(r for w, r in runtime["steps"] if w == "RUN")
    assert not re.search(r"\b(g\+\+|gcc|cmake|make|clang|-dev)\b", r), "build tools in the runtime stage: " + r
    assert "install-deps.sh" not in r
    users = [r for w, r in runtime["steps"] if w == "USER"]
    assert users and re.fullmatch(r"[1-9][0-9]*(:[0-9]+)?", users[-1]), "USER must be numeric non-root: %s" % users
    copies = [r for w, r in runtime["steps"] if w == "COPY"]
    assert any("/out/usr/bin/faultline" in c for c in copies) and any("/usr/share/faultline" in c for c in copies)
    ep = [r for w, r in runtime["steps"] if w == "ENTRYPOINT"]
    assert ep and '"/usr/bin/faultline"' in ep[-1]
    assert any(w == "EXPOSE" and "9464" in r for w, r in runtime["steps"])


def t_context():
    with open(os.path.join(SOURCE_DIR, ".dockerignore")) as f:
        ign = f.read().split()
    assert ".git" in ign and any(x.startswith("/build") for x in ign), ign
    if not os.path.exists(os.path.join(SOURCE_DIR, "scripts", "install-deps.sh")):
        print("     note: scripts/install-deps.sh does not exist yet; the build stage COPYs it")


def t_runtime_packages(binary):
    p = subprocess.run([RUNTIME_PACKAGES, binary], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    pkgs = p.stdout.split()
    assert "libc6" in pkgs and pkgs == sorted(set(pkgs)), pkgs
    assert not [x for x in pkgs if x.endswith("-dev")], "development packages in the runtime list: %s" % pkgs
    for x in pkgs:
        q = subprocess.run(["dpkg-query", "-W", "-f=${Status}", x], stdout=subprocess.PIPE, text=True)
        assert q.stdout.endswith("installed"), "%s is not an installed package" % x
    print("     runtime packages: %s" % " ".join(pkgs))
    # Every library the binary loads is in one of those packages.
    ldd = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, text=True).stdout
    assert "not found" not in ldd, ldd


def t_docker_build():
    tag = "faultline:deploy-test"
    p = subprocess.run(["docker", "build", "-t", tag, SOURCE_DIR], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0, p.stdout[-4000:]
    p = subprocess.run(["docker", "run", "--rm", tag, "version"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0, p.stdout
    u = subprocess.run(["docker", "run", "--rm", "--entrypoint", "id", tag, "-u"], stdout=subprocess.PIPE, text=True)
    assert u.stdout.strip() == "65532", u.stdout


def main():
    cases = Cases()
    cases.run("Dockerfile: build and runtime stages on bookworm-slim, no build tools at runtime, non-root",
              t_shape)
    cases.run(".dockerignore keeps .git and build trees out of the context", t_context)
    binary = os.environ.get("FAULTLINE_BIN")
    if binary and os.access(binary, os.X_OK):
        cases.run("runtime-packages.sh on the built binary names installed runtime packages only",
                  t_runtime_packages, binary)
    else:
        print("note: FAULTLINE_BIN not set; runtime-packages.sh not exercised")
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "info"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode == 0:
        cases.run("docker build and run", t_docker_build)
    else:
        print("note: no container engine here (docker info fails): the image is not built")
    cases.finish()


if __name__ == "__main__":
    main()
