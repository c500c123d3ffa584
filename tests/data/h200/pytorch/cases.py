"""PyTorch cases for the GPU at hand: Llama (no PyTorch figures shared yet) and GPT-2 medium around its largest
batch; on a GPU other than the H100, every GPT-2 medium case too, for a baseline on the same card."""
import json, sys
gpu, inputs, out = sys.argv[1], sys.argv[2], sys.argv[3]
def case(model, mb, rc=False, warmup=3, iterations=6):
    seq = json.load(open(f"{inputs}/{model}.json"))["seq_len"]
    return {"tag": f"{model}-mb{mb}{'-rc' if rc else ''}", "model": f"{model}.json", "config": f"{inputs}/{model}.json",
            "seq_len": seq, "micro_batch": mb, "recompute": rc, "warmup": warmup, "iterations": iterations}
# The largest micro-batch each trains on 79.18 GiB, around where the first call's cases ran out.
cases = [case("gpt2-medium", mb, False, 2, 3) for mb in (29, 30, 31)]
cases += [case("llama-3.2-1b", mb, False, 2, 3) for mb in (9, 10)]
json.dump(cases, open(out, "w"), indent=1)
print(len(cases), "PyTorch cases")
