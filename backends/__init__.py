"""Model adapters behind small protocols: each role has an offline backend and a real-model one."""
