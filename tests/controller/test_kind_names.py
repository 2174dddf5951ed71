"""Issue 27: a job kind has one home. No controller file outside controller/kinds/ (and no file of
api/ but wire.c, which holds the one name table) spells a kind name as a C string literal: the
lifecycle parses a row's action once (hone_kind_parse, ctl_kind_of) and calls through the kind
table (controller/kinds/kind.h), so adding a kind is its wire name, one file in kinds/ and one row
in kinds/kinds.c. Comments may name kinds. Each hit left is listed with why it is not a kind.
Reads the source tree only (the binary argument CMake passes is unused). The old controller
compared kind names in 20 places across 9 files."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ("train", "automl", "convert", "evaluate", "inference", "export")
LITERAL = re.compile(r'"(%s)"' % "|".join(KINDS))
# (file, literal): not a kind name there.
NOT_A_KIND = {
    ("controller/dataset_check.c", "train"): "the MNIST split folder train/",
}


def strip_comments(src):
    """C source without its comments (string literals kept; a '/*' inside one is rare enough
    here that the check would only over-report)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src[i] == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def files():
    for folder in ("controller", "api"):
        for dirpath, dirnames, names in os.walk(os.path.join(ROOT, folder)):
            rel = os.path.relpath(dirpath, ROOT)
            if rel.startswith(os.path.join("controller", "kinds")):
                continue
            for name in sorted(names):
                path = os.path.join(rel, name)
                if name.endswith((".c", ".h")) and path != os.path.join("api", "wire.c"):
                    yield path


def main():
    bad, seen = [], 0
    for path in files():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            code = strip_comments(f.read())
        seen += 1
        for m in LITERAL.finditer(code):
            if (path, m.group(1)) not in NOT_A_KIND:
                line = code.count("\n", 0, m.start()) + 1
                bad.append("%s:%d: \"%s\"" % (path, line, m.group(1)))
    assert seen > 40, "found only %d files under %s" % (seen, ROOT)
    assert not bad, "kind names outside controller/kinds/ (parse to hone_kind, call the kind " \
        "table):\n  " + "\n  ".join(bad)
    print("ok: %d files name no kind" % seen)


if __name__ == "__main__":
    sys.exit(main())
