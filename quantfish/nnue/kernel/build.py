"""Build the C NNUE kernel (``qfkernel.c``, ``qfkernel.h`` beside this file) into the user cache folder.

    quantfish kernel [--force] [--cc gcc]        (or: python -m quantfish.nnue.kernel.build)

``make install`` runs it; otherwise the engine builds the library the first time it looks for it
(``quantfish.nnue.kernel.loader``), and uses the Numba path when there is no C compiler.

The source is compiled once per instruction set (scalar always; AVX2, AVX-512 and AVX-512 VNNI on x86-64
when the compiler accepts the flags) and the objects are linked into one shared library. Which variant
runs is decided at load time from the CPU (``quantfish/nnue/kernel/loader.py``), so the library built here works on any
x86-64 machine. Nothing is downloaded; the system C compiler (``$CC`` or ``gcc``/``cc``) is the only need.

The build is skipped when the library is up to date: the build id (a hash of the source, the flags and the
compiler version) is compiled into the library and compared here and by the loader. The library is written
to a temporary file and renamed into place, so a running engine that has the old one mapped is unaffected.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from quantfish.nnue.architecture import write_c_header
from quantfish.nnue.kernel.files import SOURCE, library_path, source_bytes, source_id

COMMON_FLAGS = ["-O3", "-std=gnu11", "-fPIC", "-fvisibility=hidden", "-fwrapv", "-fno-strict-aliasing",
                "-Wall", "-Wextra", "-Wno-unused-function"]
# (variant name, preprocessor symbol, ISA flags); the order is the order of preference at run time.
X86_VARIANTS = [
    ("avx512vnni", "QF_VARIANT_AVX512VNNI",
     ["-mavx2", "-mfma", "-mbmi", "-mbmi2", "-mpopcnt", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
      "-mavx512vnni", "-mprefer-vector-width=512"]),
    ("avx512", "QF_VARIANT_AVX512",
     ["-mavx2", "-mfma", "-mbmi", "-mbmi2", "-mpopcnt", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
      "-mprefer-vector-width=512"]),
    ("avx2", "QF_VARIANT_AVX2", ["-mavx2", "-mfma", "-mbmi", "-mbmi2", "-mpopcnt"]),
]
SCALAR_VARIANT = ("scalar", "QF_VARIANT_SCALAR", [])


class KernelBuildError(RuntimeError):
    """The C compiler is missing or failed; the message says which and how."""


def find_compiler(cc: str | None = None) -> str:
    for candidate in (cc, os.environ.get("CC"), "gcc", "cc"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    raise KernelBuildError("no C compiler found (tried $CC, gcc, cc): install gcc to build the NNUE kernel "
                           "(e.g. apt-get install gcc), or run with the Numba path only")


def is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def _compiler_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.splitlines()[0] if out.stdout else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def variants_for_platform():
    return ([SCALAR_VARIANT] + X86_VARIANTS) if is_x86_64() else [SCALAR_VARIANT]


def build_id(cc: str) -> str:
    """Hash of the kernel sources, the flags of every variant and the compiler version."""
    h = hashlib.sha256()
    h.update(source_bytes())
    for name, sym, flags in variants_for_platform():
        h.update(f"{name}:{sym}:{' '.join(COMMON_FLAGS + flags)}\n".encode())
    h.update(_compiler_version(cc).encode())
    return h.hexdigest()[:16]


def full_build_id(cc: str) -> str:
    """The string compiled into the library: '<source hash>-<build hash>'."""
    return f"{source_id()}-{build_id(cc)}"


BUILD_ID_MARKER = b"QFKERNEL-BUILD-ID:"


def library_build_id(path: Path) -> str | None:
    """The build id compiled into an existing library (read from the file, which is not loaded: a process
    that dlopen()s a path keeps getting that first copy even after the file is replaced), or None."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    i = data.find(BUILD_ID_MARKER)
    if i < 0:
        return None
    j = data.find(b";", i)
    return data[i + len(BUILD_ID_MARKER):j].decode(errors="replace") if j > 0 else None


def _run(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise KernelBuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                               f"{proc.stderr.strip()}")
    return proc.stderr.strip()


def _accepts(cc: str, flags, tmp: Path) -> bool:
    probe = tmp / "probe.c"
    probe.write_text("int qf_probe(void) { return 0; }\n")
    proc = subprocess.run([cc, *flags, "-c", str(probe), "-o", str(tmp / "probe.o")], capture_output=True)
    return proc.returncode == 0


def build(force: bool = False, cc: str | None = None, out: Path | None = None, verbose: bool = False) -> dict:
    """Build the library if it is missing or stale; return {'path', 'built', 'variants', 'build_id'}.

    Raises KernelBuildError with the compiler's message on any failure.
    """
    cc = find_compiler(cc)
    if not SOURCE.is_file():
        raise KernelBuildError(f"kernel source not found: {SOURCE}")
    bid = full_build_id(cc)
    out = Path(out) if out is not None else library_path()
    if not force and out.is_file() and library_build_id(out) == bid:
        return {"path": out, "built": False, "variants": None, "build_id": bid}
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KernelBuildError(f"cannot create {out.parent}: {exc.strerror or exc}") from None

    built = []
    with tempfile.TemporaryDirectory(prefix="qfkernel-") as tmpdir:
        tmp = Path(tmpdir)
        write_c_header(tmp)      # qfarch.h from quantfish.nnue.architecture, found by -I; the build id hashes it
        objs = []
        for name, sym, flags in variants_for_platform():
            if flags and not _accepts(cc, flags, tmp):
                if verbose:
                    print(f"  {name}: compiler does not accept {' '.join(flags)}; variant left out")
                continue
            obj = tmp / f"qfkernel_{name}.o"
            cmd = [cc, *COMMON_FLAGS, *flags, f"-D{sym}=1", f'-DQF_BUILD_ID="{bid}"', f"-I{tmp}",
                   "-c", str(SOURCE), "-o", str(obj)]
            warnings = _run(cmd, f"compiling the {name} kernel")
            if verbose:
                print("  " + " ".join(cmd))
            if warnings and verbose:
                print(warnings)
            objs.append(obj)
            built.append(name)
        tmp_lib = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        try:
            _run([cc, "-shared", "-o", str(tmp_lib), *map(str, objs)], "linking the kernel")
            os.replace(tmp_lib, out)
        finally:
            tmp_lib.unlink(missing_ok=True)
    return {"path": out, "built": True, "variants": built, "build_id": bid}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Build the C NNUE kernel into the user cache folder.")
    ap.add_argument("--force", action="store_true", help="rebuild even if the library is up to date")
    ap.add_argument("--cc", default=None, help="C compiler (default: $CC, gcc, cc)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    try:
        res = build(force=args.force, cc=args.cc, verbose=not args.quiet)
    except KernelBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        if res["built"]:
            print(f"built {res['path']} (variants: {', '.join(res['variants'])}; id {res['build_id']})")
        else:
            print(f"{res['path']} is up to date (id {res['build_id']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
