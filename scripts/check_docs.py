#!/usr/bin/env python3
"""check_docs.py - runs the shell blocks of the docs that are marked runnable,
so that the commands README.md and docs/*.md show keep working.

A block is runnable when the last non-blank line before its opening fence is
an HTML comment (invisible when the Markdown is rendered):

    <!-- runnable -->               run in the repository root, after
                                    `bash scripts/demo.sh` has built build/
    <!-- runnable fresh-clone -->   run in a scratch copy of the source tree
                                    (no build folders): setup/install commands
    <!-- runnable timeout=900 -->   seconds allowed (default 600); combinable

The fence must be ```sh or ```bash. Each block runs as one bash script with
`set -euo pipefail` (so the first failing command fails the block) and with a
clean environment: HOME is a scratch folder shared by the blocks of one run
(so ~/.local, ~/.cache and friends never touch the user's), and XDG_*, SDPA_*,
LD_LIBRARY_PATH and PKG_CONFIG_PATH are unset. Blocks run in file order.
docs/reliability.md ("Docs that run") describes the convention; .ci/run runs
this script after scripts/demo.sh.

    python3 scripts/check_docs.py [--list] [FILE.md ...]

Default files: README.md and docs/*.md. Exit status: 0 when every block
passed, 1 when one failed (its output tail is printed), 2 on usage errors.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"^<!--\s*runnable((?:\s+[\w=-]+)*)\s*-->\s*$")
FENCE = re.compile(r"^(`{3,})\s*(\S*)")
DEFAULT_TIMEOUT = 600


def blocks(path):
    """Yields (line number, options, script) for each marked block of path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    last = ""  # last non-blank line outside blocks
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                last = lines[i].strip()
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        mark = MARK.match(last)
        last = ""
        if not mark:
            continue
        if lang not in ("sh", "bash"):
            raise SystemExit(f"{path}:{start + 1}: a runnable block must be ```sh or ```bash")
        opts = {"fresh-clone": False, "timeout": DEFAULT_TIMEOUT}
        for word in mark.group(1).split():
            if word == "fresh-clone":
                opts["fresh-clone"] = True
            elif word.startswith("timeout=") and word[8:].isdigit():
                opts["timeout"] = int(word[8:])
            else:
                raise SystemExit(f"{path}:{start}: unknown runnable option '{word}'")
        yield start + 1, opts, "\n".join(body) + "\n"


def copy_tree(root, dest):
    """The source tree without build folders and git metadata."""
    def ignore(folder, names):
        if os.path.abspath(folder) != root:
            return [n for n in names if n == "__pycache__"]
        return [n for n in names if n.startswith("build") or n in (".git", "__pycache__")]
    shutil.copytree(root, dest, symlinks=True, ignore=ignore)


def main(argv):
    args = [a for a in argv if a != "--list"]
    if any(a.startswith("-") for a in args):
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    files = args or [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))
    todo = [(f, line, opts, script) for f in files for line, opts, script in blocks(f)]
    if "--list" in argv:
        for f, line, opts, script in todo:
            where = "fresh clone" if opts["fresh-clone"] else "repository root"
            print(f"== {os.path.relpath(f, root)}:{line} ({where}, {opts['timeout']} s)")
            print(script, end="")
        return 0

    scratch = tempfile.mkdtemp(prefix="sdpa-docs-")
    try:
        home = os.path.join(scratch, "home")
        os.mkdir(home)
        clone = None
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("XDG_", "SDPA_"))
               and k not in ("LD_LIBRARY_PATH", "PKG_CONFIG_PATH")}
        env["HOME"] = home
        failed = 0
        for f, line, opts, script in todo:
            name = f"{os.path.relpath(f, root)}:{line}"
            cwd = root
            if opts["fresh-clone"]:
                if clone is None:
                    clone = os.path.join(scratch, "clone")
                    copy_tree(root, clone)
                cwd = clone
            t0 = time.monotonic()
            try:
                r = subprocess.run(["bash", "-c", "set -euxo pipefail\n" + script], cwd=cwd,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=opts["timeout"])
                status, out = r.returncode, r.stdout
            except subprocess.TimeoutExpired as e:
                status, out = f"timeout after {opts['timeout']} s", e.stdout or b""
            dt = time.monotonic() - t0
            if status == 0:
                print(f"docs: {name} ok ({dt:.1f} s)", flush=True)
                continue
            failed += 1
            tail = out.decode(errors="replace").splitlines()[-40:]
            print(f"docs: {name} FAILED ({status}, {dt:.1f} s); last lines:", flush=True)
            for t in tail:
                print(f"  | {t}")
        print(f"docs: {len(todo) - failed} of {len(todo)} runnable blocks passed")
        return 1 if failed else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
