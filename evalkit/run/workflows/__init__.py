"""The run's phases composed into the commands other than ``evalkit run``: ``rescore`` (``evalkit score``:
saved outputs scored again), ``merge`` (``evalkit merge``: shard records joined), ``parity`` (``evalkit
parity``: two backends on the same requests) and ``reward_pairs`` (``evalkit reward``: saved pairs through a
reward model). They import the phases; no phase imports them (tests/test_architecture.py)."""
