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
    joined by a line (:func:`kafkalab.spark.analysis.availability_frontier`)."""
    df, ax = _pandas(result), _axes(ax)
    df = df[df["mean_unavailable_ms"].notna()]
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
    for _, row in df.iterrows():
        ax.annotate(
            str(row[label]),
            (row["mean_unavailable_ms"], row["loss_probability"]),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.set_xlabel("mean ms of refused writes per trial")
    ax.set_ylabel("P(loses acknowledged records)")
    ax.set_title("Durability against availability")
    ax.legend(loc="best")
    return ax


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
    labels = [", ".join(f"{k}={row[k]}" for k in keys) for _, row in df.iterrows()]
    cols = ["shrinks_per_trial", "lag_shrinks_per_trial", "flaps_per_trial"]
    _grouped_bars(ax, df, cols, labels, [c.removesuffix("_per_trial") for c in cols])
    ax.set_ylabel("per trial")
    ax.set_title("ISR churn")
    return ax


_FLAP_STATS = (
    "trials",
    "shrinks_per_trial",
    "lag_shrinks_per_trial",
    "expands_per_trial",
    "flaps_per_trial",
    "flapping_trials",
)
