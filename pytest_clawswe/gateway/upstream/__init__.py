"""The providers: where a model's requests go and its key (providers.py), the request shaping the released proxies
did (shaping.py), what a provider's failure means (failures.py), and the key kept out of answers and records
(redact.py, stream_redact.py)."""
