"""What every part of `docfeed doctor` shares: its error, the time box, units and formatting."""
from __future__ import annotations

import json
import pathlib
import time
from typing import Any, Mapping, Tuple

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff", ".bmp", ".gif"}
# Documents an image folder may hold besides images: `docfeed pack` makes one sample per page.
DOCUMENT_SUFFIXES = {".pdf"}
PDF_DPI = 200  # pack's default --dpi, and what the user's path renders at
HUGE_ROW_BYTES = 1 << 20  # a row above 1 MiB: a page as a compressed image is 0.05-0.5 MB
DEFAULT_SIZE = (1553, 1200)  # the recipe's DonutProcessor size (H, W)

# Seconds per batch by stage, in the order the stages run (the report prints them so).
Stages = Mapping[str, float]


class DoctorError(Exception):
    """A problem with the user's data or arguments; the message names the path."""


def is_url(path: Any) -> bool:
    """Whether `path` is a URL docfeed reads remotely: s3://, http://, https:// (as
    docfeed/remote.h IsRemotePath decides)."""
    return isinstance(path, str) and path.startswith(("s3://", "http://", "https://"))


class Budget:
    """The --max-seconds time box: measurements ask for a share of what is left."""

    def __init__(self, seconds: float):
        self.start = time.monotonic()
        self.deadline = self.start + seconds

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def share(self, fraction: float, floor: float = 0.5) -> float:
        return max(floor, self.left() * fraction)

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def ram_bytes() -> Tuple[int, int]:
    """(MemTotal, MemAvailable) of /proc/meminfo in bytes; (0, 0) where it cannot be read."""
    values = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, rest = line.split(":", 1)
                values[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError):
        return 0, 0
    return values.get("MemTotal", 0), values.get("MemAvailable", values.get("MemTotal", 0))


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"


def human_seconds(s: float) -> str:
    if s < 1:
        return f"{s * 1000:.0f} ms" if s >= 0.01 else f"{s * 1000:.1f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def dir_bytes(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def load_json(path: pathlib.Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DoctorError(f"{path}: cannot read JSON: {e}") from None


def stages_json(stages: Stages) -> dict:
    """A stage mapping as the JSON report writes it (a plain dict, order kept)."""
    return {str(k): float(v) for k, v in stages.items()}
