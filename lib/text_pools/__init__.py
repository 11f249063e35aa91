"""Title and content pools (docs/operating/pools.md): texts handed out once each (not pools of workers)."""
