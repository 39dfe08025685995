"""What the importers of other harnesses' files (``evalkit.lm_eval_io``, ``evalkit.inspect_io``)
share: pairing a foreign task's samples with an evalkit task's docs, the checks of that pairing, and
the task entry of the record (``task_import``). Each format keeps how its files are read and how one
of its samples becomes a row."""
