"""The running controller keeps to api/openapi.yaml: schemathesis (pip, installed into a venv under
the build folder when pip can reach it) runs every operation's examples, coverage and fuzzing
phases and the stateful phase (the file's links) against a real controller holding a dataset, an
experiment, a finished train job and an AutoML job, and checks: no 5xx, every status code documented, every JSON
answer inside its schema, content types as documented. Skips (77) when schemathesis cannot be
installed, unless HONE_REQUIRE_SCHEMATHESIS=1 (CI)."""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = int(os.environ.get("HONE_SCHEMATHESIS_EXAMPLES", "25"))


def schemathesis_bin(build):
    """The venv's schemathesis, created on first use; None when pip cannot install it."""
    venv = os.path.join(build, "schemathesis-venv")
    exe = os.path.join(venv, "bin", "schemathesis")
    if os.path.exists(exe):
        return exe
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "schemathesis>=4,<5"],
                       check=True, timeout=300, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    except (subprocess.SubprocessError, OSError) as e:
        print("schemathesis: cannot install (%s)" % e)
        return None
    return exe if os.path.exists(exe) else None


def seed(c):
    """One of each thing, so the operations on {id} reach real objects, not only 404."""
    data = os.path.join(c.data_dir, "fm")
    write_idx(data)
    ds = c.ok("POST", "/api/v1/datasets", {"name": "fm", "path": data})["id"]
    exp = c.ok("POST", "/api/v1/experiments", {
        "name": "e", "network_arch": "mlp", "train_datasets": [ds],
        "specs": {"train": {"epochs": 2}}})["id"]
    job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})["id"]
    w = FakeWorker(c)
    w.register()
    leased = w.lease()
    assert leased and leased["id"] == job, leased
    assert w.run_job(leased) == "done"
    # an AutoML job too, so the job lists carry its automl block (TAO's fields included)
    aexp = c.ok("POST", "/api/v1/experiments", {
        "name": "a", "network_arch": "mlp", "train_datasets": [ds],
        "specs": {"train": {"epochs": 2}},
        "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                            "automl_max_recommendations": 2}})["id"]
    c.ok("POST", "/api/v1/experiments/%s/jobs" % aexp, {"action": "train"})
    return ds, exp, job, w


def main():
    binary = binary_from_argv()
    build = os.path.dirname(os.path.dirname(binary))
    exe = schemathesis_bin(build)
    if exe is None:
        if os.environ.get("HONE_REQUIRE_SCHEMATHESIS") == "1":
            sys.exit("schemathesis required (HONE_REQUIRE_SCHEMATHESIS=1) but not installable")
        print("skipped: schemathesis not installable here")
        sys.exit(77)
    tmp = tempdir()
    c = Controller(binary, tmp).start()
    try:
        ds, exp, job, w = seed(c)
        cfg = os.path.join(tmp, "schemathesis.toml")
        auth = {"Authorization": w.headers["Authorization"]}
        ops = ((r"^/api/v1/datasets/\\{id\\}", {"path.id": ds}, None),
               (r"^/api/v1/experiments/\\{id\\}", {"path.id": exp}, None),
               # the worker's routes with its credential (the job is done: 409 on report)
               (r"^/api/v1/jobs/\\{id\\}/(report|complete)$", {"path.id": job}, auth),
               (r"^/api/v1/jobs/\\{id\\}(?!/(report|complete)$)", {"path.id": job}, None),
               # lease without waiting: a long-poll would only slow the run down
               (r"^/api/v1/workers/\\{id\\}/lease$", {"path.id": w.id, "query.wait": 0}, auth),
               (r"^/api/v1/workers/\\{id\\}/heartbeat$", {"path.id": w.id}, auth))
        with open(cfg, "w") as f:
            for regex, params, headers in ops:
                f.write('[[operations]]\ninclude-path-regex = "%s"\n' % regex)
                f.write("parameters = { %s }\n" % ", ".join(
                    '"%s" = %s' % (k, json.dumps(v)) for k, v in params.items()))
                if headers:
                    f.write("headers = { %s }\n" % ", ".join(
                        '"%s" = %s' % (k, json.dumps(v)) for k, v in headers.items()))
                f.write("\n")
        env = dict(os.environ, SCHEMATHESIS_HOOKS="schemathesis_hooks",
                   PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LD_PRELOAD"):
            env.pop(k, None)
        t0 = time.time()
        p = subprocess.run(
            [exe, "--config-file", cfg, "run", c.base + "/api/v1/openapi.yaml", "--url", c.base,
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
             "response_schema_conformance", "--phases", "examples,coverage,fuzzing,stateful",
             "-n", str(EXAMPLES), "--seed", "1", "--no-color",
             # one worker: Python 3.11's ast.parse, which hypothesis calls, is not thread-safe
             # ("AST constructor recursion depth mismatch", CPython gh-106905)
             "-w", "1",
             "--suppress-health-check", "all", "--request-timeout", "30"],
            cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=400)
        out = p.stdout
        m = re.search(r"(\d+) generated", out)
        cases = int(m.group(1)) if m else -1
        tail = out[-6000:]
        assert p.returncode == 0, "schemathesis failed (%d):\n%s" % (p.returncode, tail)
        assert cases > 0, "no test cases ran:\n" + tail
        assert "Stateful" in out, tail
        # the seeded objects survived (deletes of used ones are refused)
        assert c.ok("GET", "/api/v1/jobs/" + job)["status"] == "done"
        print("schemathesis: %d cases, no failures, %.0f s" % (cases, time.time() - t0))
        print("\n".join(line for line in out.splitlines()[-25:]))
    finally:
        c.stop()


if __name__ == "__main__":
    main()
