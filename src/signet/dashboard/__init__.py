"""The web dashboard: static files served by the daemon (no build step, no CDN)."""

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
