"""The key-evolution guard: decides whether a schema change orphans compacted records."""
