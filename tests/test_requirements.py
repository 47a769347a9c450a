"""The rule-to-test map of ``docs/requirements.md``, checked both ways.

Tests name the requirement IDs they prove, in their names (``..._file_4``) or in comments
(``# FILE-4``); the TypeScript package's tests (``js/test/*.test.ts``) count too. Every ID of an implemented area must be named by some test, and every ID a test
names must exist.
"""

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REQUIREMENTS = TESTS.parent / "docs" / "requirements.md"
ID = re.compile(
    r"(?<![A-Za-z])(ENV|CON|MODE|TIER|TS|HAR|PLG|ASK|RUN|FILE|WEB|LOOP|REC|SAFE)[-_](\d+)(?!\d)",
    re.IGNORECASE,
)

# Every area of the spec is implemented.
IMPLEMENTED = (
    {f"ENV-{n}" for n in range(1, 11)}
    | {"CON-1"}
    | {f"MODE-{n}" for n in (1, 2, 3, 4, 5)}
    | {f"TIER-{n}" for n in (1, 2, 3)}
    | {f"FILE-{n}" for n in range(1, 12)}
    | {f"ASK-{n}" for n in range(1, 9)}
    | {f"TS-{n}" for n in range(1, 5)}
    | {f"HAR-{n}" for n in range(1, 4)}
    | {f"PLG-{n}" for n in range(1, 10)}
    | {f"RUN-{n}" for n in range(1, 10)}
    | {f"WEB-{n}" for n in range(1, 19)}
    | {f"FILE-{n}" for n in range(12, 17)}
    | {"LOOP-1", "LOOP-2", "REC-1", "REC-2", "REC-3", "REC-4"}
    | {f"SAFE-{n}" for n in range(1, 10)}
)


def _requirement_ids() -> set[str]:
    text = REQUIREMENTS.read_text(encoding="utf-8")
    listed = [f"{m.group(1)}-{m.group(2)}" for m in re.finditer(r"^- ([A-Z]+)-(\d+) ", text, re.MULTILINE)]
    assert len(listed) == len(set(listed)), "an ID is listed twice"
    return set(listed)


def _named_in_tests() -> set[str]:
    named = set()
    typescript = sorted((TESTS.parent / "js" / "test").glob("*.test.ts"))  # the @steerable/host port
    assert typescript, "js/test/ holds no *.test.ts"
    for path in [*TESTS.rglob("test_*.py"), *typescript]:
        if path.name == "test_requirements.py":
            continue
        for match in ID.finditer(path.read_text(encoding="utf-8")):
            named.add(f"{match.group(1).upper()}-{match.group(2)}")
    return named


def test_every_implemented_requirement_is_named_by_a_test():
    assert IMPLEMENTED <= _requirement_ids()
    assert sorted(IMPLEMENTED - _named_in_tests()) == []


def test_every_id_named_in_tests_exists():
    assert sorted(_named_in_tests() - _requirement_ids()) == []
