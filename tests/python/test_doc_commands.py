"""Every deferctl command of docs/*.md and README.md against the built deferctl (ctest:
python.doc_commands).

Issue 38: schedules.md told users to run `deferctl cancel --queue Q --key NAME:<ms>`, which
deferctl refuses. What this test reads as a command:

* shell lines: in a fenced block, each line after a `$ ` prompt; in a ```sh block without
  prompts, every line. Each `deferctl ...` of a line counts, in a pipeline or a list too.
* forms: the lines of a fenced block that start with `deferctl ` (deferctl.md's SYNOPSIS)
  and every inline code span that starts with `deferctl ` (also across a line break): a
  grammar with `[optional]`, `(a | b)`, `a|b` and UPPERCASE placeholders (PLACEHOLDERS).

What it checks:

1. Options parse (test_options_parse): each shell command, and each form expanded so that
   every alternative occurs at least once, is run with `--help` after its options (before a
   `--`). deferctl reads its options in order and prints help at `--help`, exit 0, only once
   every option and value before it parsed; an unknown option or a bad value is a usage
   error, exit 2 (deferctl.md, EXIT STATUS). Nothing is read or connected to.
2. The shell lines run (test_shell_commands_run): in doc order against a private deferd
   whose queues are those of etc/deferd.ini, with DEFERD_SOCKET and DEFERD_CONFIG set and a
   global -s/-c pointed at it; each must exit 0, so a command naming a queue the sample
   config lacks fails as it would for a user. Files a command reads are made first: from the
   block's `$ cat FILE` output where it shows one. `work` runs only with `--max-jobs` (it
   ends by itself); without, it would run the reader's program forever, so there only its
   --queue names are checked against the sample config.

NOT_COMMANDS matches the spans that quote deferctl's output rather than a command.
test_schedules_md_cancels_an_occurrence runs schedules.md's cancel of an occurrence for real.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from harness import Daemon, sample_queues, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")
DOCS = sorted(glob.glob(os.path.join(TOP, "docs", "*.md"))) + [os.path.join(TOP, "README.md")]

# Inline spans that start with "deferctl " but quote its output: the --version line
# (`deferctl 0.3.0`, `deferctl VERSION`) and the prefix of its log lines.
NOT_COMMANDS = re.compile(r"deferctl (\d+\.\d+\.\d+|VERSION|error: .*)")

# A value for each placeholder of the forms; values must be valid, as deferctl checks a value
# when it reads its option.
PLACEHOLDERS = {
    "Q": "emails", "QUEUE": "emails", "KEY": "invoice-1234", "K": "invoice-1234", "G": "acme-1", "NAME": "nightly-report",
    "ID": "emails/1763769605123-10-5f1e0c2a9b3d4e01",
    "JOB_ID": "emails/1763769605123-10-5f1e0c2a9b3d4e01", "TIME": "now+1m", "DUE": "now+1m",
    "DUR": "5s", "N": "4", "FILE": "jobs.txt", "PATH": "/tmp/doc-example", "CONFIG": "deferd.ini",
    "TEXT": "maintenance", "PAYLOAD": "hello", "CMD": "true", "ARGS": "x", "COMMAND": "cancel",
    "<ms>": "1763769605123",
}


@dataclass
class Command:
    doc: str            # path in the tree, e.g. "docs/deferctl.md"
    line: int           # where it starts in the doc
    text: str           # as the doc has it
    argv: List[str]     # the words after "deferctl"
    form: bool          # grammar (placeholders, brackets) rather than a shell line
    piped: bool = False  # stdin comes from an earlier command of the pipeline
    files: Dict[str, str] = field(default_factory=dict)  # `$ cat F` outputs of its block

    def where(self) -> str:
        return f"{self.doc}:{self.line}: `{self.text}`"


FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```[ \t]*$", re.S | re.M)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def shell_commands(doc: str, line: int, shell: str, files: Dict[str, str]) -> List[Command]:
    """The deferctl simple commands of one shell line."""
    lex = shlex.shlex(shell, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    words = list(lex)
    out = []
    simple: List[str] = []
    piped = False
    for w in words + [";"]:
        if w in ("|", "||", "&&", ";", "&"):
            # redirections and their targets are not the command's words
            argv, skip = [], False
            for x in simple:
                if skip:
                    skip = False
                elif re.fullmatch(r"\d*[<>]+&?", x):
                    skip = True
                else:
                    argv.append(x)
            while argv and re.fullmatch(r"[A-Za-z_]\w*=.*", argv[0]):
                argv.pop(0)  # VAR=value before the program
            if argv and argv[0] == "deferctl":
                out.append(Command(doc, line, shell, argv[1:], False, piped, files))
            piped = w == "|"
            simple = []
        else:
            simple.append(w)
    return out


def block_files(body: str) -> Dict[str, str]:
    """What a block shows of files: the output lines after `$ cat FILE`."""
    files = {}
    for m in re.finditer(r"^\$ cat (\S+)\n((?:(?!\$ ).*\n)*)", body, re.M):
        files[m.group(1)] = m.group(2)
    return files


def doc_commands(path: str) -> List[Command]:
    """The shell commands and forms of one doc, in order."""
    doc = os.path.relpath(path, TOP)
    with open(path) as f:
        text = f.read()
    out: List[Command] = []
    for m in FENCE.finditer(text):
        lang, body = m.group(2), m.group(3)
        first = line_of(text, m.start(3))
        lines = body.splitlines()
        prompted = any(x.strip().startswith("$ ") for x in lines)
        files = block_files(body)
        i = 0
        while i < len(lines):
            raw = lines[i].strip()
            n = first + i
            i += 1
            if prompted and raw.startswith("$ "):
                out += shell_commands(doc, n, raw[2:], files)
            elif lang == "sh" and not prompted and raw:
                out += shell_commands(doc, n, raw, files)
            elif not prompted and raw.startswith("deferctl "):
                # a synopsis line; its continuation lines are indented
                while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
                    raw += " " + lines[i].strip()
                    i += 1
                out.append(Command(doc, n, raw, raw.split()[1:], True))
    # inline spans, outside the fenced blocks (blanked, keeping offsets)
    prose = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    for m in re.finditer(r"`(deferctl\s[^`]*)`", prose):
        span = " ".join(m.group(1).split())
        if not NOT_COMMANDS.fullmatch(span):
            out.append(Command(doc, line_of(prose, m.start()), span, span.split()[1:], True))
    out.sort(key=lambda c: c.line)
    return out


def all_commands() -> List[Command]:
    return [c for d in DOCS for c in doc_commands(d)]


# -- forms -------------------------------------------------------------------------------------

Node = Tuple[str, object]  # ("word", str) | ("group", (optional, [alternative: [Node]], id))


def parse_form(words: List[str]) -> List[Node]:
    """A form's words as a sequence of words and groups."""
    text = " ".join(words)
    text = re.sub(r"(?<=[^\s\[(|])\[[^\]\s]*\]", "", text)  # Q[,Q2...]: a word's optional tail
    text = re.sub(r"(?<![\s\[(|])\.\.\.", "", text)          # ARGS...
    text = re.sub(r"(?<!\S)([^\s\[\]()|]+(?:\|[^\s\[\]()|]+)+)",  # show|kick|delete
                  lambda m: "( " + " | ".join(m.group(1).split("|")) + " )", text)
    tokens = re.findall(r"[\[\]()|]|[^\s\[\]()|]+", text)
    groups = [0]

    def seq(pos: int, ends: str) -> Tuple[List[List[Node]], int]:
        alts: List[List[Node]] = [[]]
        while pos < len(tokens) and tokens[pos] not in ends:
            t = tokens[pos]
            if t == "|":
                alts.append([])
                pos += 1
            elif t in "[(":
                inner, pos = seq(pos + 1, "])")
                groups[0] += 1
                alts[-1].append(("group", (t == "[", inner, groups[0])))
                pos += 1  # the closing bracket
            else:
                alts[-1].append(("word", t))
                pos += 1
        return alts, pos

    alts, _ = seq(0, "")
    if len(alts) != 1:
        raise ValueError(f"a | outside brackets: {text}")
    return alts[0]


def variants(nodes: List[Node]) -> List[List[str]]:
    """Argument lists in which every alternative of every group occurs at least once: all
    optional groups left out; all put in; and each alternative once with the others left as
    in the first."""
    parents: Dict[int, List[Tuple[int, int]]] = {}
    alternatives: Dict[int, int] = {}

    def walk(seq: List[Node], chain: List[Tuple[int, int]]) -> None:
        for kind, v in seq:
            if kind == "group":
                optional, alts, gid = v  # type: ignore[misc]
                parents[gid] = chain
                alternatives[gid] = len(alts)
                for i, a in enumerate(alts):
                    walk(a, chain + [(gid, i)])
    walk(nodes, [])

    def render(seq: List[Node], choice: Dict[int, int], optional_in: bool) -> List[str]:
        out: List[str] = []
        for kind, v in seq:
            if kind == "word":
                out.append(value_of(v))  # type: ignore[arg-type]
                continue
            optional, alts, gid = v  # type: ignore[misc]
            pick = choice.get(gid, 0 if (optional_in or not optional) else -1)
            if pick >= 0:
                out += render(alts[pick], choice, optional_in)
        return out

    out = [render(nodes, {}, False), render(nodes, {}, True)]
    for gid, n in alternatives.items():
        for i in range(n):
            choice = dict(parents[gid])
            choice[gid] = i
            out.append(render(nodes, choice, False))
    unique: List[List[str]] = []
    for v in out:
        if v not in unique:
            unique.append(v)
    return unique


def value_of(word: str) -> str:
    """A form's word with its placeholders replaced; KeyError for an unknown one."""
    def sub(m: re.Match) -> str:
        return PLACEHOLDERS[m.group(0)]
    return re.sub(r"<\w+>|\b[A-Z][A-Z0-9_]*\b", sub, word) if not word.startswith("-") \
        else word


# -- running deferctl -------------------------------------------------------------------------

def with_help(argv: List[str]) -> List[str]:
    """``argv`` with --help after its options: before a `--`, else at the end."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i] + ["--help"] + argv[i:]
    return argv + ["--help"]


def global_split(argv: List[str]) -> int:
    """Where the command word is, after deferctl's global options."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 1 if "=" in argv[i] or argv[i] in ("-h", "--help", "-V", "--version") else 2
    return i


class DocCommands(unittest.TestCase):
    ctl: str
    tmp: str

    @classmethod
    def setUpClass(cls) -> None:
        ctl = os.environ.get("DEFERCTL_BIN")
        if not ctl:
            raise RuntimeError("DEFERCTL_BIN not set (run through ctest)")
        cls.ctl = ctl
        cls.tmp = tempfile.mkdtemp(prefix="deferd-doc-commands-")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ctl_run(self, argv: List[str], env: Optional[dict] = None, stdin: bytes = b"",
                cwd: Optional[str] = None, timeout: float = 30) -> subprocess.CompletedProcess:
        if env is None:  # no daemon, no config: a parse that went wrong reaches nothing
            env = dict(os.environ, DEFERD_SOCKET=os.path.join(self.tmp, "none.sock"),
                       DEFERD_CONFIG=os.path.join(self.tmp, "none.ini"))
        return subprocess.run([self.ctl, *argv], env=env, input=stdin, capture_output=True,
                              cwd=cwd or self.tmp, timeout=timeout)

    def test_extraction_finds_the_commands(self) -> None:
        # a broken extraction must not pass by finding nothing
        cmds = all_commands()
        shell = [c for c in cmds if not c.form]
        forms = [c for c in cmds if c.form]
        self.assertGreaterEqual(len(shell), 15, [c.where() for c in shell])
        self.assertGreaterEqual(len(forms), 60, len(forms))
        synopsis = [c for c in forms if c.doc == "docs/deferctl.md" and c.line < 40]
        self.assertGreaterEqual(len(synopsis), 20, [c.where() for c in synopsis])
        self.assertIn(["put", "--batch", "jobs.txt"], [c.argv for c in shell])
        # schedules.md's cancel by key spans a line break
        self.assertTrue([c for c in forms if c.doc == "docs/schedules.md" and c.argv[:1] ==
                         ["cancel"]], "schedules.md's `deferctl cancel ...` not found")
        [batch] = [c for c in shell if c.argv[:2] == ["put", "--batch"]]
        self.assertIn("queue=emails key=welcome-17", batch.files.get("jobs.txt", ""))

    def test_options_parse(self) -> None:
        # what the check rests on: an unknown option before --help is a usage error
        self.assertEqual(self.ctl_run(with_help(["cancel", "--queue", "emails"])).returncode, 2)
        self.assertEqual(self.ctl_run(with_help(["cancel", "--key", "k", "emails"])).returncode,
                         0)
        failures = []
        checked = 0
        for c in all_commands():
            if c.form:
                try:
                    runs = variants(parse_form(c.argv))
                except KeyError as e:
                    failures.append(f"{c.where()}: placeholder {e} has no value in "
                                    "PLACEHOLDERS")
                    continue
            else:
                runs = [c.argv]
            for argv in runs:
                checked += 1
                if set(argv) & {"-h", "--help", "-V", "--version"} or argv[:1] == ["help"]:
                    p = self.ctl_run(argv)  # prints and exits as it is
                else:
                    p = self.ctl_run(with_help(argv))
                    rest = argv[:argv.index("--")] if "--" in argv else argv
                    if p.returncode != 0 and rest and rest[-1].startswith("-"):
                        # a span naming an option without its value (`cancel --key`)
                        p = self.ctl_run(with_help(rest + ["x1"] + argv[len(rest):]))
                if p.returncode != 0:
                    failures.append(f"{c.where()}: deferctl {shlex.join(argv)}: exit "
                                    f"{p.returncode}: {p.stderr.decode().strip()}")
        self.assertGreater(checked, 80)
        self.assertEqual(failures, [], "\n" + "\n".join(failures))

    def test_shell_commands_run(self) -> None:
        queues = sample_queues()
        d = Daemon("doc-commands", queues).start()
        try:
            env = dict(os.environ, DEFERD_SOCKET=d.sock, DEFERD_CONFIG=d.config)
            cwd = os.path.join(self.tmp, "run")
            os.makedirs(cwd, exist_ok=True)
            failures = []
            ran = 0
            for c in all_commands():
                if c.form:
                    continue
                argv = list(c.argv)
                at = global_split(argv)
                for i in range(at):  # the reader's socket and config are this daemon's
                    if argv[i] in ("-s", "--socket"):
                        argv[i + 1] = d.sock
                    elif argv[i] in ("-c", "--config"):
                        argv[i + 1] = d.config
                named = [q for i, a in enumerate(argv[at:-1], at) if a in ("-q", "--queue")
                         for q in argv[i + 1].split(",")]
                unknown = sorted(set(named) - set(queues))
                if unknown:
                    failures.append(f"{c.where()}: queue(s) {unknown} are not in "
                                    f"etc/deferd.ini ({sorted(queues)})")
                    continue
                if argv[at:at + 1] == ["work"] and "--max-jobs" not in argv \
                        and "-m" not in argv:
                    continue  # never ends; its program is the reader's
                for name, content in c.files.items():
                    with open(os.path.join(cwd, name), "w") as f:
                        f.write(content)
                for i, a in enumerate(argv[:-1]):
                    target = os.path.join(cwd, argv[i + 1])
                    if a in ("--file", "--batch") and not os.path.exists(target):
                        with open(target, "w") as f:
                            f.write('{"doc": "example"}\n')
                stdin = b"payload from a pipe\n" if c.piped or "-" in argv[at:] else b""
                p = self.ctl_run(argv, env=env, stdin=stdin, cwd=cwd)
                ran += 1
                if p.returncode != 0:
                    failures.append(f"{c.where()}: exit {p.returncode}: "
                                    f"{p.stderr.decode().strip()}")
            self.assertEqual(failures, [], "\n" + "\n".join(failures))
            self.assertGreaterEqual(ran, 12)
        finally:
            d.stop()

    def test_schedules_md_cancels_an_occurrence(self) -> None:
        # schedules.md's command to remove a schedule's pending occurrence, as the page has
        # it, with the key `deferctl schedules` shows: the job must be gone
        [form] = [c for c in doc_commands(os.path.join(TOP, "docs", "schedules.md"))
                  if c.form and c.argv[:1] == ["cancel"]]
        d = Daemon("doc-schedule", sample_queues())
        with open(d.config, "a") as f:  # the next hourly instant is put ahead at once
            f.write("[schedule nightly-report]\nqueue = reports\nevery = 1h\n")
        d.start()
        try:
            env = dict(os.environ, DEFERD_SOCKET=d.sock, DEFERD_CONFIG=d.config)

            def schedule() -> dict:
                p = self.ctl_run(["schedules", "--json"], env=env)
                self.assertEqual(p.returncode, 0, p.stderr)
                [sched] = json.loads(p.stdout)
                return sched

            def pending() -> Optional[dict]:
                sched = schedule()
                return sched if sched.get("last_state") == "pending" else None
            sched = wait_for(pending, "the next occurrence is put")
            key = sched["last_key"]
            self.assertRegex(key, r"^nightly-report:\d+$")
            self.assertTrue([j for j in d.jobs("reports") if j.endswith("-k" + key)])
            argv = [key if a == "NAME:<ms>" else "reports" if a == "Q" else a
                    for a in form.argv]
            p = self.ctl_run(argv, env=env)
            self.assertEqual(p.returncode, 0, f"{form.where()}: {p.stderr.decode()}")
            self.assertEqual([j for j in d.jobs("reports") if j.endswith("-k" + key)], [])
            self.assertEqual(schedule()["last_state"], "done")
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
