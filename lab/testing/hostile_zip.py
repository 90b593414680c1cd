"""Archives built as an attacker would, for the tests of the one archive check (sims/ingest/archive.py): a zip of
given members, a symbolic-link member, every member's encryption flag set."""

from __future__ import annotations

import io
import stat
import zipfile

__all__ = ["zip_of", "link_member", "encrypted"]


def zip_of(members) -> bytes:
    """A deflated zip of ``members``: (name or ZipInfo, bytes or str) pairs, in order."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info, data)
    return buf.getvalue()


def link_member(name: str, target: str) -> tuple[zipfile.ZipInfo, str]:
    """A member that unzips as a symbolic link ``name`` -> ``target`` (its Unix mode, made on Unix)."""
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    info.create_system = 3
    return info, target


def encrypted(data: bytes) -> bytes:
    """``data`` (a zip) with bit 0 of every member's general-purpose flags set, in the local headers and the
    central directory: every member declares itself encrypted."""
    out = bytearray(data)
    for sig, off in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = out.find(sig)
        while at >= 0:
            out[at + off] |= 0x01
            at = out.find(sig, at + 4)
    return bytes(out)
