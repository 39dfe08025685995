"""Agent episodes: the loop that plays them turn by turn (``loop``) and the simulated user that answers
the agent (``simulated_user``). Beside ``evalkit.run``: they compose the task API's episodes, the
engine's batches and the sandbox's tool calls; the run's answer phase (``evalkit.run.runner``) calls them."""
