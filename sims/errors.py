"""The one exception type the core raises for bad input.

Every public function validates its arguments and raises :class:`InputError`
(a ``ValueError``) with a message fit to show a person as one line. The command
line turns it into ``grpo-lab: error: <message>`` and exit status 2; the lab
turns it into a visible notice.
"""


class InputError(ValueError):
    """Raised for an argument outside its documented domain."""
