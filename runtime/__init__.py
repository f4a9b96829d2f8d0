"""The runtime: sessions, services, workers, Studio entry points, checkpointers and the node journal."""
