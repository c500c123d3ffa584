#!/usr/bin/env python3
"""Lists, from the frameworks' own sources at the pinned releases, every option an export may write, so that the
tests hold HetSim's exports against the frameworks' code rather than against HetSim's idea of it.

Usage: framework_option_lists.py --deepspeed GIT_DIR --megatron GIT_DIR --megatron-deepspeed GIT_DIR
GIT_DIR: a clone of github.com/deepspeedai/DeepSpeed, github.com/NVIDIA/Megatron-LM or
github.com/deepspeedai/Megatron-DeepSpeed holding the pinned tag or commit (framework_source_lines.py names them).
Writes into tests/data/frameworks/:

- megatron_core_v0.13.0.arguments.tsv: every option megatron/training/arguments.py adds with add_argument, one
  line `FLAG<TAB>KIND<TAB>CHOICES`. KIND is `switch` (store_true/store_false: no value), the type argparse
  converts with (`int`, `float`, `str`, or the name of Megatron's converter), with `+`/`*` appended when the
  option takes several values; CHOICES is the comma-separated choices, or empty.
- megatron_deepspeed_4efb479d.arguments.tsv: the same for Megatron-DeepSpeed's parser, every option its
  megatron/arguments.py adds and those deepspeed.add_config_arguments adds to it (deepspeed/__init__.py,
  _add_core_arguments, at DeepSpeed's pinned tag).
- deepspeed_v0.17.4.config_keys.tsv: every key of the configuration sections the export writes, one line
  `SECTION<TAB>KEY<TAB>TYPE`, SECTION `.` for the top level. Top-level keys are those runtime/config.py reads
  from the configuration dict (get_scalar_param, .get, [] and `in`), typed by the Python type of their default
  (`any` where the default is None). The pydantic sections (zero_optimization, fp16, bf16) list each field and
  alias with its annotation; DeepSpeedConfigModel forbids any other key there (config_utils.py, extra="forbid").
  `enum:V,...` gives an Enum's values. activation_checkpointing lists the keys its config class reads, pipeline
  the keys of get_pipeline_config's defaults (it copies any key, but the pipeline engine reads only those).
"""

import argparse
import ast
import os
import subprocess

from framework_source_lines import RELEASES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "frameworks")


def source(git_dir, tag, path):
    return subprocess.run(["git", "-C", git_dir, "show", f"{tag}:{path}"], check=True, capture_output=True,
                          text=True).stdout


def commit_of(git_dir, tag):
    return subprocess.run(["git", "-C", git_dir, "rev-list", "-n", "1", tag], check=True, capture_output=True,
                          text=True).stdout.strip()


# --- Megatron-LM ---------------------------------------------------------------------------------------------

def argument_kind(call):
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    action = keywords.get("action")
    if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"):
        return "switch"
    kind = ast.unparse(keywords["type"]) if "type" in keywords else "str"
    nargs = keywords.get("nargs")
    if isinstance(nargs, ast.Constant) and nargs.value in ("+", "*"):
        kind += nargs.value
    return kind


def argument_choices(call):
    for k in call.keywords:
        if k.arg == "choices":
            try:
                return ",".join(str(c) for c in ast.literal_eval(k.value))
            except ValueError:  # choices computed at run time
                return "?" + ast.unparse(k.value)
    return ""


def parser_arguments(text, function=None):
    """FLAG, KIND, CHOICES of every add_argument call in `text` (in `function` alone when given)."""
    tree = ast.parse(text)
    if function:
        tree = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == function)
    rows = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
            for flag in flags:
                rows[flag] = f"{flag}\t{argument_kind(node)}\t{argument_choices(node)}"
    return rows


def megatron_arguments(git_dir, tag):
    rows = parser_arguments(source(git_dir, tag, "megatron/training/arguments.py"))
    return [rows[f] for f in sorted(rows)]


def megatron_deepspeed_arguments(git_dir, commit, deepspeed_dir, deepspeed_tag):
    """Megatron-DeepSpeed's parser: its own arguments, then DeepSpeed's (parse_args calls
    deepspeed.add_config_arguments last)."""
    rows = parser_arguments(source(git_dir, commit, "megatron/arguments.py"))
    rows.update(parser_arguments(source(deepspeed_dir, deepspeed_tag, "deepspeed/__init__.py"), "_add_core_arguments"))
    return [rows[f] for f in sorted(rows)]


# --- DeepSpeed -----------------------------------------------------------------------------------------------

def module_constants(text):
    """NAME = literal assignments at a module's top level."""
    values = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return values


def type_name(value):
    return "any" if value is None else type(value).__name__


def resolve(node, constants, defaults):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in defaults:
            return resolve(defaults[node.id], constants, {})
        return constants.get(node.id)
    return None


def function_defaults(function):
    args = function.args.args[len(function.args.args) - len(function.args.defaults):]
    return {a.arg: d for a, d in zip(args, function.args.defaults)}


def reads_whole_config(function, tree):
    """Whether a function's param_dict is the whole configuration: a method of the config class, or a function
    called with param_dict somewhere (the sparse-attention readers take their own section under that name)."""
    if function.args.args and function.args.args[0].arg == "self":
        return True
    return any(isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == function.name
               and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == "param_dict"
               for call in ast.walk(tree))


def top_level_keys(text, constants):
    """Keys runtime/config.py reads straight from the configuration dict, with their defaults' types."""
    keys = {}
    tree = ast.parse(text)
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef) or not reads_whole_config(function, tree):
            continue
        defaults = function_defaults(function)
        for node in ast.walk(function):
            key, default = None, None
            if isinstance(node, ast.Call):
                func = node.func
                is_param_dict = node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "param_dict"
                if isinstance(func, ast.Name) and func.id == "get_scalar_param" and is_param_dict:
                    key = resolve(node.args[1], constants, defaults)
                    default = resolve(node.args[2], constants, defaults) if len(node.args) > 2 else None
                elif (isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Name)
                      and func.value.id == "param_dict" and node.args):
                    key = resolve(node.args[0], constants, defaults)
                    default = resolve(node.args[1], constants, defaults) if len(node.args) > 1 else None
            elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                  and node.value.id == "param_dict"):
                key = resolve(node.slice, constants, defaults)
            elif (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In)
                  and isinstance(node.comparators[0], (ast.Name, ast.Call))):
                target = node.comparators[0]
                if isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):
                    target = target.func.value
                if isinstance(target, ast.Name) and target.id == "param_dict":
                    key = resolve(node.left, constants, defaults)
            if isinstance(key, str):
                known = keys.get(key)
                keys[key] = type_name(default) if known in (None, "any") else known
    return keys


def enum_values(tree):
    enums = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b) in ("Enum", "int") for b in node.bases):
            values = []
            for item in node.body:
                if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant):
                    values.append(str(item.value.value))
            if values:
                enums[node.name] = "enum:" + ",".join(dict.fromkeys(values))
    return enums


def model_fields(text, class_name):
    """Field names and aliases of a pydantic config class, with their annotations."""
    tree = ast.parse(text)
    enums = enum_values(tree)
    rows = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ClassDef) and node.name == class_name):
            continue
        for item in node.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            annotation = ast.unparse(item.annotation)
            annotation = enums.get(annotation, annotation)
            names = [item.target.id]
            if isinstance(item.value, ast.Call) and ast.unparse(item.value.func) == "Field":
                names += [k.value.value for k in item.value.keywords
                          if k.arg == "alias" and isinstance(k.value, ast.Constant)]
            rows += [(name, annotation) for name in names]
    if not rows:
        raise SystemExit(f"no fields found for {class_name}")
    return rows


def scalar_param_keys(text, constants, section_dict):
    """Keys read with get_scalar_param from a section's own dict."""
    keys = {}
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_scalar_param"
                and isinstance(node.args[0], ast.Name) and node.args[0].id == section_dict):
            keys[resolve(node.args[1], constants, {})] = type_name(resolve(node.args[2], constants, {}))
    return keys


def pipeline_keys(text):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == "get_pipeline_config":
            for item in node.body:
                if isinstance(item, ast.Assign) and isinstance(item.value, ast.Dict):
                    return {k: type_name(v) for k, v in ast.literal_eval(item.value).items()}
    raise SystemExit("get_pipeline_config's defaults not found")


def deepspeed_keys(git_dir, tag):
    config = source(git_dir, tag, "deepspeed/runtime/config.py")
    constants = {}
    for path in ("deepspeed/runtime/constants.py", "deepspeed/runtime/zero/config.py",
                 "deepspeed/runtime/precision_config.py", "deepspeed/runtime/activation_checkpointing/config.py"):
        constants.update(module_constants(source(git_dir, tag, path)))
    rows = [(".", key, kind) for key, kind in top_level_keys(config, constants).items()]
    # Sections whose readers live beside their classes: get_zero_config, get_float16_config, get_bfloat16_config
    # (with the old "bfloat16" spelling), DeepSpeedActivationCheckpointingConfig.
    rows += [(".", constants[name], "dict") for name in ("ZERO_OPTIMIZATION", "FP16", "BFLOAT16", "BFLOAT16_OLD",
                                                         "ACT_CHKPT")]
    zero = source(git_dir, tag, "deepspeed/runtime/zero/config.py")
    precision = source(git_dir, tag, "deepspeed/runtime/precision_config.py")
    sections = {"zero_optimization": model_fields(zero, "DeepSpeedZeroConfig"),
                "fp16": model_fields(precision, "DeepSpeedFP16Config"),
                "bf16": model_fields(precision, "DeepSpeedBF16Config")}
    sections["bfloat16"] = sections["bf16"]  # get_bfloat16_config reads the old name into the same class
    checkpointing = source(git_dir, tag, "deepspeed/runtime/activation_checkpointing/config.py")
    sections["activation_checkpointing"] = list(scalar_param_keys(checkpointing, constants,
                                                                  "act_chkpt_config_dict").items())
    sections["pipeline"] = list(pipeline_keys(config).items())
    sections["data_types"] = [(constants["GRAD_ACCUM_DTYPE"], "str")]  # config.py: data_types_params.get(...)
    for section, fields in sections.items():
        rows += [(section, key, kind) for key, kind in fields]
    return [f"{s}\t{k}\t{t}" for s, k, t in sorted(set(rows))]


def write(filename, header, rows):
    with open(os.path.join(OUT, filename), "w") as f:
        f.write("".join(f"# {line}\n" for line in header) + "\n".join(rows) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deepspeed", required=True)
    parser.add_argument("--megatron", required=True)
    parser.add_argument("--megatron-deepspeed", required=True)
    args = parser.parse_args()
    _, megatron_tag, _ = RELEASES["kMegatronRelease"]
    _, deepspeed_tag, _ = RELEASES["kDeepSpeedRelease"]
    _, mds_commit, _ = RELEASES["kMegatronDeepSpeedRelease"]
    write(f"megatron_{megatron_tag}.arguments.tsv",
          [f"Every option megatron/training/arguments.py of NVIDIA/Megatron-LM adds, at tag {megatron_tag}",
           f"(commit {commit_of(args.megatron, megatron_tag)}), written by scripts/framework_option_lists.py.",
           "FLAG, KIND (switch: no value; else the type argparse converts with, + or * for several values),",
           "CHOICES (comma-separated; empty: any)."],
          megatron_arguments(args.megatron, megatron_tag))
    write(f"megatron_deepspeed_{mds_commit[:8]}.arguments.tsv",
          [f"Every option megatron/arguments.py of deepspeedai/Megatron-DeepSpeed adds, at commit {mds_commit},",
           f"and those deepspeed.add_config_arguments adds (deepspeed/__init__.py at DeepSpeed {deepspeed_tag}),",
           "written by scripts/framework_option_lists.py. FLAG, KIND (switch: no value; else the type argparse",
           "converts with, + or * for several values), CHOICES (comma-separated; empty: any)."],
          megatron_deepspeed_arguments(args.megatron_deepspeed, mds_commit, args.deepspeed, deepspeed_tag))
    write(f"deepspeed_{deepspeed_tag}.config_keys.tsv",
          [f"The configuration keys DeepSpeed reads, at tag {deepspeed_tag} of deepspeedai/DeepSpeed",
           f"(commit {commit_of(args.deepspeed, deepspeed_tag)}), written by scripts/framework_option_lists.py.",
           "SECTION (. for the top level), KEY, TYPE (the default's Python type, a pydantic annotation, or",
           "enum:VALUES)."],
          deepspeed_keys(args.deepspeed, deepspeed_tag))


if __name__ == "__main__":
    main()
