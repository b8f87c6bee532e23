"""The one way to a Docker engine (client.py: docker_client) and its exec stream read without loss."""
