"""Which module registers each top-level ``signet`` command, without importing any of them.

The whole CLI (every noun group and what it imports: Typer, Rich, the SDK, the harness
detectors, the setup wizard, ...) takes ~0.7 s to import, and every ``signet`` command paid it
before doing anything: ``signet status`` or ``signet recall`` waited on the setup wizard's
imports, and ``signet start`` spawned a daemon that imported all of it before listening. With
this table the console script (:mod:`signet.cli.entry`) imports only the module that registers
the command asked for; help, a bare ``signet`` and an unknown name still load everything, so
the help lists every command in :data:`MODULES` order. ``tests/core/test_cli_lazy.py`` checks
the table against what the modules actually register.
"""

from __future__ import annotations

MODULES = [
    "setup",
    "daemon",
    "memory",
    "lifecycle",
    "consolidate",
    "evaluate",
    "doctor",
    "ingest",
    "watch",
    "install",
    "bench",
    "pipeline",
    "mcp_server",
    "token",
    "repair",
    "backup",
    "transfer",
    "logs",
    "documents",
    "connectors",
    "secret",
    "task",
    "skill",
    "git",
    "service",
    "update",
    "config",
    "dashboard",
    "continuity",
    "migrate_storage",
    "knowledge",
]
"""One module per noun group under ``signet.cli``, in help order (add yours on its own line,
and its commands to :data:`COMMANDS`)."""

COMMANDS = {
    "daemon": "daemon",
    "start": "daemon",
    "stop": "daemon",
    "restart": "daemon",
    "status": "daemon",
    "dashboard": "dashboard",
    "setup": "setup",
    "remember": "memory",
    "recall": "memory",
    "forget": "memory",
    "history": "memory",
    "split": "lifecycle",
    "unretire": "lifecycle",
    "signals": "lifecycle",
    "consolidate": "consolidate",
    "eval": "evaluate",
    "doctor": "doctor",
    "ingest": "ingest",
    "watch": "watch",
    "hook": "install",
    "install": "install",
    "uninstall": "install",
    "harnesses": "install",
    "mcp": "mcp_server",
    "repair": "repair",
    "export": "transfer",
    "import": "transfer",
    "logs": "logs",
    "checkpoints": "continuity",
    "migrate-storage": "migrate_storage",
    "service": "service",
    "bench": "bench",
    "pipeline": "pipeline",
    "token": "token",
    "backup": "backup",
    "documents": "documents",
    "connectors": "connectors",
    "secret": "secret",
    "task": "task",
    "skill": "skill",
    "git": "git",
    "update": "update",
    "config": "config",
    "summaries": "continuity",
    "knowledge": "knowledge",
}
"""Top-level command or group name -> the module of :data:`MODULES` that registers it."""
