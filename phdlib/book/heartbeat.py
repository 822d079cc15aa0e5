"""A long chapter's progress while it executes: the build's heartbeat.

:func:`beating` runs beside a chapter's execution: every few minutes it logs
that the chapter is still executing, for how long and how many runs the
results store gained, and rewrites a small file beside the executed notebook
(:func:`alive_file`) with when the execution started and when it was last seen
running. The file is removed when the execution ends, so one left behind is a
build killed from outside, and :func:`seen_running` (what
:func:`phdlib.book.record.chapter_row` asks) says how long that execution ran
at least, where papermill's notebook knows only its last completed cell.
"""
from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from .. import results
from ..io import write_json

__all__ = ["ALIVE_LEAD", "HEARTBEAT_SECONDS", "alive_file", "beating", "seen_running"]

#: Seconds between the build's "still executing" lines for a long chapter (0: none).
HEARTBEAT_SECONDS = 300


def alive_file(executed_nb: Path) -> Path:
    """The heartbeat's file of the chapter executed into ``executed_nb``."""
    return executed_nb.with_suffix(".alive.json")


def _utc(text) -> datetime:
    """An ISO 8601 time with its offset as an aware UTC datetime (``ValueError``,
    ``TypeError`` otherwise)."""
    t = datetime.fromisoformat(text)
    if t.tzinfo is None:
        raise ValueError(f"{text!r}: no UTC offset")
    return t.astimezone(timezone.utc)


@contextmanager
def beating(rel, log, every: float = HEARTBEAT_SECONDS, alive: Path | None = None):
    """While the block runs, log every ``every`` seconds that chapter ``rel`` is still
    executing, for how long, and how many runs the results store gained since (the
    chapters train through it): a long chapter shows progress in the build's log.

    ``alive``: a file rewritten (atomically) at each of those times with when the
    chapter started, when it was last seen running and for how long (``started``,
    ``seen``: ISO 8601 UTC; ``seconds``), and removed when the block ends, so that a
    build killed in the middle of a long cell leaves how long it ran at least
    (:func:`seen_running`).
    """
    if alive is not None:   # a killed build's, left behind: not this execution's
        _unlink(alive)
    if not every or every <= 0:
        yield
        return

    def count():
        try:
            return results.count()
        except OSError:  # the store could not be listed this time
            return None

    stop, t0, n0 = threading.Event(), time.perf_counter(), count()
    started = datetime.now(timezone.utc)

    def beat():
        logging = True
        while not stop.wait(every):
            n = count()
            gained = "an unknown number of runs" if None in (n, n0) else f"{n - n0:+d} runs"
            elapsed = time.perf_counter() - t0
            if alive is not None:
                try:
                    write_json(alive, {"chapter": Path(rel).stem, "started": started.isoformat(),
                                       "seen": datetime.now(timezone.utc).isoformat(),
                                       "seconds": elapsed})
                except OSError:  # the next beat tries again
                    pass
            if not logging:
                continue
            try:
                log(f"[book] {rel}: still executing after {elapsed / 60:.0f} min; the results "
                    f"store holds {gained} since it started")
            except Exception:  # (e.g. a closed pipe: the build itself reports it)
                logging = False
                if alive is None:
                    return

    th = threading.Thread(target=beat, daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join()
        if alive is not None:
            _unlink(alive)


def _unlink(path: Path) -> None:
    """Remove ``path`` if it is there; one that cannot be removed is left (a heartbeat's
    file is read only with the execution it names: :func:`phdlib.book.record.chapter_row`)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


#: Seconds a build's heartbeat may start before papermill records its start (the
#: kernel starting in between) for :func:`seen_running` to take it as the same execution.
ALIVE_LEAD = 300.0


def seen_running(alive: Path | None, started: datetime) -> datetime | None:
    """When the build last saw the execution that started at ``started`` running, from
    the file its heartbeat keeps (:func:`beating`); None where
    there is no such file, it is unreadable, or it is of another execution (it must
    have started before papermill did, by at most :data:`ALIVE_LEAD` seconds)."""
    if alive is None:
        return None
    try:
        obj = json.loads(alive.read_text(encoding="utf-8"))
        began = _utc(obj["started"])
        seen = _utc(obj["seen"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    lead = (started - began).total_seconds()
    return seen if 0 <= lead <= ALIVE_LEAD and seen > started else None
