"""memsift: memory for coding agents that adds only what answers the prompt."""

__version__ = "0.1.0"
NAME = "memsift"
DESCRIPTION = (
    "Memory for coding agents that adds only what answers the prompt, fast, "
    "and stays silent otherwise."
)
