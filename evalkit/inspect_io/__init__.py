"""Inspect (UK AISI's ``inspect_ai``) interoperability: read its eval logs (``.eval`` and ``.json``)
into run records (``importer``, ``scores``, ``docs``) and write run records as Inspect logs
(``exporter``). Logs are read and written only through ``inspect_ai.log`` (``read_eval_log``,
``write_eval_log``): the log format is Inspect's, not a frozen spec. Needs the ``inspect`` extra."""
