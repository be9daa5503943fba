"""memsift: memory for coding agents that adds only what answers the prompt."""

import os as _os

# Set before anything imports numpy: memsift's matrices are small, and OpenBLAS threads that
# spin against other busy processes made one embedding 10x slower (860 ms vs 73 ms measured on
# a loaded 2-core machine). A value the user set wins.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
NAME = "memsift"
DESCRIPTION = (
    "Memory for coding agents that adds only what answers the prompt, fast, "
    "and stays silent otherwise."
)
