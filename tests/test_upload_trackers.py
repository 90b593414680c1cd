"""The lab's upload takes what ``ingest`` takes of trackers (sims/ingest/trackers/upload.py), and refuses in one line an
archive holding anything but a run.

The logs are the fixtures the real libraries wrote (tests/fixtures/trackers/make_fixtures.py: tensorboard and
PyTorch's SummaryWriter, wandb offline, MLflow's file store, trackio, a tinker-cookbook metrics.jsonl); each upload's
record is checked against ``read_scalars`` of the same files on disk. The hostile archives are built with
``zipfile`` as an attacker would (members named outside the folder, a symbolic link, a bomb, a forged size).
"""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.replay.upload import UPLOAD_LIMITS, load_upload
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest import ingest_upload
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.ingest.trackers.upload import MAX_MEMBERS, MAX_RATIO, read_uploaded_tracker
from grpo_lab.testing.hostile_zip import link_member, zip_of

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"


def _zip_of(folder: Path, top: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                zf.write(f, f"{top}/{f.relative_to(folder).as_posix()}")
    return buf.getvalue()


def _same(rec, path, **kw) -> None:
    want = read_scalars(path, **kw)
    assert rec.steps.keys() == want.steps.keys()
    for k in want.steps:
        np.testing.assert_array_equal(rec.steps[k], want.steps[k])
    assert rec.meta.get("num_generations") == want.meta.get("num_generations")
    assert len(rec.steps["step"]) > 0


TB = FIXTURES / "tensorboard" / "trl"
WANDB = next((FIXTURES / "wandb").iterdir())


@pytest.mark.parametrize("name,data,path", [
    ("events.out.tfevents.1796421162.vm.21211.0", (TB / "events.out.tfevents.1796421162.vm.21211.0").read_bytes(),
     TB / "events.out.tfevents.1796421162.vm.21211.0"),
    ("trl.zip", _zip_of(TB, "trl"), TB),
    ("offline-run.zip", _zip_of(WANDB, WANDB.name), WANDB),
    (next(WANDB.glob("*.wandb")).name, next(WANDB.glob("*.wandb")).read_bytes(), next(WANDB.glob("*.wandb"))),
    ("mlruns.zip", _zip_of(FIXTURES / "mlflow" / "mlruns", "mlruns"), FIXTURES / "mlflow"),
    ("miles.db", (FIXTURES / "trackio" / "miles.db").read_bytes(), FIXTURES / "trackio" / "miles.db"),
    ("history.csv", (FIXTURES / "wandb_export" / "history.csv").read_bytes(),
     FIXTURES / "wandb_export" / "history.csv"),
    ("metrics.jsonl", (FIXTURES / "jsonl" / "metrics.jsonl").read_bytes(), FIXTURES / "jsonl" / "metrics.jsonl"),
], ids=["tfevents", "tensorboard-zip", "wandb-zip", "wandb-log", "mlflow-zip", "trackio-db", "wandb-export",
        "metrics-jsonl"])
def test_each_tracker_log_uploads_as_ingest_reads_it(name, data, path):
    rec, error = load_upload(name, data, "tracker", 0.0)
    assert error == "" and rec is not None
    kw = {"num_generations": None}
    if name == "metrics.jsonl":  # its config.json stays behind: K unknown in both reads
        one = Path(tempfile.mkdtemp()) / "metrics.jsonl"
        shutil.copy(path, one)
        path = one
    _same(rec, path, **kw)
    if name in ("metrics.jsonl", "miles.db", "events.out.tfevents.1796421162.vm.21211.0"):
        rec2, error2 = load_upload(name, data, "jsonl", 0.0)  # a tracker's single file, whatever the format chosen
        assert error2 == "" and len(rec2.steps["step"]) == len(rec.steps["step"])


def _refused(data: bytes, words: str, name: str = "run.zip") -> str:
    with pytest.raises(InputError) as exc:
        read_uploaded_tracker(name, data, UPLOAD_LIMITS.decompressed_bytes)
    msg = str(exc.value)
    assert "\n" not in msg and "refused" in msg and words in msg, msg
    rec, error = load_upload(name, data, "tracker", 0.0)  # the page: one line, no record
    assert rec is None and "\n" not in error and words in error
    return msg


def test_hostile_archives_are_refused_in_one_line_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the upload's private folder would go
    good = (TB / "events.out.tfevents.1796421162.vm.21211.0").read_bytes()
    _refused(zip_of([("run/events.out.tfevents.1", good), ("../evil.txt", b"x")]), "has a path outside")
    _refused(zip_of([("run/events.out.tfevents.1", good), ("/etc/evil", b"x")]), "has a path outside")
    _refused(zip_of([("run/events.out.tfevents.1", good), ("run/../../evil", b"x")]), "has a path outside")
    _refused(zip_of([("run/events.out.tfevents.1", good), ("C:/evil", b"x")]), "has a path outside")
    _refused(zip_of([("run/events.out.tfevents.1", good), link_member("run/link", "/etc/passwd")]), "is a link")
    bomb = zip_of([("run/metrics.jsonl", b"\n" * (50 << 20))])  # 50 MB of newlines: a few tens of kB zipped
    assert len(bomb) < 200_000
    msg = _refused(bomb, "zip bomb")
    assert f"more than {MAX_RATIO}" in msg
    many = zip_of([(f"run/m{i}.jsonl", b"{}") for i in range(MAX_MEMBERS + 1)])
    _refused(many, "members, more than")
    big = zip_of([(f"run/part{i}.csv", np.random.default_rng(i).integers(0, 4, 400_000, dtype=np.uint8).tobytes())
                for i in range(4)])  # 2 bits a byte: zips to a quarter
    with pytest.raises(InputError, match=r"^big\.zip: refused: it declares 1,200,000 bytes once expanded, over "
                                         r"the size cap of 1048576 bytes$"):
        read_uploaded_tracker("big.zip", big, 1 << 20)  # 1.6 MB declared, a 1 MB cap: refused at the third
    assert not (tmp_path.parent / "evil.txt").exists() and not (tmp_path / "evil.txt").exists()
    assert list(tmp_path.iterdir()) == []  # no private folder left behind either


def test_a_member_that_expands_past_its_declared_size_is_cut_off(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    data = bytearray(zip_of([("run/metrics.jsonl", b'{"step": 1, "a": 1}\n' * 5000)]))
    # forge the declared size (local header and central directory) to a tenth of the real one
    for sig, off in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(sig)
        real = int.from_bytes(data[at + off:at + off + 4], "little")
        data[at + off:at + off + 4] = (real // 10).to_bytes(4, "little")
    with pytest.raises(InputError) as exc:
        read_uploaded_tracker("forged.zip", bytes(data), UPLOAD_LIMITS.decompressed_bytes)
    assert "\n" not in str(exc.value) and ("expands past what it declares" in str(exc.value)
                                           or "cannot be extracted" in str(exc.value))
    assert list(tmp_path.iterdir()) == []


def test_names_are_made_safe_and_the_folder_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    good = (FIXTURES / "jsonl" / "metrics.jsonl").read_bytes()
    rec = ingest_upload("odd.zip", zip_of([("r\u00e9n <x>|?/metrics.jsonl", good)]), "tracker")
    assert len(rec.steps["step"]) == 30
    assert list(tmp_path.iterdir()) == []


def test_an_archive_of_two_runs_asks_for_one():
    data = zip_of([("a/metrics.jsonl", (FIXTURES / "jsonl" / "metrics.jsonl").read_bytes()),
                 ("b/metrics.jsonl", (FIXTURES / "jsonl" / "metrics.jsonl").read_bytes())])
    rec, error = load_upload("two.zip", data, "tracker", 0.0)
    assert rec is None and "\n" not in error and "2 jsonl runs" in error
    assert "--run" not in error and "upload one run at a time (a .zip of one run's folder)" in error
