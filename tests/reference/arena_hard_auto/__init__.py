"""Upstream Arena-Hard-Auto code (lmarena/arena-hard-auto, Apache-2.0), copied for the parity tests of
evalkit's ``arena_hard_v2`` task; see README.md beside this file for the commit and what was kept."""
