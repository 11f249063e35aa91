"""Running it: status, metrics, the dashboard, the process runner behind the Procfile, the demo."""
