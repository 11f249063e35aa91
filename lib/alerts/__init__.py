"""Alert notifications: webhooks that reach people once."""
