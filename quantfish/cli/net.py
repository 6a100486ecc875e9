"""``quantfish net get`` puts Stockfish 15.1's net in the user's nets folder; ``quantfish net list`` shows the
nets the engine can find and which one it loads.

Order: keep an existing file with the right sha256; else download it from the Stockfish test server
(short timeout); else export it from an installed Stockfish 15.1 binary (``export_net``); else print what
to do and exit with status 1. Every file is checked against the known sha256 before it is kept.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import click

from quantfish.nnue.locate import DEFAULT_NET_NAME, DEFAULT_NET_SHA256, nets_dirs, sha256_of, user_nets_dir

URL = f"https://tests.stockfishchess.org/api/nn/{DEFAULT_NET_NAME}"
STOCKFISH_CANDIDATES = ("stockfish", "/usr/games/stockfish")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr)


def _good(path: Path) -> bool:
    return path.is_file() and sha256_of(path) == DEFAULT_NET_SHA256


def _install(tmp: Path, dest: Path, source: str) -> bool:
    """Move ``tmp`` to ``dest`` if its sha256 is right; otherwise delete it and say so."""
    if not tmp.is_file():
        _log(f"{source}: no file was produced")
        return False
    digest = sha256_of(tmp)
    if digest != DEFAULT_NET_SHA256:
        _log(f"{source}: wrong sha256 {digest} (expected {DEFAULT_NET_SHA256}); discarded")
        tmp.unlink()
        return False
    os.replace(tmp, dest)
    _log(f"{source}: {dest} ({dest.stat().st_size} bytes, sha256 ok)")
    return True


def try_download(dest: Path, timeout: float = 10.0) -> bool:
    tmp = dest.with_suffix(".download")
    try:
        with urllib.request.urlopen(URL, timeout=timeout) as resp, open(tmp, "wb") as out:
            shutil.copyfileobj(resp, out)
    except Exception as exc:  # no network, HTTP error, timeout: all mean "try the next source"
        _log(f"download from {URL} failed: {exc}")
        tmp.unlink(missing_ok=True)
        return False
    return _install(tmp, dest, "download")


def find_stockfish() -> list:
    found = []
    for name in STOCKFISH_CANDIDATES:
        path = shutil.which(name) or (name if os.access(name, os.X_OK) else None)
        if path and os.path.realpath(path) not in [os.path.realpath(p) for p in found]:
            found.append(path)
    return found


def try_export(dest: Path, timeout: float = 60.0) -> bool:
    """Ask each Stockfish found to ``export_net`` its embedded net; keep the first with the right sha256."""
    binaries = find_stockfish()
    if not binaries:
        _log("no Stockfish binary found on PATH or at /usr/games/stockfish")
    for binary in binaries:
        with tempfile.TemporaryDirectory(dir=dest.parent) as tmpdir:
            tmp = Path(tmpdir) / DEFAULT_NET_NAME
            try:
                subprocess.run([binary], input=f"export_net {tmp}\nquit\n", capture_output=True, text=True,
                               timeout=timeout, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                _log(f"export from {binary} failed: {exc}")
                continue
            if _install(tmp, dest, f"export from {binary}"):
                return True
    return False


def ensure_net(dest_dir=None) -> Path | None:
    """Make sure the default net is in ``dest_dir`` (default: the user's nets folder); return its path or None."""
    dest_dir = Path(dest_dir) if dest_dir else user_nets_dir()
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / DEFAULT_NET_NAME
    if dest.exists():
        if _good(dest):
            _log(f"{dest} is present, sha256 ok")
            return dest
        _log(f"{dest} exists but its sha256 is wrong; fetching a fresh copy")
    if try_download(dest) or try_export(dest):
        return dest
    return None


INSTRUCTIONS = f"""\
Could not obtain {DEFAULT_NET_NAME}. Do one of:
  * download {URL}
    and put it in {{dest}};
  * install Stockfish 15.1 (e.g. `apt install stockfish` on Debian 12) and run this command again,
    which exports the net embedded in the binary;
  * set QUANTFISH_NET to the path of a copy you already have.
Expected sha256: {DEFAULT_NET_SHA256}"""


@click.group("net")
def net_group():
    """Stockfish's net and Quantfish's own: fetch them, see which the engine loads."""


@net_group.command("get")
@click.option("--dest", type=click.Path(file_okay=False), default=None,
              help="Folder for the net (default: the user's nets folder).")
def get_command(dest):
    """Put Stockfish 15.1's net in place: keep a good copy, else download it, else export it from an installed
    Stockfish 15.1; the sha256 is checked. Exit status 1, with what to do, when it cannot be had."""
    try:
        path = ensure_net(dest)
    except OSError as exc:
        raise click.ClickException(f"cannot write the net: {exc}") from None
    if path is None:
        _log(INSTRUCTIONS.format(dest=Path(dest) if dest else user_nets_dir()))
        sys.exit(1)
    click.echo(path)


@net_group.command("list")
def list_command():
    """The nets folders, the nets in them, and the net the engine loads by default."""
    from quantfish.nnue.loader import resolve_main_path
    for folder in nets_dirs():
        click.echo(f"{folder}:")
        names = sorted(p.name for p in folder.glob("*.nnue")) if folder.is_dir() else []
        for name in names:
            click.echo(f"  {name}")
        if not names:
            click.echo("  (none)")
    click.echo(f"default net: {resolve_main_path()}")
