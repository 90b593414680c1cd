"""An ingest message in words for a web visitor: what they can do, not the command line's flags.

The readers in :mod:`grpo_lab.sims.ingest` speak to whoever runs ``grpo-lab ingest``: "raise --max-mb if you
trust the files", "use --format verl", "pass --num-generations". A visitor of the lab cannot pass a flag to
the server; :func:`for_web` rewrites each such phrase:

* the size cap (``--max-mb``, the operator's) becomes this server's limit and what to upload instead;
* ``--format X`` becomes the page's "Format of the upload" choice, ``--tolerance`` its "Reward tolerance";
  a tracker's "pick one with --run NAME" becomes uploading one run at a time;
* a flag the page does not offer (``--num-generations``, ``--reward-key``, ``--reward-columns``,
  ``--reward-weights``, ``--trainer``) is named as an option of ``grpo-lab ingest`` on the visitor's own computer.

The command line keeps the readers' own words (it never calls this).
"""

from __future__ import annotations

import re

__all__ = ["for_web", "WEB_FLAGS"]

_MiB = 1 << 20
#: flags that may appear in an ingest message, and how the web speaks of each (a test keeps this complete)
WEB_FLAGS = ("--max-mb", "--format", "--tolerance", "--num-generations", "--max-group", "--reward-key",
             "--reward-columns", "--reward-weights", "--run", "--trainer", "--metrics")

_RULES = (
    (re.compile(r"^(?P<what>.*?): reading it would pass the size cap of \d+ bytes \(\d+ bytes in all; "
                r"raise --max-mb if you trust the files\)"),
     "{what}: what this zip holds expands past this server's {mb} MB limit; upload fewer or smaller files"),
    (re.compile(r"^(?P<what>.*?): \d+ bytes is over the size cap of \d+ bytes \(--max-mb\)"),
     "{what}: over this server's {mb} MB limit for what an upload holds; upload a smaller file"),
    (re.compile(r"^(?P<what>.*?): refused: it declares [\d,]+ bytes once expanded, over the size cap of \d+ bytes$"),
     "{what}: what this zip holds expands past this server's {mb} MB limit; upload fewer or smaller files"),
    (re.compile(r"^(?P<what>.*?): (?:expands past|over) the size cap of \d+ bytes$"),
     "{what}: what this zip holds expands past this server's {mb} MB limit; upload fewer or smaller files"),
    (re.compile(r"^(?P<what>.*?): \d+ bytes is over the size cap of \d+ bytes$"),
     "{what}: over this server's {mb} MB limit for what an upload holds; upload a smaller file"),
    (re.compile(r"use --format (?P<fmt>\w+)"), 'choose "{fmt}" as the format of the upload'),
    (re.compile(r"pick one with --format"), 'upload one tracker\'s log at a time'),
    (re.compile(r"pass --format"), 'choose "tracker" as the format of the upload'),
    (re.compile(r"pick one with --run NAME"), "upload one run at a time (a .zip of one run's folder)"),
    (re.compile(r"--tolerance"), "the reward tolerance"),
)
_PASS = re.compile(r"\bpass (--(?:num-generations|reward-key|trainer))\b")
_OTHER = re.compile(r"(?<!grpo-lab ingest )(--(?:num-generations|max-group|reward-key|reward-columns|reward-weights|"
                    r"trainer|metrics))\b")


def for_web(message: str, limits=None) -> str:
    """``message`` with each command-line flag rewritten for a web visitor (see the module docstring).

    ``limits``: the server's :class:`~grpo_lab.replay.upload.UploadLimits` (for the size named); default ones
    when None.
    """
    if "--" not in message and "size cap" not in message:
        return message
    if limits is None:
        from .upload import UPLOAD_LIMITS as limits
    mb = f"{limits.decompressed_bytes / _MiB:g}"
    for pattern, words in _RULES:
        message = pattern.sub(lambda m: words.format(mb=mb, **m.groupdict()), message)
    message = _PASS.sub(r"this page cannot set that: read the run with grpo-lab ingest \1 on your own computer", message)
    return _OTHER.sub(r"grpo-lab ingest \1", message)
