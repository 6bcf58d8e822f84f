"""Every YAML snippet in README.md and docs/*.md loads: a rule with `faultline check`, a config with
`faultline check --config` (the daemon's pre-flight, against the shipped catalog, so rule ids in the docs exist).

A snippet that is deliberately not a whole faultline file says so in an HTML comment on the line above its fence:
`<!-- snippet: partial -->` (a fragment that cannot load alone) or `<!-- snippet: not-faultline -->` (another tool's
config, e.g. Alertmanager's). Files a snippet names (`*_file:` keys: secrets, CA bundles) are replaced by empty
temporary files, since they are the reader's own."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

MARKER = re.compile(r"<!--\s*snippet:\s*(partial|not-faultline)\s*-->")
FILE_KEY = re.compile(r"^(\s*(?:-\s+)?[a-z_]*_file:\s*)(\S+)", re.M)
FILE_KEY_INLINE = re.compile(r"([{,]\s*[a-z_]*_file:\s*)([^,}\s]+)")


def snippets(path):
    """(line of the fence, marker or None, text) of each ```yaml block."""
    out = []
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```yaml":
            start = i
            marker = None
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j >= 0:
                m = MARKER.search(lines[j])
                marker = m.group(1) if m else None
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((start + 1, marker, "\n".join(body) + "\n"))
        i += 1
    return out


def is_rule(text):
    return re.search(r"^id:\s", text, re.M) and re.search(r"^events:", text, re.M)


def test(work):
    docs = [os.path.join(tl.SOURCE_DIR, "README.md")] + sorted(glob.glob(os.path.join(tl.SOURCE_DIR, "docs", "*.md")))
    secret = work.file("secret", "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0\n")
    failures = []
    env = dict(os.environ, STATE_DIRECTORY=os.path.join(work.path, "state"))
    loaded = 0
    marked = 0
    for doc in docs:
        for line, marker, text in snippets(doc):
            where = "%s:%d" % (os.path.relpath(doc, tl.SOURCE_DIR), line)
            if marker:
                marked += 1
                continue
            text = FILE_KEY.sub(lambda m: m.group(1) + secret, text)
            text = FILE_KEY_INLINE.sub(lambda m: m.group(1) + secret, text)
            name = re.sub(r"[^a-z0-9]+", "-", where.lower())
            if is_rule(text):
                path = work.file(name + ".yaml", text)
                p = tl.run("check", path, timeout=120, env=env)
            else:
                path = work.file(name + ".yaml", text)
                p = tl.run("check", "--config", path, timeout=120, env=env)
            loaded += 1
            print(("ok   " if p.returncode == 0 else "FAIL ") + where)
            if p.returncode != 0:
                failures.append("%s does not load (exit %d):\n%s%s" % (where, p.returncode, p.stdout, p.stderr))
    print("%d snippet(s) loaded, %d marked as not whole faultline files" % (loaded, marked))
    check(loaded >= 2, "found only %d snippet(s) to load: is the fence still ```yaml?" % loaded)
    check(not failures, "\n".join(failures))


if __name__ == "__main__":
    tl.main(test)
