"""Where an lm-eval task's dataset comes from: the hub as lm-eval loads it, or local files in the
hub dataset's own layout (``--data lm-eval:NAME=PATH``).

A local PATH is a folder with one file per split named after the split (``test.jsonl``,
``validation.parquet``, ``train.csv``, ``test.json``, also the hub's ``test-00000-of-00001.parquet``
and ``data/`` subfolder), or one file when the task reads one split. A dataset with configs
(``cais/mmlu`` has one per subject) may keep each config in its own subfolder
(``PATH/abstract_algebra/test.parquet``), as the hub does, so one PATH serves a whole group.

While lm-eval builds the tasks of one name, its ``datasets.load_dataset`` calls are answered from
PATH (the patch is undone when the tasks are built). Without PATH the hub is used; when it cannot
be reached the error names the dataset and the ``--data`` fix in one line.
"""
from __future__ import annotations

import contextlib
import logging
import types
from pathlib import Path
from typing import Optional

from evalkit.util.errors import ConfigError

FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
_SPLIT_ALIASES = {"validation": ("validation", "valid", "val", "dev"), "test": ("test",), "train": ("train",)}


def _split_files(folder: Path) -> dict[str, list[Path]]:
    """{split: files} of a folder in the hub layout (``test.jsonl``, ``test-00000-of-00002.parquet``)."""
    out: dict[str, list[Path]] = {}
    for root in (folder, folder / "data"):
        if not root.is_dir():
            continue
        for f in sorted(root.iterdir()):
            if f.is_file() and f.suffix in FORMATS:
                split = f.name[: -len(f.suffix)].split("-0", 1)[0]
                out.setdefault(split, []).append(f)
        if out:
            break
    return out


def local_dataset(path: Path, name: Optional[str], wanted: list[str], what: str):
    """A ``datasets.DatasetDict`` of the local files for ``wanted`` splits (the task's)."""
    import datasets

    folder = path / name if name and (path / name).is_dir() else path
    if folder.is_file():
        files = {s: [folder] for s in wanted[:1]}
        if len(set(wanted)) > 1:
            raise ConfigError(f"--data {what}={path}: one file, but the task reads splits {', '.join(wanted)}; "
                              f"give a folder with one file per split ({', '.join(s + '.jsonl' for s in wanted)})")
    elif folder.is_dir():
        found = _split_files(folder)
        files = {}
        for s in wanted:
            hit = next((found[a] for a in _SPLIT_ALIASES.get(s, (s,)) if a in found), None)
            if hit is None:
                raise ConfigError(f"--data {what}={path}: no file for split {s!r} in {folder} "
                                  f"(expected {s}.jsonl, {s}.json, {s}.csv or {s}.parquet; found: "
                                  f"{', '.join(sorted(found)) or 'none'})")
            files[s] = hit
    else:
        raise ConfigError(f"--data {what}={path}: no such file or folder")
    fmts = {FORMATS[f.suffix] for fs in files.values() for f in fs}
    if len(fmts) > 1:
        raise ConfigError(f"--data {what}={path}: mixed file formats {sorted(fmts)}; use one format per dataset")
    return datasets.load_dataset(fmts.pop(), data_files={s: [str(f) for f in fs] for s, fs in files.items()})


def _splits_of(config) -> list[str]:
    cfg = config if isinstance(config, dict) else getattr(config, "__dict__", {})
    keys = ("test_split", "validation_split", "training_split", "fewshot_split")
    return list(dict.fromkeys(cfg[k] for k in keys if cfg.get(k)))


class _Loader:
    """Stands in for ``datasets.load_dataset`` inside ``lm_eval.api.task`` while one name's tasks are
    built: answers from PATH, or from the hub with an offline failure turned into one line."""

    def __init__(self, real, what: str, path: Optional[str]):
        self.real, self.what, self.path = real, what, Path(path) if path else None
        self.wanted: list[str] = ["test"]

    def __call__(self, path=None, name=None, **kwargs):
        if self.path is not None:
            return local_dataset(self.path, name, self.wanted, self.what)
        try:
            with _quiet("datasets"):  # its parsers log their failure with a traceback; the error below names it
                return self.real(path=path, name=name, **kwargs)
        except Exception as e:  # noqa: BLE001 (hub, network and script errors all end here)
            local = _local_files(kwargs.get("data_files"))
            if local:  # the YAML's own data files: name them and what was wrong with them
                root = _root_cause(e)
                raise ConfigError(f"{self.what}: its data file(s) {', '.join(local)} could not be read "
                                  f"({type(root).__name__}: {str(root).splitlines()[0][:200] if str(root) else ''})"
                                  ) from None
            where = f"{path}" + (f" (config {name!r})" if name else "")
            raise ConfigError(f"{self.what}: the dataset {where} could not be loaded ({type(e).__name__}: "
                              f"{str(e).splitlines()[0][:160] if str(e) else ''}); offline, pass "
                              f"--data {self.what}=PATH with its files in the hub layout") from None


@contextlib.contextmanager
def _quiet(logger_name: str):
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _local_files(data_files) -> list[str]:
    """The local paths among a ``data_files`` argument (a path, a list, or split -> either)."""
    items = data_files.values() if isinstance(data_files, dict) else [data_files]
    flat = [x for item in items for x in (item if isinstance(item, (list, tuple)) else [item])]
    return [str(x) for x in flat if isinstance(x, (str, Path)) and Path(x).exists()]


def _root_cause(e: BaseException) -> BaseException:
    """The innermost exception ``e`` was raised from (datasets wraps the parser's error)."""
    seen = set()
    while (e.__cause__ or e.__context__) is not None and id(e) not in seen:
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return e


@contextlib.contextmanager
def datasets_from(what: str, path: Optional[str], trust_remote_code: bool = False):
    """Within the block, lm-eval's tasks load their data from ``path`` (or the hub, with clear errors).
    A dataset that asks to run its own loading script (``trust_remote_code``) is refused unless the
    user allowed it."""
    import datasets
    import lm_eval.api.task as lm_task

    loader = _Loader(datasets.load_dataset, what, path)
    real_download = lm_task.ConfigurableTask.download

    def download(self, dataset_kwargs=None, **kw):
        if (dataset_kwargs or {}).get("trust_remote_code") and not trust_remote_code and path is None:
            raise ConfigError(f"{what}: the dataset {self.config.dataset_path} asks to run its own loading code "
                              f"(trust_remote_code); allow it with --trust-remote-code, or pass --data {what}=PATH")
        loader.wanted = _splits_of(self.config.__dict__) or ["test"]
        return real_download(self, dataset_kwargs, **kw)

    proxy = types.ModuleType("datasets")
    proxy.__dict__.update(datasets.__dict__)
    proxy.load_dataset = loader
    saved = lm_task.datasets
    lm_task.datasets, lm_task.ConfigurableTask.download = proxy, download
    try:
        yield
    finally:
        lm_task.datasets, lm_task.ConfigurableTask.download = saved, real_download
