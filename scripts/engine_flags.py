"""Regenerate engine/data/engines.toml: each engine's accepted options, read from its own
argument definitions at a stated version (issue 25: launch commands are checked against it).

    python scripts/engine_flags.py --vllm-wheel vllm-0.34.0-....whl \
        --sglang-wheel sglang-0.5.23-....whl --llama-cpp-sdist llama_cpp_python-0.3.36.tar.gz \
        --llamafactory-src LLaMA-Factory/ --transformers-wheel transformers-5.8.0-....whl \
        --deepspeed-src DeepSpeed/ --megatron-src Megatron-LM/ > engine/data/engines.toml

Wheels and sdists come from PyPI (`pip download NAME==VERSION --no-deps`); the source trees are
checkouts at the tag named in the output. Nothing is imported: the definitions are read with ast
and regular expressions, so no engine (or torch) needs to be installed. torchrun's options are
kept as read from torch/distributed/run.py (TORCHRUN below), since torch is not needed here.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import re
import sys
import tarfile
import zipfile
from pathlib import Path

TORCHRUN = {
    "name": "torchrun", "program": "torchrun", "version": "2.9+",
    "source": "https://github.com/pytorch/pytorch/blob/010929fd3f401c3868310396e6a91ed95aa0305b/"
              "torch/distributed/run.py",
    "flags": ["--nnodes", "--nproc-per-node", "--nproc_per_node", "--rdzv-backend", "--rdzv_backend",
              "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id", "--rdzv-conf",
              "--rdzv_conf", "--standalone", "--max-restarts", "--max_restarts",
              "--monitor-interval", "--monitor_interval", "--start-method", "--start_method",
              "--event-log-handler", "--role", "-m", "--module", "--no-python", "--no_python",
              "--run-path", "--run_path", "--log-dir", "--log_dir", "-r", "--redirects", "-t",
              "--tee", "--local-ranks-filter", "--node-rank", "--node_rank", "--master-addr",
              "--master_addr", "--master-port", "--master_port", "--local-addr", "--local_addr",
              "--logs-specs", "--numa-binding", "--signals-to-handle"],
}


def _strings(node: ast.AST) -> list[str]:
    return [a.value for a in getattr(node, "args", []) if isinstance(a, ast.Constant)
            and isinstance(a.value, str) and a.value.startswith("-")]


def _literal_choices(source: str, name: str) -> list[str]:
    """Values of `name: Literal[...]` or `name = Literal[...]` in a module."""
    m = re.search(rf"^\s*{name}\s*[:=][^\n]*?Literal\[(.*?)\]", source, re.S | re.M)
    return re.findall(r'"([^"]+)"', m.group(1)) if m else []


def vllm(wheel: Path) -> dict:
    z = zipfile.ZipFile(wheel)
    read = lambda p: z.read(p).decode()  # noqa: E731
    version = re.search(r"__version__ = version = '([^']+)'", read("vllm/_version.py")).group(1)
    flags: set[str] = set()
    for path in ("vllm/engine/arg_utils.py", "vllm/entrypoints/common/cli_args.py"):
        for node in ast.walk(ast.parse(read(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                flags.update(_strings(node))
    for node in ast.walk(ast.parse(read("vllm/entrypoints/common/cli_args.py"))):
        if isinstance(node, ast.ClassDef) and node.name.endswith("FrontendArgs"):
            flags.update("--" + s.target.id.replace("_", "-") for s in node.body
                         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                         and not s.target.id.startswith("_"))
    quant = _literal_choices(read("vllm/model_executor/layers/quantization/__init__.py"),
                             "QuantizationMethods")
    cache = _literal_choices(read("vllm/config/cache.py"), "CacheDType")
    return {"name": "vllm", "program": "vllm serve", "version": version,
            "source": f"{wheel.name}: vllm/engine/arg_utils.py, "
                      "vllm/entrypoints/common/cli_args.py",
            "flags": sorted(flags),
            "choices": {"--quantization": quant, "--kv-cache-dtype": cache,
                        "--dtype": ["auto", "half", "float16", "bfloat16", "float", "float32"]}}


def sglang(wheel: Path) -> dict:
    z = zipfile.ZipFile(wheel)
    version = re.search(r"sglang-([0-9.]+)-", wheel.name).group(1)
    flags: set[str] = set()
    choices: dict[str, list[str]] = {}
    names = [n for n in z.namelist() if n.startswith("sglang/srt/arg_groups/fields/")
             and n.endswith(".py")]
    for path in names:
        for node in ast.walk(ast.parse(z.read(path).decode())):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            ann = node.annotation
            if not (isinstance(ann, ast.Subscript) and getattr(ann.value, "id", "") == "A"):
                continue
            text = ast.unparse(ann)
            if "no_cli=True" in text:
                continue
            main = "--" + node.target.id.replace("_", "-")
            for call in ast.walk(ann):
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "Arg":
                    for kw in call.keywords:
                        if kw.arg == "cli_name":
                            main = ast.literal_eval(kw.value)
                        elif kw.arg == "aliases":
                            flags.update(ast.literal_eval(kw.value))
                        elif kw.arg == "choices":
                            with contextlib.suppress(ValueError):  # a name, not a literal
                                choices[main] = [str(c) for c in ast.literal_eval(kw.value)]
            flags.add(main)
    server = z.read("sglang/srt/server_args.py").decode()
    flags.update(re.findall(r'^\s+"(--[a-z0-9-]+)",\s*$', server, re.M))
    choice_src = z.read("sglang/srt/arg_groups/choices.py").decode()
    m = re.search(r"QUANTIZATION_CHOICES = \[(.*?)\]", choice_src, re.S)
    choices["--quantization"] = re.findall(r'"([^"]+)"', m.group(1)) if m else []
    return {"name": "sglang", "program": "python -m sglang.launch_server", "version": version,
            "source": f"{wheel.name}: sglang/srt/arg_groups/fields/*.py, "
                      "sglang/srt/server_args.py",
            "flags": sorted(flags),
            "choices": {k: v for k, v in choices.items()
                        if k in ("--quantization", "--kv-cache-dtype", "--dtype")}}


def llama_server(sdist: Path) -> dict:
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers()
                      if m.name.endswith("vendor/llama.cpp/common/arg.cpp"))
        text = tar.extractfile(member).read().decode()
        head = next(m for m in tar.getmembers()
                    if m.name.endswith(".git/modules/vendor/llama.cpp/HEAD"))
        commit = tar.extractfile(head).read().decode().strip()
    flags: set[str] = set()
    for chunk in text.split("add_opt(common_arg(")[1:]:
        names = re.match(r"\s*\{([^}]*)\}", chunk)
        if not names:
            continue
        body = chunk.split("add_opt(")[0]
        examples = re.search(r"set_examples\(\{([^}]*)\}\)", body)
        excludes = re.search(r"set_excludes\(\{([^}]*)\}\)", body)
        if examples and not {"LLAMA_EXAMPLE_SERVER", "LLAMA_EXAMPLE_COMMON"} & set(
                re.findall(r"LLAMA_EXAMPLE_\w+", examples.group(1))):
            continue
        if excludes and "LLAMA_EXAMPLE_SERVER" in excludes.group(1):
            continue
        flags.update(re.findall(r'"(-[^"]+)"', names.group(1)))
    return {"name": "llama.cpp", "program": "llama-server", "version": f"commit {commit[:10]}",
            "source": f"{sdist.name}: vendor/llama.cpp/common/arg.cpp @ {commit[:10]} "
                      "(LLAMA_EXAMPLE_SERVER, LLAMA_EXAMPLE_COMMON)",
            "flags": sorted(flags),
            "choices": {"--split-mode": ["none", "layer", "row", "tensor"],
                        "--flash-attn": ["on", "off", "auto"],
                        "--cache-type-k": ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1",
                                           "iq4_nl", "q5_0", "q5_1"],
                        "--cache-type-v": ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1",
                                           "iq4_nl", "q5_0", "q5_1"]}}


def _dataclass_fields(source: str, classes: set[str] | None = None) -> dict[str, tuple[str, str]]:
    """field -> (annotation, default source) for every dataclass-style class in a module."""
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and (classes is None or node.name in classes):
            for s in node.body:
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                    out[s.target.id] = (ast.unparse(s.annotation),
                                        ast.unparse(s.value) if s.value else "")
    return out


def llamafactory(src: Path, transformers_wheel: Path) -> dict:
    hp = src / "src" / "llamafactory" / "hparams"
    version = re.search(r'^VERSION = "([^"]+)"', (src / "src" / "llamafactory" / "extras" /
                                                   "env.py").read_text(), re.M).group(1)
    keys: dict[str, tuple[str, str]] = {}
    for path in sorted(hp.glob("*_args.py")):
        keys.update(_dataclass_fields(path.read_text()))
    z = zipfile.ZipFile(transformers_wheel)
    ta = z.read("transformers/training_args.py").decode()
    keys.update(_dataclass_fields(ta, {"TrainingArguments"}))
    keys.update(_dataclass_fields(z.read("transformers/training_args_seq2seq.py").decode()))
    optim = re.findall(r'^\s+[A-Z0-9_]+ = "([a-z0-9_]+)"$',
                       ta.split("class OptimizerNames")[1].split("\nclass ")[0], re.M)
    ft = (hp / "finetuning_args.py").read_text()
    return {"name": "llamafactory", "program": "llamafactory-cli train", "version": version,
            "source": f"LLaMA-Factory v{version}: src/llamafactory/hparams/*_args.py; "
                      f"{transformers_wheel.name}: transformers/training_args.py",
            "flags": sorted(keys),
            "choices": {"stage": _literal_choices(ft, "stage"),
                        "finetuning_type": _literal_choices(ft, "finetuning_type"),
                        "optim": sorted(set(optim))}}


def deepspeed(src: Path) -> dict:
    rt = src / "deepspeed" / "runtime"
    version = (src / "version.txt").read_text().strip()
    consts = dict(re.findall(r"""^([A-Z0-9_]+) = ['"]([a-z0-9_]+)['"]$""",
                             (rt / "constants.py").read_text(), re.M))
    config = (rt / "config.py").read_text()
    top = {consts[n] for n in re.findall(r"get_scalar_param\(param_dict, ([A-Z0-9_]+)", config)
           if n in consts}
    top |= {consts[n] for n in re.findall(r"param_dict\[([A-Z0-9_]+)\]", config) if n in consts}
    top |= {"zero_optimization", "bf16", "fp16", "train_micro_batch_size_per_gpu",
            "gradient_accumulation_steps", "train_batch_size", "optimizer", "scheduler"}
    paths = set(top)

    def fields(path: Path, cls: str) -> set[str]:
        found = set()
        for name, (_ann, default) in _dataclass_fields(path.read_text(), {cls}).items():
            found.add(name)
            alias = re.search(r"""alias=['"]([a-z0-9_]+)['"]""", default)
            if alias:
                found.add(alias.group(1))
        return found

    zero = fields(rt / "zero" / "config.py", "DeepSpeedZeroConfig")
    paths |= {f"zero_optimization.{k}" for k in zero}
    for section, cls in (("offload_optimizer", "DeepSpeedZeroOffloadOptimizerConfig"),
                         ("offload_param", "DeepSpeedZeroOffloadParamConfig")):
        paths |= {f"zero_optimization.{section}.{k}"
                  for k in fields(rt / "zero" / "offload_config.py", cls)}
    paths |= {f"bf16.{k}" for k in fields(rt / "precision_config.py", "DeepSpeedBF16Config")}
    paths |= {f"fp16.{k}" for k in fields(rt / "precision_config.py", "DeepSpeedFP16Config")}
    return {"name": "deepspeed", "program": "ds_config.json", "version": version,
            "source": f"DeepSpeed {version}: deepspeed/runtime/config.py, "
                      "deepspeed/runtime/zero/config.py, deepspeed/runtime/zero/offload_config.py",
            "flags": sorted(paths),
            "choices": {"zero_optimization.stage": ["0", "1", "2", "3"],
                        "zero_optimization.offload_optimizer.device": ["none", "cpu", "nvme"],
                        "zero_optimization.offload_param.device": ["none", "cpu", "nvme"]}}


def megatron(src: Path, tag: str) -> dict:
    args = (src / "megatron" / "training" / "arguments.py").read_text()
    flags = set(re.findall(r"""['"](--[a-z0-9-]+)['"]""", args))
    factories = re.findall(r"ArgumentGroupFactory\((\w+)(?:, exclude\s*=\s*\[([^\]]*)\])?", args)
    sources = [src / "megatron" / "core" / "model_parallel_config.py",
               src / "megatron" / "core" / "transformer" / "transformer_config.py",
               *sorted((src / "megatron" / "training" / "config").glob("*.py"))]
    for cls, exclude in factories:
        skip = set(re.findall(r'"([a-z0-9_]+)"', exclude or ""))
        wanted = {cls, "ModelParallelConfig"} if cls == "TransformerConfig" else {cls}
        for path in sources:
            if not path.exists():
                continue
            for name, (ann, default) in _dataclass_fields(path.read_text(), wanted).items():
                if name.startswith("_") or name in skip:
                    continue
                named = re.search(r"""['"]arg_names['"]:\s*\[([^\]]*)\]""", default)
                if named:  # the field's argparse_meta names its flags itself
                    flags |= set(re.findall(r"""['"](--[a-z0-9-]+)['"]""", named.group(1)))
                    continue
                flags.add("--" + name.replace("_", "-"))
                if ann == "bool" and (default == "True" or "default=True" in default):
                    flags |= {f"--no-{name.replace('_', '-')}", f"--disable-{name.replace('_', '-')}"}
    return {"name": "megatron", "program": "torchrun ... pretrain_gpt.py", "version": tag,
            "source": f"Megatron-LM {tag}: megatron/training/arguments.py, "
                      "megatron/core/transformer/transformer_config.py",
            "flags": sorted(flags),
            "choices": {"--recompute-granularity": ["full", "selective"]}}


def toml_of(engines: list[dict], read: str) -> str:
    def quote(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    out = ["# Each engine's accepted options, read from its own argument definitions at the version",
           "# given (scripts/engine_flags.py regenerates this file; tests/engine/test_launch.py",
           "# checks every launch command engine/launch.py writes against it).",
           f"# Read on {read}.", ""]
    for e in engines:
        out += ["[[engine]]", f"name = {quote(e['name'])}", f"program = {quote(e['program'])}",
                f"version = {quote(e['version'])}", f"source = {quote(e['source'])}",
                f"read = {quote(read)}", "flags = ["]
        out += [f"    {quote(f)}," for f in e["flags"]]
        out.append("]")
        if e.get("choices"):
            out.append("[engine.choices]")
            for key, values in e["choices"].items():
                out.append(f"{quote(key)} = [{', '.join(quote(v) for v in values)}]")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vllm-wheel", type=Path, required=True)
    p.add_argument("--sglang-wheel", type=Path, required=True)
    p.add_argument("--llama-cpp-sdist", type=Path, required=True)
    p.add_argument("--llamafactory-src", type=Path, required=True)
    p.add_argument("--transformers-wheel", type=Path, required=True)
    p.add_argument("--deepspeed-src", type=Path, required=True)
    p.add_argument("--megatron-src", type=Path, required=True)
    p.add_argument("--megatron-tag", default="core_v0.19.0")
    p.add_argument("--read", required=True, help="the date the sources were read, YYYY-MM-DD")
    a = p.parse_args(argv)
    engines = [vllm(a.vllm_wheel), sglang(a.sglang_wheel), llama_server(a.llama_cpp_sdist),
               llamafactory(a.llamafactory_src, a.transformers_wheel), deepspeed(a.deepspeed_src),
               megatron(a.megatron_src, a.megatron_tag), TORCHRUN]
    sys.stdout.write(toml_of(engines, a.read))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
