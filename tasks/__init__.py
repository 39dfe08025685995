"""Built-in evalkit tasks. Each module registers its tasks with ``@register_task``.

Installed, this folder is the ``evalkit.tasks`` package (see pyproject.toml), so no generic
top-level ``tasks`` name lands in site-packages.
"""
