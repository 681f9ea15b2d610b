"""Failure campaigns: many timed runs, each (config, seed), as a dataset to analyse.

A campaign spec names configs (a grid, or a random sample of one) and seeds; each (config, seed)
is a *trial*: a timed simulation with a steady producer and a random fault schedule drawn from
the seed. A campaign is written as two Parquet tables, ``trials`` (one row per trial) and
``events`` (one row per state change), in parts that a stopped run resumes from.

This package is plain Python (pyarrow only to write Parquet); :mod:`kafkalab.spark` runs the
units on Spark and holds the analysis queries.

>>> from kafkalab.campaign import load_spec, draw_trial, run_trial
>>> spec = load_spec("tiny")
>>> rows = run_trial(draw_trial(spec, config_id=0, seed=0))
>>> rows.trial["trial_id"], rows.trial["produced"] > 0
(0, True)
"""

from kafkalab.campaign.dataset import (
    MANIFEST,
    TABLES,
    Summary,
    UnitOutput,
    content_digest,
    generate,
    manifest_tables,
    read_manifest,
    run_unit,
    verify,
)
from kafkalab.campaign.schema import EVENTS, SCHEMA_VERSION, TRIALS, Column, schema_document
from kafkalab.campaign.spec import (
    CampaignError,
    CampaignSpec,
    Unit,
    catalog,
    load_spec,
    parse_spec,
)
from kafkalab.campaign.trial import Trial, TrialRows, draw_trial, run_trial

__all__ = [
    "EVENTS",
    "MANIFEST",
    "SCHEMA_VERSION",
    "TABLES",
    "TRIALS",
    "CampaignError",
    "CampaignSpec",
    "Column",
    "Summary",
    "Trial",
    "TrialRows",
    "Unit",
    "UnitOutput",
    "catalog",
    "content_digest",
    "draw_trial",
    "generate",
    "load_spec",
    "parse_spec",
    "manifest_tables",
    "read_manifest",
    "run_trial",
    "run_unit",
    "schema_document",
    "verify",
]
