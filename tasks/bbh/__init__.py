"""BIG-Bench Hard (Suzgun et al. 2022, "Challenging BIG-Bench Tasks and Whether Chain-of-Thought Can
Solve Them", arXiv:2210.09261; data and prompts: github.com/suzgunmirac/BIG-Bench-Hard, MIT).

``bbh_cot`` (``cot``): the 27 subtasks, 3-shot chain of thought with the paper's ``cot-prompts``
used byte for byte, greedy generation, lm-eval's "the answer is" extraction, exact match; reported
per subtask (``subtask:<name>`` breakdowns), as the micro average over items (``exact_match``, as
lm-eval's ``bbh_cot_fewshot`` group with ``weight_by_size``) and the macro average over subtasks
(``exact_match_macro``), each with a CI. ``bbh_cot_<subtask>``: one subtask.

``bbh_mc`` (``mc``): the Open LLM Leaderboard v2's multiple-choice BBH (lm-eval's
``leaderboard_bbh_<subtask>``), 24 subtasks, 3-shot, loglikelihood of each option, acc_norm.
``bbh_mc_<subtask>``: one subtask.

Reference implementations and what evalkit does differently:

- lm-eval (0.4.13) ``tasks/bbh/cot_fewshot`` (version 4.0): the same prompt, stop sequences,
  token limit, filter and metric, with the exemplars copied into its YAML files. They equal the
  paper's files for 26 subtasks; in ``sports_understanding`` the paper's file continues each chain of
  thought on the "A: Let's think step by step." line after a space, lm-eval's after a newline.
  evalkit uses the paper's bytes, so that subtask's prompt differs from lm-eval's by those three
  characters (the test item's cue is "...step by step.\\n" in both). The same responses get the same
  verdicts (tests/tasks/test_bbh.py).
- lm-eval's ``leaderboard/bbh_mc``: its descriptions and exemplars are the paper's (the question and
  the final answer of each exemplar); evalkit derives them from the paper's files and gives the same
  prompts and requests, byte for byte, for all 24 subtasks.
- The paper's own scoring (its repository ships prompts and Codex outputs, no scorer) took the text
  after "So the answer is"; lm-eval's regex takes the first "the answer is" of the response, minus
  the last character of that line. evalkit follows lm-eval, so numbers compare with lm-eval's and
  the leaderboard's.
- lm-eval stops generation at any capital "Q" (its ``until`` list); so does evalkit, for the same
  numbers. A chain of thought that writes "Queen" is cut there (and usually scores ``[invalid]``).
- Data: the hub dataset is ``SaylorTwift/bbh`` (lm-eval's ``dataset_path``); the prompt files are
  in no hub dataset, so both tasks need ``--data TASK=DIR`` with ``cot-prompts/`` (``data``).
"""
from . import cot, mc  # noqa: F401 (registers the tasks)
