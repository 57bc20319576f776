"""lowlat's build backend: maturin's, building the Rust core with profile-guided optimisation.

``pip install .`` builds the extension with the profile in this folder (``lowlat.profdata.gz``,
made by ``python3 pgo/train.py`` from runs of lowlat's own scenarios) when the Rust toolchain can
read it: rustc's LLVM must have the major version the profile was written with
(``profile.json``), as LLVM's profile format changes between major versions. Otherwise, or with
``LOWLAT_PGO=0``, it is maturin's plain build, and it says why on stderr (``pip install -v``
shows it). The profile changes no result: it only tells the compiler which branches and calls
are hot (the simulator's per-packet paths run 5-10 % faster).

The flags go in ``CARGO_ENCODED_RUSTFLAGS`` after those of ``RUSTFLAGS`` or
``CARGO_ENCODED_RUSTFLAGS`` if set (cargo then ignores ``build.rustflags`` of its config files,
as it always does when either is set; ``LOWLAT_PGO=0`` keeps them)."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROFILE = HERE / "lowlat.profdata.gz"
META = HERE / "profile.json"
#: LLVM warns about each function changed since the profile was made (it then has no profile:
#: the plain build's code); a profile a few commits old is still worth most of its gain.
QUIET = ["-Cllvm-args=-no-pgo-warn-mismatch"]


def llvm_major(rustc_version: str) -> int | None:
    """The LLVM major version in ``rustc -vV``'s output, or None."""
    m = re.search(r"^LLVM version: (\d+)", rustc_version, re.MULTILINE)
    return int(m.group(1)) if m else None


def rustc_version(env: Mapping[str, str]) -> str | None:
    """``rustc -vV`` of the compiler cargo will use (``$RUSTC`` or ``rustc``), or None."""
    try:
        out = subprocess.run([env.get("RUSTC", "rustc"), "-vV"], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout


def existing_flags(env: Mapping[str, str]) -> list[str]:
    """The rustflags cargo would take from the environment (``CARGO_ENCODED_RUSTFLAGS`` first)."""
    encoded = env.get("CARGO_ENCODED_RUSTFLAGS")
    if encoded is not None:
        return [f for f in encoded.split("\x1f") if f]
    return env.get("RUSTFLAGS", "").split()


def disabled(env: Mapping[str, str]) -> bool:
    """Whether ``LOWLAT_PGO`` turns the profile off."""
    return env.get("LOWLAT_PGO", "1").strip().lower() in ("0", "false", "no", "off")


def pgo_plan(env: Mapping[str, str], version: str | None, meta: Mapping[str, Any] | None) -> str | None:
    """Why the build goes without the profile, or None if it can use it."""
    if disabled(env):
        return "LOWLAT_PGO=0"
    if meta is None:
        return f"no profile at {PROFILE}"
    if version is None:
        return "rustc -vV failed"
    have, want = llvm_major(version), meta.get("llvm_major")
    if have is None:
        return "rustc -vV names no LLVM version"
    if have != want:
        return f"the profile is for LLVM {want}, this rustc has LLVM {have} (python3 pgo/train.py makes one for it)"
    return None


def encoded_flags(env: Mapping[str, str], profile: Path) -> str:
    """``CARGO_ENCODED_RUSTFLAGS`` for a build with ``profile``."""
    return "\x1f".join([*existing_flags(env), f"-Cprofile-use={profile}", *QUIET])


def read_meta(meta_path: Path = META, profile: Path = PROFILE) -> dict[str, Any] | str:
    """The profile's metadata, or why there is none to use (missing or unreadable files: the
    build then goes on without it rather than failing)."""
    if not (profile.is_file() and meta_path.is_file()):
        return f"no profile at {profile}"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return f"{meta_path} is unreadable ({e})"
    if not isinstance(meta, dict) or not isinstance(meta.get("llvm_major"), int):
        return f"{meta_path}: expected an object with an integer llvm_major"
    return meta


def decompress(profile: Path = PROFILE) -> bytes | str:
    """The profile's bytes, or why they cannot be read."""
    try:
        return gzip.decompress(profile.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        return f"{profile} is unreadable ({e})"


def usable_profile(env: Mapping[str, str]) -> bytes | str:
    """The profile's bytes when this build can use it, else why it goes without."""
    if disabled(env):
        return "LOWLAT_PGO=0"
    meta = read_meta()
    if isinstance(meta, str):
        return meta
    why = pgo_plan(env, rustc_version(env), meta)
    return why if why is not None else decompress()


@contextlib.contextmanager
def profile_env() -> Iterator[None]:
    """The environment of a build with the profile when it can be used (see the module docs)."""
    env = dict(os.environ)
    data = usable_profile(env)
    if isinstance(data, str):
        print(f"lowlat: building without profile-guided optimisation: {data}", file=sys.stderr)
        yield
        return
    with tempfile.TemporaryDirectory(prefix="lowlat-pgo-") as tmp:
        profile = Path(tmp) / "lowlat.profdata"
        profile.write_bytes(data)
        before = os.environ.get("CARGO_ENCODED_RUSTFLAGS")
        os.environ["CARGO_ENCODED_RUSTFLAGS"] = encoded_flags(env, profile)
        print(f"lowlat: building with profile-guided optimisation ({PROFILE.name}; LOWLAT_PGO=0: without)", file=sys.stderr)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("CARGO_ENCODED_RUSTFLAGS", None)
            else:
                os.environ["CARGO_ENCODED_RUSTFLAGS"] = before


#: The PEP 517/660 hooks passed through to maturin unchanged (imported when a frontend asks for
#: one: the tests read this module without maturin installed).
PASSED = (
    "build_sdist",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
)


def __getattr__(name: str) -> Any:
    if name in PASSED:
        import maturin

        return getattr(maturin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_wheel(wheel_directory: str, config_settings: Mapping[str, Any] | None = None, metadata_directory: str | None = None) -> str:
    """PEP 517: maturin's wheel, with the profile when it can be used."""
    import maturin

    with profile_env():
        return str(maturin.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(wheel_directory: str, config_settings: Mapping[str, Any] | None = None, metadata_directory: str | None = None) -> str:
    """PEP 660: maturin's editable wheel, with the profile when it can be used."""
    import maturin

    with profile_env():
        return str(maturin.build_editable(wheel_directory, config_settings, metadata_directory))
