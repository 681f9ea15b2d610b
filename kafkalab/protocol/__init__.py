"""The pure protocol core: actors that react to a message or a timer and say what they want done.

Nothing in here reads a clock, draws a random number, prints or plots.
"""
