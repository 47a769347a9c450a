#!/bin/bash
python3 - <<'PY'
import urllib.request
try:
    body = urllib.request.urlopen("http://127.0.0.1:18765/health", timeout=5).read()
except OSError:
    body = b""
open("/logs/verifier/reward.txt", "w").write("1" if body == b"ok" else "0")
PY
