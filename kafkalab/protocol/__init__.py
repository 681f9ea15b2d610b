"""The pure protocol core: actors that react to a message or a timer and say what they want done.

Nothing in here reads a clock, prints or plots. Randomness comes only from what the caller
passes in (a seeded generator for replica assignment, pre-drawn election timeouts for Raft), so
the simulation stays a pure function of its config, seed and fault schedule.
"""
