"""Schedule plots from per-task records (matplotlib; Figures returned, nothing shown).

* :func:`gantt` -- one lane per machine, one rectangle per task execution
  ``[start, end)``, coloured by class, drawn as in evalys (translucent faces, thin
  black edges, task labels when few). Long runs are shown through a sample
  window (by default ``max_tasks`` consecutive starts from the middle of the run,
  away from the warm-up).
* :func:`utilisation` -- (a) the fraction of busy machines and (b) the number of
  tasks in system and waiting in queue, as exact time averages over ``bins``
  equal intervals (integrals of the step functions, not samples), with the
  run's overall averages as dashed lines.

Both take a records frame (:mod:`hetsched.traces.records`; ``task``, ``class``,
``arrival``, ``start``, ``end``, ``machine``) or a path to a records Parquet
file. :func:`utilisation` also takes MUSCLE job records (``cluster``,
``processors``): busy processors over the clusters' computers.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import ModelError

__all__ = ["gantt", "utilisation", "step_average", "sample_window", "computer_lanes", "MAX_BINS"]

#: most intervals of a utilisation plot (a figure is a few thousand pixels wide; each interval costs ~100 bytes)
MAX_BINS = 100_000


def _records(records, rep=None):
    import pandas as pd

    if isinstance(records, (str, os.PathLike)):
        from ..traces import read_records

        records = read_records(records)
    if not isinstance(records, pd.DataFrame):
        raise ModelError(f"records: expected a DataFrame or a Parquet path, got {type(records).__name__}")
    return _one_rep(records, rep)


def _one_rep(df, rep):
    """Records of one replication (a ``rep`` column: simulators' records; default the first), else all."""
    if "rep" not in df.columns:
        if rep is not None:
            raise ModelError("rep: these records have no 'rep' column (one run only)")
        return df
    reps = np.unique(df["rep"].to_numpy())
    if rep is None:
        rep = int(reps[0]) if reps.size else 0
    if rep not in set(reps.tolist()):
        raise ModelError(f"rep: replication {rep!r} is not in the records (they hold {reps.tolist()[:10]}"
                         f"{' ...' if reps.size > 10 else ''})")
    out = df[df["rep"].to_numpy() == rep]
    out.attrs = dict(df.attrs)
    out.attrs["rep"] = (int(rep), int(reps.size))
    return out


def _need(df, cols, what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ModelError(f"records: {what} needs column(s) {missing}; the file has {list(df.columns)}")
    if len(df) == 0:
        raise ModelError("records: no task to plot")
    for c in cols:
        v = df[c].to_numpy(dtype=np.float64)
        if not np.isfinite(v).all():
            raise ModelError(f"records: column {c!r} has missing or infinite values")


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "cairo") and not os.environ.get("DISPLAY"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def sample_window(start: np.ndarray, max_tasks: int) -> tuple[float, float]:
    """``max_tasks`` consecutive starts from the middle of the run: ``(t0, t1)``."""
    s = np.sort(np.asarray(start, dtype=np.float64))
    n = s.shape[0]
    if n <= max_tasks:
        return float(s[0]), float("inf")
    i0 = min(n // 2, n - max_tasks)
    return float(s[i0]), float(s[i0 + max_tasks - 1])


def computer_lanes(records, sizes) -> "pd.DataFrame":
    """MUSCLE job records (``job``, ``cluster``, ``processors``, ``start``, ``end``)
    as one row per job and computer: a placement on the clusters' computers
    reconstructed greedily (jobs in start order, each on the lowest-numbered
    computers of its cluster free at its start). For a feasible schedule this never
    fails (at a job's start at least ``processors`` computers are free); a cluster
    over-subscribed at some time is a clear error. Columns: ``task`` (the job),
    ``class`` (its cluster), ``start``, ``end``, ``machine`` (global computer index,
    clusters in order), ``computer`` (within its cluster)."""
    import pandas as pd

    df = _records(records)
    _need(df, ["job", "cluster", "processors", "start", "end"], "computer lanes")
    sizes = [int(m) for m in sizes]
    cl = df["cluster"].to_numpy()
    if cl.min() < 0 or cl.max() >= len(sizes):
        raise ModelError(f"records: cluster numbers must lie in 0..{len(sizes) - 1}, got {int(cl.min())}..{int(cl.max())}")
    offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rows_task, rows_cl, rows_s, rows_e, rows_m, rows_k = [], [], [], [], [], []
    for c, m in enumerate(sizes):
        sel = np.flatnonzero(cl == c)
        if sel.size == 0:
            continue
        st = df["start"].to_numpy(dtype=np.float64)[sel]
        en = df["end"].to_numpy(dtype=np.float64)[sel]
        pr = df["processors"].to_numpy()[sel]
        jb = df["job"].to_numpy()[sel]
        free = np.full(m, -np.inf)
        for k in np.lexsort((en, st)):
            p = int(pr[k])
            idle = np.flatnonzero(free <= st[k] + 1e-12 * max(1.0, abs(st[k])))[:p]
            if idle.size < p:
                raise ModelError(f"records: cluster {c} has fewer than {p} free computers at t={st[k]!r} "
                                 f"(job {int(jb[k])}): the schedule over-subscribes it")
            free[idle] = en[k]
            rows_task.append(np.full(p, jb[k]))
            rows_cl.append(np.full(p, c))
            rows_s.append(np.full(p, st[k]))
            rows_e.append(np.full(p, en[k]))
            rows_m.append(offset[c] + idle)
            rows_k.append(idle)
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.empty(0, dt))
    return pd.DataFrame({"task": cat(rows_task, np.int64), "class": cat(rows_cl, np.int64),
                         "start": cat(rows_s, np.float64), "end": cat(rows_e, np.float64),
                         "machine": cat(rows_m, np.int64), "computer": cat(rows_k, np.int64)})


def _names(df, given, key: str, n: int | None = None):
    """Names from the argument, else from the records file's metadata (``class_names``/``machine_names``)."""
    names = given if given is not None else (df.attrs.get("meta") or {}).get(key)
    if names is None:
        return None
    if isinstance(names, (str, bytes)) or not hasattr(names, "__len__"):
        raise ModelError(f"{key}: expected a list of names, got {names!r}")
    names = [str(x) for x in names]
    if n is not None and len(names) < n:
        raise ModelError(f"{key}: {len(names)} names for {n} (numbered from 1)")
    return names


def _label(s: str, n: int = 30) -> str:
    s = "".join(c if c.isprintable() else "?" for c in str(s)).replace("$", r"\$")  # no mathtext from names
    return s if len(s) <= n else s[: n - 1] + "…"


def gantt(records, *, window: tuple[float, float] | None = None, max_tasks: int = 1500, ax=None,
          title: str | None = None, labels: bool | None = None, sizes=None, rep: int | None = None,
          class_names=None, machine_names=None):
    """Gantt chart of task records, one lane per machine; returns the Figure.

    Parameters
    ----------
    records : DataFrame or path
        Per-task records (columns ``task``, ``class``, ``start``, ``end``, ``machine``),
        or MUSCLE job records (``job``, ``cluster``, ``processors``, ...): then one lane
        per computer (:func:`computer_lanes`), coloured by cluster.
    sizes : list of int, optional
        Cluster sizes for MUSCLE records (default: from the file's metadata).
    window : (t0, t1), optional
        Time window to draw (tasks overlapping it, clipped to it). Default: the
        whole run if it has at most ``max_tasks`` tasks, else a sample window of
        ``max_tasks`` consecutive starts from the middle of the run.
    ax : matplotlib Axes, optional
    labels : bool, optional
        Write task numbers on the bars (default: when at most 60 bars).
    rep : int, optional
        Records with a ``rep`` column (several replications): the one to draw
        (default: the first).
    class_names, machine_names : list of str, optional
        Names for the legend and the lanes (default: from the records file's
        metadata where the run wrote them). Classes and machines are numbered
        from 1 in the figure (the records number them from 0).
    """
    df = _records(records, rep)
    unit, legend = "machine", "class"
    lane_names = None
    if "machine" not in df.columns and "cluster" in df.columns:
        if sizes is None:
            sizes = (df.attrs.get("meta") or {}).get("sizes")
            if not sizes:
                raise ModelError("records: MUSCLE records without cluster sizes in their metadata: give the sizes "
                                 "(--sizes)")
        df = computer_lanes(df, sizes)
        unit, legend = "computer (cluster.computer)", "cluster"
        lane_names = {int(o + k): f"{c + 1}.{k + 1}" for c, (o, m) in
                      enumerate(zip(np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)) for k in range(int(m))}
    _need(df, ["task", "start", "end", "machine"], "a Gantt chart")
    if isinstance(max_tasks, bool) or not isinstance(max_tasks, (int, np.integer)) or max_tasks < 1:
        raise ModelError(f"max_tasks: expected a positive integer, got {max_tasks!r}")
    st = df["start"].to_numpy(dtype=np.float64)
    en = df["end"].to_numpy(dtype=np.float64)
    t_all = (float(st.min()), float(en.max()))
    if window is None:
        t0, t1 = sample_window(st, int(max_tasks))
        sampled = np.isfinite(t1)
        if not sampled:
            t0, t1 = t_all
    else:
        t0, t1 = (float(window[0]), float(window[1]))
        if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0 and np.isfinite(t1 - t0)):
            raise ModelError(f"window: expected two finite times T0 < T1 (a finite span), got ({window[0]}, {window[1]})")
        sampled = True
    if sampled:
        sel = (st < t1) & (en > t0)
    else:
        sel = np.ones(st.shape[0], dtype=bool)
    sub = df.loc[sel]
    plt = _pyplot()
    if ax is None:
        machines = np.unique(df["machine"].to_numpy())
        fig, ax = plt.subplots(figsize=(11, min(1.5 + 0.28 * machines.size, 14)))
    else:
        fig = ax.figure
    klass = sub["class"].to_numpy() if "class" in sub.columns else np.zeros(len(sub), dtype=int)
    cmap = plt.get_cmap("tab10")
    lanes = np.unique(df["machine"].to_numpy())
    lane_of = {int(m): k for k, m in enumerate(lanes)}
    s_c = np.clip(sub["start"].to_numpy(dtype=np.float64), t0, t1)
    e_c = np.clip(sub["end"].to_numpy(dtype=np.float64), t0, t1)
    mach = sub["machine"].to_numpy()
    for m in np.unique(mach):
        k = mach == m
        ax.broken_barh(list(zip(s_c[k], e_c[k] - s_c[k])), (lane_of[int(m)] - 0.4, 0.8),
                       facecolors=[cmap(int(c) % 10) for c in klass[k]], edgecolor="black", linewidth=0.3,
                       alpha=0.6)
    show_labels = labels if labels is not None else len(sub) <= 60
    if show_labels:
        for s0, e0, m, t in zip(s_c, e_c, mach, sub["task"].to_numpy()):
            ax.annotate(str(t), ((s0 + e0) / 2, lane_of[int(m)]), ha="center", va="center", fontsize="small")
    mnames = None if lane_names else _names(df, machine_names, "machine_names", int(lanes.max()) + 1)
    cnames = None if lane_names else _names(df, class_names, "class_names",
                                            int(df["class"].max()) + 1 if "class" in df.columns else None)
    ax.set_yticks(range(lanes.size), [lane_names[int(m)] if lane_names else
                                      (f"{int(m) + 1} {_label(mnames[int(m)])}" if mnames else str(int(m) + 1))
                                      for m in lanes],
                  fontsize="small" if lanes.size > 30 else None)
    ax.set_ylim(-0.6, lanes.size - 0.4)
    ax.set_xlim(t0, t1)
    ax.set_xlabel("time")
    ax.set_ylabel(unit)
    ax.grid(True, axis="x", alpha=0.3)
    for c in np.unique(klass):  # numbered from 1 like every output (records number from 0)
        name = f" {_label(cnames[int(c)])}" if cnames else ""
        ax.bar(0, 0, color=cmap(int(c) % 10), alpha=0.6, label=f"{legend} {int(c) + 1}{name}")  # legend handles only
    if np.unique(klass).size > 1:
        ax.legend(loc="center left", bbox_to_anchor=(1.005, 0.5), fontsize="small", frameon=False)
    head = title or "Gantt chart"
    if df.attrs.get("rep") and df.attrs["rep"][1] > 1:
        head += f" (replication {df.attrs['rep'][0]} of {df.attrs['rep'][1]})"
    if sampled:
        what = "tasks" if lane_names is None else "job-on-computer bars"
        head += f" -- window [{t0:.6g}, {t1:.6g}] of [{t_all[0]:.6g}, {t_all[1]:.6g}], {len(sub)} of {len(df)} {what}"
    ax.set_title(head, fontsize="medium")
    fig.tight_layout()
    fig.hetsched_bars = int(len(sub))  # for callers and tests: rectangles drawn
    return fig


def step_average(times: np.ndarray, delta: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Exact averages over ``[edges[k], edges[k+1])`` of the step function that jumps
    by ``delta[i]`` at ``times[i]`` (sorted or not) starting from 0."""
    order = np.argsort(times, kind="stable")
    t = np.asarray(times, dtype=np.float64)[order]
    level = np.cumsum(np.asarray(delta, dtype=np.float64)[order])
    # cumulative integral at the event times; level[k] holds on [t[k], t[k+1])
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(t))])
    F = np.interp(edges, t, area, left=0.0)
    # beyond the last event the level stays level[-1] (0 for complete records)
    after = edges > t[-1]
    F[after] = area[-1] + level[-1] * (edges[after] - t[-1])
    return np.diff(F) / np.diff(edges)


def utilisation(records, *, machines: int | None = None, bins: int = 400, ax=None, title: str | None = None,
                rep: int | None = None):
    """Utilisation and queue length over time; returns the Figure (two panels).

    Parameters
    ----------
    records : DataFrame or path
        Task records, or MUSCLE job records (``cluster``, ``processors``).
    machines : int, optional
        Number of machines (task records; default: ``max(machine) + 1``), or of
        computers (MUSCLE; default: the sum of the cluster sizes in the file's
        metadata).
    bins : int
        Number of equal time intervals of the averages.
    rep : int, optional
        Replication to draw when the records hold several (default: the first).
    """
    df = _records(records, rep)
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or not 1 <= bins <= MAX_BINS:
        raise ModelError(f"bins: expected an integer in 1..{MAX_BINS:,}, got {bins!r}")
    muscle = "machine" not in df.columns and "cluster" in df.columns
    if muscle:
        _need(df, ["arrival", "start", "end", "processors", "cluster"], "a utilisation plot")
        w = df["processors"].to_numpy(dtype=np.float64)
        if machines is None:
            sizes = (df.attrs.get("meta") or {}).get("sizes")
            if not sizes:
                raise ModelError("records: MUSCLE records without cluster sizes in their metadata: give --machines")
            machines = int(sum(sizes))
        unit = "computers"
    else:
        _need(df, ["arrival", "start", "end", "machine"], "a utilisation plot")
        w = np.ones(len(df))
        if machines is None:
            machines = int(df["machine"].max()) + 1
        unit = "machines"
    if isinstance(machines, bool) or not isinstance(machines, (int, np.integer)) or machines < 1:
        raise ModelError(f"machines: expected a positive integer, got {machines!r}")
    arr = df["arrival"].to_numpy(dtype=np.float64)
    st = df["start"].to_numpy(dtype=np.float64)
    en = df["end"].to_numpy(dtype=np.float64)
    t0, t1 = float(arr.min()), float(en.max())
    if not t1 > t0:
        raise ModelError("records: the run spans no time")
    edges = np.linspace(t0, t1, int(bins) + 1)
    busy = step_average(np.r_[st, en], np.r_[w, -w], edges) / machines
    insys = step_average(np.r_[arr, en], np.r_[np.ones_like(arr), -np.ones_like(en)], edges)
    queue = step_average(np.r_[arr, st], np.r_[np.ones_like(arr), -np.ones_like(st)], edges)
    mid = 0.5 * (edges[:-1] + edges[1:])
    plt = _pyplot()
    if ax is None:
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
    else:
        a1, a2 = ax
        fig = a1.figure
    T = t1 - t0
    u_mean = float(np.sum(w * (en - st)) / (machines * T))
    a1.plot(mid, busy, drawstyle="steps-mid", lw=0.9, color="tab:blue", label="busy fraction")
    a1.axhline(u_mean, ls="--", color="tab:blue", lw=0.8, label=f"mean {u_mean:.3f}")
    a1.set_ylabel(f"busy {unit} / {machines}")
    a1.set_ylim(0, max(1.0, float(busy.max()) * 1.05))
    a1.legend(loc="upper right", fontsize="small")
    a1.grid(True, alpha=0.3)
    L = float(np.sum(en - arr) / T)
    Lq = float(np.sum(st - arr) / T)
    a2.plot(mid, insys, drawstyle="steps-mid", lw=0.9, color="tab:green", label=f"in system (mean {L:.3g})")
    a2.plot(mid, queue, drawstyle="steps-mid", lw=0.9, color="tab:red", label=f"waiting (mean {Lq:.3g})")
    a2.set_ylabel("jobs" if muscle else "tasks")
    a2.set_xlabel("time")
    a2.legend(loc="upper right", fontsize="small")
    a2.grid(True, alpha=0.3)
    a1.set_title(title or f"Utilisation and queue length ({len(df)} tasks, averages over {bins} intervals)",
                 fontsize="medium")
    fig.tight_layout()
    fig.hetsched_series = {"edges": edges, "busy": busy, "in_system": insys, "waiting": queue,
                           "mean_busy": u_mean, "mean_in_system": L, "mean_waiting": Lq}
    return fig
