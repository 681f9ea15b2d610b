"""Pictures of the analysis results (matplotlib is imported when a plot is drawn).

Each function takes a query's result (a Spark or pandas DataFrame) and an optional Axes, draws,
and returns the Axes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["plot_frontier", "plot_isr_flapping", "plot_latency", "plot_loss_probability"]


def _pandas(df: Any) -> Any:
    return df.toPandas() if hasattr(df, "toPandas") else df


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(8, 4))[1]


def plot_loss_probability(result: Any, ax: Any = None, *, label: str = "config_label") -> Any:
    """Bars of the loss probability per config with their confidence intervals
    (:func:`kafkalab.spark.analysis.loss_probability`)."""
    df, ax = _pandas(result), _axes(ax)
    p = df["loss_probability"].to_numpy(dtype=float)
    err = [p - df["ci_low"].to_numpy(dtype=float), df["ci_high"].to_numpy(dtype=float) - p]
    ax.barh(df[label].astype(str), p, xerr=err, color="tab:red", alpha=0.7, capsize=3)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("P(trial loses acknowledged records), 95% Wilson interval")
    ax.set_title("Acknowledged data lost, per config")
    return ax


def plot_frontier(result: Any, ax: Any = None, *, label: str = "config_label") -> Any:
    """Unavailability against loss probability, one point per config, the Pareto frontier
    joined by a line (:func:`kafkalab.spark.analysis.availability_frontier`).

    Points are numbered by ``config_id`` (points that nearly coincide share one label, "0,1"),
    and a key beside the plot names each number's config, so no two labels overlap however
    close the configs come."""
    df, ax = _pandas(result), _axes(ax)
    df = df[df["mean_unavailable_ms"].notna()].sort_values("config_id")
    pareto = df["pareto"].astype(bool)
    ax.scatter(df["mean_unavailable_ms"], df["loss_probability"], color="tab:gray", label="config")
    front = df[pareto].sort_values("mean_unavailable_ms")
    ax.plot(
        front["mean_unavailable_ms"],
        front["loss_probability"],
        "o-",
        color="tab:blue",
        label="Pareto frontier",
    )
    for x, y, ids in _clusters(df):
        ax.annotate(ids, (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
    key = "\n".join(f"{int(r.config_id):>2}  {r[label]}" for _, r in df.iterrows())
    ax.text(1.02, 1.0, key, transform=ax.transAxes, fontsize=7, va="top", family="monospace")
    ax.set_xlabel("mean ms of refused writes per trial")
    ax.set_ylabel("P(loses acknowledged records)")
    ax.set_title("Durability against availability")
    ax.legend(loc="upper right")
    return ax


def _clusters(df: Any, near: float = 0.04) -> list[tuple[float, float, str]]:
    """The points of ``df`` grouped when they lie within ``near`` of the plot's span of each
    other (greedily, in config order): each group's first point and its config ids."""
    xs, ys = df["mean_unavailable_ms"].to_numpy(float), df["loss_probability"].to_numpy(float)
    span_x = max(float(xs.max() - xs.min()), 1e-9)
    span_y = max(float(ys.max() - ys.min()), 1e-9)
    groups: list[tuple[float, float, list[int]]] = []
    for x, y, cid in zip(xs, ys, df["config_id"], strict=True):
        for gx, gy, ids in groups:
            if abs(x - gx) / span_x < near and abs(y - gy) / span_y < near:
                ids.append(int(cid))
                break
        else:
            groups.append((x, y, [int(cid)]))
    return [(x, y, ",".join(map(str, ids))) for x, y, ids in groups]


def _grouped_bars(ax: Any, df: Any, cols: list[str], labels: list[str], names: list[str]) -> None:
    """One group of bars per row of ``df``, one bar per column, each column in the legend."""
    width = 0.8 / max(len(cols), 1)
    for i, (col, name) in enumerate(zip(cols, names, strict=True)):
        ax.bar([x + i * width for x in range(len(df))], df[col], width, label=name)
    ax.set_xticks([x + width * (len(cols) - 1) / 2 for x in range(len(df))])
    ax.set_xticklabels(labels, fontsize=8)
    ax.legend(loc="best")


def plot_latency(result: Any, ax: Any = None) -> Any:
    """Grouped bars of latency percentiles per acks setting
    (:func:`kafkalab.spark.analysis.latency_by_acks`)."""
    df, ax = _pandas(result), _axes(ax)
    cols = [c for c in df.columns if c.startswith("p") and c.endswith("_ms")]
    _grouped_bars(ax, df, cols, [f"acks={a}" for a in df["acks"]], [c[:-3] for c in cols])
    ax.set_ylabel("ms from send to acknowledgement")
    ax.set_title("Produce latency by acks")
    return ax


def plot_isr_flapping(result: Any, ax: Any = None) -> Any:
    """Bars of ISR shrinks, lag shrinks and flaps per trial for each group
    (:func:`kafkalab.spark.analysis.isr_flapping`)."""
    df, ax = _pandas(result), _axes(ax)
    keys = [c for c in df.columns if c not in _FLAP_STATS]
    labels = [
        "\n".join(_setting(k, row[k]) for k in keys if _known(row[k])) for _, row in df.iterrows()
    ]
    cols = ["shrinks_per_trial", "lag_shrinks_per_trial", "flaps_per_trial"]
    _grouped_bars(ax, df, cols, labels, [c.removesuffix("_per_trial") for c in cols])
    ax.set_ylabel("per trial")
    ax.set_title("ISR churn")
    return ax


def _known(value: Any) -> bool:
    return value is not None and value == value  # NaN is not equal to itself


def _setting(key: str, value: Any) -> str:
    """``key=value``, a whole float without its ``.0`` (Spark's nulls reach pandas as NaN and
    turn an integer column into floats)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{key}={value}"


_FLAP_STATS = (
    "trials",
    "shrinks_per_trial",
    "lag_shrinks_per_trial",
    "expands_per_trial",
    "flaps_per_trial",
    "flapping_trials",
)
