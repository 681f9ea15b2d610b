"""The course's questions again, in DuckDB SQL over the same Parquet files.

An independent second answer to each query of :mod:`kafkalab.spark.analysis` (default
options): the tests check that both give the same numbers, and ``benchmarks/bench_campaign.py``
times both. DuckDB runs in-process on one machine; on the small dataset it is the faster tool,
and Spark's turn comes when the data no longer fits one machine.

    con = connect("datasets/small")
    rows = answer(con, "loss_probability")   # a list of dicts, sorted as Spark sorts them
"""

from __future__ import annotations

from pathlib import Path
from statistics import NormalDist
from typing import Any

from kafkalab.campaign import manifest_tables, read_manifest

__all__ = ["QUERIES", "answer", "connect"]

_Z = NormalDist().inv_cdf(0.975)  # a 95% interval, as loss_probability's default

QUERIES: dict[str, str] = {
    "loss_probability": f"""
        with g as (
          select config_id, config_label, count(*) as trials,
                 sum((lost_acked > 0)::int) as lossy_trials,
                 sum(lost_acked) as lost_records, sum(acked) as acked_records
          from trials group by all),
        p as (select *, lossy_trials / trials as loss_probability,
                     {_Z}::double as z from g)
        select config_id, config_label, trials, lossy_trials, lost_records, acked_records,
               loss_probability,
               greatest(0.0, (loss_probability + z * z / (2 * trials)) / (1 + z * z / trials)
                 - z * sqrt(loss_probability * (1 - loss_probability) / trials
                            + z * z / (4 * trials * trials)) / (1 + z * z / trials)) as ci_low,
               least(1.0, (loss_probability + z * z / (2 * trials)) / (1 + z * z / trials)
                 + z * sqrt(loss_probability * (1 - loss_probability) / trials
                            + z * z / (4 * trials * trials)) / (1 + z * z / trials)) as ci_high,
               case when acked_records > 0 then lost_records / acked_records end
                 as lost_per_acked
        from p order by config_id, config_label""",
    "availability_frontier": """
        with s as (
          select config_id, config_label, count(*) as trials,
                 avg((lost_acked > 0)::double) as loss_probability,
                 avg(unavailable_ms) as mean_unavailable_ms, avg(offline_ms) as mean_offline_ms
          from trials group by all)
        select a.*, case when a.mean_unavailable_ms is null then null else not exists (
                 select 1 from s b where b.mean_unavailable_ms is not null
                   and b.loss_probability <= a.loss_probability
                   and b.mean_unavailable_ms <= a.mean_unavailable_ms
                   and (b.loss_probability < a.loss_probability
                        or b.mean_unavailable_ms < a.mean_unavailable_ms)) end as pareto
        from s a order by config_id, config_label""",
    "latency_by_acks": """
        select t.acks, count(*) as batches, avg(latency_ms) as mean_ms,
               quantile_cont(latency_ms, 0.5) as p50_ms,
               quantile_cont(latency_ms, 0.95) as p95_ms,
               quantile_cont(latency_ms, 0.99) as p99_ms, max(latency_ms) as max_ms
        from events e join trials t using (trial_id)
        where kind = 'produce_result' and error = 'NONE' and latency_ms is not null
        group by all order by t.acks""",
    "isr_flapping": """
        with states as (
          select trial_id, seq, time_ms, isr_size, reason,
                 coalesce(lag(isr_size) over (partition by trial_id order by seq),
                          replication_factor) as prev
          from events join trials using (trial_id) where kind = 'partition_state'),
        changes as (
          select *, case when isr_size < prev then 'shrink' else 'expand' end as change
          from states where isr_size <> prev),
        ordered as (
          select *, lead(change) over (partition by trial_id order by seq) as next_change,
                    lead(time_ms) over (partition by trial_id order by seq) as next_time
          from changes),
        per_trial as (
          select trial_id, count(*) filter (where change = 'shrink') as shrinks,
                 count(*) filter (where change = 'shrink' and reason = 'shrink') as lag_shrinks,
                 count(*) filter (where change = 'expand') as expands,
                 count(*) filter (where change = 'shrink' and reason = 'shrink'
                                  and next_change = 'expand'
                                  and next_time - time_ms <= 5000) as flaps
          from ordered group by trial_id)
        select t.preset, t.replica_lag_max_messages, count(*) as trials,
               avg(coalesce(shrinks, 0)) as shrinks_per_trial,
               avg(coalesce(lag_shrinks, 0)) as lag_shrinks_per_trial,
               avg(coalesce(expands, 0)) as expands_per_trial,
               avg(coalesce(flaps, 0)) as flaps_per_trial,
               avg((coalesce(flaps, 0) > 0)::double) as flapping_trials
        from trials t left join per_trial p using (trial_id)
        group by all order by t.preset nulls first, t.replica_lag_max_messages nulls first""",
    "leader_epoch_anomalies": """
        select leader_epochs, acks, count(*) as trials,
               avg(divergent::double) as divergent_rate,
               avg((lost_acked > 0)::double) as lost_acked_rate,
               avg((hw_regressions > 0)::double) as hw_regression_rate,
               avg((two_leaders > 0)::double) as two_leaders_rate,
               avg((divergent or lost_acked > 0 or hw_regressions > 0 or two_leaders > 0)::double)
                 as any_anomaly_rate
        from trials group by all order by leader_epochs, acks""",
}


def connect(path: str | Path) -> Any:
    """A DuckDB connection with the campaign's tables as views ``trials`` and ``events`` (only
    ``trials`` for a campaign of that table alone, such as the census)."""
    import duckdb

    manifest = read_manifest(path)
    con = duckdb.connect()
    for table in manifest_tables(manifest) if manifest is not None else ("trials", "events"):
        files = str(Path(path) / table / "*.parquet").replace("'", "''")
        con.execute(f"create view {table} as select * from read_parquet('{files}')")
    return con


def answer(con: Any, name: str) -> list[dict[str, Any]]:
    """The rows of one query, as dicts."""
    if name not in QUERIES:
        raise ValueError(f"query {name!r} is not one of {', '.join(QUERIES)}")
    cursor = con.execute(QUERIES[name])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
