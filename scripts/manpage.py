#!/usr/bin/env python3
"""The man page and the bash and zsh completions of faultline, generated from the binary's own help text at build
time (CMakeLists.txt), so they never drift from the flags the one CLI parser declares.

    manpage.py BINARY --man faultline.1 --bash faultline.bash --zsh _faultline

The commands come from `faultline --help` ("commands:" section), each command's flags from `faultline CMD --help`
(lines "  -c, --config FILE  help"). Standard library only.
"""
import argparse
import re
import subprocess
import sys

FLAG_LINE = re.compile(r"^  ((?:-[A-Za-z], )*)(--[a-z][a-z0-9-]*)(?: ([A-Z|\-]+))?\s{2,}(.*)$")


def run(binary, *args):
    p = subprocess.run([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    return p.stdout


def commands(binary):
    out = []
    section = False
    for line in run(binary, "--help").splitlines():
        if line.startswith("commands:"):
            section = True
            continue
        if section:
            m = re.match(r"^  ([a-z]+)\s+(.*)$", line)
            if not m:
                if line.strip():
                    section = False
                continue
            out.append((m.group(1), m.group(2)))
    return out


def command_help(binary, name):
    text = run(binary, name, "--help")
    flags = []
    for line in text.splitlines():
        m = FLAG_LINE.match(line)
        if m:
            aliases = [a.strip(", ") for a in m.group(1).split(", ") if a.strip(", ")]
            flags.append({"name": m.group(2), "aliases": aliases, "metavar": m.group(3) or "", "help": m.group(4)})
    return text, flags


def roff_escape(text):
    text = text.replace("\\", "\\e")
    return "\n".join(("\\&" + l if l.startswith((".", "'")) else l) for l in text.split("\n"))


def man_page(version, cmds, helps):
    out = []
    out.append('.TH FAULTLINE 1 "" "%s" "User Commands"' % roff_escape(version))
    out.append(".SH NAME")
    out.append("faultline \\- log fingerprinting and alerting for GPU inference serving")
    out.append(".SH SYNOPSIS")
    out.append(".B faultline")
    out.append("\\fICOMMAND\\fR [\\fIOPTIONS\\fR]")
    out.append(".SH DESCRIPTION")
    out.append("faultline turns inference-server logs (vLLM, TensorRT-LLM, SGLang) and the kernel log into typed "
               "incidents: a title, the decisive log lines, a remediation and the root cause. "
               "\\fBscan\\fR reads files or standard input once; \\fBrun\\fR is the daemon.")
    out.append(".SH COMMANDS")
    for name, summary in cmds:
        out.append(".TP")
        out.append(".B %s" % name)
        out.append(roff_escape(summary))
    for name, _ in cmds:
        text, flags = helps[name]
        out.append(".SH \"FAULTLINE %s\"" % name.upper())
        # The usage line and summary as printed, then each flag as a tagged paragraph.
        lines = text.rstrip().split("\n")
        first_flag = next((i for i, l in enumerate(lines) if FLAG_LINE.match(l) or l.startswith("  -h, --help")),
                          len(lines))
        usage, rest = [], lines[:first_flag]
        while rest and rest[0].strip():
            usage.append(rest.pop(0))
        out.append(".nf")
        out.append(roff_escape("\n".join(usage)))
        out.append(".fi")
        summary = " ".join(l.strip() for l in rest if l.strip())
        if summary:
            out.append(".PP")
            out.append(roff_escape(summary))
        for f in flags:
            out.append(".TP")
            names = ", ".join(["\\fB%s\\fR" % a for a in f["aliases"]] + ["\\fB%s\\fR" % f["name"].replace("-", "\\-")])
            out.append(names + (" \\fI%s\\fR" % f["metavar"] if f["metavar"] else ""))
            out.append(roff_escape(f["help"]))
        footer = [l.strip() for l in lines[first_flag:] if l.strip() and not l.startswith("  ")]
        if footer:
            out.append(".PP")
            out.append(roff_escape(" ".join(footer)))
    out.append(".SH ENVIRONMENT")
    for name, what in (("NO_COLOR", "set and not empty: no colour on a terminal (--color=always still colours)"),
                       ("STATE_DIRECTORY", "the default state dir of run (systemd's StateDirectory=)"),
                       ("NODE_NAME", "the default node label of run")):
        out.append(".TP\n.B %s\n%s" % (name, what))
    out.append(".SH FILES")
    out.append(".TP\n.I /etc/faultline/config.yaml\nthe config of the packaged service")
    out.append(".TP\n.I /usr/share/faultline/rules\nthe shipped rule catalog and its tests")
    out.append(".TP\n.I /usr/share/doc/faultline\nthe documentation (config reference, incident schema, webhooks)")
    out.append(".SH \"EXIT STATUS\"")
    out.append("scan: 0 no incident, 1 incidents found, 2 a usage or rule error or an input that cannot be read. "
               "check and test: 0 valid, 1 a rule error or a failing test, 2 a usage error. "
               "run: 0 after a clean stop, 2 a config or start-up error.")
    return "\n".join(out) + "\n"


def bash_completion(cmds, helps):
    lines = ["# bash completion for faultline (generated from its help text by scripts/manpage.py)",
             "_faultline() {",
             "  local cur prev cmd",
             "  cur=\"${COMP_WORDS[COMP_CWORD]}\"",
             "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"",
             "  if [ \"$COMP_CWORD\" -eq 1 ]; then",
             "    COMPREPLY=($(compgen -W \"%s --help --version -V\" -- \"$cur\"))" % " ".join(c for c, _ in cmds),
             "    return",
             "  fi",
             "  cmd=\"${COMP_WORDS[1]}\"",
             "  case \"$cmd\" in"]
    for name, _ in cmds:
        _, flags = helps[name]
        words = []
        valued = []
        for f in flags:
            words.append(f["name"])
            words.extend(f["aliases"])
            if f["metavar"]:
                valued.append(f["name"])
                valued.extend(f["aliases"])
        words.append("--help")
        lines.append("    %s)" % name)
        if valued:
            lines.append("      case \"$prev\" in %s) COMPREPLY=($(compgen -f -- \"$cur\")); return;; esac"
                         % "|".join(valued))
        lines.append("      if [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"));"
                     " else COMPREPLY=($(compgen -f -- \"$cur\")); fi" % " ".join(words))
        lines.append("      ;;")
    lines += ["  esac", "}", "complete -o filenames -F _faultline faultline", ""]
    return "\n".join(lines)


def zsh_quote(text):
    return text.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def zsh_completion(cmds, helps):
    lines = ["#compdef faultline",
             "# zsh completion for faultline (generated from its help text by scripts/manpage.py)",
             "_faultline() {",
             "  local -a commands",
             "  commands=("]
    for name, summary in cmds:
        lines.append("    '%s:%s'" % (name, zsh_quote(summary)))
    lines += ["  )",
              "  if (( CURRENT == 2 )); then",
              "    _describe -t commands 'faultline command' commands",
              "    return",
              "  fi",
              "  local cmd=${words[2]}",
              "  shift 1 words; (( CURRENT-- ))",
              "  case $cmd in"]
    for name, _ in cmds:
        _, flags = helps[name]
        lines.append("    %s)" % name)
        specs = []
        for f in flags:
            value = (":%s:_files" % f["metavar"].lower()) if f["metavar"] else ""
            for n in [f["name"]] + f["aliases"]:
                specs.append("'%s[%s]%s'" % (n, zsh_quote(f["help"][:70]), value))
        specs.append("'*:file:_files'")
        lines.append("      _arguments %s" % " ".join(specs))
        lines.append("      ;;")
    lines += ["  esac", "}", "_faultline \"$@\"", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--man")
    ap.add_argument("--bash")
    ap.add_argument("--zsh")
    a = ap.parse_args()
    version = run(a.binary, "version").strip() or "faultline"
    cmds = commands(a.binary)
    if not cmds:
        sys.exit("manpage.py: no commands in '%s --help'" % a.binary)
    helps = {name: command_help(a.binary, name) for name, _ in cmds}
    for path, text in ((a.man, man_page(version, cmds, helps) if a.man else None),
                       (a.bash, bash_completion(cmds, helps) if a.bash else None),
                       (a.zsh, zsh_completion(cmds, helps) if a.zsh else None)):
        if path:
            with open(path, "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
