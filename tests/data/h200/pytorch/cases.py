"""The PyTorch cases of steps.json: every shared GPT-2 medium and Llama case, and around where each runs out of
memory on 79.18 GiB. Usage: cases.py GPU_NAME INPUTS_DIR OUT.json (on an H100, GPT-2 medium's shared cases are
tests/data/h100's already and are left out)."""
import json, sys
gpu, inputs, out = sys.argv[1], sys.argv[2], sys.argv[3]
def case(model, mb, rc=False, warmup=3, iterations=6):
    seq = json.load(open(f"{inputs}/{model}.json"))["seq_len"]
    return {"tag": f"{model}-mb{mb}{'-rc' if rc else ''}", "model": f"{model}.json", "config": f"{inputs}/{model}.json",
            "seq_len": seq, "micro_batch": mb, "recompute": rc, "warmup": warmup, "iterations": iterations}
cases = [case("llama-3.2-1b", mb) for mb in (1, 2, 4, 8, 16)]
cases += [case("llama-3.2-1b", 16, True), case("llama-3.2-1b", 32, True)]
cases += [case("llama-3-8b-8l", mb) for mb in (1, 2, 4, 8)] + [case("llama-3-8b-8l", mb, True) for mb in (4, 8)]
if "H100" not in gpu:
    cases = [case("gpt2-medium", mb, False, 6, 12) for mb in (1, 2, 4, 8, 16)] + cases
cases += [case("gpt2-medium", mb, False, 2, 3) for mb in (20, 24, 28, 29, 30, 31)]
cases += [case("llama-3.2-1b", mb, False, 2, 3) for mb in (9, 10)]
json.dump(cases, open(out, "w"), indent=1)
print(len(cases), "PyTorch cases")
