"""The README's Python example runs and prints what its comments say."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_prints_what_it_claims(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    code = next(b for b in blocks if "is_terminal_result" in b)  # the "Use it from Python" example
    claims = [m.group(1).strip() for m in re.finditer(r"^\s*print\(.*\)\s+# (.*)$", code, re.M)]
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    printed = run.stdout.splitlines()
    assert len(printed) == len(claims) == 3
    for line, claim in zip(printed, claims, strict=True):
        claim = claim.split(":", 1)[0] if claim.startswith("False:") else claim
        if claim.endswith("..."):
            assert line.startswith(claim[:-3].rstrip()), (line, claim)
        else:
            assert line == claim, (line, claim)
