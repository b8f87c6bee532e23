"""The run's side of the gateway (it runs in pytest's processes): process.py starts the gateway process
(`python -m pytest_clawswe.gateway`, which serves service/), admin_api.py talks to its /_admin/ API,
run_gateway.py is the handle every item uses, relay.py puts a relay on another machine's engine, key_check.py asks
the provider once before a run."""
