#!/usr/bin/env python3
"""Translate faultline's patterns for the peers, write their programs, run them, read their per-pattern counts.

One module of ~540 lines: one translator and one runner per peer (hs, grep, rg, mtail, SEC), which share the
pattern parser at the top; split per peer, each file would re-import that parser for a few dozen lines of its own.

faultline patterns use the syntax Hyperscan and RE2 share (PCRE-like): `\\d \\w \\s`, classes, bounded repeats,
`(?:...)`, `(?P<name>...)`, `(?i)`. Each peer gets an equivalent program:

  hs     hs_limit pattern file: the regex as is, `(?i)` prefixed when the event is caseless.
  ere    GNU grep -E (LC_ALL=C, bytes): `\\d`->`[0-9]`, classes rebuilt in POSIX form (`\\s`->`[:space:]`, `\\n`
         dropped: a line never holds one), `(?:`/`(?P<n>` -> `(`, lazy quantifiers made greedy (same lines match),
         escapes of non-metacharacters removed (grep 3.8 warns on them), caseless patterns spelled `[aA]` when
         combined in one -f file (per-pattern runs use -i).
  rust   ripgrep (Rust regex): `(?-u)` prefix for byte semantics like Hyperscan's, group names removed (rg joins
         every -f pattern into one regex, where two groups of one name are an error), escapes normalised.
  re2    mtail (Go RE2, UTF-8): group names removed, `/` escaped for mtail's regex literal.
  perl   SEC (Perl regex): the pattern as is, inside `(?:...)`; `(?i)` when caseless.

Where the dialects cannot agree (Go and Rust count `.` and `[^...]` repeats in UTF-8 characters, not bytes; tqdm
bars are UTF-8), bench/run_all.py reports the per-pattern differences and their reason.

Used as a module by run_all.py; `peers.py translate PATTERNS.tsv OUTDIR` writes every dialect for inspection.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

# ------------------------------------------------------------------------------------------ parsing


class Node:
    pass


class Lit(Node):
    def __init__(self, ch: str):
        self.ch = ch


class Esc(Node):  # \d \w \s \D \W \S \b \B
    def __init__(self, ch: str):
        self.ch = ch


class Any(Node):  # .
    pass


class Anchor(Node):
    def __init__(self, ch: str):
        self.ch = ch  # ^ or $


class Cls(Node):
    def __init__(self, neg: bool, items: list):
        self.neg = neg
        self.items = items  # ('c', ch) | ('r', lo, hi) | ('e', 'd'|'w'|'s'|'D'|'W'|'S')


class Group(Node):
    def __init__(self, alts: list, capture: bool, name: str | None, flags: str = ""):
        self.alts = alts  # list of sequences (lists of nodes)
        self.capture = capture
        self.name = name
        self.flags = flags  # e.g. "i" for (?i:...)


class Rep(Node):
    def __init__(self, node: Node, lo: int, hi: int | None, lazy: bool, text: str):
        self.node, self.lo, self.hi, self.lazy, self.text = node, lo, hi, lazy, text


class Flags(Node):  # inline (?i) in the middle
    def __init__(self, flags: str):
        self.flags = flags


_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "e": "\x1b"}


class Parser:
    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def error(self, msg: str):
        raise ValueError("%s at %d in %r" % (msg, self.i, self.s))

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else "\0end"  # a sentinel that is in no character set

    def parse(self) -> Group:
        alts = self.alternation()
        if self.i != len(self.s):
            self.error("unbalanced )")
        return Group(alts, False, None)

    def alternation(self) -> list:
        alts = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            alts.append(self.sequence())
        return alts

    def sequence(self) -> list:
        seq: list = []
        while self.i < len(self.s) and self.peek() not in "|)":
            atom = self.atom()
            if atom is None:
                continue
            seq.append(self.quantifier(atom))
        return seq

    def escape_char(self) -> tuple:
        # after a backslash; returns ('c', ch) or ('e', class letter) or ('b', 'b'|'B')
        c = self.peek()
        self.i += 1
        if c in "dwsDWS":
            return ("e", c)
        if c in "bB":
            return ("b", c)
        if c in _SIMPLE_ESC:
            return ("c", _SIMPLE_ESC[c])
        if c == "x":
            if self.peek() == "{":
                j = self.s.index("}", self.i)
                v = int(self.s[self.i + 1:j], 16)
                self.i = j + 1
            else:
                v = int(self.s[self.i:self.i + 2], 16)
                self.i += 2
            return ("c", chr(v))
        if c.isalnum():
            self.error("unsupported escape \\" + c)
        return ("c", c)

    def atom(self):
        c = self.peek()
        if c == "(":
            self.i += 1
            if self.s.startswith("?:", self.i):
                self.i += 2
                alts = self.alternation()
                self.expect(")")
                return Group(alts, False, None)
            if self.s.startswith("?P<", self.i) or (self.s.startswith("?<", self.i) and self.peek(2) not in "=!"):
                self.i += 3 if self.peek(1) == "P" else 2
                j = self.s.index(">", self.i)
                name = self.s[self.i:j]
                self.i = j + 1
                alts = self.alternation()
                self.expect(")")
                return Group(alts, True, name)
            if self.peek(1) == "?":
                self.error("unsupported group")
            m = re.match(r"\?([a-zA-Z]+)([:)])", self.s[self.i:])
            if m:
                self.i += len(m.group(0))
                if m.group(2) == ")":
                    return Flags(m.group(1))
                alts = self.alternation()
                self.expect(")")
                return Group(alts, False, None, m.group(1))
            if self.peek() == "?":
                self.error("unsupported group")
            alts = self.alternation()
            self.expect(")")
            return Group(alts, True, None)
        if c == "[":
            return self.cls()
        if c == "\\":
            self.i += 1
            k = self.escape_char()
            if k[0] == "e":
                return Esc(k[1])
            if k[0] == "b":
                return Esc(k[1])
            return Lit(k[1])
        if c == ".":
            self.i += 1
            return Any()
        if c in "^$":
            self.i += 1
            return Anchor(c)
        if c in "*+?{":
            if c == "{" and not re.match(r"\{\d*,?\d*\}", self.s[self.i:]):
                self.i += 1
                return Lit("{")
            self.error("nothing to repeat")
        self.i += 1
        return Lit(c)

    def expect(self, ch: str):
        if self.peek() != ch:
            self.error("expected " + ch)
        self.i += 1

    def cls(self) -> Cls:
        self.i += 1
        neg = False
        if self.peek() == "^":
            neg = True
            self.i += 1
        items: list = []
        first = True
        while True:
            c = self.peek()
            if c == "\0end":
                self.error("unterminated class")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[" and self.peek(1) == ":":
                j = self.s.index(":]", self.i)
                items.append(("p", self.s[self.i + 2:j]))
                self.i = j + 2
                continue
            if c == "\\":
                self.i += 1
                k = self.escape_char()
                if k[0] == "e":
                    items.append(k)
                    continue
                if k[0] == "b":
                    self.error("\\b in class")
                lo = k[1]
            else:
                self.i += 1
                lo = c
            if self.peek() == "-" and self.peek(1) not in ("]", "\0end"):
                self.i += 1
                h = self.peek()
                if h == "\\":
                    self.i += 1
                    k = self.escape_char()
                    if k[0] != "c":
                        self.error("bad range")
                    hi = k[1]
                else:
                    self.i += 1
                    hi = h
                items.append(("r", lo, hi))
            else:
                items.append(("c", lo))
        return Cls(neg, items)

    def quantifier(self, atom):
        c = self.peek()
        start = self.i
        if c in "*+?":
            self.i += 1
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{":
            m = re.match(r"\{(\d*)(,?)(\d*)\}", self.s[self.i:])
            if not m:
                return atom
            self.i += len(m.group(0))
            lo = int(m.group(1) or 0)
            hi = lo if not m.group(2) else (int(m.group(3)) if m.group(3) else None)
        else:
            return atom
        lazy = False
        if self.peek() == "?":
            lazy = True
            self.i += 1
        elif self.peek() == "+":
            self.error("possessive quantifier")
        rep = Rep(atom, lo, hi, lazy, self.s[start:self.i])
        return self.quantifier(rep) if self.peek() in "*+?{" else rep


def parse(pattern: str) -> Group:
    return Parser(pattern).parse()


# ------------------------------------------------------------------------------------------ emitting

ERE_META = set(".[]()*+?{}|^$\\")
PCRE_META = set(".[]()*+?{}|^$\\/")
RUST_META = set(".[]()*+?{}|^$\\#&-~")
POSIX_OF = {"d": "[:digit:]", "s": "[:space:]", "w": "[:alnum:]_"}


def _byte_repr(ch: str, meta: set, hexesc: bool) -> str:
    if ch in meta:
        return "\\" + ch
    o = ord(ch)
    if hexesc and (o < 0x20 or o >= 0x7f):
        return "\\x%02x" % o
    return ch


class Emitter:
    """dialect: ere | rust | re2 | perl"""

    def __init__(self, dialect: str, caseless: bool = False, expand_case: bool = False, mtail: bool = False):
        self.d = dialect
        self.caseless = caseless
        self.expand_case = expand_case  # ERE: spell [aA] instead of a flag
        self.mtail = mtail

    def emit(self, g: Group) -> str:
        ci = self.caseless
        if self.d == "ere" and g.alts and g.alts[0] and isinstance(g.alts[0][0], Flags) and "i" in g.alts[0][0].flags:
            ci = True  # a leading (?i) applies to every alternative
        return "|".join(self.seq(a, ci) for a in g.alts)

    def seq(self, seq: list, ci: bool) -> str:
        out = []
        for n in seq:
            if isinstance(n, Flags):
                if set(n.flags) - {"i"}:
                    raise ValueError("unsupported inline flags " + n.flags)
                if self.d == "ere":
                    ci = True
                    continue
                out.append("(?%s)" % n.flags)
                continue
            out.append(self.node(n, ci))
        return "".join(out)

    def lit(self, ch: str, ci: bool) -> str:
        if self.d == "ere":
            if ci and self.expand_case and ch.isalpha() and ch.isascii():
                return "[%s%s]" % (ch.lower(), ch.upper())
            return ch if ch not in ERE_META else "\\" + ch
        meta = RUST_META if self.d == "rust" else PCRE_META if self.mtail else set(".[]()*+?{}|^$\\")
        return _byte_repr(ch, meta, True)

    def node(self, n, ci: bool) -> str:
        if isinstance(n, Lit):
            return self.lit(n.ch, ci)
        if isinstance(n, Any):
            return "."
        if isinstance(n, Anchor):
            return n.ch
        if isinstance(n, Esc):
            if self.d == "ere":
                return {"d": "[0-9]", "D": "[^0-9]"}.get(n.ch, "\\" + n.ch)
            return "\\" + n.ch
        if isinstance(n, Cls):
            return self.cls(n, ci)
        if isinstance(n, Group):
            inner = "|".join(self.seq(a, ci or "i" in n.flags) for a in n.alts)
            if self.d == "ere":
                return "(" + inner + ")"
            if n.flags:
                return "(?%s:%s)" % (n.flags, inner)
            if n.capture and n.name and self.d == "perl":
                return "(?P<%s>%s)" % (n.name, inner)
            return "(?:" + inner + ")"
        if isinstance(n, Rep):
            inner = self.node(n.node, ci)
            if n.hi == n.lo:
                q = "{%d}" % n.lo
            elif n.hi is None:
                q = {0: "*", 1: "+"}.get(n.lo, "{%d,}" % n.lo)
            elif n.lo == 0 and n.hi == 1:
                q = "?"
            else:
                q = "{%d,%d}" % (n.lo, n.hi)
            if n.lazy and self.d != "ere":
                q += "?"
            return inner + q
        raise ValueError("node %r" % n)

    def cls(self, c: Cls, ci: bool) -> str:
        if self.d != "ere":
            parts = []
            for it in c.items:
                if it[0] == "c":
                    parts.append(self.cls_char(it[1]))
                elif it[0] == "r":
                    parts.append(self.cls_char(it[1]) + "-" + self.cls_char(it[2]))
                elif it[0] == "e":
                    parts.append("\\" + it[1])
                else:
                    parts.append("[:%s:]" % it[1])
            return "[" + ("^" if c.neg else "") + "".join(parts) + "]"
        # POSIX bracket expression: ']' first, '-' last, '^' not first, no escapes, no \n (lines hold none).
        chars: set[str] = set()
        ranges: list[str] = []
        named: list[str] = []
        for it in c.items:
            if it[0] == "c":
                if it[1] != "\n":
                    chars.add(it[1])
            elif it[0] == "r":
                ranges.append(it[1] + "-" + it[2])
            elif it[0] == "e":
                if it[1] not in "dsw":
                    raise ValueError("class escape \\%s has no ERE form" % it[1])
                named.append(POSIX_OF[it[1]])
            else:
                named.append("[:%s:]" % it[1])
        if ci and self.expand_case:
            chars |= {ch.swapcase() for ch in chars if ch.isascii() and ch.isalpha()}
            for r in list(ranges):
                if r[0].isascii() and r[0].isalpha() and r[2].isalpha():
                    ranges.append(r[0].swapcase() + "-" + r[2].swapcase())
        body = ("]" if "]" in chars else "") + "".join(sorted(chars - set("]-^"))) + "".join(ranges) + "".join(named)
        if "^" in chars:
            if body:
                body += "^"
            elif c.neg:
                body = "^"
            elif "-" in chars:
                return "[-^]"
            else:
                return "\\^"
        if "-" in chars:
            body += "-"
        if not body:
            if c.neg:
                return "."  # [^\n]: any character of a line
            raise ValueError("a class of only \\n never matches inside a line")
        return "[" + ("^" if c.neg else "") + body + "]"

    def cls_char(self, ch: str) -> str:
        if ch in "\\]-^[&~" or (ch == "/" and self.mtail):
            return "\\" + ch
        o = ord(ch)
        if o < 0x20 or o >= 0x7f:
            return "\\x%02x" % o
        return ch


def translate(regex: str, caseless: bool, dialect: str, expand_case: bool = False) -> str:
    g = parse(regex)
    if dialect == "hs":
        return ("(?i)" if caseless else "") + regex
    if dialect == "ere":
        return Emitter("ere", caseless, expand_case).emit(g)
    if dialect == "rust":
        body = Emitter("rust").emit(g)
        return "(?" + ("i" if caseless else "") + "-u)" + body
    if dialect == "re2":
        body = Emitter("re2", mtail=True).emit(g)
        return ("(?i)" if caseless else "") + body
    if dialect == "perl":
        body = Emitter("perl").emit(g)
        return "(?" + ("i" if caseless else "") + ":" + body + ")"
    raise ValueError(dialect)


def ere_has_top_flag(regex: str) -> bool:
    return any(isinstance(n, Flags) for n in parse(regex).alts[0][:1])


# ------------------------------------------------------------------------------------------ pattern sets


def read_tsv(path: str) -> list[dict]:
    """fl_count --export output: id, caseless, rule, event, regex."""
    pats = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            i, ci, rule, event, regex = line.split("\t", 4)
            pats.append({"id": int(i), "caseless": ci == "1", "rule": rule, "event": event, "regex": regex})
    return pats


def write_programs(pats: list[dict], outdir: str) -> dict:
    """Writes every peer's program for one pattern set; returns their paths."""
    os.makedirs(outdir, exist_ok=True)
    paths = {k: os.path.join(outdir, v) for k, v in
             {"hs": "hs.txt", "ere": "ere.txt", "ere_ci": "ere-caseless.txt", "rust": "rust.txt",
              "mtail": "counts.mtail", "sec": "counts.sec"}.items()}
    with open(paths["hs"], "w", encoding="utf-8") as f:
        for p in pats:
            f.write(translate(p["regex"], p["caseless"], "hs") + "\n")
    with open(paths["ere"], "w", encoding="utf-8") as f, open(paths["ere_ci"], "w", encoding="utf-8") as g:
        for p in pats:
            f.write(translate(p["regex"], p["caseless"], "ere", expand_case=True) + "\n")
            g.write(translate(p["regex"], p["caseless"], "ere") + "\n")
    with open(paths["rust"], "w", encoding="utf-8") as f:
        for p in pats:
            f.write(translate(p["regex"], p["caseless"], "rust") + "\n")
    with open(paths["mtail"], "w", encoding="utf-8") as f:
        f.write("# generated by bench/peers.py: one counter per faultline event pattern\n")
        for p in pats:
            f.write("counter p%d\n" % p["id"])
        for p in pats:
            rx = translate(p["regex"], p["caseless"], "re2")
            f.write("/%s/ {\n  p%d++\n}\n" % (rx, p["id"]))
    with open(paths["sec"], "w", encoding="utf-8") as f:
        f.write("# generated by bench/peers.py: one Single rule per faultline event pattern; every rule is tried on\n"
                "# every line (continue=TakeNext); matches are counted in a Perl array and printed at shutdown.\n")
        for p in pats:
            f.write("type=Single\nptype=RegExp\npattern=%s\ncontinue=TakeNext\ndesc=p%d\n"
                    "action=lcall %%o -> ( sub { ++$main::flcount[%d] } )\n\n"
                    % (translate(p["regex"], p["caseless"], "perl"), p["id"], p["id"]))
        f.write("type=Single\nptype=RegExp\npattern=^SEC_SHUTDOWN$\ncontext=SEC_INTERNAL_EVENT\ndesc=shutdown\n"
                "action=lcall %%o -> ( sub { my $f; open($f, '>', $ENV{FL_SEC_COUNTS}) or die; "
                "for my $i (0..%d) { print $f $i, \"\\t\", ($main::flcount[$i] // 0), \"\\n\" } close($f); } )\n"
                % (len(pats) - 1))
    return paths


# ------------------------------------------------------------------------------------------ running


def parse_mtail(out: str, n: int) -> list[int]:
    counts = [0] * n
    for line in out.splitlines():
        m = re.match(r"^p(\d+)(?:\{[^}]*\})? (\d+)", line)
        if m:
            counts[int(m.group(1))] = int(m.group(2))
    return counts


def grep_env() -> dict:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    return env


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "translate":
        pats = read_tsv(sys.argv[2])
        for k, v in write_programs(pats, sys.argv[3]).items():
            print(k, v)
        return
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        # peers.py check REGEX: show every dialect
        for d in ("hs", "ere", "rust", "re2", "perl"):
            print(d, translate(sys.argv[2], False, d))
        return
    print(__doc__)
    sys.exit(2)


if __name__ == "__main__":
    main()
