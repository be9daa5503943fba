"""The session end: the detached worker, what to keep (distill, extract), the notes' revision."""
