"""GET /api/v1/openapi.yaml serves api/openapi.yaml byte for byte (embedded at build time), without
a token even when the controller has one; the file parses as OpenAPI 3 with a `default` (Error)
answer on every operation, and names every route the controller answers."""
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def main():
    binary = binary_from_argv()
    want = open(os.path.join(ROOT, "api", "openapi.yaml"), "rb").read()
    c = Controller(binary, tempdir(), extra=["--auth-token", "s3cret"]).start()
    try:
        st, body = c.req("GET", "/api/v1/openapi.yaml")
        assert st == 200, st
        assert body == want, "served openapi.yaml differs from api/openapi.yaml"
        st, _ = c.req("GET", "/api/v1/datasets")
        assert st == 401, "the other routes still need the token (%d)" % st
        doc = yaml.safe_load(body)
        assert doc["openapi"].startswith("3."), doc["openapi"]
        ops = 0
        for path, item in doc["paths"].items():
            for method, op in item.items():
                if method == "parameters":
                    continue
                ops += 1
                assert "default" in op["responses"], "%s %s: no default answer" % (method, path)
        assert "/api/v1/openapi.yaml" in doc["paths"]
        # the list routes document their paging
        for path in ("/api/v1/datasets", "/api/v1/experiments", "/api/v1/jobs",
                     "/api/v1/jobs/{id}/metrics"):
            names = {p.get("name") or p["$ref"].rsplit("/", 1)[1]
                     for p in doc["paths"][path]["get"].get("parameters", [])}
            assert {"limit", "offset"} <= names, (path, names)
        print("openapi: %d operations, served byte for byte" % ops)
    finally:
        c.stop()


if __name__ == "__main__":
    main()
