#!/usr/bin/env python3
"""test_worker_kind_names: no file of worker/ names a job kind as a string ("train", "convert",
"evaluate", ...): the lease's action is parsed once by the kind table (worker/kinds.c, through
api/wire.h's hone_kind_parse) and every runner switches on the enum. A new kind is one runner
file and one row of that table; a kind compared by name elsewhere fails here, naming the line.
Usage: test_worker_kind_names.py SOURCE_ROOT"""
import os
import re
import sys

KINDS = ("train", "automl", "convert", "evaluate", "inference", "export")


def strip_comments(text):
    """The C source with its comments blanked (newlines kept, so line numbers hold); string
    literals are left whole."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    folder = os.path.join(root, "worker")
    lit = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
    bad = []
    files = sorted(f for f in os.listdir(folder) if f.endswith((".c", ".h")))
    assert "kinds.c" in files, files
    for name in files:
        with open(os.path.join(folder, name)) as f:
            code = strip_comments(f.read())
        for no, line in enumerate(code.split("\n"), 1):
            for m in lit.finditer(line):
                if m.group(1) in KINDS:
                    bad.append("worker/%s:%d: %s" % (name, no, line.strip()))
    if bad:
        print("kind names compared as strings outside the kind table (use hone_kind):")
        print("\n".join(bad))
        return 1
    print("worker: %d files, no kind named as a string" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
