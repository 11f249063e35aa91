"""Title and content pools (seed 002): texts handed out to applications once each (not pools of workers)."""
