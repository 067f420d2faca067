"""The HTTP daemon: app factory, runtime, routes, process management."""
