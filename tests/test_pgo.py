"""The build backend's profile-guided optimisation (pgo/lowlat_build.py): when it uses the
profile, the flags it hands cargo, and the profile it ships."""

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

PGO = Path(__file__).resolve().parent.parent / "pgo"


def _backend():
    spec = importlib.util.spec_from_file_location("lowlat_build", PGO / "lowlat_build.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RUSTC_22 = "rustc 1.95.0 (59807616e 2026-04-14)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nLLVM version: 22.1.2\n"


def test_llvm_major_is_read_from_rustc_vv():
    b = _backend()
    assert b.llvm_major(RUSTC_22) == 22
    assert b.llvm_major("rustc 1.95.0\nhost: x86_64-unknown-linux-gnu\n") is None


def test_profile_used_only_with_its_llvm_major():
    b = _backend()
    meta = {"llvm_major": 22}
    assert b.pgo_plan({}, RUSTC_22, meta) is None
    why = b.pgo_plan({}, RUSTC_22.replace("22.1.2", "21.1.8"), meta)
    assert why is not None and "LLVM 22" in why and "LLVM 21" in why
    assert "no LLVM version" in b.pgo_plan({}, "rustc 1.95.0\n", meta)
    assert b.pgo_plan({}, None, meta) == "rustc -vV failed"
    assert b.pgo_plan({}, RUSTC_22, None).startswith("no profile")


@pytest.mark.parametrize("value", ["0", "false", "off", " NO "])
def test_lowlat_pgo_0_turns_it_off(value):
    b = _backend()
    assert b.pgo_plan({"LOWLAT_PGO": value}, RUSTC_22, {"llvm_major": 22}) == "LOWLAT_PGO=0"
    assert b.pgo_plan({"LOWLAT_PGO": "1"}, RUSTC_22, {"llvm_major": 22}) is None


def test_flags_go_after_the_users_own():
    b = _backend()
    p = Path("/tmp/x y/lowlat.profdata")
    plain = b.encoded_flags({}, p).split("\x1f")
    assert plain[0] == f"-Cprofile-use={p}" and len(plain) >= 2
    from_env = b.encoded_flags({"RUSTFLAGS": "-Ctarget-cpu=native  -Dwarnings"}, p).split("\x1f")
    assert from_env[:2] == ["-Ctarget-cpu=native", "-Dwarnings"] and from_env[2] == f"-Cprofile-use={p}"
    # cargo reads CARGO_ENCODED_RUSTFLAGS before RUSTFLAGS, so the backend does too.
    encoded = b.encoded_flags({"CARGO_ENCODED_RUSTFLAGS": "-Ca=1\x1f-Cb=2", "RUSTFLAGS": "-Cignored"}, p).split("\x1f")
    assert encoded[:3] == ["-Ca=1", "-Cb=2", f"-Cprofile-use={p}"]


def test_pep517_hooks_are_all_there():
    b = _backend()
    for hook in ("build_wheel", "build_editable"):
        assert callable(getattr(b, hook))
    assert set(b.PASSED) >= {"build_sdist", "get_requires_for_build_wheel", "prepare_metadata_for_build_wheel"}
    with pytest.raises(AttributeError):
        getattr(b, "no_such_hook")


def test_shipped_profile_is_an_indexed_llvm_profile():
    meta = json.loads((PGO / "profile.json").read_text())
    assert isinstance(meta["llvm_major"], int) and meta["llvm_major"] >= 14
    data = gzip.decompress((PGO / "lowlat.profdata.gz").read_bytes())
    # llvm-profdata's indexed format: the magic 0x8169666f72706cff, little-endian.
    assert data[:8] == bytes.fromhex("ff6c70726f666981")


def test_an_unreadable_profile_is_skipped_with_the_reason(tmp_path):
    b = _backend()
    meta, prof = tmp_path / "profile.json", tmp_path / "lowlat.profdata.gz"
    assert b.read_meta(meta, prof).startswith("no profile at")
    prof.write_bytes(b"not gzip")
    meta.write_text("{not json")
    assert "unreadable" in b.read_meta(meta, prof)
    meta.write_text('{"llvm_major": "22"}')
    assert "integer llvm_major" in b.read_meta(meta, prof)
    meta.write_text('{"llvm_major": 22}')
    assert b.read_meta(meta, prof) == {"llvm_major": 22}
    assert "unreadable" in b.decompress(prof)
    prof.write_bytes(gzip.compress(b"profile"))
    assert b.decompress(prof) == b"profile"


def test_lowlat_pgo_0_skips_even_the_rustc_probe(monkeypatch):
    b = _backend()
    monkeypatch.setattr(b, "rustc_version", lambda env: pytest.fail("rustc was asked"))
    assert b.usable_profile({"LOWLAT_PGO": "0"}) == "LOWLAT_PGO=0"
