"""The framework integrations: a framework's sync call into the async Router (`loop_calls`)."""
