"""The project's local memory: notes, their cache and history, the lifecycle (acts, fading,
supersession, rules), consolidation, and importing a benchmark file."""
