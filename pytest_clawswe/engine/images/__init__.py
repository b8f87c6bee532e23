"""Images: built from a context (build.py), the image cache and its levels (cache.py, cache_level.py), the
run's own registry for a second engine or a cluster (registry.py: ImageRegistry)."""
