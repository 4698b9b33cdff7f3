#!/usr/bin/env python3
"""Every external command the scripts and tests call is installed by scripts/install-deps.sh.

A static check, a few seconds: it runs none of the scripts. It collects the commands that
  - the shell scripts run (scripts/*.sh, p4/*.sh, tests/**/*.sh, .ci/run; the first word of
    each simple command, after `sudo`, `exec`, `timeout N`, `env VAR=...` and the like),
  - the C++ and Python code spawns by name (RunLogged({"ip", ...}), FindOnPath("gnuplot"),
    subprocess.run(["curl", ...])),
  - the ctest entries run (`ctest --show-only=json-v1` in BUILD_DIR, when given),
resolves each on a fresh Debian machine's PATH (not this shell's: a pyenv shim is no
evidence) and asserts that the Debian package owning it is one that install-deps.sh lists, or
that one of those pulls in (Depends/Pre-Depends, recursively), or a package every Debian system
has (Essential, or Priority required: what debootstrap's minbase and the debian:12 image hold).

What it does not cover: commands built at run time from variables ($P4/bin/simple_switch, the
P4 toolchain's own build, which scripts/p4-toolchain.sh installs for itself), code passed as a
string to `bash -c` or `sh -c`, Python modules the scripts import, and whether a command's
version or options suit the script. tests/scripts/clean_clone_test.sh runs the scripts' early
steps for real.

  commands_provided_test.py SOURCE_DIR [BUILD_DIR]
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

FRESH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Builtins and keywords of bash: never looked up on PATH.
BASH_WORDS = set("""
. : [ [[ ]] { } ! alias bg bind break builtin caller case cd command compgen complete compopt
continue declare dirs disown do done echo elif else enable esac eval exec exit export false fc fg
fi for function getopts hash help history if in jobs kill let local logout mapfile popd printf
pushd pwd read readarray readonly return select set shift shopt source suspend test then time
times trap true type typeset ulimit umask unalias unset until wait while coproc
""".split())

# Words after which the next word is again a command: `sudo cmd`, `timeout 30 cmd`, ...
PREFIX_WORDS = {"sudo", "exec", "time", "command", "builtin", "nohup", "env", "xargs", "!",
                "if", "then", "elif", "else", "do", "while", "until"}
# Prefixes that take options or one positional argument before the command.
PREFIX_WITH_ARG = {"timeout": 1, "nice": 0, "taskset": 1, "chrt": 1, "setsid": 0,
                   "unshare": 0, "nsenter": 0, "ionice": 0, "stdbuf": 0, "flock": 1}

# The P4 toolchain (scripts/p4-toolchain.sh builds it into /opt/p4).
TOOLCHAIN = {"p4c-bm2-ss", "simple_switch", "simple_switch_CLI"}


def shell_files(src):
    files = sorted(src.glob("scripts/*.sh")) + sorted(src.glob("p4/*.sh"))
    files += sorted(src.glob("tests/**/*.sh")) + [src / ".ci/run"]
    # The toolchain script installs its own build dependencies (its apt-get list).
    return [f for f in files if f.exists() and f.name != "p4-toolchain.sh"]


def strip_heredocs_and_comments(text):
    out, terminator = [], None
    for line in text.splitlines():
        if terminator is not None:
            if line.strip() == terminator:
                terminator = None
            out.append("")
            continue
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m and "<<<" not in line:
            terminator = m.group(1)
        out.append(re.sub(r"(^|\s)#.*$", "", line) if not line.startswith("#!") else "")
    return out


def unquote(line):
    """The line with quoted text removed; commands in "$(...)" come back as extra lines."""
    out, extra, i, dq = [], [], 0, False
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if not dq and c == "'":
            j = line.find("'", i + 1)
            i = len(line) if j < 0 else j + 1
            out.append(" Q ")
            continue
        if c == '"':
            dq = not dq
            out.append(" Q " if not dq else "")
            i += 1
            continue
        if line.startswith("$((", i):
            j = line.find("))", i)
            i = len(line) if j < 0 else j + 2
            out.append(" Q ")
            continue
        if dq and line.startswith("$(", i):
            depth, j = 1, i + 2
            while j < len(line) and depth:
                depth += {"(": 1, ")": -1}.get(line[j], 0)
                j += 1
            extra.append(line[i + 2:j - 1])
            i = j
            continue
        if not dq:
            out.append(c)
        i += 1
    return "".join(out), extra


def command_words(line):
    """First words of the simple commands on one (joined) line of shell."""
    line, extra = unquote(line)
    line = re.sub(r"\$\{[^}]*\}", "V", line)  # ${parameter expansions}
    line = re.sub(r"[A-Za-z_]\w*\+?=\([^)]*\)", " ", line)  # NAME=(array words)
    line = re.sub(r"\d*>&\d*-?|&>>?|\d*>>?|\d*<", " ", line)  # redirections
    line = re.sub(r"\(\(.*?\)\)", " ", line)  # arithmetic (( ... ))
    line = re.sub(r"^\s*[^\s()=$]+(\s*\|\s*[^\s()]+)*\)", " ", line)  # a case label
    segments = re.split(r"\$\(|`|\|\||&&|[|;&(){}]|\bthen\b|\bdo\b|\belse\b|\bif\b|\bwhile\b|"
                        r"\buntil\b|\belif\b|(?<![-\w])time\b|!", line)
    words = []
    for seg in segments:
        toks = seg.split()
        i = 0
        while i < len(toks):
            t = toks[i]
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", t):  # VAR=value
                i += 1
            elif t in PREFIX_WORDS:
                i += 1
                while i < len(toks) and toks[i].startswith("-"):
                    i += 1
            elif t in PREFIX_WITH_ARG:
                i += 1
                while i < len(toks) and toks[i].startswith("-"):
                    i += 1
                i += PREFIX_WITH_ARG[t]
            else:
                break
        if i < len(toks):
            words.append(toks[i])
    for e in extra:
        words += command_words(e)
    return words


def defined_functions(files):
    names = set()
    for f in files:
        names |= set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)",
                                f.read_text(errors="replace"), re.M))
    return names


def blank_quotes_across_lines(lines):
    """Single-quoted text (awk and Python programs) becomes Q, even over several lines; a
    double-quoted string over several lines is put on its first line. Line numbers stay."""
    text, out, i, state = "\n".join(lines), [], 0, None
    pending_newlines = 0
    while i < len(text):
        c = text[i]
        if state is None:
            if c == "\\":
                out.append(text[i:i + 2])
                i += 2
                continue
            if c == "'":
                state = "'"
                out.append("'Q")
            elif c == '"':
                state = '"'
                out.append(c)
            else:
                out.append(c)
        elif state == "'":
            if c == "'":
                state = None
                out.append("'")
            elif c == "\n":
                pending_newlines += 1
        else:
            if c == "\\":
                out.append(text[i:i + 2].replace("\n", " "))
                i += 2
                continue
            if c == '"':
                state = None
            out.append(" " if c == "\n" else c)
            if c == "\n":
                pending_newlines += 1
        if state is None and pending_newlines:
            out.append("\n" * pending_newlines)
            pending_newlines = 0
        i += 1
    return "".join(out).split("\n")


def shell_commands(path, functions):
    lines = blank_quotes_across_lines(strip_heredocs_and_comments(path.read_text(errors="replace")))
    found = []
    joined, start, in_array = "", 0, False
    for n, line in enumerate(lines, 1):
        if in_array:  # the words of a multi-line NAME=( ... ) array
            in_array = not line.strip().startswith(")")
            continue
        if re.match(r"^\s*(local\s+|declare\s+\S+\s+)?[A-Za-z_]\w*=\([^)]*$", line):
            in_array = True
            continue
        if not joined:
            start = n
        if line.endswith("\\"):
            joined += line[:-1] + " "
            continue
        joined += line
        for w in command_words(joined):
            if (w in BASH_WORDS or w in functions or w == "Q" or w.startswith(("$", "-", "[", "<", ">"))
                    or not re.match(r"^[A-Za-z0-9_./+-]+$", w) or w.endswith(")")):
                continue
            if w.startswith("serene-"):
                continue  # this project's binaries (build/bin on PATH)
            if "/" in w and not w.startswith("/"):
                continue  # a path in the repository or the build (scripts/x.sh, build/bin/y)
            found.append((w, f"{path}:{start}"))
        joined = ""
    return found


SPAWN_PATTERNS = [
    re.compile(r'RunLogged\(\{"([^"]+)"'),
    re.compile(r'FindOnPath\("([^"]+)"\)'),
    re.compile(r'subprocess\.\w+\(\s*\[\s*"([^"]+)"'),
]


def code_commands(src):
    found = []
    for ext in ("*.cc", "*.h", "*.py"):
        for f in src.rglob(ext):
            rel = f.relative_to(src)
            if rel.parts[0].startswith("build") or rel.parts[0] == ".git" or f.name == Path(__file__).name:
                continue
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                for p in SPAWN_PATTERNS:
                    if rel.parts[0] == "tests" and p.pattern.startswith("FindOnPath"):
                        continue  # tests look up absent names on purpose
                    for m in p.finditer(line):
                        found.append((m.group(1), f"{rel}:{n}"))
    return found


def ctest_commands(build):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True,
                         text=True, check=True).stdout
    found = []
    for t in json.loads(out).get("tests", []):
        cmd = t.get("command") or []
        if cmd and not cmd[0].startswith((str(build), str(Path(build).resolve()))):
            found.append((cmd[0], "ctest " + t["name"]))
    return found


def listed_packages(src):
    text = (src / "scripts/install-deps.sh").read_text()
    body = re.search(r"PACKAGES=\((.*?)\n\)", text, re.S).group(1)
    return {w for line in body.splitlines() for w in re.sub(r"#.*", "", line).split()}


def installed_packages():
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package}\t${Status}\t${Essential}\t${Priority}\t"
         "${Pre-Depends}, ${Depends}\t${Provides}\n"],
        capture_output=True, text=True, check=True).stdout
    pkgs, provides = {}, {}
    for line in out.splitlines():
        name, status, essential, priority, deps, prov = (line.split("\t") + [""] * 6)[:6]
        if "install ok installed" not in status:
            continue
        pkgs[name] = (essential == "yes" or priority == "required", deps)
        for p in prov.split(","):
            p = p.strip().split(" ")[0]
            if p:
                provides.setdefault(p, []).append(name)
    return pkgs, provides


def closure(roots, pkgs, provides):
    """Installed packages that installing `roots` brings (Depends/Pre-Depends, recursively)."""
    seen, todo = set(), [r for r in roots if r in pkgs]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for clause in pkgs[p][1].split(","):
            for alt in clause.split("|"):
                name = alt.strip().split(" ")[0].split(":")[0]
                cands = [name] if name in pkgs else provides.get(name, [])
                cands = [c for c in cands if c in pkgs]
                if cands:
                    todo.extend(cands)
                    break
    return seen


def owner(path):
    candidates = [path]
    if path.startswith("/usr/"):
        candidates.append(path[4:])  # usrmerge: dpkg may know /bin/x
    else:
        candidates.append("/usr" + path)
    real = os.path.realpath(path)
    candidates += [real, real[4:] if real.startswith("/usr/") else "/usr" + real]
    for c in candidates:
        r = subprocess.run(["dpkg", "-S", c], capture_output=True, text=True)
        if r.returncode == 0:
            for line in r.stdout.splitlines():
                pkg, _, owned = line.partition(": ")
                if owned.strip() == c and "diversion" not in pkg:
                    return pkg.split(",")[0].split(":")[0].strip()
    return None


def main():
    src = Path(sys.argv[1]).resolve()
    build = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    uses = []
    files = shell_files(src)
    functions = defined_functions(files)
    for f in files:
        uses += [(w, where.replace(str(src) + "/", "")) for w, where in shell_commands(f, functions)]
    uses += code_commands(src)
    if build is not None and (build / "CTestTestfile.cmake").exists():
        uses += ctest_commands(build)

    listed = listed_packages(src)
    pkgs, provides = installed_packages()
    unknown = sorted(p for p in listed if p not in pkgs)
    brought = closure(listed, pkgs, provides)

    by_command = {}
    for cmd, where in uses:
        by_command.setdefault(cmd, []).append(where)
    failures = []
    if unknown:
        failures.append("install-deps.sh lists packages that are not installed here: " +
                        " ".join(unknown) + " (run scripts/install-deps.sh)")
    for cmd in sorted(by_command):
        where = ", ".join(sorted(set(by_command[cmd]))[:3])
        if cmd in TOOLCHAIN:
            print(f"ok   {cmd:22} the P4 toolchain (scripts/p4-toolchain.sh)   [{where}]")
            continue
        path = cmd if cmd.startswith("/") else shutil.which(cmd, path=FRESH_PATH)
        if path is None or not os.path.exists(path):
            failures.append(f"{cmd} ({where}) is not installed on this machine's system PATH: add "
                            "the Debian package that provides it to scripts/install-deps.sh")
            continue
        pkg = owner(path)
        if pkg is None:
            failures.append(f"{cmd} ({where}) is {path}, which no Debian package owns: install-deps.sh "
                            "cannot install it; use a command from a Debian package")
        elif pkg in listed:
            print(f"ok   {cmd:22} {pkg} (listed)   [{where}]")
        elif pkg in brought:
            print(f"ok   {cmd:22} {pkg} (pulled in by a listed package)   [{where}]")
        elif pkg in pkgs and pkgs[pkg][0]:
            print(f"ok   {cmd:22} {pkg} (on every Debian system)   [{where}]")
        else:
            failures.append(f"{cmd} ({where}) comes from the package {pkg}, which "
                            "scripts/install-deps.sh neither lists nor pulls in: add "
                            f"{pkg} to its PACKAGES")
    for f in failures:
        print("FAIL " + f)
    if failures:
        sys.exit(1)
    print(f"all {len(by_command)} commands are installed by scripts/install-deps.sh")


if __name__ == "__main__":
    main()
