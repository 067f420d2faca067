"""Which harnesses are on this machine: the setup wizard offers these first.

A harness counts as present when its command is on ``PATH`` or its configuration folder
exists in the home directory (an editor installed as an app has no command on ``PATH`` but
keeps its folder). Detection only proposes: every harness can still be chosen by name.
A plugin harness may declare ``detect_commands`` and ``detect_folders`` itself.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from signet.harnesses.install import all_harnesses

SIGNS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]] = {
    "claude-code": (("claude",), ((".claude",),)),
    "codex": (("codex",), ((".codex",),)),
    "opencode": (("opencode",), ((".config", "opencode"),)),
    "openclaw": (("openclaw",), ((".openclaw",),)),
    "cursor": (("cursor",), ((".cursor",),)),
    "windsurf": (("windsurf",), ((".codeium", "windsurf"),)),
}
"""Built-in harnesses: (commands, folders relative to the home) that show one is installed."""


@dataclass(frozen=True)
class Detected:
    name: str
    display_name: str
    found: str | None
    """What showed it (a command's path or a folder), None when nothing did."""


def detect(home: Path | None = None, path: str | None = None) -> list[Detected]:
    """Every known harness, in name order, with what showed it is installed (if anything)."""
    home = home or Path.home()
    search = path if path is not None else os.environ.get("PATH", "")
    out = []
    for name, harness in all_harnesses().items():
        commands, folders = SIGNS.get(
            name,
            (tuple(getattr(harness, "detect_commands", ())), tuple(getattr(harness, "detect_folders", ()))),
        )
        found: str | None = None
        for command in commands:
            found = shutil.which(command, path=search)
            if found:
                break
        if found is None:
            for parts in folders:
                folder = home.joinpath(*parts)
                if folder.is_dir():
                    found = str(folder)
                    break
        out.append(Detected(name, harness.display_name, found))
    return out
