"""Subcommands of ``grpo-lab``. Each module registers its own parsers; keep imports inside handlers light."""

from . import core
from . import export
from . import fleet
from . import ingest
from . import runs
from . import samplers
from . import serve
from . import study
from . import train
from . import watch

COMMAND_MODULES = [core, export, fleet, ingest, runs, samplers, serve, study, train, watch]
