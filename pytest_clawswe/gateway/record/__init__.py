"""What the gateway writes down: every request's usage per instance (ledger.py: usage/<instance>.jsonl, what the
run counts and bills) and every call's bodies (calls.py hands them to the writer process, writer.py, which
rebuilds streamed answers with reassemble.py: calls/<instance>.jsonl, what the trajectories are made from)."""
