"""What every part stands on: settings, the clock, Redis key names, errors, the database and the state Redis."""
