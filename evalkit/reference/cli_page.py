"""``docs/reference/cli.md``: every ``evalkit`` subcommand (and sub-subcommand) with its help and every
flag with its help and default, read from the argparse parsers ``evalkit.cli.build_parser`` builds."""
from __future__ import annotations

import argparse

INTRO = """\
# Command-line reference

Every `evalkit` command and flag, generated from the argparse parsers by `python scripts/gen_docs.py`: do
not edit by hand. `evalkit COMMAND --help` prints the same. Every command also takes `-v/--verbose` (log
more; show tracebacks of errors). Errors are one line naming the flag, exit code 2.
"""


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, sorted by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), p) for name, p in sorted(action.choices.items())]
    return []


def cell(text: str) -> str:
    """Text inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def default_of(action: argparse.Action) -> str:
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._CountAction)):
        return ""
    d = action.default
    if d is None or d is argparse.SUPPRESS or d == "" or d == [] or d is False:
        return ""
    return f"`{d}`"


def flag_of(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or action.metavar or action.dest
    if action.option_strings and action.nargs != 0:
        meta = action.metavar or (("{" + ",".join(map(str, action.choices)) + "}") if action.choices
                                  else action.dest.upper())
        names += f" {meta}" if not isinstance(meta, tuple) else " " + " ".join(meta)
    return f"`{names}`"


def flag_rows(prog: str, parser: argparse.ArgumentParser) -> list[str]:
    fmt = argparse.HelpFormatter(prog)
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, (argparse._HelpAction,
                                                                   argparse._SubParsersAction)):
            continue
        if action.dest == "verbose" and prog != "evalkit":
            continue  # the same on every command: said once, in the intro
        text = fmt._expand_help(action) if action.help else ""
        if not action.option_strings:
            text = "(positional) " + text
        if action.required and action.option_strings:
            text = "(required) " + text
        rows.append(f"| {flag_of(action)} | {default_of(action)} | {cell(text)} |")
    return (["| flag | default | what it does |", "| --- | --- | --- |"] + rows) if rows else []


def command_section(prog: str, helptext: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    lines = [f"{'#' * level} `{prog}`", ""]
    if helptext:
        lines += [cell(helptext)[:1].upper() + cell(helptext)[1:] + ".", ""]
    if parser.description and parser.description != helptext:
        lines += [" ".join(parser.description.split()), ""]
    rows = flag_rows(prog, parser)
    if rows:
        lines += rows + [""]
    for name, sub_help, sub in subcommands(parser):
        lines += command_section(f"{prog} {name}", sub_help, sub, min(level + 1, 4))
    return lines


def render() -> str:
    from evalkit.cli import build_parser
    top = build_parser()
    lines = [INTRO, "## Commands", ""]
    lines += [f"- [`evalkit {name}`](#{anchor(name)}): {cell(h)}" for name, h, _ in subcommands(top)]
    lines += ["", "## `evalkit`", "", " ".join((top.description or "").split()), ""] + flag_rows("evalkit", top)
    lines.append("")
    for name, helptext, parser in subcommands(top):
        lines += command_section(f"evalkit {name}", helptext, parser, 2)
    return "\n".join(lines).rstrip("\n") + "\n"


def anchor(name: str) -> str:
    """The anchor MkDocs gives the heading ``evalkit NAME`` (code spans: their text, dashed)."""
    return "evalkit-" + name
