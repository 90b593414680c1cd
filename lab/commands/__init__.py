"""Subcommands of ``grpo-lab``. Each module registers its own parsers; keep imports inside handlers light."""

from . import core
from . import ingest

COMMAND_MODULES = [core, ingest]
