r"""An HF Trainer's ``training_args.bin`` (TRL's ``GRPOConfig`` as the trainer resolved it), read without unpickling.

Every checkpoint of a TRL / Unsloth run (``checkpoint-N/``, and the output folder after ``save_model``) holds
``training_args.bin``, written by transformers' ``Trainer._save`` as ``torch.save(self.args, ...)``: a zip archive
whose ``*/data.pkl`` is a pickle of the config object. It holds what no ``trainer_state.json`` does: K
(``num_generations``), ``per_device_train_batch_size``, ``gradient_accumulation_steps``, ``steps_per_generation``,
``generation_batch_size`` (computed by ``GRPOConfig.__post_init__`` over the real process count), ``num_iterations``,
``logging_steps``, and the processes (``distributed_state.num_processes``).

**Nothing in it is run.** A pickle names classes and asks for them to be called; this reader's
:class:`pickle.Unpickler` answers every class it names (``GRPOConfig``, the enums, ``PartialState``, ``torch.device``,
anything else) with an inert stand-in of its own (:class:`_Inert`) that only records the arguments and state it is
given, and loads no tensor (``persistent_load`` returns None): the pattern the Python documentation gives for
restricting what a pickle may load ("Restricting Globals"), taken to its end, with no class allowed at all. The
archive and the pickle are bounded (:data:`MAX_BYTES`: declared and read sizes) and every defect is one
:class:`~grpo_lab.sims.errors.InputError` line.

What is kept (:func:`read_training_args`): the config's fields whose values are numbers, strings, booleans, None or
lists of those, by name; an enum field (``IntervalStrategy('steps')``) as its value; a nested object's such fields
under ``field.name`` (``distributed_state.num_processes``). Fields named like a secret (``hub_token``) are never
kept. A legacy (pre-zip) ``torch.save`` file is refused in one
line.
"""

from __future__ import annotations

import io
import pickle
import re
import zipfile
from pathlib import Path

from ...errors import InputError

__all__ = ["MAX_BYTES", "FILE", "read_training_args", "training_args_beside"]

FILE = "training_args.bin"
MAX_BYTES = 4 << 20  #: a training_args.bin, its archive and its pickle, are a few KiB: anything past this is refused
_PRIMITIVE = (int, float, str, bool, type(None))
_SECRET = re.compile(r"token|secret|password|api_key|credential", re.I)  #: fields never kept (``hub_token``)
#: the sizes the doctor reads (:func:`.dialects.trl_groups_per_log`, :mod:`grpo_lab.sims.doctor.trainer_config`)
SIZE_KEYS = ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
             "generation_batch_size", "num_iterations", "logging_steps", "distributed_state.num_processes")


class _Inert:
    """What every class a pickle names becomes: records its call's arguments and its state; runs nothing."""

    def __init__(self, *args, **kwargs):
        self.args = args

    def __setstate__(self, state):
        self.state = state


class _Reader(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        return type(str(name)[:100], (_Inert,), {"__module__": "inert." + str(module)[:200]})

    def persistent_load(self, pid):
        return None  # a tensor's storage: none is loaded


def _plain(value):
    """A value kept as it is (primitives, lists of them), an enum stand-in as its value; else None (dropped)."""
    if isinstance(value, _PRIMITIVE):
        return value, True
    if isinstance(value, (list, tuple)) and len(value) <= 1000 and all(isinstance(v, _PRIMITIVE) for v in value):
        return list(value), True
    if isinstance(value, _Inert) and len(getattr(value, "args", ())) == 1 and isinstance(value.args[0], _PRIMITIVE):
        return value.args[0], True
    return None, False


def _fields(obj) -> dict:
    state = getattr(obj, "state", None)
    if state is None and isinstance(obj, _Inert):
        state = {k: v for k, v in vars(obj).items() if k != "args"}
    return state if isinstance(state, dict) else {}


def read_training_args(path) -> dict:
    """``{field: value}`` of a ``training_args.bin`` (see the module docstring). InputError for a file that is not
    one, is damaged, or passes :data:`MAX_BYTES`."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise InputError(f"{p}: {p.stat().st_size} bytes; a training_args.bin is a few KiB (over {MAX_BYTES})")
        with zipfile.ZipFile(p) as zf:
            members = [i for i in zf.infolist() if i.filename.endswith("/data.pkl") or i.filename == "data.pkl"]
            if len(members) != 1:
                raise InputError(f"{p}: not a torch.save archive (no single data.pkl in it)")
            if members[0].file_size > MAX_BYTES:
                raise InputError(f"{p}: its data.pkl declares {members[0].file_size} bytes (over {MAX_BYTES})")
            with zf.open(members[0]) as fh:
                data = fh.read(MAX_BYTES + 1)
    except zipfile.BadZipFile:
        raise InputError(f"{p}: not a zip archive (a torch.save file from before torch 1.6 is not read)") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise InputError(f"{p}: its data.pkl passes {MAX_BYTES} bytes")
    try:
        obj = _Reader(io.BytesIO(data)).load()
    except Exception as exc:  # any damage the unpickler meets: nothing was run, so none is more than a bad file
        raise InputError(f"{p}: its pickle cannot be read ({type(exc).__name__})") from None
    out = {}
    for key, value in _fields(obj).items():
        if not isinstance(key, str) or _SECRET.search(key):
            continue
        kept, ok = _plain(value)
        if ok:
            out[key] = kept
        elif isinstance(value, _Inert):
            for sub, v in _fields(value).items():
                kept, ok = _plain(v)
                if ok and isinstance(sub, str) and not _SECRET.search(sub):
                    out[f"{key}.{sub}"] = kept
    if not out:
        raise InputError(f"{p}: holds no config fields")
    return out


def training_args_beside(state_path: Path) -> tuple[dict, list[str]]:
    """``(config, notes)`` from the ``training_args.bin`` beside a ``trainer_state.json`` (``{}`` and no note where
    there is none; a damaged one is said in the note, not raised: the log is still read)."""
    f = Path(state_path).parent / FILE
    if not f.is_file():
        return {}, []
    try:
        config = read_training_args(f)
    except InputError as exc:
        return {}, [f"{exc}; sizes not read from it"]
    found = [k for k in SIZE_KEYS if config.get(k) is not None]
    return config, [f"K and batch sizes from {f.parent.name}/{FILE} (the trainer's resolved config, read without "
                    f"running its pickle): {', '.join(f'{k} {config[k]}' for k in found) or 'none of them'}"]
