# The image `kafkalab grade --sandbox docker` runs each hand-in's worker in. It holds the
# package, the shipped campaign and Python's libraries, and nothing else of the course: no
# solutions, no exercise sources, no tests, no git history.
#
#   docker build -f tools/grader.Dockerfile -t kafkalab-grader .
#   kafkalab grade handins/ --assignment 08-idempotence --out grades.csv --sandbox docker
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /course
COPY pyproject.toml README.md ./
COPY kafkalab ./kafkalab
COPY datasets/small ./datasets/small
RUN pip install --no-cache-dir -e ".[spark]" ipython matplotlib \
 && rm -rf kafkalab/grading/__pycache__

ENV MPLBACKEND=Agg PYTHONDONTWRITEBYTECODE=1
USER 61000:61000
