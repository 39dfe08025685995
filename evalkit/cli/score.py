"""``evalkit score``: score saved outputs of any generation task without the model.

``evalkit score --task translation --predictions system.txt --references ref.de`` scores an
external MT system; ``evalkit score --task xsum --predictions results/<run>/`` re-scores an old run
with today's metrics. Writes a normal run record (see evalkit.run.workflows.rescore).
"""
from __future__ import annotations

from evalkit.taskapi import registry
from evalkit.backends import parse_model_args
from evalkit.cli.run import add_series_args, format_table
from evalkit.run import validation
from evalkit.run.config_builder import appended_metrics
from evalkit.run.workflows.rescore import ScoreConfig, rescore


def register(sub):
    p = sub.add_parser("score", help="score saved predictions (no model): external systems, old runs")
    p.add_argument("--task", required=True, help="the task whose metrics to apply (see `evalkit tasks`)")
    p.add_argument("--predictions", default=None, metavar="FILE|RUN",
                   help="JSONL of {doc_id, prediction(s)}, a text file with one prediction per line in doc "
                        "order, or a previous run (folder, run.json or samples_<task>.jsonl)")
    p.add_argument("--run", default=None, metavar="RUN.trec",
                   help="retrieval tasks: a TREC run (qid Q0 doc rank score tag) or a JSON {qid: {doc: score}} run")
    p.add_argument("--qrels", default=None, metavar="QRELS",
                   help="retrieval tasks: TREC qrels (qid 0 doc grade) or BEIR qrels TSV, for --run")
    p.add_argument("--references", action="append", default=[], metavar="FILE",
                   help="one reference per line (repeat for several references per doc), for tasks whose "
                        "data is just references: translation, summarization")
    p.add_argument("--data", default=None, metavar="PATH", help="the task's data from a local file or folder")
    p.add_argument("--task-args", default="", metavar="K=V,...", help="task options, e.g. mt_metrics=bleu+chrf")
    p.add_argument("--metric", action="append", default=[], metavar="evaluate:NAME[:K=V,...]",
                   help="extra Hugging Face evaluate metric (repeatable)")
    p.add_argument("--limit", type=int, default=None, help="only the first N predictions that match docs")
    p.add_argument("--seed", type=int, default=None, help="bootstrap seed (default: the run's, else 1234)")
    p.add_argument("--name", default=None, help="system name in the run record (default: file name or the run's)")
    p.add_argument("--tag", action="append", default=[], help="tag the run record")
    add_series_args(p)
    p.add_argument("--include-path", action="append", default=[], metavar="DIR", help="extra task files")
    p.add_argument("--output", default="results", help="results folder (a run record is written there)")
    p.add_argument("--no-output", action="store_true", help="do not write a run record")
    p.set_defaults(func=run)


def run(args):
    from evalkit.taskapi import data
    data.DATA_FLAG_HINT = "--data PATH"  # this command's form of the flag, for data errors
    for path in args.include_path:
        registry.include_path(path)
    registry.get_task_class(args.task)
    if args.run or args.qrels:
        return _score_retrieval_run(args)
    if not args.predictions:
        raise ValueError("--predictions is required (retrieval tasks take --run and --qrels instead)")
    from evalkit.cli.options import check_limit
    check_limit(args.limit, "score")
    series = validation.check_series(args.series, args.step)
    metrics = appended_metrics([args.task], args.metric)
    cfg = ScoreConfig(task=args.task, predictions=args.predictions, references=args.references,
                      data_path=args.data, task_options=parse_model_args(args.task_args, "--task-args"), seed=args.seed,
                      limit=args.limit, name=args.name, tags=args.tag, metrics=metrics,
                      series=series)
    run = rescore(cfg, None if args.no_output else args.output)
    print(format_table(run))
    if run.config.get("budget_forcing"):  # a --thinking-budgets run: every budget scored again
        from evalkit.run.budget_forcing import curve_lines
        print("\n".join(curve_lines(run)))
    if run.path:
        print(f"\nrun record: {run.path}")
    return 0


def _score_retrieval_run(args):
    from evalkit.retrieval.scoring import score_saved_run
    if not (args.run and args.qrels):
        raise ValueError("a retrieval run is scored with both --run RUN and --qrels QRELS")
    out = score_saved_run(args.task, args.run, args.qrels, parse_model_args(args.task_args, "--task-args"),
                          seed=1234 if args.seed is None else args.seed, name=args.name,
                          output_dir=None if args.no_output else args.output, tags=args.tag)
    print(format_table(out["run"]))
    if "path" in out["run"]:
        print(f"\nrun record: {out['run']['path']}")
    return 0
