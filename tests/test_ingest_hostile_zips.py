"""A group dump's ``.zip`` (``grpo-lab ingest run.zip``, the lab's upload of a zipped output folder) is checked by the
project's one check of archives (sims/ingest/archive.py, the tracker upload's too): every hostile archive is refused
in one line before a member is read, by the Python API, the upload and the command line alike.

The archives are built with ``zipfile`` as an attacker would: members named outside the folder (``..``, absolute,
a drive letter, a backslash path), a symbolic link, an encrypted member, a bomb, too many members, a forged size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest import ingest, ingest_upload
from grpo_lab.sims.ingest.archive import MAX_RATIO
from grpo_lab.sims.ingest.common import MAX_ZIP_MEMBERS
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.hostile_zip import encrypted, link_member, zip_of

PLAIN = (Path(__file__).parent / "fixtures" / "ingest" / "plain.jsonl").read_bytes()


GOOD = [("run/groups.jsonl", PLAIN)]
HOSTILE = {
    "dotdot": (zip_of(GOOD + [("../evil.jsonl", PLAIN)]), "has a path outside"),
    "absolute": (zip_of(GOOD + [("/etc/evil.jsonl", PLAIN)]), "has a path outside"),
    "inner-dotdot": (zip_of(GOOD + [("run/../../evil.jsonl", PLAIN)]), "has a path outside"),
    "drive": (zip_of(GOOD + [("C:/evil.jsonl", PLAIN)]), "has a path outside"),
    "backslash": (zip_of(GOOD + [("run\\..\\..\\evil.jsonl", PLAIN)]), "has a path outside"),
    "link": (zip_of(GOOD + [link_member("run/link.jsonl", "/etc/passwd")]), "is a link"),
    "encrypted": (encrypted(zip_of(GOOD)), "is encrypted"),
    "bomb": (zip_of(GOOD + [("run/pad.txt", b"\n" * (50 << 20))]), "zip bomb"),
    "many": (zip_of([(f"run/m{i}.txt", b"") for i in range(MAX_ZIP_MEMBERS + 1)]), "members, more than"),
}


def test_the_good_archive_reads(tmp_path):
    data = zip_of(GOOD)
    (tmp_path / "run.zip").write_bytes(data)
    assert len(ingest(tmp_path / "run.zip", "jsonl").groups["step"]) > 0
    assert len(ingest_upload("run.zip", data, "jsonl").groups["step"]) > 0


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_archive_is_refused_in_one_line(case, tmp_path):
    data, words = HOSTILE[case]
    path = tmp_path / "run.zip"
    path.write_bytes(data)
    for read in (lambda: ingest(path, "jsonl"), lambda: ingest_upload("run.zip", data, "jsonl"),
                 lambda: ingest_upload("run.zip", data, "verl"), lambda: ingest_upload("run.zip", data, "trl")):
        with pytest.raises(InputError) as exc:
            read()
        msg = str(exc.value)
        assert "\n" not in msg and "refused" in msg and words in msg, (case, msg)
    if case == "bomb":
        assert f"more than {MAX_RATIO}" in msg and len(data) < 200_000
    proc = run_cli("ingest", path, "--format", "jsonl", "--out", tmp_path / "rec")
    assert proc.returncode == 2 and words in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "rec").exists() and not (tmp_path.parent / "evil.jsonl").exists()


def test_an_uploads_declared_total_is_capped_but_a_local_read_reads_what_it_needs(tmp_path):
    """An upload's zip declares its contents within the page's cap; ``ingest`` of a zip on disk caps what it reads
    (a zipped output folder may hold a checkpoint it never opens)."""
    weights = np.random.default_rng(0).integers(0, 4, 1_200_000, dtype=np.uint8).tobytes()  # zips to a quarter
    data = zip_of(GOOD + [("run/model.safetensors", weights)])
    with pytest.raises(InputError, match=r"refused: it declares [\d,]+ bytes once expanded, over the size cap"):
        ingest_upload("run.zip", data, "jsonl", max_bytes=1 << 20)
    (tmp_path / "run.zip").write_bytes(data)
    assert len(ingest(tmp_path / "run.zip", "jsonl", max_bytes=1 << 20).groups["step"]) > 0


def test_a_member_that_expands_past_its_declared_size_is_refused_in_one_line(tmp_path):
    data = bytearray(zip_of(GOOD))
    for sig, off in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # the declared size forged to a tenth
        at = data.find(sig)
        real = int.from_bytes(data[at + off:at + off + 4], "little")
        data[at + off:at + off + 4] = (real // 10).to_bytes(4, "little")
    with pytest.raises(InputError) as exc:
        ingest_upload("forged.zip", bytes(data), "jsonl")
    assert "\n" not in str(exc.value) and "forged.zip" in str(exc.value)
