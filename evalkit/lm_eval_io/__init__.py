"""lm-eval (EleutherAI lm-evaluation-harness 0.4.x) interoperability: read its results and samples
files into run records (``importer``), write run records in its layout (``exporter``), and its
command-line spellings and generation keys (``argv``, ``gen_kwargs``). Never imports lm_eval."""
