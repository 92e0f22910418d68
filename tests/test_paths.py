"""Output paths (monoidlab._paths): slugs are safe file names, confinement holds, output folders
are checked before any work and without side effects; atomic writes honour the umask."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monoidlab._paths import check_output_dir, confine, ensure_dir, is_within, slugify
from monoidlab._util import atomic_write_bytes, atomic_write_text, write_section
from monoidlab.errors import OutputPathError

HOSTILE = ["../../x", "/etc/passwd", "a/b\\c:d<e>|f?*", "..", ".", "", ".hidden", "-rf",
           "<script>alert(1)</script>", "a\x00b", "名前", "x" * 500, "C:\\Windows\\x",
           "dyck-6", "parity__mlp-ldru__s0"]


@pytest.mark.parametrize("name", HOSTILE)
def test_slugify_gives_one_safe_file_name(tmp_path, name):
    slug = slugify(name)
    assert re.fullmatch(r"[A-Za-z0-9._+=-]{1,100}", slug), slug
    assert slug not in (".", "..") and not slug.startswith((".", "-"))
    assert (tmp_path / slug).resolve().parent == tmp_path.resolve()


def test_slugify_keeps_plain_names():
    assert [slugify(n) for n in ("dyck-6", "parity__mlp-ldru__s0", "T_7.v2")] == \
        ["dyck-6", "parity__mlp-ldru__s0", "T_7.v2"]


@given(st.text(max_size=60))
def test_slugify_never_escapes(name):
    slug = slugify(name)
    assert "/" not in slug and "\\" not in slug and slug not in (".", "..") and slug
    assert slugify(slug) == slug  # idempotent


def test_confine(tmp_path):
    (tmp_path / "out").mkdir()
    assert confine(tmp_path / "out" / "a.html", tmp_path / "out").name == "a.html"
    for bad in (tmp_path / "out" / ".." / "x", Path("/etc/passwd"), tmp_path):
        with pytest.raises(OutputPathError, match="lies outside"):
            confine(bad, tmp_path / "out")
    (tmp_path / "out" / "link").symlink_to(tmp_path)  # a symlink pointing out is out
    with pytest.raises(OutputPathError):
        confine(tmp_path / "out" / "link" / "x", tmp_path / "out")
    assert is_within(tmp_path / "out", tmp_path / "out")


def test_check_output_dir_refuses_in_one_line_and_creates_nothing(tmp_path):
    (tmp_path / "afile").write_text("x")
    cases = {tmp_path / "afile": "is a file", tmp_path / "afile" / "sub": "lies under",
             Path("/sys/monoidlab-no-such-dir/x"): "cannot be created",
             Path("/proc/monoidlab-no-such-dir"): "cannot be created"}
    for path, needle in cases.items():
        with pytest.raises(OutputPathError, match=needle) as info:
            check_output_dir(path, "--out")
        assert "\n" not in str(info.value) and str(info.value).startswith("--out: ")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert check_output_dir(tmp_path / "new" / "deeper") == (tmp_path / "new" / "deeper")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created, no probe left
    assert ensure_dir(tmp_path / "new" / "deeper").is_dir()


def test_check_output_dir_catches_unwritable_folders_even_for_root(tmp_path, monkeypatch):
    """Writability is tried, not read from the mode bits (which do not stop root)."""
    import tempfile

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(OutputPathError, match="not writable"):
        check_output_dir(tmp_path)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_atomic_writes_honour_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        atomic_write_bytes(tmp_path / "a.bin", b"x")
        atomic_write_text(tmp_path / "b.json", "{}")
        write_section(tmp_path / "c.md", "s", "text")
    finally:
        os.umask(old)
    for name in ("a.bin", "b.json", "c.md"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name


def test_atomic_write_failure_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text("old")
    real = os.fsync

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        atomic_write_text(path, "new")
    monkeypatch.setattr(os, "fsync", real)
    assert info.value.filename == str(path) and "previous file" in info.value.strerror
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]
