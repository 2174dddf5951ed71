"""The page at / against a real hone-controller: index.html at /, the other files of web/ at
/ui/{name}, byte for byte as they are in the source tree (embedded at build time), with their
content types and no-cache, and the security headers (a strict Content-Security-Policy with
frame-ancestors 'none', X-Frame-Options DENY, nosniff, no referrer; the page has no inline script or
style attribute for the policy to block); an unknown file is 404; with an admin token set the page itself needs
none (it holds no data) while the API still does; every module a script imports is served beside it.
The page in a browser: tests/web/."""
import os
import re
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir  # noqa: E402

WEB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "web")
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
CSP = ("default-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
       "object-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'")


def secure(name, h):
    csp = [p.strip() for p in (h["Content-Security-Policy"] or "").split(";")]
    for p in CSP:
        assert p in csp, (name, p, csp)
    assert not any("unsafe" in p for p in csp), (name, csp)
    assert h["X-Frame-Options"] == "DENY", (name, h)
    assert h["X-Content-Type-Options"] == "nosniff", (name, h)
    assert h["Referrer-Policy"] == "no-referrer", (name, h)


def get(c, path):
    with urllib.request.urlopen(c.base + path, timeout=10) as r:
        return r.status, r.headers, r.read()


def main():
    binary = binary_from_argv()
    d = tempdir()
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("log_format: text\nauth:\n  token: sekrit\n")
    c = Controller(binary, d, config=cfg).start()
    try:
        files = sorted(os.listdir(WEB))
        assert "index.html" in files and "app.js" in files, files
        for name in files:
            path = "/" if name == "index.html" else "/ui/" + name
            st, h, body = get(c, path)
            with open(os.path.join(WEB, name), "rb") as f:
                want = f.read()
            assert st == 200 and body == want, (name, st, len(body), len(want))
            assert h["Content-Type"].startswith(TYPES[os.path.splitext(name)[1]]), (name, h)
            assert h["Cache-Control"] == "no-cache", h
            secure(name, h)
            if name.endswith((".html", ".js")):  # nothing the policy would block
                text = want.decode()
                assert "style=" not in text and "<script>" not in text, name
                assert " onclick=" not in text and "javascript:" not in text, name
        st, h, body = get(c, "/ui/index.html")  # also by name
        assert st == 200 and b"<!doctype html>" in body
        # index.html names only files that are served, and nothing from another host
        with open(os.path.join(WEB, "index.html")) as f:
            html = f.read()
        assert "http://" not in html and "https://" not in html
        for ref in ("/ui/app.js", "/ui/style.css"):
            assert ref in html and get(c, ref)[0] == 200
        # every module a script imports is served beside it (a missing one breaks the page)
        for name in files:
            if name.endswith(".js"):
                with open(os.path.join(WEB, name)) as f:
                    refs = re.findall(r'^import .* from "\./([^"]+)";$', f.read(), re.M)
                for ref in refs:
                    assert ref in files and get(c, "/ui/" + ref)[0] == 200, (name, ref)
        st, err = c.req("GET", "/ui/nope.js")
        assert st == 404 and err["error"]["field"] == "name", (st, err)
        st, err = c.req("GET", "/ui/..%2fhone.db")
        assert st == 404, st
        st, err = c.req("GET", "/api/v1/jobs")  # the API still wants the token
        assert st == 401, st
        st, js = c.req("GET", "/api/v1/jobs", headers={"Authorization": "Bearer sekrit"})
        assert st == 200 and js["jobs"] == [], (st, js)
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
