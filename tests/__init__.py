"""kafkalab's tests: a package, so that pytest puts the repository root on sys.path and
``from tests.schedules import ...`` works however pytest is started."""
