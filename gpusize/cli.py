"""`gpusize MODEL METHOD [key=value ...] [--json] [--chart FILE]`: the engine in a terminal.

Arguments are read by hand rather than by argparse so that `-5B` reaches the grammar's own
error message instead of being taken for an option. Exit codes: 0 answered, 2 bad input.
Slack, Redis and matplotlib (but for --chart) stay off this path (the CLI must start in well under
0.3 s).
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from engine import UserError, ask, hub, i18n
from engine.i18n import _
from engine.methods import METHODS
from engine.parse import KEYS
from engine.reader import summary
from engine.schema import Answer

USAGE = """usage: gpusize MODEL METHOD [key=value ...] [--json] [--bom] [--chart FILE] [--lang zh|en]
       gpusize serve [--socket]     the Slack bot (see docs/SLACK.md "Install in your workspace")
       gpusize digest run [--now=ISO-TIME]     post the price digests that are due
       gpusize prices import FILE | export     the price history in Redis

  MODEL    a size (13B, 0.5B, 8x7B), a catalog name (llama-3.1-8b, qwen2.5-72b)
           or a Hugging Face repo id (meta-llama/Llama-3.1-8B)
  METHOD   {methods}
  keys     {keys}

examples:
  gpusize 13B full-finetune
  gpusize llama-3.1-8b qlora gpu=4090
  gpusize qwen2.5-72b inference quant=awq context=8k users=20
  gpusize 70B full-finetune gpu=h800 gpus=8 zero=3 --json

--json prints the answer as a JSON document (schema in docs/JSON.md).
--bom also prints the first option's bill of materials (the whole server, each line's rule).
--chart FILE also draws the memory per GPU of the top options as a PNG image in FILE.
--lang zh|en answers in Chinese or English (default: from LANG / LC_ALL).
Chinese input works too: gpusize 13B 全参微调 预算15万"""


def usage() -> str:
    """The usage text, with every method and key the grammar reads (engine/parse.py)."""
    def fill(text: str) -> str:
        return textwrap.fill(text, width=90, subsequent_indent=" " * 11, break_on_hyphens=False)

    methods = " | ".join(m.name + (f" ({', '.join(m.aliases[:3])})" if m.aliases else "")
                         for m in METHODS.values())
    return USAGE.format(methods=fill(methods), keys=fill(" ".join(f"{k}=" for k in KEYS)))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpusize")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `gpusize ... | head`: the reader left; that is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    if args[0] == "--version":
        print(f"gpusize {_version()}")
        return 0
    if args[0] == "serve":
        return serve(args[1:])
    if args[:2] == ["digest", "run"]:
        from bot.ops import digest_run

        return digest_run(args[2:])
    if args[0] == "prices":
        from bot.ops import prices

        return prices(args[1:])
    as_json = "--json" in args
    bom = "--bom" in args
    words, chart = _take_option([a for a in args if a not in ("--json", "--bom")], "--chart")
    words, lang = _take_option(words, "--lang")
    # --lang, else the question's own language when it is Chinese, else the environment's
    i18n.set_language(lang if lang in i18n.LANGUAGES else i18n.language_of_text(" ".join(words))
                      or i18n.from_environment())
    if lang is not None and lang not in i18n.LANGUAGES:
        print("gpusize: " + _("--lang {lang} is not one of {languages}").format(
            lang=lang[:10], languages=", ".join(i18n.LANGUAGES)), file=sys.stderr)
        return 2
    if chart == "":
        print("gpusize: " + _("--chart needs a file name: --chart FILE or --chart=FILE"),
              file=sys.stderr)
        return 2
    unknown = [a for a in words if a.startswith("--")]
    if unknown:
        print("gpusize: " + _("unknown option {option}; options: --json, --bom, --chart FILE, "
                              "--lang zh|en, --help, --version").format(option=unknown[0][:40]),
              file=sys.stderr)
        return 2
    return print_answer(" ".join(words), as_json=as_json, chart=chart, bom=bom)


def _take_option(args: list[str], name: str) -> tuple[list[str], str | None]:
    """Takes `NAME VALUE` / `NAME=VALUE` out of args: (the rest, VALUE), VALUE None when not
    given and "" when given without a value."""
    rest: list[str] = []
    value: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == name:
            following = args[i + 1] if i + 1 < len(args) else ""
            value = "" if following.startswith("--") else following
            i += 1 if following.startswith("--") else 2
            continue
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return rest, value


def serve(args: list[str]) -> int:
    """`gpusize serve [--socket] [--host H]`: the Slack bot (settings from the environment)."""
    unknown = [a for a in args if a not in ("--socket",) and not a.startswith("--host=")]
    if unknown:
        print(f"gpusize serve: unknown option {unknown[0][:40]}; options: --socket, --host=ADDR",
              file=sys.stderr)
        return 2
    from bot.server import serve as run_server

    host = next((a.split("=", 1)[1] for a in args if a.startswith("--host=")), "0.0.0.0")
    return run_server(socket_mode="--socket" in args, host=host)


def print_answer(text: str, *, as_json: bool, chart: str | None = None, bom: bool = False) -> int:
    try:
        # engine.hub imports huggingface_hub only when a repo id outside the catalog is asked for
        result = ask(text, hub=hub.lookup, every_plan=as_json)
    except UserError as err:
        print(f"gpusize: {err}", file=sys.stderr)
        return 2
    if chart is not None and not write_chart(result, chart):
        return 2
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        from present.terminal import render

        print(summary(result.query.read, result.query.skipped))
        for note in result.query.notes:
            print("  " + note)
        print(render(result, bom=bom))
    if chart is not None:
        print(_("chart written to {path}").format(path=chart), file=sys.stderr)
    return 0


def write_chart(result: Answer, path: str) -> bool:
    """Draws the answer's memory chart into `path` (matplotlib is imported only here)."""
    try:
        from present.charts import memory_chart

        png = memory_chart(result, lang=i18n.current())
    except ImportError as err:
        print("gpusize: " + _("--chart needs matplotlib ({error}): pip install matplotlib").format(
            error=err), file=sys.stderr)
        return False
    try:
        Path(path).write_bytes(png)
    except OSError as err:
        print("gpusize: " + _("cannot write the chart to {path}: {error}").format(
            path=path, error=err.strerror or err), file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
