"""``list_dir`` pages: offset/limit, ``total`` and ``nextOffset``, in a stable order (issue 31)."""

import os
import random

import pytest

from steerable_agent_runtime.workspace._listing import DEFAULT_PAGE, MAX_PAGE


def folder(session, dirs: int = 5, files: int = 20) -> list[str]:
    """``dirs`` folders and ``files`` files made in shuffled order; the names in listing order."""
    names = [f"d{i:02d}" for i in range(dirs)] + [f"f{i:02d}.txt" for i in range(files)]
    random.Random(7).shuffle(names)
    for name in names:
        if name.startswith("d"):
            (session.root / "big" / name).mkdir(parents=True)
        else:
            session.write_raw(f"big/{name}", name.encode())
    return sorted(n for n in names if n.startswith("d")) + sorted(n for n in names if n.startswith("f"))


async def test_pages_cover_every_entry_once_in_listing_order(session):
    expected = folder(session)
    first = await session("list_dir", path="big", limit=10)
    assert first.success, first.error
    assert list(first.data) == ["path", "total", "truncated", "nextOffset", "entries"]  # entries last
    assert (first.data["total"], first.data["truncated"], first.data["nextOffset"]) == (25, True, 10)
    second = await session("list_dir", path="big", offset=10, limit=10)
    assert (second.data["truncated"], second.data["nextOffset"]) == (True, 20)
    last = await session("list_dir", path="big", offset=second.data["nextOffset"], limit=10)
    assert last.data == {
        "path": "big",
        "total": 25,
        "truncated": False,
        "entries": [{"name": f"f{i:02d}.txt", "type": "file", "size": 7} for i in range(15, 20)],
    }
    paged = [e["name"] for page in (first, second, last) for e in page.data["entries"]]
    assert paged == expected  # folders first, each group by name, none twice
    assert first.data["entries"][4:6] == [
        {"name": "d04", "type": "dir"},
        {"name": "f00.txt", "type": "file", "size": 7},
    ]


async def test_the_order_is_the_same_call_after_call(session):
    folder(session, dirs=30, files=70)
    runs = [
        [e["name"] for e in (await session("list_dir", path="big", limit=1000)).data["entries"]]
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) == 100


async def test_by_default_one_page_is_1000_entries(session):
    names = folder(session, dirs=0, files=1001)
    first = await session("list_dir", path="big")
    assert (len(first.data["entries"]), first.data["total"], first.data["nextOffset"]) == (1000, 1001, 1000)
    rest = await session("list_dir", path="big", offset=1000)
    assert rest.data["entries"] == [{"name": "f999.txt", "type": "file", "size": 8}]  # f1000 sorts before it
    assert names[-1] == "f999.txt"
    assert rest.data["truncated"] is False and "nextOffset" not in rest.data


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({"offset": -1}, "offset", "Input should be greater than or equal to 0"),
        ({"limit": 0}, "limit", "Input should be greater than or equal to 1"),
        ({"limit": 1001}, "limit", "Input should be less than or equal to 1000"),
        ({"offset": True}, "offset", "Input should be a valid integer"),
        ({"offset": 1.5}, "offset", "Input should be a valid integer"),
    ],
)
async def test_bad_page_arguments_are_argument_errors(session, arguments, field, message):
    result = await session("list_dir", **arguments)
    assert result.success is False and result.needs_followup is True
    assert result.data["code"] == "invalid_arguments"
    assert result.data["errors"] == [{"field": field, "message": message}]


async def test_an_offset_past_the_last_entry_says_how_many_there_are(session):
    folder(session, dirs=1, files=2)
    result = await session("list_dir", path="big", offset=3)
    assert result.success is False and result.needs_followup is True
    assert result.error == "offset 3 is past the end of big (3 entries)"
    assert result.data == {"code": "invalid_range", "path": "big", "total": 3}
    empty = await session("list_dir", path="big/d00", offset=0)
    assert empty.data == {"path": "big/d00", "total": 0, "truncated": False, "entries": []}


async def test_entry_types_and_names_that_are_not_utf8(session):
    root = session.root
    (root / "sub").mkdir()
    session.write_raw("plain.txt", b"12345")
    os.symlink("sub", root / "link")
    os.symlink("/nowhere", root / "dangling")
    os.mkfifo(root / "pipe")
    bad = os.fsencode(str(root)) + b"/caf\xe9.txt"
    with open(bad, "wb") as handle:
        handle.write(b"x")
    result = await session("list_dir")
    assert result.data["entries"] == [
        {"name": "sub", "type": "dir"},
        {"name": "caf\ufffd.txt", "type": "file", "notUtf8": True, "size": 1},
        {"name": "dangling", "type": "symlink"},
        {"name": "link", "type": "symlink"},
        {"name": "pipe", "type": "other"},
        {"name": "plain.txt", "type": "file", "size": 5},
    ]


async def test_only_the_page_is_stat_ed(session, monkeypatch):
    folder(session, dirs=10, files=200)
    calls = []
    real_stat = os.stat

    def counted(path, *args, **kwargs):
        if kwargs.get("dir_fd") is not None:
            calls.append(path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counted)
    result = await session("list_dir", path="big", offset=5, limit=10)
    assert [e["name"] for e in result.data["entries"]][:6] == ["d05", "d06", "d07", "d08", "d09", "f00.txt"]
    assert calls == [f"f{i:02d}.txt" for i in range(5)]  # the page's five files; folders need none


async def test_an_entry_removed_after_the_scan_is_left_out(session, monkeypatch):
    folder(session, dirs=0, files=3)
    real_stat = os.stat

    def removed(path, *args, **kwargs):
        if kwargs.get("dir_fd") is not None and path == "f01.txt":
            raise FileNotFoundError(path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", removed)
    result = await session("list_dir", path="big", limit=2)
    assert [e["name"] for e in result.data["entries"]] == ["f00.txt"]
    assert (result.data["total"], result.data["nextOffset"]) == (3, 2)  # the next page starts after it


def test_the_schema_tells_the_model_how_to_page(session):
    tool = session.router.get("list_dir")
    properties = tool.parameters["properties"]
    assert properties["offset"]["minimum"] == 0 and properties["offset"]["default"] == 0
    assert (properties["limit"]["minimum"], properties["limit"]["maximum"]) == (1, MAX_PAGE)
    assert properties["limit"]["default"] == DEFAULT_PAGE == 1000
    assert "nextOffset" in properties["offset"]["description"]
    assert "nextOffset" in tool.description and "total" in tool.description


async def test_paging_leaves_the_deny_read_set_out_of_the_count_safe_3(make_session, tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("secret\n")
    (home / "notes.txt").write_text("n\n")
    (home / "a.txt").write_text("a\n")
    session = make_session(home, environ={"HOME": str(home)}, bash=False)  # -w ~
    first = await session("list_dir", limit=1)
    assert first.data == {
        "path": ".",
        "total": 2,
        "truncated": True,
        "nextOffset": 1,
        "deniedSkipped": 1,
        "entries": [{"name": "a.txt", "type": "file", "size": 2}],
    }
