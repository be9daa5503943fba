"""Outside services and their health: outages, pauses and probes, the prompt guard, the local
Cognee server and memsift's model server for it."""
