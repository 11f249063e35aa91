"""What a leaderboard ranks by (docs/concepts/measures.md): one list for the read side, the API and the CLI (a
module of its own, so the command line's parser reads it without importing the database layer)."""

#: time_to_sell is the median, fastest first; heat_low is the lower end of the heat's 95 % interval (a franchise
#: surely hot ranks above one hot on a few sales).
LEADERBOARD_KINDS = ("heat", "heat_low", "momentum", "outflow", "inflow", "liquidity", "sell_through",
                     "median_price", "time_to_sell")
#: Ranked smallest first.
ASCENDING = frozenset({"time_to_sell"})
