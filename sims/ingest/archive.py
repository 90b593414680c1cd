r"""An archive checked whole before anything in it is read: the one check of every zip the project opens (a tracker
log uploaded to the lab, :mod:`.trackers.upload`; a group dump's ``.zip`` read by ``grpo-lab ingest`` or uploaded,
:meth:`.common.Bundle.from_zip`).

:func:`check_archive` reads what the central directory declares and refuses, in one line, an archive holding
anything but a run's files: a member whose path leaves the folder (absolute, a drive letter, ``..`` or any part made
only of dots), a link or a device or anything not a plain file or folder (its Unix mode), more than ``max_members``
members (:data:`MAX_MEMBERS` by default), more than ``max_bytes`` declared in all (where ``cap_total``), a member
that declares it expands more than :data:`MAX_RATIO` times its compressed size (a zip bomb; members over 1 MiB), an
encrypted member. The declarations are not trusted beyond that: each reader counts a member's bytes as they expand
and stops at its declared size and at the cap.
"""

from __future__ import annotations

import re
import stat
import zipfile
from pathlib import PurePosixPath

from ..errors import InputError

__all__ = ["MAX_MEMBERS", "MAX_RATIO", "check_archive"]

MAX_MEMBERS = 2_000  #: members an uploaded archive may hold (an MLflow store has a few files per metric)
MAX_RATIO = 200  #: the most a member may expand (uncompressed / compressed bytes; text logs compress 5-20x)


def check_archive(zf: zipfile.ZipFile, origin: str, max_bytes: int, *, max_members: int = MAX_MEMBERS,
                  cap_total: bool = True) -> list[zipfile.ZipInfo]:
    """The archive's file members, after the checks of the module docstring (InputError, one line, otherwise).
    ``cap_total`` False: the declared total is not checked against ``max_bytes`` (a reader that caps the bytes it
    reads as it reads them, and may read a few members of a larger archive)."""
    infos = zf.infolist()
    if len(infos) > max_members:
        raise InputError(f"{origin}: refused: {len(infos):,} members, more than a run's {max_members:,}")
    total, files = 0, []
    for info in infos:
        name = info.filename
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or any(set(p) <= {"."} for p in parts) \
                or not parts:
            raise InputError(f"{origin}: refused: member {name!r} has a path outside the archive's folder")
        mode = info.external_attr >> 16
        kind = stat.S_IFMT(mode)
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            what = "a link" if kind == stat.S_IFLNK else "not a plain file"
            raise InputError(f"{origin}: refused: member {name!r} is {what}")
        if info.flag_bits & 0x1:
            raise InputError(f"{origin}: refused: member {name!r} is encrypted")
        if info.is_dir():
            continue
        total += info.file_size
        if cap_total and total > max_bytes:
            raise InputError(f"{origin}: refused: it declares {total:,} bytes once expanded, over the size cap of "
                             f"{max_bytes} bytes")
        if info.file_size > MAX_RATIO * max(info.compress_size, 1) and info.file_size > 1 << 20:
            ratio = info.file_size / max(info.compress_size, 1)
            raise InputError(f"{origin}: refused: member {name!r} expands {ratio:,.0f} times (more than {MAX_RATIO}: "
                             "a zip bomb?)")
        files.append(info)
    return files
