"""pytest-durable: crash-test Flink-Agents-style agents at every durable call. Fixtures are the API."""
