"""Memory checks before a big allocation: refuse an input whose estimate exceeds the machine.

Engines estimate their peak memory from the input size (a closed-form count of
states, pairs or rates) and call :func:`ensure_fits` *before* allocating, so an
input too large for the machine is one clear :class:`~hetsched.errors.ModelError`
line instead of a ``MemoryError``, a swap storm or an out-of-memory kill.
"""

from __future__ import annotations

import os

from .errors import ModelError

__all__ = ["available_bytes", "ensure_fits", "format_bytes"]


def available_bytes() -> int | None:
    """Memory available to a new allocation: ``MemAvailable`` of ``/proc/meminfo``, capped by an
    address-space limit (``RLIMIT_AS``) if one is set; ``None`` when neither can be read."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            avail = soft if avail is None else min(avail, soft)
    except (ImportError, ValueError, OSError):
        pass
    return avail


def format_bytes(n: float) -> str:
    """``n`` bytes as ``"1.2 GB"`` (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} TB"  # pragma: no cover


def ensure_fits(what: str, need: int, available: int | None = None) -> None:
    """Raise :class:`ModelError` naming ``what`` if ``need`` bytes exceed the available memory.

    ``available`` defaults to :func:`available_bytes`; if it cannot be read the check passes.
    """
    avail = available_bytes() if available is None else available
    if avail is not None and need > avail:
        raise ModelError(f"{what}: needs about {format_bytes(need)} of memory, more than the "
                         f"{format_bytes(avail)} available on this machine; use a smaller size")
